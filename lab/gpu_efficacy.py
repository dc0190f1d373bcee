"""gpu_efficacy.py - a closed loop at a size users train, through the PyTorch
bridge (examples/torch/gnmr_torch.py): a GPT-2-class byte-level model on the
text of Debian's fortunes package, FP4 emulated on every Linear's GEMM inputs
(gnmr_torch.FP8Delayed behind a PrecisionSwitch: E2M1 per tensor with
delayed scaling by default, or NVFP4), once per arm:

    f32           every GEMM in float32 (the reference)
    lowp          every GEMM on FP4, nothing else
    place-fwd-10  gnmr.h's placer told the plan (planned_steps), budget 10%
                  of the GEMM FLOPs, the forward GEMMs (gemms = FWD): the
                  placement for a model served in high precision
    place-bwd-10  the same with the backward GEMMs (gemms = DGRAD | WGRAD):
                  the forward stays on FP4, for a model served in FP4
    late-10       every GEMM in float32 for the last 10% of the steps (told)
    gnmr-fwd      the controller with forward signals
                  (Controller(forward_signals=True): gnmr_config_forward())

Every arm starts from the same weights and sees the same batches (AdamW,
betas 0.9/0.95, weight decay 0.1, warm-up then cosine to 10%, global clip
1.0). Each is evaluated twice on the held-out text (every 20th fortune, in
non-overlapping windows), in bits per byte:
    served    each Linear's forward on the path its last training step ran
              it (FP4 on the cheap path, float32 where it ran high)
    f32 path  every forward in float32
beside the share of the units' GEMM FLOPs that ran in float32. One seed:
a single run, no interval.

Writes, under --out (build/gpu-efficacy by default): log.txt, train.csv
(every logged step), results.csv and table.md (rewritten after each arm, so
a run cut short keeps the arms it finished). --budget-s S skips the arms
that would end past S seconds (said in the table; the exit status is then
3). --toy: the same code at a tiny size, on the CPU in seconds.

Usage (from the repository root, after `make libgnmr`; on a GPU the
Controller's norms use build/libgnmr_cuda.so, built where nvcc is):
    python3 lab/gpu_efficacy.py [--toy] [--device cuda|cpu] [--steps N]
        [--fmt e2m1|nvfp4] [--arms a,b] [--data DIR] [--out DIR]
        [--budget-s S]
"""

import argparse
import contextlib
import csv
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402
import train_char_gpt as D  # noqa: E402  (the model, the data, the lr)

ARMS = ("f32", "lowp", "place-fwd-10", "place-bwd-10", "late-10",
        "gnmr-fwd")
SERVING = {"f32": "f32", "lowp": "FP4", "place-fwd-10": "high",
           "place-bwd-10": "FP4", "late-10": "high", "gnmr-fwd": "as run"}
PLACE_GEMMS = {"place-fwd-10": G.GNMR_GEMM_FWD,
               "place-bwd-10": G.GNMR_GEMM_DGRAD | G.GNMR_GEMM_WGRAD}
BUDGET = 0.1  # the placers' budget and the late switch's share of steps
LN2 = math.log(2.0)

# (layers, d, heads, ctx, batch, steps, eval windows)
FULL = dict(layers=8, d=768, heads=12, ctx=256, batch=16, steps=800,
            eval_windows=0)  # 0: every held-out window
TOY = dict(layers=2, d=32, heads=2, ctx=32, batch=4, steps=30,
           eval_windows=16)


def params_of(model):
    return sum(p.numel() for p in model.parameters())


def flops_per_step(a):
    """GEMM FLOPs of one training step: 6 x in x out per Linear and token
    (the forward and the backward's two), and the attention's two batched
    products (4 ctx d per layer and token forward, three times that with
    the backward)."""
    d, L = a.d, a.layers
    linear = 6 * (L * (d * 3 * d + d * d + 2 * d * 4 * d) + d * 256)
    attn = 12 * L * a.ctx * d
    return a.batch * a.ctx * (linear + attn)


def unit_costs(units):
    """Per unit, 6 x in x out summed over its switches' Linears."""
    return {n: float(sum(6 * s.high.in_features * s.high.out_features
                         for s in sw)) for n, (_, sw) in units.items()}


