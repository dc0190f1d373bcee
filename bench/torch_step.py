#!/usr/bin/env python3
"""Step overhead of the PyTorch bridge against what a PyTorch user runs
today: gnmr_torch.Controller.step() (per-unit norms, gnmr_step, scales
applied in place) against torch.nn.utils.clip_grad_norm_ and against
torch._foreach_norm (per-tensor norms only), on GPT-2 124M's parameter
shapes (bench/foreach_norm.py's list), one unit per block plus the
embeddings and the final LayerNorm (14 units).

Median of --reps timed calls after one warm-up; CUDA figures synchronise
before and after each call. The gradients are random and never change, so
every step is calm (scale 1: no gradient is written).

usage: python3 bench/torch_step.py [--device cpu|cuda] [--dtype f32|bf16|f16]
                                   [--reps N]   (run after make libgnmr)
"""
import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "torch"))
import gnmr_torch  # noqa: E402
from foreach_norm import gpt2_shapes  # noqa: E402


def timed(fn, reps, device):
    fn()
    out = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if torch.cuda.is_available()
                   else "cpu")
    p.add_argument("--dtype", default="f32")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16,
             "f16": torch.float16}[a.dtype]
    torch.manual_seed(0)
    params = []
    for s in gpt2_shapes():
        q = torch.nn.Parameter(torch.zeros(s, dtype=dtype, device=a.device))
        q.grad = torch.randn(s, device=a.device).to(dtype)
        params.append(q)
    units = {"embed": params[:2]}
    for i in range(12):
        units["block%d" % i] = params[2 + 12 * i:14 + 12 * i]
    units["lnf"] = params[-2:]
    ctl = gnmr_torch.Controller(units)
    grads = [q.grad for q in params]
    rows = [("gnmr_torch step() (14 units)", lambda: ctl.step()),
            ("clip_grad_norm_ (max 1e9)",
             lambda: torch.nn.utils.clip_grad_norm_(params, 1e9)),
            ("torch._foreach_norm", lambda: torch._foreach_norm(grads))]
    mb = sum(g.numel() * g.element_size() for g in grads) / 1e6
    print("torch_step: %s, %s, %d tensors, %.0f MB, torch %s, %d threads, "
          "median of %d" % (a.device, a.dtype, len(grads), mb,
                            torch.__version__, torch.get_num_threads(),
                            a.reps))
    for name, fn in rows:
        print("  %-30s %9.2f ms" % (name, timed(fn, a.reps, a.device)))


if __name__ == "__main__":
    main()
