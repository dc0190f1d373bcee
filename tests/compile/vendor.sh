#!/bin/sh
# A new user vendors gnmr.h: only the header is copied into an empty
# directory, beside the user's own files, and built three ways:
#   c99       one C99 file holding the implementation (gcc, clang)
#   c++17     one C++17 file holding it (g++, clang++ -Wall -Wextra -Werror)
#   two-file  C++17: main.cc holds the implementation, use.cc only includes
#             the header; use.cc (the interface, what every C++ file that
#             includes gnmr.h sees) also builds clean under clang++
#             -Wold-style-cast
# Each build that compiles and whose program runs counts as passed; a
# compiler that is missing is named and its builds skipped. Closes with
# "N passed, N failed" (tests/run.sh adds it to make test's total).
# Usage: sh tests/compile/vendor.sh [path/to/gnmr.h]  (default: ./gnmr.h)
header=${1:-gnmr.h}
if [ ! -f "$header" ]; then
  echo "vendor: $header not found"
  echo "0 passed, 1 failed"
  exit 1
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$header" "$dir/gnmr.h"

# The user's files: the norm helpers and one controller step, each result
# checked, as a first program would.
cat >"$dir/use.c" <<'EOF'
#include "gnmr.h"

int use_gnmr(void) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_slot units[2];
  gnmr_ctl ctl;
  gnmr_decision d[2];
  const float x[2] = {3.0f, 4.0f};
  float norms[2];
  if (gnmr_sumsq_f32(x, 2) != 25.0) return 1;
  norms[0] = 1.0f;
  norms[1] = 2.0f;
  if (gnmr_init(&ctl, &cfg, units, 2) != GNMR_OK) return 2;
  if (gnmr_step(&ctl, norms, d) != GNMR_OK) return 3;
  return d[0].action == GNMR_ACTION_KEEP ? 0 : 4;
}
EOF
cat >"$dir/main.c" <<'EOF'
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

int use_gnmr(void);

#ifndef TWO_FILES
#include "use.c"
#endif

int main(void) { return use_gnmr(); }
EOF
cp "$dir/use.c" "$dir/use.cc"
cp "$dir/main.c" "$dir/main.cc"

passed=0
failed=0
# check NAME COMMAND...: builds (and runs) in the vendored directory.
check() {
  name=$1
  shift
  if (cd "$dir" && "$@") >"$dir/log" 2>&1; then
    echo "  ok    $name"
    passed=$((passed + 1))
  else
    echo "  FAIL  $name: $*"
    sed 's/^/        /' "$dir/log" | head -n 20
    failed=$((failed + 1))
  fi
}
found() { command -v "$1" >/dev/null 2>&1; }
WARN="-Wall -Wextra -Werror"

for cc in gcc clang; do
  if ! found $cc; then
    echo "vendor: $cc not found: its C99 build skipped"
    continue
  fi
  check "$cc c99" sh -c "$cc -std=c99 -Wpedantic $WARN -o c99 main.c -lm && ./c99"
done
for cxx in g++ clang++; do
  if ! found $cxx; then
    echo "vendor: $cxx not found: its C++17 builds skipped"
    continue
  fi
  check "$cxx c++17" sh -c "$cxx -std=c++17 $WARN -o cxx17 main.cc && ./cxx17"
  check "$cxx two-file" sh -c "$cxx -std=c++17 $WARN -DTWO_FILES -o two \
    main.cc use.cc && ./two"
done
if found clang++; then
  check "clang++ interface -Wold-style-cast" \
    clang++ -std=c++17 $WARN -Wold-style-cast -c -o use.o use.cc
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
