#!/bin/sh
# Runs every test program given, echoes its output, and closes with the sum of
# their summary lines, "N passed, N failed, N skipped" (tests/check.h's) or
# "N passed, N failed" (the programs that cannot skip: the corpus replays,
# the vendored build, the CUDA programs). Exits non-zero if any program failed
# or gave no summary line; a skip fails nothing.
# $RUNNER, if set, is a command each program runs under (e.g. valgrind).
# $GNMR_TEST_JOBS programs run at a time (default: the online CPUs), each
# into its own file; the outputs are echoed whole, in the order given, as
# each program before them has finished. Each test program writes only
# under its own TEST_OUT (the Makefile's TEST_FLAGS), so any two can run
# side by side.
jobs=${GNMR_TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null)}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac
[ "$jobs" -gt $# ] && jobs=$#

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A worker takes the next program nobody has claimed (mkdir is atomic),
# runs it into $tmp/N.out and then, whole, writes its exit status to $tmp/N.rc.
worker() {
  i=0
  for prog in "$@"; do
    i=$((i + 1))
    mkdir "$tmp/claim.$i" 2>/dev/null || continue
    # shellcheck disable=SC2086 # RUNNER is a command line: split it.
    $RUNNER "$prog" >"$tmp/$i.out" 2>&1
    echo $? >"$tmp/$i.rc.part"
    mv "$tmp/$i.rc.part" "$tmp/$i.rc"
  done
}
w=0
while [ "$w" -lt "$jobs" ]; do
  worker "$@" &
  w=$((w + 1))
done

passed=0
failed=0
skipped=0
status=0
i=0
for prog in "$@"; do
  i=$((i + 1))
  while [ ! -f "$tmp/$i.rc" ]; do sleep 1; done
  echo "== $prog"
  out=$(cat "$tmp/$i.out")
  rc=$(cat "$tmp/$i.rc")
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
wait
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || status=1
exit $status
