#!/usr/bin/env python3
"""Cost of the bridge's sharded path (Controller(sharded=True)) against
global gradient clipping on the same model and ranks: WORLD processes
(torch.distributed, gloo, CPU), each holding a ZeRO-2 style slice of the
gradients of GPT-2 124M's parameters (bench/foreach_norm.py's shapes: the
parameters flattened in order, one contiguous slice per rank; 14 units,
one per block plus the embeddings and the final LayerNorm).

Rows, each a median of --reps steps (all ranks start each step together;
the figure is the slowest rank's median):
  gnmr_torch step(), sharded   per-unit sums of squares of the local slices
                               (gnmr_unit_sumsq), one all_reduce of 14
                               float64, gnmr_step, scales (calm: none)
  global clip, sharded         what FSDP.clip_grad_norm_ does: local norms,
                               one all_reduce of a scalar, scale (max 1e9:
                               no scaling, as for the controller)
  clip_grad_norm_, local       torch.nn.utils.clip_grad_norm_ on the local
                               slices (no collective; not the global norm)
  all_reduce of 14 float64     the collective alone

usage: python3 bench/torch_dist.py [--world N] [--reps N] [--dtype f32|bf16]
       (after make libgnmr)
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "torch"))
import gnmr_torch  # noqa: E402
from foreach_norm import gpt2_shapes  # noqa: E402


def global_clip(grads, max_norm):
    """FSDP.clip_grad_norm_'s arithmetic over a rank's shards."""
    local = torch.stack([torch.linalg.vector_norm(g, dtype=torch.float32)
                         for g in grads])
    total = torch.linalg.vector_norm(local) ** 2
    dist.all_reduce(total)
    coef = torch.clamp(max_norm / (total.sqrt() + 1e-6), max=1.0)
    if coef < 1.0:
        torch._foreach_mul_(grads, coef)
    return total.sqrt()


def rank_main(rank, a, rendezvous):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + rendezvous,
                            rank=rank, world_size=a.world)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    shapes = gpt2_shapes()
    # Parameters are never read: empty() leaves their pages untouched.
    params = [torch.nn.Parameter(torch.empty(s, dtype=dtype))
              for s in shapes]
    total = sum(p.numel() for p in params)
    per = -(-total // a.world)
    lo, hi = min(rank * per, total), min((rank + 1) * per, total)
    torch.manual_seed(rank)
    flat = torch.randn(hi - lo).to(dtype)  # this rank's gradient slice
    views, off = {}, 0
    for p in params:
        x, y = max(off, lo), min(off + p.numel(), hi)
        views[p] = flat[x - lo:y - lo] if x < y else None
        off += p.numel()
    local = [v for v in views.values() if v is not None]
    holders = []  # clip_grad_norm_ reads .grad of parameters
    for v in local:
        q = torch.nn.Parameter(torch.empty(v.shape, dtype=dtype))
        q.grad = v
        holders.append(q)
    units = {"embed": params[:2]}
    for i in range(12):
        units["block%d" % i] = params[2 + 12 * i:14 + 12 * i]
    units["lnf"] = params[-2:]
    ctl = gnmr_torch.Controller(units, sharded=True, grad_of=views.get)
    small = torch.zeros(len(units), dtype=torch.float64)
    rows = [("gnmr_torch step(), sharded", lambda: ctl.step()),
            ("global clip, sharded (FSDP's)",
             lambda: global_clip(local, 1e9)),
            ("clip_grad_norm_, local slices",
             lambda: torch.nn.utils.clip_grad_norm_(holders, 1e9)),
            ("all_reduce of 14 float64", lambda: dist.all_reduce(small))]
    out = []
    for name, fn in rows:
        fn()
        times = []
        for _ in range(a.reps):
            dist.barrier()
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        med = torch.tensor([statistics.median(times) * 1e3])
        dist.all_reduce(med, op=dist.ReduceOp.MAX)
        out.append((name, float(med)))
    if rank == 0:
        mb = flat.numel() * flat.element_size() / 1e6
        print("torch_dist: %d ranks (gloo, CPU), %s, GPT-2 124M's %d "
              "tensors, %.0f MB of gradient per rank, torch %s, 1 thread a "
              "rank, median of %d, slowest rank" % (
                  a.world, a.dtype, len(shapes), mb, torch.__version__,
                  a.reps))
        for name, ms in out:
            print("  %-32s %9.2f ms" % (name, ms))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--dtype", default="f32")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        torch.multiprocessing.spawn(rank_main, args=(
            a, os.path.join(d, "rendezvous")), nprocs=a.world)


if __name__ == "__main__":
    main()
