#!/bin/sh
# Runs every test program given, echoes its output, and closes with the sum of
# their "N passed, N failed" lines. Exits non-zero if any program failed.
# $RUNNER, if set, is a command each program runs under (e.g. valgrind).
passed=0
failed=0
status=0
for prog in "$@"; do
  echo "== $prog"
  # shellcheck disable=SC2086 # RUNNER is a command line: split it.
  out=$($RUNNER "$prog" 2>&1)
  rc=$?
  printf '%s\n' "$out"
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
  if [ -z "$line" ]; then
    echo "$prog: no summary line (exit $rc)"
    failed=$((failed + 1))
    status=1
    continue
  fi
  p=$(echo "$line" | cut -d' ' -f1)
  f=$(echo "$line" | cut -d' ' -f3)
  passed=$((passed + p))
  failed=$((failed + f))
  [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
