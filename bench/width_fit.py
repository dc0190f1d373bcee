#!/usr/bin/env python3
"""width_fit.py - the FP4 width ladder's trend (make width-ladder).

usage: python3 bench/width_fit.py DIR...

Each DIR is one width of the ladder, named w<C> (C: the model width), and
holds efficacy_report's summary.csv over its runs. For every setting and
width it prints the parameter count and, over seeds, the mean of: the
served lowp - f32 gap (bits per char), the f32-path gap, and each placement
arm's served gap recovered. Then, per setting and quantity, the least
squares line through the widths' means against log10(parameters), its
slope per decade and its value at 100x the largest width's parameters.

Intervals: a bootstrap over seeds (seeds resampled with replacement within
each width, each seed's arms kept together; the widths are separate models,
so nothing pairs across them), 2000 draws, RNG seed 1, 2.5th and 97.5th
percentiles. A line through three points has one degree of freedom: its
interval says how far the seed noise moves it, not whether a line is the
right shape.

Parameters: the LM demo's layout (lab/train_lm.c, lm_model_init) with its
default 2 blocks, context 64 and 256 byte tokens: token and position
embeddings, per block two LayerNorms and four Linears with biases (QKV,
attention out, MLP up 4x, MLP down), the final LayerNorm and the head.
"""
import csv
import math
import os
import random
import re
import sys

LAYERS, CTX, VOCAB = 2, 64, 256
DRAWS = 2000
PLACED = ("place-planf-10", "place-planlowd-10")


def params(c):
    block = 2 * 2 * c + (3 * c * c + 3 * c) + (c * c + c) + \
        (4 * c * c + 4 * c) + (4 * c * c + c)
    return VOCAB * c + CTX * c + LAYERS * block + 2 * c + c * VOCAB + VOCAB


def read(d):
    m = re.search(r"w(\d+)$", os.path.normpath(d))
    if not m:
        sys.exit("width_fit: %s is not named w<C>" % d)
    rows = {}
    with open(os.path.join(d, "summary.csv")) as f:
        for r in csv.DictReader(f):
            s = rows.setdefault(r["setting"], {})
            s.setdefault(int(r["seed"]), {})[r["arm"]] = r
    return int(m.group(1)), rows


def per_seed(arms):
    """The quantities of one seed: served gap, f32-path gap, recovered."""
    f, lo = arms["f32"], arms["lowp"]
    q = [float(lo["val_loss_served"]) - float(f["val_loss_served"]),
         float(lo["val_loss"]) - float(f["val_loss"])]
    for a in PLACED:
        q.append(100 * float(arms[a]["gap_recovered_served"])
                 if a in arms else float("nan"))
    return q


def mean(xs):
    return sum(xs) / len(xs)


def line(xs, ys):
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def power(n, pts, i, xs, x100, rng):
    """A gap as a power of the parameters: log10(gap) on log10(params),
    the gap's exponent and its value at x100; a draw whose mean gap is not
    positive at some width has no logarithm and is counted, not used."""
    def fit(ys):
        if min(ys) <= 0:
            return None
        a, b = line(xs, [math.log10(y) for y in ys])
        return b, 10 ** (a + b * x100)
    got = fit([mean([q[i] for q in p[1]]) for p in pts])
    if got is None:
        print("  power %-26s a mean gap is not positive: no fit" % n)
        return
    bs, ps, bad = [], [], 0
    for _ in range(DRAWS):
        ys = []
        for _, qs in pts:
            v = [q[i] for q in qs]
            ys.append(mean([rng.choice(v) for _ in v]))
        d = fit(ys)
        if d is None:
            bad += 1
            continue
        bs.append(d[0])
        ps.append(d[1])
    print("  power %-26s exponent %+.2f [%+.2f, %+.2f]; at %.3g params "
          "%+.4f [%+.4f, %+.4f] (%d of %d draws had no positive gap)" %
          (n, got[0], pct(bs, 0.025), pct(bs, 0.975), 10 ** x100, got[1],
           pct(ps, 0.025), pct(ps, 0.975), bad, DRAWS))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: width_fit.py DIR... (two widths at least)")
    widths = sorted(read(d) for d in sys.argv[1:])
    names = ["served gap", "f32-path gap"] + \
        ["recovered %s %%" % a for a in PLACED]
    settings = sorted(set().union(*(set(r) for _, r in widths)))
    rng = random.Random(1)
    for s in settings:
        print("\n%s" % s)
        pts = []  # (log10 params, [per-seed quantity lists])
        for c, rows in widths:
            seeds = rows.get(s, {})
            qs = [per_seed(seeds[k]) for k in sorted(seeds)]
            if not qs:
                continue
            pts.append((math.log10(params(c)), qs))
            cells = []
            for i in range(len(names)):
                v = [q[i] for q in qs]
                boot = [mean([rng.choice(v) for _ in v]) for _ in range(DRAWS)]
                fmt = "%+.4f [%+.4f, %+.4f]" if i < 2 else "%.0f [%.0f, %.0f]"
                cells.append(fmt % (mean(v), pct(boot, 0.025),
                                    pct(boot, 0.975)))
            print("  w%-4d %8d params, %d seeds: %s" %
                  (c, params(c), len(qs), "; ".join(
                      "%s %s" % (n, x) for n, x in zip(names, cells))))
            for k, q in zip(sorted(seeds), qs):
                print("    seed %d: %s" % (k, " ".join(
                    ("%+.4f" if i < 2 else "%.0f") % x
                    for i, x in enumerate(q))))
        if len(pts) < 2:
            continue
        xs = [p[0] for p in pts]
        x100 = max(xs) + 2.0
        for i, n in enumerate(names):
            a, b = line(xs, [mean([q[i] for q in p[1]]) for p in pts])
            bs, ps = [], []
            for _ in range(DRAWS):
                ys = []
                for _, qs in pts:
                    v = [q[i] for q in qs]
                    ys.append(mean([rng.choice(v) for _ in v]))
                ba, bb = line(xs, ys)
                bs.append(bb)
                ps.append(ba + bb * x100)
            fmt = "%+.4f" if i < 2 else "%+.1f"
            print(("  fit %-28s slope per decade " + fmt + " [" + fmt + ", " +
                   fmt + "]; at %.3g params " + fmt + " [" + fmt + ", " + fmt +
                   "]") % (n, b, pct(bs, 0.025), pct(bs, 0.975),
                           10 ** x100, a + b * x100, pct(ps, 0.025),
                           pct(ps, 0.975)))
            if i < 2:
                power(n, pts, i, xs, x100, rng)


if __name__ == "__main__":
    main()
