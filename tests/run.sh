#!/bin/sh
# Runs every test program given, echoes its output, and closes with the sum of
# their summary lines, "N passed, N failed, N skipped" (tests/check.h's) or
# "N passed, N failed" (the programs that cannot skip: the corpus replays,
# the vendored build, the CUDA programs). Exits non-zero if any program failed
# or gave no summary line; a skip fails nothing.
# $RUNNER, if set, is a command each program runs under (e.g. valgrind).
passed=0
failed=0
skipped=0
status=0
for prog in "$@"; do
  echo "== $prog"
  # shellcheck disable=SC2086 # RUNNER is a command line: split it.
  out=$($RUNNER "$prog" 2>&1)
  rc=$?
  printf '%s\n' "$out"
  line=$(printf '%s\n' "$out" |
    grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' | tail -n 1)
  if [ -z "$line" ]; then
    echo "$prog: no summary line (exit $rc)"
    failed=$((failed + 1))
    status=1
    continue
  fi
  p=$(echo "$line" | cut -d' ' -f1)
  f=$(echo "$line" | cut -d' ' -f3)
  s=$(echo "$line" | cut -s -d' ' -f5)
  passed=$((passed + p))
  failed=$((failed + f))
  skipped=$((skipped + ${s:-0}))
  [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || status=1
exit $status
