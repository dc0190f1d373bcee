"""One rank of tests/torch/test_distributed.py (torch.distributed, gloo,
CPU): a small MLP trained STEPS steps of SGD on a fixed global batch with
an injected spike, the controller (gnmr_torch) deciding every step, once
under DDP and once with ZeRO-2 style sharded gradients; a checkpoint saved
on rank 0 after step RESTART and loaded into a fresh controller on every
rank, which carries on beside an uninterrupted twin; and DDP with forward
signals (the middle Linear behind an FP8 switch: each rank's forward sums
are all-reduced).

    python3 tests/torch/dist_run.py RANK WORLD OUTDIR    (one process per
    rank; they meet at OUTDIR/rendezvous)

Writes OUTDIR/{ddp,zero2,ddp_fwd}.RANK.json: per step each unit's norm,
decision (the raw gnmr_decision bytes and by name) and path next step;
run() with mode "single" is the one-process reference on the same global
batch."""

import json
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "examples", "torch"))
import gnmr_torch as G  # noqa: E402

STEPS, BATCH, RESTART, SPIKE = 40, 32, 20, 28
CONFIG = {"warmup_steps": 10, "max_recovering": 1}
MODES = ("ddp", "zero2", "ddp_fwd")


def model(fp8=False):
    """fp8: the middle Linear behind a PrecisionSwitch (FP8 E4M3 cheap
    path), for forward signals."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 32), torch.nn.Tanh(),
              torch.nn.Linear(32, 32), torch.nn.Tanh(),
              torch.nn.Linear(32, 1)]
    if fp8:
        layers[2] = G.PrecisionSwitch(G.FP8Delayed(layers[2]), layers[2])
    return torch.nn.Sequential(*layers)


def units(m):
    mid = m[2].high if isinstance(m[2], G.PrecisionSwitch) else m[2]
    return {"in": m[0].parameters(), "mid": mid.parameters(),
            "out": m[4].parameters()}


def global_batch(step):
    """The same BATCH samples on every rank and in the reference; at step
    SPIKE one sample's target is off by 100 (a data fault)."""
    gen = torch.Generator().manual_seed(100 + step)
    x = torch.randn(BATCH, 8, generator=gen)
    y = torch.sin(x.sum(1, keepdim=True))
    if step == SPIKE:
        y[3] += 100.0
    return x, y


class Zero2:
    """ZeRO-2 style gradients: the parameters flattened in order and cut
    into one contiguous slice per rank; each rank keeps the averaged
    gradient of its slice only (the full .grad tensors are dropped), updates
    that slice and all-gathers the parameters. gloo in torch 1.13 has no
    reduce_scatter: an all_reduce and a slice stand in for it."""

    def __init__(self, params, rank, world):
        self.params, self.world = list(params), world
        self.total = sum(p.numel() for p in self.params)
        self.per = -(-self.total // world)
        self.lo = min(rank * self.per, self.total)
        self.hi = min(self.lo + self.per, self.total)
        self.grad = torch.zeros(self.hi - self.lo)
        self.views, off = {}, 0
        for p in self.params:
            a, b = max(off, self.lo), min(off + p.numel(), self.hi)
            self.views[p] = self.grad[a - self.lo:b - self.lo] if a < b \
                else None
            off += p.numel()

    def grad_of(self, p):
        return self.views[p]

    def reduce(self):
        flat = torch.cat([p.grad.reshape(-1) for p in self.params])
        dist.all_reduce(flat)
        self.grad.copy_(flat[self.lo:self.hi] / self.world)
        for p in self.params:
            p.grad = None

    def step(self, lr):
        with torch.no_grad():
            flat = torch.cat([p.reshape(-1) for p in self.params])
            mine = torch.zeros(self.per)
            mine[:self.hi - self.lo] = flat[self.lo:self.hi] - lr * self.grad
            parts = [torch.zeros(self.per) for _ in range(self.world)]
            dist.all_gather(parts, mine)
            flat = torch.cat(parts)[:self.total]
            off = 0
            for p in self.params:
                p.copy_(flat[off:off + p.numel()].view_as(p))
                off += p.numel()


def record(res, ctl):
    return {"norms": [res.norms[n] for n in ctl.names],
            "raw": bytes(ctl._decisions).hex(),
            "action": [res.decisions[n].action for n in ctl.names],
            "flags": [res.decisions[n].flags for n in ctl.names],
            "scale": [res.decisions[n].scale for n in ctl.names],
            "recovering": list(res.recovering)}


def run(mode, rank=0, world=1, out=None, lr=0.1):
    """Trains STEPS steps; returns the per-step records and facts for the
    test: whether the restarted controller equalled its uninterrupted twin
    on every step after RESTART, and whether this rank held no part of
    some unit (sharded)."""
    fwd = mode == "ddp_fwd"
    m = model(fp8=fwd)
    lo, hi = rank * BATCH // world, (rank + 1) * BATCH // world
    kw, zero, net = {"forward_signals": fwd}, None, m
    if mode.startswith("ddp"):
        net = torch.nn.parallel.DistributedDataParallel(m)
    if mode == "zero2":
        zero = Zero2(m.parameters(), rank, world)
        kw.update(sharded=True, grad_of=zero.grad_of)
    opt = None if zero else torch.optim.SGD(m.parameters(), lr=lr)
    ctl = G.Controller(units(m), config=CONFIG, **kw)
    if fwd:
        ctl.attach("mid", m[2])
    twin, steps, twin_equal = None, [], True
    for step in range(STEPS):
        x, y = global_batch(step)
        if opt:
            opt.zero_grad(set_to_none=True)
        loss = ((net(x[lo:hi]) - y[lo:hi]) ** 2).mean()
        loss.backward()
        if zero:
            zero.reduce()
        res = ctl.step()
        steps.append(record(res, ctl))
        if twin is not None:
            twin.step(norms=[res.norms[n] for n in ctl.names], apply=False)
            twin_equal &= bytes(twin._decisions) == bytes(ctl._decisions)
        if zero:
            zero.step(lr)
        else:
            opt.step()
        if step + 1 == RESTART:
            twin, ctl = ctl, restart(ctl, m, mode, world, out, kw)
    twin_equal &= twin.checkpoint() == ctl.checkpoint()
    absent_here = bool(zero) and any(
        all(zero.grad_of(p) is None for p in ps) for ps in ctl.params)
    return {"steps": steps, "twin_equal": twin_equal,
            "holds_no_part_of_a_unit": absent_here,
            "slots": [zero.lo, zero.hi] if zero else None}


def restart(ctl, m, mode, world, out, kw):
    """Rank 0 saves the controller with torch.save; every rank loads that
    file into a controller made with another config (the checkpoint's
    config wins)."""
    if mode == "single":
        sd = ctl.state_dict()
    else:
        path = os.path.join(out, "%s.ckpt.pt" % mode)
        if dist.get_rank() == 0:
            torch.save({"gnmr": ctl.state_dict()}, path)
        dist.barrier()
        sd = torch.load(path)["gnmr"]
    fresh = G.Controller(units(m), config={"warmup_steps": 3}, **kw)
    fresh.load_state_dict(sd)
    if isinstance(m[2], G.PrecisionSwitch):
        fresh.attach("mid", m[2])
    return fresh


def main():
    rank, world, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method="file://" + os.path.join(out, "rendezvous"),
        rank=rank, world_size=world)
    for mode in MODES:
        r = run(mode, rank, world, out)
        with open(os.path.join(out, "%s.%d.json" % (mode, rank)), "w") as f:
            json.dump(r, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
