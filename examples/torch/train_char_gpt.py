"""train_char_gpt.py - a small byte-level GPT on the text of Debian's fortunes
package, trained with FP8 E4M3 fake quantisation as the cheap path, once per
arm:

    none       FP8 throughout, nothing else
    clip       FP8, torch.nn.utils.clip_grad_norm_ (--clip)
    gnmr       FP8, gnmr.h through gnmr_torch: per-unit norms, scales
               applied, a unit in recovery runs its Linears in float32
    gnmr+clip  both (gnmr first)
    gnmr-fwd   gnmr with forward signals (Controller(forward_signals=True),
               so gnmr_config_forward()'s thresholds: the C demos' arm
               'forward', not their 'gnmr-fwd', which keeps the defaults)
    place      the cheap path, with gnmr.h's placer (gnmr_torch.Placer)
               choosing which units run float32 within --place budget=B
               (a share of the GEMM cost), from each unit's update norm
               against its weights' quantization error; try it on FP4
               (--fmt e2m1 or nvfp4)
    f32        float32 throughout (a reference; --arms f32,...)

--fmt: the cheap path's format, FP8 E4M3 by default (e5m2, e2m1: FP4,
nvfp4: FP4 with 1x16 block scales), every arm but f32.

Usage (from the repository root, after `make libgnmr`):
    python3 examples/torch/train_char_gpt.py [--steps N] [--arms a,b]
        [--data DIR] [--out DIR] [--device cpu|cuda] [--gnmr key=value]
        [--fmt e4m3|e5m2|e2m1|nvfp4] [--place key=value] [--ddp N]

--ddp N: N processes on this machine (torch.distributed, gloo, CPU), the
model under DistributedDataParallel, each rank on its 1/N of the global
batch of --batch windows; the controller is the same code, and every rank
makes the same decisions (checked at the end over a digest of every
step's decisions). Rank 0 prints and writes the outputs.

Data as lab/train_lm.c reads it: every regular file without a '.' in
its name, in name order, split at the "%" lines; fortune k (counted over all
files) is validation if k % 20 == 0. Every arm starts from the same weights
and sees the same batches. Writes DIR/train_char_gpt.csv and DIR/loss.svg
(and loss.png where matplotlib is installed) and prints each arm's
validation loss (nats per byte, on the FP8 path, every arm alike).
"""

import argparse
import csv
import hashlib
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gnmr_torch  # noqa: E402

VAL_EVERY = 20


def load_fortunes(d):
    names = sorted(n for n in os.listdir(d) if "." not in n
                   and os.path.isfile(os.path.join(d, n)))
    if not names:
        sys.exit("no fortune files in %s. Debian/Ubuntu: apt-get install "
                 "fortunes, or --data DIR with files of %%-separated text" % d)
    train, val, k = bytearray(), bytearray(), 0
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            for line in f:
                if line == b"%\n":
                    k += 1
                    continue
                (val if k % VAL_EVERY == 0 else train).extend(line)
        k += 1  # a file's last fortune has no "%" after it
    return (torch.tensor(list(train), dtype=torch.long),
            torch.tensor(list(val), dtype=torch.long))


# ---- the model --------------------------------------------------------------

class CheapPathFault(nn.Module):
    """A fault of the cheap path (--stress): while .fault is (channel,
    factor), that channel of the input the FP8 Linear reads is multiplied by
    factor, as a low-precision path that mishandles its input would. The
    forward only: the gradient that flows upstream is not scaled (the
    Linear's own weight gradient, dW = dY^T X, sees the bad X). The float32
    path never sees it, so a unit in recovery is rid of it."""

    def __init__(self, cheap):
        super().__init__()
        self.cheap = cheap
        self.fault = None

    def forward(self, x):
        if self.fault is not None:
            c, factor = self.fault
            bump = torch.zeros_like(x)
            bump[..., c] = x[..., c].detach() * (factor - 1.0)
            x = x + bump
        return self.cheap(x)


