#!/usr/bin/env python3
"""units_full.py OUT [CSV]: bench/units_full.sh's runs as markdown tables
(and, given CSV, one row a run: setting, arm, units, seed, bits per byte on
the f32 path and served, hf, flagged and admitted unit-steps with the
LayerNorm units' counts).

Per setting (OUT/<setting>/<arm>/s<seed>/): per arm and seed the final
validation bits per byte, served (val_bpb_served) and on the f32 path
(val_bpb); the gap recovered, (lowp - arm) / (lowp - f32) on the same seed
and evaluation, where f32 ends below lowp by 1% of its loss or more (a
smaller gap makes the ratio noise: "-" in the table); hf, the share of the
Linears' unit-steps on the f32 path (units.csv's hf_steps over Linears x
steps); flagged and admitted unit-steps, with the share of those that went
to a unit holding a LayerNorm (groups.csv); each controlled arm's mean gap
recovered over those seeds. Then, per arm family, the paired difference
between groupings (tensor - linear, layer - linear, same seed; and gnmr-calm
- gnmr at each grouping), its mean and a paired bootstrap interval: the
seeds resampled with replacement, 2000 draws from random.Random(20261129),
the 2.5th and 97.5th percentiles of the mean. The f32 row of a setting
without its own f32 runs is the fault setting's (the f32 path sees no
faults).
"""
import csv
import os
import sys

from paired_boot import boot

SETTINGS = ["injected", "calm"]
UNITS = ["linear", "tensor", "layer"]
FAMILIES = ["gnmr", "gnmr-calm"]
MIN_GAP = 0.01  # gap recovered only where lowp ends 1% or more above f32


def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def load_run(d):
    """One run directory's figures, or None when it did not finish."""
    if not os.path.exists(os.path.join(d, "done")):
        return None
    summ = read_rows(os.path.join(d, "summary.csv"))
    if len(summ) != 1:
        return None
    s = summ[0]
    units = read_rows(os.path.join(d, "units.csv"))
    steps = int(s["steps"])
    hf = sum(int(u["hf_steps"]) for u in units) / (len(units) * steps)
    run = {"f32": float(s["val_bpb"]), "served": float(s["val_bpb_served"]),
           "hf": hf, "hf_flops": float(s["hf_flops"]), "groups": None}
    g = read_rows(os.path.join(d, "groups.csv"))
    if g:
        run["groups"] = {k: int(g[0][k]) for k in
                         ("flagged", "flagged_ln", "admitted", "admitted_ln")}
    return run


def load(out, setting):
    """{arm: {seed: run}} for the arms that finished at least one seed."""
    arms = {}
    base = os.path.join(out, setting)
    if not os.path.isdir(base):
        return arms
    for arm in sorted(os.listdir(base)):
        for sd in sorted(os.listdir(os.path.join(base, arm))):
            if not (sd.startswith("s") and sd[1:].isdigit()):
                continue
            r = load_run(os.path.join(base, arm, sd))
            if r is not None:
                arms.setdefault(arm, {})[int(sd[1:])] = r
    return arms


def gap(arms, arm, seed, key):
    lo = arms["lowp"][seed][key]
    hi = arms["f32"][seed][key]
    if lo - hi < MIN_GAP * hi:
        return None
    return (lo - arms[arm][seed][key]) / (lo - hi)


def share(part, whole):
    return "%d (%.0f%%)" % (whole, 100.0 * part / whole) if whole else "0"


def per_seed(vals, fmt):
    return " / ".join("-" if v is None else fmt % v for v in vals)


def table(arms, order, seeds):
    print("| arm | served bpb s%s | mean | f32-path bpb | mean | gap recovered"
          " served (f32 path) | hf (FLOPs, mean) | flagged (LayerNorm units' share) | "
          "admissions (LayerNorm units' share) |" % " / s".join(
              str(s) for s in seeds))
    print("|---|---|---|---|---|---|---|---|---|")
    for arm in order:
        if arm not in arms or any(s not in arms[arm] for s in seeds):
            continue
        runs = [arms[arm][s] for s in seeds]
        sv = [r["served"] for r in runs]
        fp = [r["f32"] for r in runs]
        cells = ["", "", "", ""]
        if runs[0]["groups"] is not None:
            gs = [gap(arms, arm, s, "served") for s in seeds]
            gf = [gap(arms, arm, s, "f32") for s in seeds]
            cells = [
                " / ".join("%s (%s)" % (
                    "-" if a is None else "%.0f%%" % (100 * a),
                    "-" if b is None else "%.0f%%" % (100 * b))
                    for a, b in zip(gs, gf)),
                "%s (%.2f%%)" % (
                    per_seed([100 * r["hf"] for r in runs], "%.2f%%"),
                    100 * sum(r["hf_flops"] for r in runs) / len(runs)),
                " / ".join(share(r["groups"]["flagged_ln"],
                                 r["groups"]["flagged"]) for r in runs),
                " / ".join(share(r["groups"]["admitted_ln"],
                                 r["groups"]["admitted"]) for r in runs)]
        print("| %s | %s | %.4f | %s | %.4f | %s |" % (
            arm, per_seed(sv, "%.4f"), sum(sv) / len(sv), per_seed(fp, "%.4f"),
            sum(fp) / len(fp), " | ".join(cells)))
    print()


