#!/bin/sh
# clip_order_report.sh OUT [BIN]: lays bench/clip_order.sh's runs out as
# lab/efficacy.c reads them, OUT/report/<setting>/s<seed>-{raw,first}/
# summary.csv, the --clip-first run's arm renamed gnmr-clip-first, and runs
# efficacy_report on it: per setting, each arm's loss (served and on the
# f32 path), the gap recovered, hf, and every arm against every other,
# paired by seed, with the report's paired bootstrap (2000 draws, fixed
# RNG seed).
set -e
out=$1 bin=${2:-build}
[ -d "$out" ] || { echo "usage: clip_order_report.sh OUT [BIN]" >&2; exit 2; }
rm -rf "$out/report"
for f in "$out"/*/s*/raw/summary.csv "$out"/*/s*/first/summary.csv; do
  [ -f "$f" ] || continue
  order=$(basename "$(dirname "$f")")
  seed=$(basename "$(dirname "$(dirname "$f")")")
  setting=$(basename "$(dirname "$(dirname "$(dirname "$f")")")")
  d=$out/report/$setting/$seed-$order
  mkdir -p "$d"
  if [ "$order" = first ]; then
    # the arm is the first column (train_stress) or the second (train_lm)
    sed -e 's/^gnmr,/gnmr-clip-first,/' \
      -e 's/^\([^,]*\),gnmr,/\1,gnmr-clip-first,/' "$f" > "$d/summary.csv"
  else
    cp "$f" "$d/summary.csv"
  fi
done
"$bin/efficacy_report" "$out/report"
