#!/bin/bash
# gpu_check.sh - the checks the device path owes, in one run, on a machine
# with an NVIDIA GPU. It compiles nothing: `make gpu-check-build` (any
# machine with nvcc, a GPU or not) builds every program it runs into BUILD,
# so the GPU machine needs the driver, compute-sanitizer for the sanitizer
# groups and a CUDA PyTorch for the torch group, no compiler.
#
#   usage: tests/cuda/gpu_check.sh OUT BUILD [GROUP ...]
#   (make gpu-check: make gpu-check-build, then this with OUT =
#   BUILD/gpu-check; on a device machine: bash tests/cuda/gpu_check.sh
#   "$OUT" build)
#
# GROUP: test (every CUDA test program and the training-step example, side
# by side), bench (the benchmarks, one after another and alone: the
# figures), memcheck and racecheck (compute-sanitizer on every case, one
# process per case: test_device's training loop and controller timing,
# test_ctl_cuda's cases (its placer and graph cases included), the two-file
# builds, the training-step example; racecheck gets test_device --small),
# torch (tests/torch under pytest, the CUDA cases required, and
# bench/torch_step.py --device cuda). Default: test, bench, torch, memcheck,
# racecheck; torch and the sanitizer cases run side by side, up to
# GPU_CHECK_JOBS (12) at once. initcheck and synccheck (compute-sanitizer's
# other tools, on the same cases) only when named.
#
# Each step writes OUT/<step>.log and prints one line: ok, FAILED, TIMEOUT,
# or NOT RUN (the budget was spent); OUT/summary.txt has them all. Each
# step is bounded by GPU_CHECK_TIMEOUT (seconds, default 240) and the whole
# run by GPU_CHECK_BUDGET (default 470, under 8 minutes): a step starts
# only with 15 s of budget left and gets at most what is left. The exit
# status is 0 only when every step ran and was ok. Without a GPU it says
# SKIPPED and exits 0 (1 where GNMR_REQUIRE_GPU is set).
if [ $# -lt 2 ]; then
  echo "usage: gpu_check.sh OUT BUILD [GROUP ...]"
  exit 2
fi
out=$1
b=$2
shift 2
groups=${*:-test bench torch memcheck racecheck}
limit=${GPU_CHECK_TIMEOUT:-240}
budget=${GPU_CHECK_BUDGET:-470}
jobs_max=${GPU_CHECK_JOBS:-12}
start=$(date +%s)
mkdir -p "$out" || exit 1
: >"$out/summary.txt"

if ! nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader >"$out/device.txt" 2>&1; then
  echo "gpu-check: SKIPPED: no NVIDIA GPU here (nvidia-smi failed;" \
    "$out/device.txt)"
  [ -n "$GNMR_REQUIRE_GPU" ] && exit 1
  exit 0
fi
echo "gpu-check: $(head -n 1 "$out/device.txt"); logs in $out"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
# A GPU is here: a program that finds none (a driver older than the CUDA
# runtime, a container without the device files) fails instead of skipping
# (examples/cuda/gnmr_device.cuh, the torch tests' CUDA cases).
GNMR_REQUIRE_GPU=1
export GNMR_REQUIRE_GPU

failed=0
not_run=0
report() { # report NAME RC: the step's line, on the terminal and in summary
  local line
  case $2 in
  0) line="ok       $1" ;;
  124 | 137) line="TIMEOUT  $1 ($out/$1.log)" ;;
  notrun) line="NOT RUN  $1 (budget of ${budget} s spent)" ;;
  *[!0-9]*) line="FAILED   $1 ($2)" ;;
  *) line="FAILED   $1 (exit $2; $out/$1.log)" ;;
  esac
  case $2 in
  0) ;;
  notrun) not_run=$((not_run + 1)) ;;
  *) failed=$((failed + 1)) ;;
  esac
  echo "$line"
  echo "$line" >>"$out/summary.txt"
}

# step_limit: this step's timeout, or nothing when the budget is spent
step_limit() {
  local left=$((budget - ($(date +%s) - start)))
  [ $left -lt 15 ] && return 1
  [ $left -lt "$limit" ] && echo $left || echo "$limit"
}

# step NAME COMMAND ...: runs COMMAND now, its output to OUT/NAME.log
step() {
  local name=$1 t
  shift
  if ! t=$(step_limit); then
    report "$name" notrun
    return
  fi
  timeout -k 10 "$t" "$@" >"$out/$name.log" 2>&1
  report "$name" $?
}

# step_bg NAME COMMAND ...: step in the background, at most jobs_max at
# once; steps_wait reports every step started so, in order, once all are
# done.
started=
step_bg() {
  local name=$1 t
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  if ! t=$(step_limit); then
    echo notrun >"$out/$name.rc"
  else
    (
      timeout -k 10 "$t" "$@" >"$out/$name.log" 2>&1
      echo $? >"$out/$name.rc"
    ) &
  fi
  started="$started $name"
}
steps_wait() {
  wait
  for name in $started; do
    report "$name" "$(cat "$out/$name.rc" 2>/dev/null || echo 1)"
  done
  started=
}