def high_share(units, costs):
    """The share of the units' GEMM cost the coming step runs in float32:
    a switch high whole counts all three GEMMs, one placed per GEMM a
    third for each of its bits."""
    tot = run = 0.0
    for n, (_, sw) in units.items():
        for s in sw:
            c = 6.0 * s.high.in_features * s.high.out_features
            tot += c
            if s.high_fidelity_now:
                run += c
            else:
                run += c * bin(int(s.placed_gemms)).count("1") / 3.0
    return run / tot if tot else 0.0


def forward_high(s):
    """True if switch s's next forward GEMM reads float32 operands."""
    return bool(s.high_fidelity_now or
                (s.placed_gemms & G.GNMR_GEMM_FWD))


@torch.no_grad()
def evaluate(model, val, a, paths):
    """Bits per byte over the held-out windows (eval mode: no amax
    updates), each switch forced to paths[switch] (True: float32)."""
    model.eval()
    starts = list(range(0, len(val) - a.ctx - 1, a.ctx))
    if a.eval_windows:
        starts = starts[:a.eval_windows]
    total, count = 0.0, 0
    with contextlib.ExitStack() as stack:
        for s, high in paths.items():
            stack.enter_context(s.forced(high))
        for i in range(0, len(starts), a.batch):
            ix = starts[i:i + a.batch]
            x = torch.stack([val[j:j + a.ctx] for j in ix]).to(a.device)
            y = torch.stack([val[j + 1:j + a.ctx + 1] for j in ix]).to(
                a.device)
            total += model(x, y).item() * len(ix)
            count += len(ix)
    model.train()
    return total / count / LN2


def run_arm(arm, train, val, a, log, rows):
    torch.manual_seed(a.seed)
    model = D.GPT(a.layers, a.d, a.heads, a.ctx, fp8=True,
                  fmt=a.fmt).to(a.device)
    units = model.units()
    switches = model.switches()
    costs = unit_costs(units)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95),
                            weight_decay=0.1)
    gen = torch.Generator().manual_seed(a.seed + 1)
    ctl = pl = None
    if arm == "gnmr-fwd":
        ctl = G.Controller({n: p for n, (p, _) in units.items()},
                           forward_signals=True)
        for n, (_, sw) in units.items():
            ctl.attach(n, *sw)
    if arm in PLACE_GEMMS:
        pl = G.Placer({n: sw for n, (_, sw) in units.items()},
                      config={"budget": BUDGET, "planned_steps": a.steps,
                              "gemms": PLACE_GEMMS[arm]})
    late_from = a.steps - int(round(BUDGET * a.steps))
    high_sum, admitted, last_paths = 0.0, 0, None
    t0 = time.time()
    with contextlib.ExitStack() as stack:
        if arm == "f32":
            for s in switches:
                stack.enter_context(s.forced(True))
        for step in range(a.steps):
            if arm == "late-10" and step == late_from:
                for s in switches:
                    s.placed = True
            for g in opt.param_groups:
                g["lr"] = D.lr_at(step, a)
            share = high_share(units, costs)
            high_sum += share
            if step + 1 == a.steps:  # the path the last step runs
                last_paths = {s: forward_high(s) for s in switches}
            x, y = D.batch(train, gen, a.batch, a.ctx, a.device)
            loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if ctl is not None:
                admitted += len(ctl.step().admitted)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if pl is not None:
                pl.snapshot()
                opt.step()
                pl.step()
            else:
                opt.step()
            lv = loss.item()
            if step % a.log_every == 0 or step + 1 == a.steps:
                rows.append([arm, step, "%.5f" % lv, "%.4f" % share])
                log("%-13s step %5d/%d loss %.4f high %.3f %6.1fs" % (
                    arm, step + 1, a.steps, lv, share, time.time() - t0))
            if not math.isfinite(lv):
                log("%s: the loss is not finite at step %d" % (arm, step))
                break
        secs = time.time() - t0
        served = evaluate(model, val, a, last_paths or {
            s: forward_high(s) for s in switches})
        f32 = evaluate(model, val, a, {s: True for s in switches})
    n_high = sum(last_paths.values()) if last_paths else 0
    extra = ""
    if pl is not None:
        r = pl.report()
        extra = ("placer fired at step %d" % r["fired_step"]
                 if r["fired_step"] is not None else "placer did not fire")
    if ctl is not None:
        extra = "%d admissions" % admitted
    return {"arm": arm, "serving": SERVING[arm], "served": served,
            "f32": f32, "high": high_sum / max(1, a.steps),
            "seconds": secs, "high_at_end": n_high,
            "switches": len(switches), "note": extra}