def gaps(arms, seeds):
    for fam in FAMILIES:
        for u in UNITS:
            arm = "%s-%s" % (fam, u)
            if arm not in arms:
                continue
            parts = []
            for key, name in (("served", "served"), ("f32", "f32 path")):
                g = [gap(arms, arm, s, key) for s in seeds
                     if s in arms[arm]]
                g = [x for x in g if x is not None]
                if g:
                    m, lo, hi = boot([g])
                    parts.append("%s %.0f%% [%.0f, %.0f] (%d seeds)" % (
                        name, 100 * m, 100 * lo, 100 * hi, len(g)))
            if parts:
                print("- `%s` gap recovered: %s" % (arm, "; ".join(parts)))
    print()


def pairs(arms):
    """(arm, base): each grouping against per Linear, then gnmr-calm
    against gnmr at the same grouping."""
    out = [("%s-%s" % (f, u), "%s-linear" % f) for f in FAMILIES
           for u in UNITS[1:]]
    out += [("gnmr-calm-%s" % u, "gnmr-%s" % u) for u in UNITS]
    return [(a, b) for a, b in out if a in arms and b in arms]


def differences(arms, seeds):
    for arm, base in pairs(arms):
        common = [s for s in seeds if s in arms.get(arm, {})
                  and s in arms[base]]
        if not common:
            continue
        for key, name in (("served", "served"), ("f32", "f32 path")):
            d = [arms[arm][s][key] - arms[base][s][key] for s in common]
            m, lo, hi = boot([d])
            ref = sum(arms[base][s][key] for s in common) / len(common)
            print("- `%s` minus `%s`, %s: %+.4f [%+.4f, %+.4f] "
                  "(%+.2f%%), per seed %s; higher on %d of %d seeds" % (
                      arm, base, name, m, lo, hi, 100 * m / ref,
                      per_seed(d, "%+.4f"), sum(x > 0 for x in d),
                      len(d)))
    print()


def write_csv(out, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["setting", "arm", "units", "seed", "bpb_f32_path",
                    "bpb_served", "hf_unit_steps", "hf_flops", "flagged",
                    "flagged_ln", "admitted", "admitted_ln"])
        for st in SETTINGS:
            arms = load(out, st)
            for arm in sorted(arms):
                units = next((u for u in UNITS if arm.endswith("-" + u)), "")
                name = arm[:-len(units) - 1] if units else arm
                for s in sorted(arms[arm]):
                    r = arms[arm][s]
                    g = r["groups"] or {}
                    w.writerow([st, name, units, s, "%.6f" % r["f32"],
                                "%.6f" % r["served"], "%.6f" % r["hf"],
                                "%.6f" % r["hf_flops"]] +
                               [g.get(k, "") for k in (
                                   "flagged", "flagged_ln", "admitted",
                                   "admitted_ln")])


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: units_full.py OUT [CSV]")
    out = sys.argv[1]
    if len(sys.argv) == 3:
        write_csv(out, sys.argv[2])
    f32 = load(out, "injected").get("f32", {})
    order = ["f32", "lowp"] + ["%s-%s" % (f, u) for f in FAMILIES
                               for u in UNITS]
    for st in SETTINGS:
        arms = load(out, st)
        if "f32" not in arms and f32:
            arms["f32"] = f32
        if "lowp" not in arms or "f32" not in arms:
            continue
        seeds = sorted(s for s in arms["lowp"] if s in arms["f32"])
        print("Setting `%s`, seeds %s:" % (st, ", ".join(map(str, seeds))))
        print()
        table(arms, order, seeds)
        gaps(arms, seeds)
        differences(arms, seeds)


if __name__ == "__main__":
    main()