# Every program must be there (built by make gpu-check-build).
missing=
for p in cuda/test_device cuda/two_file_rdc cuda/two_file_static \
  test_ctl_cuda ctl_two_files train_step bench_ctl_cuda \
  cuda/bench_norms_cuda cuda/bench_norms_cuda_occ8; do
  [ -x "$b/$p" ] || missing="$missing $b/$p"
done
if [ -n "$missing" ]; then
  echo "gpu-check: not built:$missing (make gpu-check-build, on any" \
    "machine with nvcc)"
  exit 1
fi
ctl_cases=$(sed -n 's/^ *CHECK_CASE(\([a-z0-9_]*\)).*/\1/p' \
  tests/cuda/test_ctl_cuda.cu)

# sanitize TOOL: every case under compute-sanitizer --tool TOOL, in the
# background. The longest first.
sanitizer=$(command -v compute-sanitizer ||
  ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$sanitizer" ] && "$sanitizer" --version >"$out/sanitizer.txt" 2>&1
sanitize() {
  local tool=$1 c small=()
  if [ -z "$sanitizer" ]; then
    report "$tool" "compute-sanitizer not found"
    return
  fi
  local run=("$sanitizer" --tool "$tool" --error-exitcode 1)
  [ "$tool" = racecheck ] && small=(--small)
  step_bg "$tool-test_device-training" "${run[@]}" "$b/cuda/test_device" \
    --filter=training "${small[@]}"
  for c in $ctl_cases; do
    step_bg "$tool-test_ctl_cuda-$c" "${run[@]}" "$b/test_ctl_cuda" \
      --filter="$c"
  done
  step_bg "$tool-test_device-controller_timing" "${run[@]}" \
    "$b/cuda/test_device" --filter=controller_timing
  step_bg "$tool-train_step" "${run[@]}" "$b/train_step"
  step_bg "$tool-ctl_two_files" "${run[@]}" "$b/ctl_two_files"
  step_bg "$tool-two_file_rdc" "${run[@]}" "$b/cuda/two_file_rdc"
  step_bg "$tool-two_file_static" "${run[@]}" "$b/cuda/two_file_static"
}

# The first Python that imports torch (Debian's python3-torch is in
# /usr/bin/python3, which a pyenv python3 on PATH does not see).
torch_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if $p -c 'import torch, pytest' >/dev/null 2>&1; then
      echo "$p"
      return
    fi
  done
}
torch_group() {
  local py
  py=$(torch_python)
  if [ -z "$py" ]; then
    report torch "no Python here imports torch and pytest"
    return
  fi
  $py -c 'import torch; print("torch", torch.__version__, "cuda",
torch.version.cuda, "available", torch.cuda.is_available())' \
    >"$out/torch-version.txt" 2>&1
  step_bg test-torch "$py" -m pytest -q -p no:cacheprovider tests/torch
  step_bg torch-step "$py" bench/torch_step.py --device cuda
}

sanitizing=0
for g in $groups; do
  case $g in
  test)
    step_bg test-test_device "$b/cuda/test_device"
    step_bg test-test_ctl_cuda "$b/test_ctl_cuda"
    step_bg test-two_file_rdc "$b/cuda/two_file_rdc"
    step_bg test-two_file_static "$b/cuda/two_file_static"
    step_bg test-ctl_two_files "$b/ctl_two_files"
    step_bg test-train_step "$b/train_step"
    steps_wait
    ;;
  bench)
    step bench-ctl "$b/bench_ctl_cuda"
    step bench-norms "$b/cuda/bench_norms_cuda" --csv "$out/bench_norms.csv"
    # the same kernel at 8 resident blocks an SM (32 registers, spills)
    step bench-norms-occ8-single "$b/cuda/bench_norms_cuda_occ8" \
      --case single
    step bench-norms-occ8-gpt2 "$b/cuda/bench_norms_cuda_occ8" \
      --case gpt2-124m
    py=$(torch_python)
    [ -n "$py" ] && step bench-foreach-norm "$py" bench/foreach_norm.py
    ;;
  memcheck | racecheck | initcheck | synccheck)
    sanitize "$g"
    sanitizing=1
    ;;
  torch)
    torch_group
    sanitizing=1
    ;;
  *)
    echo "gpu-check: unknown group '$g' (test bench memcheck racecheck" \
      "torch initcheck synccheck)"
    failed=$((failed + 1))
    ;;
  esac
done
[ $sanitizing = 1 ] && steps_wait
echo "gpu-check: $failed failed, $not_run not run, in" \
  "$(($(date +%s) - start)) s" | tee -a "$out/summary.txt"
[ $failed = 0 ] && [ $not_run = 0 ]
