#!/bin/sh
# units_full.sh OUT [SEEDS] [BIN] [DATA]: train_lm --units linear|tensor|layer
# at the LM demo's full length (1000 steps, the default 512 validation
# windows), make demo-lm-injected's options (FP8 E4M3, lr 2e-3, 24 injected
# faults per 1000 steps) and the same without faults. One run a directory,
# OUT/<setting>/<arm>/s<seed> (arm gnmr-<units> or gnmr-calm-<units>; f32 and
# lowp do not read --units), one at a time, one GEMM thread, nice 10; a run
# whose directory holds "done" is skipped, so the script resumes. Order:
# the fault setting's f32 and lowp, its gnmr per grouping, its gnmr-calm per
# grouping; then the calm setting's lowp (its f32 is the fault setting's:
# the f32 path sees no faults), gnmr and gnmr-calm. bench/units_full.py
# reads OUT.
out=$1 seeds=${2:-1 2 3} bin=${3:-build} data=${4:-/usr/share/games/fortunes}
[ -n "$out" ] || { echo "usage: units_full.sh OUT [SEEDS] [BIN] [DATA]" >&2; exit 2; }
run() { # dir train_lm-args...
  d=$out/$1
  shift
  [ -f "$d/done" ] && return 0
  mkdir -p "$d"
  t0=$(date +%s)
  if nice -n 10 "$bin/train_lm" --data "$data" --threads 1 --steps 1000 \
      --quiet --out "$d" "$@" >"$d/log.txt" 2>&1; then
    echo $(($(date +%s) - t0)) >"$d/done"
  fi
  echo "$(date -u +%H:%M:%S) $d $(cat "$d/done" 2>/dev/null || echo failed)" \
    >>"$out/progress.txt"
}
INJ="--setting injected --format e4m3 --lr 2e-3 --stress 24"
CALM="--setting calm --format e4m3 --lr 2e-3"
grid() { # setting arm options: the arm at each grouping, seed by seed
  for s in $seeds; do
    for u in linear tensor layer; do
      run "$1/$2-$u/s$s" $3 --arms "$2" --units $u --seed "$s"
    done
  done
}
for s in $seeds; do
  run "injected/f32/s$s" $INJ --arms f32 --seed "$s"
  run "injected/lowp/s$s" $INJ --arms lowp --seed "$s"
done
grid injected gnmr "$INJ"
grid injected gnmr-calm "$INJ"
for s in $seeds; do run "calm/lowp/s$s" $CALM --arms lowp --seed "$s"; done
grid calm gnmr "$CALM"
grid calm gnmr-calm "$CALM"
