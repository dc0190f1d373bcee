#!/usr/bin/env python3
"""clip_order.py OUT [CSV]: bench/clip_order.sh's runs as markdown tables
(and, given CSV, every run's row there: setting, order, arm, seed, loss on
the f32 path, served loss, hf unit-steps, hf FLOPs).

Per setting (OUT/<setting>/s<seed>/{raw,first}/summary.csv): each order's
final loss per seed, served and on the f32 path (LM: bits per byte; MLP:
test cross-entropy), the gap recovered ((lowp - arm) / (lowp - f32), same
seed and evaluation), hf (unit-steps; the LM also GEMM FLOPs), f32 and
lowp; then the paired difference clip-first minus raw, per setting, and
over the settings the mean of the per-setting means (of the per-seed
gaps recovered, and of the loss differences raw minus clip-first over the
setting's mean lowp - f32, which a seed with a tiny gap cannot swing),
each with a paired bootstrap: the seeds resampled with
replacement (each setting's on its own), 2000 draws from
random.Random(20261129), the 2.5th and 97.5th percentiles of the mean.
"""
import csv
import os
import sys

from paired_boot import boot

SETTINGS = ["lm-e4m3-lion-faults", "lm-e2m1-faults", "lm-e5m2g-sgd-faults",
            "mlp-e4m3-faults"]  # the test half first, as the suite reports
HALF = {"lm-e4m3-lion-faults": "test"}


def load(out, setting):
    """{seed: {arm: row}}, arm 'first' for the --clip-first gnmr run."""
    runs = {}
    base = os.path.join(out, setting)
    if not os.path.isdir(base):
        return runs
    for sd in sorted(os.listdir(base)):
        if not sd.startswith("s") or not sd[1:].isdigit():
            continue
        arms = {}
        for order in ("raw", "first"):
            path = os.path.join(base, sd, order, "summary.csv")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                for row in csv.DictReader(f):
                    arms["first" if order == "first" else row["arm"]] = row
        if all(a in arms for a in ("f32", "lowp", "gnmr", "first")):
            runs[int(sd[1:])] = arms
    return runs


def loss(row, served):
    key = ("val_bpb_served" if served else "val_bpb") if "val_bpb" in row \
        else ("test_loss_served" if served else "test_loss")
    return float(row[key])


def gap(arms, arm, served):
    lo, hi = loss(arms["lowp"], served), loss(arms["f32"], served)
    return (lo - loss(arms[arm], served)) / (lo - hi)


def pct(x):
    return "%.0f%%" % (100 * x)


def write_csv(out, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["setting", "order", "arm", "seed", "loss_f32_path",
                    "loss_served", "hf_unit_steps", "hf_flops"])
        for st in SETTINGS:
            runs = load(out, st)
            for s in sorted(runs):
                for arm in ("f32", "lowp", "gnmr", "first"):
                    r = runs[s][arm]
                    w.writerow([st, "clip-first" if arm == "first" else "raw",
                                "gnmr" if arm == "first" else arm, s,
                                "%.6f" % loss(r, False),
                                "%.6f" % loss(r, True),
                                r["recovery_fraction"], r.get("hf_flops", "")])


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: clip_order.py OUT [CSV]")
    out = sys.argv[1]
    if len(sys.argv) == 3:
        write_csv(out, sys.argv[2])
    pooled = {True: [], False: []}
    pooled_gap = {True: [], False: []}
    pooled_norm = {True: [], False: []}
    for st in SETTINGS:
        runs = load(out, st)
        if not runs:
            continue
        seeds = sorted(runs)
        lm = "val_bpb" in runs[seeds[0]]["f32"]
        print("`%s` (%s half), seeds %s, every arm with `--global-clip 1.0`:"
              % (st, HALF.get(st, "tune"), ", ".join(map(str, seeds))))
        print()
        print("| order | served loss per seed | served gap recovered per "
              "seed | served mean | f32-path loss per seed | f32-path gap "
              "recovered mean | hf unit-steps per seed%s |" %
              (" | hf FLOPs mean" if lm else ""))
        print("|---|---|---|---|---|---|---|%s" % ("---|" if lm else ""))
        for arm, name in (("gnmr", "control, then the clip (gnmr sees the "
                                   "raw gradients)"),
                          ("first", "the clip, then control "
                                    "(`--clip-first`)")):
            sv = [loss(runs[s][arm], True) for s in seeds]
            fp = [loss(runs[s][arm], False) for s in seeds]
            gs = [gap(runs[s], arm, True) for s in seeds]
            gf = [gap(runs[s], arm, False) for s in seeds]
            hf = [float(runs[s][arm]["recovery_fraction"]) for s in seeds]
            fl = ""
            if lm:
                fl = " | %.2f%%" % (100 * sum(
                    float(runs[s][arm]["hf_flops"]) for s in seeds) /
                    len(seeds))
            print("| %s | %s | %s | %s | %s | %s | %s%s |" % (
                name, " / ".join("%.4f" % x for x in sv),
                " / ".join(pct(x) for x in gs), pct(sum(gs) / len(gs)),
                " / ".join("%.4f" % x for x in fp), pct(sum(gf) / len(gf)),
                " / ".join("%.2f%%" % (100 * x) for x in hf), fl))
        for arm in ("f32", "lowp"):
            print("| %s | %s | | | %s | | |%s" % (
                arm, " / ".join("%.4f" % loss(runs[s][arm], True)
                                for s in seeds),
                " / ".join("%.4f" % loss(runs[s][arm], False)
                           for s in seeds), " |" if lm else ""))
        print()
        for served in (True, False):
            d = [loss(runs[s]["first"], served) - loss(runs[s]["gnmr"], served)
                 for s in seeds]
            g = [gap(runs[s], "first", served) - gap(runs[s], "gnmr", served)
                 for s in seeds]
            lp = [loss(runs[s]["lowp"], served) - loss(runs[s]["f32"], served)
                  for s in seeds]
            pooled[served].append(d)
            pooled_gap[served].append(g)
            scale = sum(lp) / len(lp)
            pooled_norm[served].append([-x / scale for x in d])
            m, lo, hi = boot([d])
            gm, glo, ghi = boot([g])
            lm_, llo, lhi = boot([lp])
            print("- %s: clip-first minus raw %+.4f [%+.4f, %+.4f], "
                  "clip-first lower on %d of %d seeds; gap recovered "
                  "%+.0f points [%+.0f, %+.0f]; lowp - f32 %+.4f "
                  "[%+.4f, %+.4f]" % (
                      "served" if served else "f32 path", m, lo, hi,
                      sum(x < 0 for x in d), len(d), 100 * gm, 100 * glo,
                      100 * ghi, lm_, llo, lhi))
        print()
    for served in (True, False):
        if len(pooled_gap[served]) < 2:
            continue
        gm, glo, ghi = boot(pooled_gap[served])
        nm, nlo, nhi = boot(pooled_norm[served])
        print("Mean over the %d settings (%s): clip-first minus raw, gap "
              "recovered %+.0f points [%+.0f, %+.0f]; lower on %d of %d "
              "setting-seeds; raw minus clip-first over the setting's mean "
              "lowp - f32 %+.0f points [%+.0f, %+.0f]" % (
                  len(pooled_gap[served]),
                  "served" if served else "f32 path", 100 * gm, 100 * glo,
                  100 * ghi, sum(x < 0 for d in pooled[served] for x in d),
                  sum(len(d) for d in pooled[served]), 100 * nm, 100 * nlo,
                  100 * nhi))


if __name__ == "__main__":
    main()
