#!/bin/sh
# gpu_check.sh - the checks the device path owes, in one run, on a machine
# with an NVIDIA GPU (make gpu-check). Each step writes OUT/<step>.log and
# prints one line, "ok", "FAILED" or "TIMEOUT"; the exit status is 0 only
# when every step that ran was ok. Without a GPU it says so and exits 1.
#
#   usage: tests/cuda/gpu_check.sh OUT BUILD [GROUP ...]
#   GROUP: test (make cuda-test), bench (make cuda-bench), memcheck,
#          racecheck (compute-sanitizer on every CUDA test program and
#          the training-step example, all at once, test_ctl_cuda one
#          process per test case: serially they outlast a short lease),
#          torch (make test-torch and
#          bench/torch_step.py --device cuda); all of them by default, in
#          that order: the figures first, the slow sanitizer runs after;
#          initcheck and synccheck (compute-sanitizer's other tools, on the
#          same programs) only when named.
# GPU_CHECK_TIMEOUT (seconds, default 300) bounds each step.
if [ $# -lt 2 ]; then
  echo "usage: gpu_check.sh OUT BUILD [GROUP ...]"
  exit 2
fi
out=$1
b=$2
shift 2
groups=${*:-test bench memcheck racecheck torch}
limit=${GPU_CHECK_TIMEOUT:-300}
mkdir -p "$out" || exit 1

if ! nvidia-smi --query-gpu=name,driver_version --format=csv,noheader \
  >"$out/device.txt" 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi failed): nothing run"
  exit 1
fi
echo "gpu-check: $(cat "$out/device.txt"); logs in $out"
# A GPU is here: a program that finds none (a driver older than the CUDA
# runtime, a container without the device files) fails instead of skipping
# (examples/cuda/gnmr_device.cuh, the torch tests' CUDA cases).
GNMR_REQUIRE_GPU=1
export GNMR_REQUIRE_GPU

failed=0
step() { # step NAME COMMAND ...: runs COMMAND, its output to OUT/NAME.log
  name=$1
  shift
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    echo "ok       $name"
  elif [ $rc = 124 ]; then
    echo "TIMEOUT  $name (over ${limit} s; $out/$name.log)"
    failed=$((failed + 1))
  else
    echo "FAILED   $name (exit $rc; $out/$name.log)"
    failed=$((failed + 1))
  fi
}

# step_bg NAME COMMAND ...: step in the background; steps_wait reports
# every step started so, in order, once all are done.
started=
step_bg() {
  name=$1
  shift
  started="$started $name"
  (
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo $? >"$out/$name.rc"
  ) &
}
steps_wait() {
  wait
  for name in $started; do
    rc=$(cat "$out/$name.rc" 2>/dev/null || echo 1)
    if [ "$rc" = 0 ]; then
      echo "ok       $name"
    elif [ "$rc" = 124 ]; then
      echo "TIMEOUT  $name (over ${limit} s; $out/$name.log)"
      failed=$((failed + 1))
    else
      echo "FAILED   $name (exit $rc; $out/$name.log)"
      failed=$((failed + 1))
    fi
  done
  started=
}

sanitizer=$(command -v compute-sanitizer ||
  ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
programs="$b/cuda/test_device $b/cuda/two_file_rdc $b/cuda/two_file_static
$b/test_ctl_cuda $b/ctl_two_files $b/train_step"

for g in $groups; do
  case $g in
  test) step cuda-test make B="$b" cuda-test ;;
  bench) step cuda-bench make B="$b" cuda-bench ;;
  memcheck | racecheck | initcheck | synccheck)
    if [ -z "$sanitizer" ]; then
      echo "FAILED   $g: compute-sanitizer not found"
      failed=$((failed + 1))
      continue
    fi
    make -s B="$b" cuda >"$out/build.log" 2>&1 || {
      echo "FAILED   $g: make cuda ($out/build.log)"
      failed=$((failed + 1))
      continue
    }
    for p in $programs; do
      if [ "${p##*/}" = test_ctl_cuda ]; then
        for c in $(sed -n 's/^ *CHECK_CASE(\([a-z0-9_]*\)).*/\1/p' \
          tests/cuda/test_ctl_cuda.cu); do
          step_bg "$g-test_ctl_cuda-$c" "$sanitizer" --tool "$g" \
            --error-exitcode 1 "$p" --filter="$c"
        done
      else
        step_bg "$g-${p##*/}" "$sanitizer" --tool "$g" --error-exitcode 1 "$p"
      fi
    done
    steps_wait
    ;;
  torch)
    step test-torch make B="$b" test-torch
    step torch-step python3 bench/torch_step.py --device cuda
    ;;
  *)
    echo "gpu-check: unknown group '$g' (test bench memcheck racecheck" \
      "torch initcheck synccheck)"
    failed=$((failed + 1))
    ;;
  esac
done
echo "gpu-check: $failed failed"
[ $failed = 0 ]