def switched(lin, fp8, faults=False, fmt="e4m3"):
    """lin alone, or the precision switch: the cheap format (FP8 E4M3 by
    default) normally, lin itself (float32) while its unit recovers or is
    placed high; with faults, the cheap path can be given one."""
    if not fp8:
        return lin
    cheap = gnmr_torch.FP8Delayed(lin, fmt=fmt)
    return gnmr_torch.PrecisionSwitch(
        CheapPathFault(cheap) if faults else cheap, lin)


class Block(nn.Module):
    def __init__(self, d, heads, fp8, fmt="e4m3"):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv_lin, self.proj_lin = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc_lin, self.out_lin = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.qkv = switched(self.qkv_lin, fp8, fmt=fmt)
        self.proj = switched(self.proj_lin, fp8, fmt=fmt)
        self.fc = switched(self.fc_lin, fp8, faults=True, fmt=fmt)
        self.out = switched(self.out_lin, fp8, fmt=fmt)

    @property
    def fault(self):
        return self.fc.cheap.fault if fp8_switch(self.fc) else None

    @fault.setter
    def fault(self, f):
        """(channel, factor) or None: a fault on the FP8 path of the MLP's
        first Linear (none where the block runs float32 throughout)."""
        if fp8_switch(self.fc):
            self.fc.cheap.fault = f

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def fp8_switch(m):
    return isinstance(m, gnmr_torch.PrecisionSwitch)


class GPT(nn.Module):
    def __init__(self, layers, d, heads, ctx, fp8, fmt="e4m3"):
        super().__init__()
        self.tok, self.pos = nn.Embedding(256, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, fp8, fmt)
                                    for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head_lin = nn.Linear(d, 256, bias=False)
        self.head = switched(self.head_lin, fp8, fmt=fmt)
        # uint8, not bool: DDP broadcasts buffers, and gloo has no bool
        self.register_buffer("mask", torch.ones(ctx, ctx).triu(1).to(
            torch.uint8))

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1],
                                                  device=idx.device))
        mask = self.mask.bool()
        for b in self.blocks:
            x = b(x, mask)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, 256), targets.view(-1))

    def units(self):
        """The recoverable units: each block's attention and MLP (their
        LayerNorm with them) and the head, each to the parameters whose
        gradient norm it watches and the switches it flips. The embeddings
        have no cheap path (a lookup), so they are no unit: watched, they
        would win admissions they cannot use."""
        u = {}
        for i, b in enumerate(self.blocks):
            u["blocks.%d.attn" % i] = (
                list(b.ln1.parameters()) + list(b.qkv_lin.parameters())
                + list(b.proj_lin.parameters()), [b.qkv, b.proj])
            u["blocks.%d.mlp" % i] = (
                list(b.ln2.parameters()) + list(b.fc_lin.parameters())
                + list(b.out_lin.parameters()), [b.fc, b.out])
        u["head"] = (list(self.lnf.parameters()) + [self.head_lin.weight],
                     [self.head])
        return u

    def switches(self):
        return [m for m in self.modules()
                if isinstance(m, gnmr_torch.PrecisionSwitch)]


# ---- training ---------------------------------------------------------------