def write_table(a, results, skipped, header):
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "serving", "served_bpb", "f32_path_bpb",
                    "high_flops", "seconds", "forward_high_at_end", "note"])
        for r in results:
            w.writerow([r["arm"], r["serving"], "%.4f" % r["served"],
                        "%.4f" % r["f32"], "%.4f" % r["high"],
                        "%.1f" % r["seconds"],
                        "%d/%d" % (r["high_at_end"], r["switches"]),
                        r["note"]])
    by = {r["arm"]: r for r in results}
    gap = None
    if "f32" in by and "lowp" in by:
        gap = by["lowp"]["served"] - by["f32"]["served"]
    lines = header + [
        "",
        "| arm | served as | served bpb | f32-path bpb | served gap "
        "recovered | GEMM FLOPs in f32 | forward f32 at the end | "
        "train s | note |",
        "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rec = "-"
        if gap and r["arm"] not in ("f32", "lowp"):
            rec = "%d%%" % round(100.0 * (by["lowp"]["served"] -
                                          r["served"]) / gap)
        lines.append("| %s | %s | %.4f | %.4f | %s | %.1f%% | %d/%d | %.1f "
                     "| %s |" % (r["arm"], r["serving"], r["served"],
                                 r["f32"], rec, 100.0 * r["high"],
                                 r["high_at_end"], r["switches"],
                                 r["seconds"], r["note"]))
    for arm, why in skipped:
        lines.append("| %s | %s | not run: %s | | | | | | |" % (
            arm, SERVING[arm], why))
    lines += ["",
              "served: each Linear's forward on the path its last training "
              "step ran (FP4 on the cheap path, f32 where it ran high); "
              "f32 path: every forward in f32. Gap recovered: (lowp - arm) "
              "/ (lowp - f32), served. One seed, no interval."]
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def device_line(a):
    if a.device.startswith("cuda"):
        name = torch.cuda.get_device_name(a.device)
        drv = ""
        try:
            drv = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version",
                 "--format=csv,noheader"], capture_output=True, text=True,
                timeout=20).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            drv = "?"
        return "%s, driver %s, CUDA %s, torch %s, TF32 off" % (
            name, drv, torch.version.cuda, torch.__version__)
    return "CPU (%d threads), torch %s" % (torch.get_num_threads(),
                                           torch.__version__)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--toy", action="store_true",
                   help="a tiny model and run (CPU, seconds)")
    p.add_argument("--device", default=None,
                   help="cuda or cpu (default: cuda if there is one)")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--fmt", default="e2m1", choices=("e2m1", "nvfp4"))
    p.add_argument("--data", default="/usr/share/games/fortunes")
    p.add_argument("--out", default=None,
                   help="default build/gpu-efficacy (--toy: "
                   "build/gpu-efficacy-toy)")
    p.add_argument("--seed", type=int, default=1)
    for k in ("layers", "d", "heads", "ctx", "batch", "steps",
              "eval_windows"):
        p.add_argument("--" + k.replace("_", "-"), type=int, default=None,
                       help="default %d (--toy: %d)" % (FULL[k], TOY[k]))
    p.add_argument("--lr", type=float, default=None,
                   help="peak learning rate (default 6e-4; --toy 3e-3)")
    p.add_argument("--warmup", type=int, default=None,
                   help="warm-up steps (default 5%% of the steps)")
    p.add_argument("--log-every", type=int, default=None)
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="skip the arms that would end past S seconds "
                   "(0: none)")
    a = p.parse_args(argv)
    base = TOY if a.toy else FULL
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.lr is None:
        a.lr = 3e-3 if a.toy else 6e-4
    if a.warmup is None:
        a.warmup = max(1, a.steps // 20)
    if a.log_every is None:
        a.log_every = 10 if a.toy else 50
    if a.device is None:
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    if a.out is None:
        a.out = os.path.join("build", "gpu-efficacy-toy" if a.toy
                             else "gpu-efficacy")
    a.arms = [x for x in a.arms.split(",") if x]
    bad = [x for x in a.arms if x not in ARMS]
    if bad:
        p.error("unknown arm(s) %s (arms: %s)" % (", ".join(bad),
                                                  ", ".join(ARMS)))
    if a.d % a.heads:
        p.error("--d %d: a multiple of --heads %d" % (a.d, a.heads))
    if a.steps < 10:
        p.error("--steps: at least 10")
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("gpu_efficacy: --device %s, but torch sees no GPU (--toy "
                 "--device cpu runs it small on the CPU)" % a.device)
    torch.set_num_threads(a.threads)
    # float32 GEMMs in float32, not TF32 (torch's default; said anyway)
    torch.set_float32_matmul_precision("highest")
    os.makedirs(a.out, exist_ok=True)
    logf = open(os.path.join(a.out, "log.txt"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    train, val = D.load_fortunes(a.data)
    torch.manual_seed(a.seed)
    n_params = params_of(D.GPT(a.layers, a.d, a.heads, a.ctx, fp8=False))
    fl = flops_per_step(a)
    evals = 2 * len(a.arms) * (len(val) // a.ctx if not a.eval_windows else
                               min(a.eval_windows, len(val) // a.ctx))
    total = fl * a.steps * len(a.arms) + fl / 3 * evals / a.batch
    header = [
        "# gpu-efficacy%s" % (" (toy)" if a.toy else ""),
        "",
        "- command: `python3 lab/gpu_efficacy.py %s`" % " ".join(
            sys.argv[1:] if argv is None else argv),
        "- device: %s" % device_line(a),
        "- model: %d layers, d %d, %d heads, ctx %d, byte vocabulary: %.1fM "
        "parameters" % (a.layers, a.d, a.heads, a.ctx, n_params / 1e6),
        "- data: %d training bytes, %d held-out bytes (%s)" % (
            len(train), len(val), a.data),
        "- cheap path: %s on every Linear's GEMM inputs (emulated); %d "
        "steps of %d x %d bytes, lr %g, seed %d" % (
            a.fmt.upper(), a.steps, a.batch, a.ctx, a.lr, a.seed),
        "- GEMM FLOPs: %.3g a step, %.3g for the run (%.0f s at 30 "
        "TFLOP/s)" % (fl, total, total / 30e12)]
    for line in header[2:]:
        log(line[2:])
    rows, results, skipped = [], [], []
    t_all = time.time()
    for i, arm in enumerate(a.arms):
        if a.budget_s and results:
            per = (time.time() - t_all) / len(results)
            if time.time() - t_all + 1.15 * per > a.budget_s:
                skipped += [(x, "over --budget-s %g" % a.budget_s)
                            for x in a.arms[i:]]
                log("budget: %s skipped (%.0f s spent, %.0f s an arm)" % (
                    ", ".join(a.arms[i:]), time.time() - t_all, per))
                break
        r = run_arm(arm, train, val, a, log, rows)
        results.append(r)
        log("%-13s served %.4f bpb, f32 path %.4f bpb, %.1f%% of GEMM "
            "FLOPs in f32, %.1f s %s" % (arm, r["served"], r["f32"],
                                         100 * r["high"], r["seconds"],
                                         r["note"]))
        write_table(a, results, skipped, header)
    write_table(a, results, skipped, header)
    with open(os.path.join(a.out, "train.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "step", "train_loss", "high_share"])
        w.writerows(rows)
    log("total %.1f s; wrote %s" % (time.time() - t_all,
                                    os.path.join(a.out, "table.md")))
    logf.close()
    return 0 if not skipped else 3


if __name__ == "__main__":
    sys.exit(main())
