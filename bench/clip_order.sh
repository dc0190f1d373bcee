#!/bin/sh
# clip_order.sh OUT [SEEDS] [BIN] [DATA]: the global clip's order on the
# settings suite's four fault settings, at the suite's lengths and options
# (lab/suite.c: LM 500 steps, 512 validation windows; MLP 1000 steps),
# every arm with --global-clip 1.0. Per setting and seed, two runs: f32,
# lowp and gnmr (the control, then the clip) into OUT/<setting>/s<seed>/raw,
# and gnmr with --clip-first into OUT/<setting>/s<seed>/first. One run at
# a time, one GEMM thread; a run whose summary.csv exists is skipped, so
# the script resumes. SEEDS: a list, default "1 2 3"; seeds run outermost,
# so a cut-short run has every setting's first seeds.
# bench/clip_order.py reads OUT.
set -e
out=$1 seeds=${2:-1 2 3} bin=${3:-build} data=${4:-/usr/share/games/fortunes}
[ -n "$out" ] || { echo "usage: clip_order.sh OUT [SEEDS] [BIN] [DATA]" >&2; exit 2; }
lm_args() {
  case $1 in
  lm-e2m1-faults) echo "--format e2m1 --optimizer adamw --schedule linear --warmup 5% --lr 2e-3 --stress 24" ;;
  lm-e5m2g-sgd-faults) echo "--format e4m3 --grad-format e5m2 --optimizer sgd --schedule linear --warmup 5% --lr 0.3 --stress 24" ;;
  lm-e4m3-lion-faults) echo "--format e4m3 --optimizer lion --schedule wsd --warmup 0 --lr 1e-3 --stress 24" ;;
  esac
}
run() { # setting seed order arms extra
  d=$out/$1/s$2/$3
  [ -f "$d/summary.csv" ] && return 0
  rm -rf "$d.tmp" && mkdir -p "$(dirname "$d")"
  t0=$(date +%s)
  if [ "$1" = mlp-e4m3-faults ]; then
    cmd="$bin/train_stress --quiet --hidden 128,64,32 --format e4m3 --lr 1e-3 --stress 8 --global-clip 1.0 $5 --seed $2 --seeds 1 --steps 1000 --arms $4 --out $d.tmp"
  else
    cmd="$bin/train_lm --quiet --threads 1 --data $data --setting $1 $(lm_args "$1") --global-clip 1.0 $5 --seed $2 --seeds 1 --steps 500 --eval 512 --arms $4 --out $d.tmp"
  fi
  echo "$cmd" > "$d.cmd"
  nice -n 10 $cmd > "$d.log" 2>&1
  mv "$d.tmp" "$d"
  echo "$1 s$2 $3: $(($(date +%s) - t0)) s"
}
for s in $seeds; do
  for st in mlp-e4m3-faults lm-e2m1-faults lm-e5m2g-sgd-faults lm-e4m3-lion-faults; do
    run "$st" "$s" raw f32,lowp,gnmr ""
    run "$st" "$s" first gnmr --clip-first
  done
done