def batch(data, gen, n, ctx, device):
    ix = torch.randint(len(data) - ctx - 1, (n,), generator=gen)
    x = torch.stack([data[i:i + ctx] for i in ix])
    y = torch.stack([data[i + 1:i + ctx + 1] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def evaluate(model, val, a):
    """Mean loss over a fixed set of validation windows, on the FP8 path
    for every switch (as deployed), in eval mode (no amax updates)."""
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    total = 0.0
    switches = model.switches()
    for s in switches:
        s._forced = False
    for _ in range(a.eval_batches):
        x, y = batch(val, gen, a.batch, a.ctx, a.device)
        total += model(x, y).item()
    for s in switches:
        s._forced = None
    model.train()
    return total / a.eval_batches


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    p = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def bar(arm, step, total, loss, t0, extra=""):
    w = 24
    done = int(w * step / total)
    sys.stderr.write("\r%-10s [%s%s] %4d/%d loss %.3f %5.1fs %s" % (
        arm, "#" * done, "." * (w - done), step, total, loss,
        time.time() - t0, extra))
    sys.stderr.flush()


def stress_schedule(a):
    """--stress K: K outlier faults, FAULT_STEPS steps each, none in the
    first 20% of the run, one at a time: the FP8 path of a random block's
    MLP reads one channel of its input multiplied by --stress-factor (the
    same schedule in every arm; CheapPathFault). Returns {step: (block,
    channel, factor)}."""
    gen = torch.Generator().manual_seed(a.seed + 7)
    first = a.steps // 5
    span = (a.steps - first) // max(1, a.stress)
    events = {}
    for k in range(a.stress):
        start = first + k * span + int(torch.randint(
            max(1, span - FAULT_STEPS), (1,), generator=gen))
        block = int(torch.randint(a.layers, (1,), generator=gen))
        chan = int(torch.randint(a.d, (1,), generator=gen))
        for t in range(start, min(start + FAULT_STEPS, a.steps)):
            events[t] = (block, chan, a.stress_factor)
    return events


FAULT_STEPS = 8


def run_arm(arm, train, val, a, rows, rank=0, world=1):
    torch.manual_seed(a.seed)
    model = GPT(a.layers, a.d, a.heads, a.ctx, fp8=(arm != "f32"),
                fmt=a.fmt).to(a.device)
    net = model
    if world > 1:  # DDP: after backward every rank holds the same gradients
        net = nn.parallel.DistributedDataParallel(model)
    lo, hi = rank * a.batch // world, (rank + 1) * a.batch // world
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95),
                            weight_decay=0.1)
    gen = torch.Generator().manual_seed(a.seed + 1)
    ctl = None
    digest = hashlib.sha256()
    if arm.startswith("gnmr"):
        units = model.units()
        ctl = gnmr_torch.Controller({n: p for n, (p, _) in units.items()},
                                    config=a.gnmr,
                                    forward_signals=(arm == "gnmr-fwd"))
        for n, (_, sw) in units.items():
            if sw:
                ctl.attach(n, *sw)
    pl = None
    if arm == "place":  # units and their switches as the controller's
        pl = gnmr_torch.Placer({n: sw for n, (_, sw) in
                                model.units().items()}, config=a.place)
    t0 = time.time()
    val_loss = float("nan")
    admissions = 0
    faults = stress_schedule(a)
    for step in range(a.steps):
        for i, b in enumerate(model.blocks):
            f = faults.get(step)
            b.fault = (f[1], f[2]) if f and f[0] == i else None
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = batch(train, gen, a.batch, a.ctx, a.device)
        loss = net(x[lo:hi], y[lo:hi])  # this rank's part of the batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        rec, flagged = "", ""
        if ctl is not None:
            res = ctl.step()  # norms, gnmr_step, scales applied in place
            digest.update(bytes(ctl._decisions))
            admissions += len(res.admitted)
            rec, flagged = "|".join(res.recovering), "|".join(res.flagged)
        if arm.endswith("clip"):
            gn = float(nn.utils.clip_grad_norm_(model.parameters(), a.clip))
        else:
            gn = float(torch.norm(torch.stack([
                p.grad.detach().float().norm() for p in model.parameters()
                if p.grad is not None])))
        placed = ""
        if pl is not None:
            pl.snapshot()  # W_t and ||Q(W_t) - W_t||
            opt.step()
            placed = "|".join(pl.step())  # float32 next step
            digest.update(bytes(pl.high))
        else:
            opt.step()
        last = step + 1 == a.steps
        if last or (a.eval_every and (step + 1) % a.eval_every == 0):
            for b in model.blocks:
                b.fault = None  # a training step's fault, not evaluation's
            val_loss = evaluate(model, val, a)
        rows.append([arm, step, "%.5f" % loss.item(), "%.5f" % gn,
                     "%.5f" % val_loss if (last or (
                         a.eval_every and (step + 1) % a.eval_every == 0))
                     else "", rec, flagged, placed])
        if not math.isfinite(loss.item()):
            print("\n%s: the loss is not finite at step %d" % (arm, step))
            break
        if rank == 0 and (step % 5 == 0 or last):
            bar(arm, step + 1, a.steps, loss.item(), t0,
                "recovering %s" % rec if rec else
                "placed %s" % placed if placed else "")
    if rank == 0:
        sys.stderr.write("\n")
    if pl is not None and rank == 0:
        r = pl.report()
        gemms = "" if pl.gemms == gnmr_torch.GNMR_GEMM_ALL else " (%s)" % (
            "+".join(nm for bit, nm in ((gnmr_torch.GNMR_GEMM_FWD, "fwd"),
                                        (gnmr_torch.GNMR_GEMM_DGRAD, "dgrad"),
                                        (gnmr_torch.GNMR_GEMM_WGRAD, "wgrad"))
                     if pl.gemms & bit))
        print("%s: %s" % (arm, "the placer fired at step %d; float32%s on "
                          "the last step: %s (share of the GEMM cost %.3f)"
                          % (r["fired_step"], gemms, placed or "none",
                             r["high_share"])
                          if r["fired_step"] is not None else
                          "the placer has not fired (all cheap)"))
    if world > 1 and (ctl is not None or pl is not None):
        digests = [None] * world
        torch.distributed.all_gather_object(digests, digest.hexdigest())
        if len(set(digests)) != 1:
            raise SystemExit("%s: the ranks' decisions differ: %s" % (
                arm, digests))
        if rank == 0:
            print("%s: decisions identical on %d ranks (sha256 %s...)" % (
                arm, world, digests[0][:16]))
    return val_loss, time.time() - t0, admissions


