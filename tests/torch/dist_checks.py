"""One rank of tests/torch/test_dist_checks.py (torch.distributed, gloo,
CPU): the distributed mistakes the bridge must catch rather than let pass,
each run on every rank, each rank writing what happened.

- fwd_before_init: a Controller with forward_signals=True built before
  init_process_group; under DDP its forward sums must still be all-reduced
  (decided at the first step).
- ddp_order, ddp_fewer, ddp_grouping, zero2_fewer, zero2_order: rank 1
  builds its units otherwise (another order, one unit fewer, another
  grouping; sharded: one unit fewer, another order); the first step must
  raise RankMismatch on every rank, not diverge, misread or hang.
- ddp_nan_after_reduce: NaN written into rank 1's gradient after DDP's
  all-reduce; check_decisions() after the step must raise on every rank.

    python3 tests/torch/dist_checks.py RANK WORLD OUTDIR [CASE,...]

Writes OUTDIR/checks.RANK.json: {case: {"error": class name, "text": ...}
or {"ok": what the case returns}}."""

import json
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_run as D  # noqa: E402
G = D.G


def local_batch(step, rank, world):
    x, y = D.global_batch(step)
    lo, hi = rank * D.BATCH // world, (rank + 1) * D.BATCH // world
    return x[lo:hi], y[lo:hi]


def train(m, ctl, rank, world, steps, after_backward=None, check=False):
    """DDP steps of SGD; returns each step's norms."""
    net = torch.nn.parallel.DistributedDataParallel(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    out = []
    for step in range(steps):
        x, y = local_batch(step, rank, world)
        opt.zero_grad(set_to_none=True)
        ((net(x) - y) ** 2).mean().backward()
        if after_backward:
            after_backward(step)
        res = ctl.step()
        if check:
            ctl.check_decisions()
        out.append([res.norms[n] for n in ctl.names])
        opt.step()
    return out


def fwd_before_init(rank, world, out):
    m = D.model(fp8=True)
    ctl = G.Controller(D.units(m), config=D.CONFIG, forward_signals=True)
    ctl.attach("mid", m[2])
    init(rank, world, out)
    return train(m, ctl, rank, world, 6)


def ddp_case(kind):
    def case(rank, world, out):
        m = D.model()
        units = D.units(m)
        if rank == 1:
            if kind == "order":
                units = {k: units[k] for k in ("mid", "in", "out")}
            elif kind == "fewer":
                del units["out"]
            else:  # grouping: mid's weight in "in", the names the same
                units = {"in": list(m[0].parameters()) + [m[2].weight],
                         "mid": [m[2].bias], "out": m[4].parameters()}
        return train(m, G.Controller(units, config=D.CONFIG), rank, world,
                     2)
    return case


def zero2_case(kind):
    def case(rank, world, out):
        return zero2(rank, world, kind)
    return case


def zero2(rank, world, kind):
    m = D.model()
    zero = D.Zero2(m.parameters(), rank, world)
    units = D.units(m)
    if rank == 1 and kind == "fewer":
        del units["out"]
    elif rank == 1:  # order: the same count, each sum added to another's
        units = {k: units[k] for k in ("out", "mid", "in")}
    ctl = G.Controller(units, config=D.CONFIG, sharded=True,
                       grad_of=zero.grad_of)
    x, y = local_batch(0, rank, world)
    ((m(x) - y) ** 2).mean().backward()
    zero.reduce()
    return ctl.step().norms


def ddp_nan_after_reduce(rank, world, out):
    m = D.model()
    ctl = G.Controller(D.units(m), config=D.CONFIG)

    def poison(step):
        if step == 12 and rank == 1:
            m[2].weight.grad[0, 0] = float("nan")

    return train(m, ctl, rank, world, 14, poison, check=True)


CASES = [("fwd_before_init", fwd_before_init),
         ("ddp_order", ddp_case("order")), ("ddp_fewer", ddp_case("fewer")),
         ("ddp_grouping", ddp_case("grouping")),
         ("zero2_fewer", zero2_case("fewer")),
         ("zero2_order", zero2_case("order")),
         ("ddp_nan_after_reduce", ddp_nan_after_reduce)]


def init(rank, world, out):
    dist.init_process_group(
        "gloo", init_method="file://" + os.path.join(out, "rendezvous"),
        rank=rank, world_size=world)


def main():
    rank, world, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
    torch.set_num_threads(1)
    got = {}
    for name, case in CASES:
        if only and name not in only:
            continue
        if not dist.is_initialized() and name != "fwd_before_init":
            init(rank, world, out)
        try:
            got[name] = {"ok": case(rank, world, out)}
        except G.RankMismatch as e:
            got[name] = {"error": type(e).__name__, "text": str(e)}
        with open(os.path.join(out, "checks.%d.json" % rank), "w") as f:
            json.dump(got, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