def svg_plot(path, rows, arms):
    """Training loss (a moving average of 10 steps) per arm, by hand."""
    W, H, L, B = 640, 360, 64, 42
    series = {}
    for arm in arms:
        ys = [float(r[2]) for r in rows if r[0] == arm]
        ys = [y for y in ys if math.isfinite(y)]
        sm = [sum(ys[max(0, i - 9):i + 1]) / len(ys[max(0, i - 9):i + 1])
              for i in range(len(ys))]
        if sm:
            series[arm] = sm
    if not series:
        return
    n = max(len(s) for s in series.values())
    lo = min(min(s) for s in series.values())
    hi = max(max(s) for s in series.values())
    hi = hi if hi > lo else lo + 1

    def xy(i, y):
        return (L + (W - L - 10) * i / max(1, n - 1),
                H - B - (H - B - 10) * (y - lo) / (hi - lo))

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (
               L, H - B, W - 10, H - B),
           '<line x1="%d" y1="10" x2="%d" y2="%d" stroke="black"/>' % (
               L, L, H - B)]
    for k in range(5):
        y = lo + (hi - lo) * k / 4
        _, py = xy(0, y)
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (
            L - 4, py + 4, y))
        px, _ = xy((n - 1) * k / 4, lo)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (px, H - B + 14, round((n - 1) * k / 4)))
    out.append('<text x="%d" y="%d" text-anchor="middle">step</text>' % (
        (L + W - 10) // 2, H - 8))
    out.append('<text x="14" y="%d" text-anchor="middle" '
               'transform="rotate(-90 14 %d)">training loss (nats per byte, '
               'mean of 10 steps)</text>' % ((H - B) // 2, (H - B) // 2))
    for j, (arm, s) in enumerate(series.items()):
        pts = " ".join("%.1f,%.1f" % xy(i, y) for i, y in enumerate(s))
        c = colors[j % len(colors)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" '
                   'points="%s"/>' % (c, pts))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (
            W - 120, 20 + 14 * j, c, arm))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--arms", default="none,clip,gnmr,gnmr+clip")
    p.add_argument("--data", default="/usr/share/games/fortunes")
    p.add_argument("--out", default="build/demo-torch")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available()
                   else "cpu")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (1: on 2 shared cores, 2 threads ran\n"
                   "8x slower than 1, spinning against other work)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ctx", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=0,
                   help="validation every N steps (0: at the end only)")
    p.add_argument("--eval-batches", type=int, default=8)
    p.add_argument("--stress", type=int, default=0, metavar="K",
                   help="K injected faults (8 steps each): an outlier "
                   "channel on the FP8 path of a block's MLP")
    p.add_argument("--stress-factor", type=float, default=1000.0)
    p.add_argument("--ddp", type=int, default=1, metavar="N",
                   help="N processes, DistributedDataParallel over gloo "
                   "(CPU)")
    p.add_argument("--gnmr", action="append", default=[],
                   metavar="FIELD=VALUE",
                   help="a gnmr_config field over gnmr_config_default()")
    p.add_argument("--fmt", default="e4m3",
                   choices=sorted(gnmr_torch.FORMATS),
                   help="the cheap path's format")
    p.add_argument("--place", action="append", default=[],
                   metavar="FIELD=VALUE",
                   help="a gnmr_place_config field over\n"
                   "gnmr_place_config_default() (the place arm)")
    a = p.parse_args(argv)
    a.gnmr, a.place = fields(a.gnmr), fields(a.place)
    return a


def fields(pairs):
    cfg = {}
    for kv in pairs:
        k, _, v = kv.partition("=")
        try:
            v = int(v)
        except ValueError:
            try:
                v = float(v)
            except ValueError:
                pass
        cfg[k] = v
    return cfg


ARMS = ("none", "clip", "gnmr", "gnmr+clip", "gnmr-fwd", "place", "f32")


def main(argv=None):
    a = parse_args(argv)
    arms = [x for x in a.arms.split(",") if x]
    for arm in arms:
        if arm not in ARMS:
            sys.exit("unknown arm %r (arms: %s)" % (arm, ", ".join(ARMS)))
    if a.ddp < 1 or a.batch % a.ddp:
        sys.exit("--ddp %d: a number of ranks that divides --batch %d"
                 % (a.ddp, a.batch))
    os.makedirs(a.out, exist_ok=True)
    if a.ddp == 1:
        return run(0, a, arms)
    if a.device != "cpu":
        sys.exit("--ddp: CPU only (gloo); add --device cpu")
    rendezvous = os.path.abspath(os.path.join(a.out, "ddp-rendezvous"))
    if os.path.exists(rendezvous):
        os.remove(rendezvous)
    torch.multiprocessing.spawn(run, args=(a, arms, rendezvous),
                                nprocs=a.ddp)


def run(rank, a, arms, rendezvous=None):
    torch.set_num_threads(a.threads)
    world = a.ddp
    if world > 1:
        torch.distributed.init_process_group(
            "gloo", init_method="file://" + rendezvous, rank=rank,
            world_size=world)
    train, val = load_fortunes(a.data)
    if rank == 0:
        print("data: %d train bytes, %d validation bytes; device %s, torch "
              "%s, %d threads%s" % (
                  len(train), len(val), a.device, torch.__version__,
                  torch.get_num_threads(),
                  ", %d ranks (DDP, gloo)" % world if world > 1 else ""))
    rows, results = [], []
    t_all = time.time()
    for arm in arms:
        v, secs, adm = run_arm(arm, train, val, a, rows, rank, world)
        results.append((arm, v, secs, adm))
    if world > 1:
        torch.distributed.destroy_process_group()
    if rank != 0:
        return
    csv_path = os.path.join(a.out, "train_char_gpt.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "step", "train_loss", "grad_norm", "val_loss",
                    "recovering", "flagged", "placed"])
        w.writerows(rows)
    svg_plot(os.path.join(a.out, "loss.svg"), rows, arms)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for arm in arms:
            plt.plot([float(r[2]) for r in rows if r[0] == arm], label=arm,
                     lw=0.8)
        plt.xlabel("step")
        plt.ylabel("train loss (nats/byte)")
        plt.legend()
        plt.savefig(os.path.join(a.out, "loss.png"), dpi=100)
    except ImportError:
        pass
    print("%-10s %10s %8s %10s" % ("arm", "val loss", "seconds",
                                   "admitted"))
    for arm, v, secs, adm in results:
        print("%-10s %10.4f %8.1f %10s" % (arm, v, secs,
                                           adm if arm.startswith("gnmr")
                                           else "-"))
    print("total %.1f s; wrote %s and %s" % (
        time.time() - t_all, csv_path, os.path.join(a.out, "loss.svg")))


if __name__ == "__main__":
    main()
