#!/usr/bin/env python3
"""Times torch._foreach_norm (what torch.nn.utils.clip_grad_norm_ uses) on the
parameter lists bench/bench_norms_cuda.cu times the gnmr norm plan on: GPT-2
124M and LLaMA-7B (shapes from their configs), and single tensors of 256 MiB
and 1 GiB, in f32, bf16 and f16, one norm per tensor.

Each figure is the median of 15 timed calls (CUDA events), after two warm-up
calls. GB/s = 1e9 B/s of tensor data read. Skips cleanly (exit 0) where
PyTorch or a CUDA device is missing.

usage: python3 bench/foreach_norm.py [--case NAME]
"""
import statistics
import sys

REPS = 15


def gpt2_shapes():
    # Hugging Face gpt2: n_layer 12, n_embd 768, vocab_size 50257, n_positions 1024
    e, v, p, layers = 768, 50257, 1024, 12
    shapes = [(v, e), (p, e)]
    for _ in range(layers):
        shapes += [(e,), (e,), (e, 3 * e), (3 * e,), (e, e), (e,),
                   (e,), (e,), (e, 4 * e), (4 * e,), (4 * e, e), (e,)]
    return shapes + [(e,), (e,)]


def llama_shapes():
    # LLaMA-7B: dim 4096, n_layers 32, hidden 11008, vocab 32000
    d, h, v, layers = 4096, 11008, 32000, 32
    shapes = [(v, d)]
    for _ in range(layers):
        shapes += [(d, d)] * 4 + [(h, d), (d, h), (h, d), (d,), (d,)]
    return shapes + [(d,), (v, d)]


def main():
    try:
        import torch
    except ImportError:
        print("foreach_norm: PyTorch not installed, skipping")
        return 0
    if not torch.cuda.is_available():
        print("foreach_norm: no CUDA device for PyTorch, skipping")
        return 0
    only = sys.argv[sys.argv.index("--case") + 1] if "--case" in sys.argv else None
    dtypes = [("f32", torch.float32), ("bf16", torch.bfloat16),
              ("f16", torch.float16)]
    cases = [("gpt2-124m", gpt2_shapes()), ("llama-7b", llama_shapes()),
             ("single-256MiB", None), ("single-1GiB", None)]
    print(f"foreach_norm on {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, median of {REPS}\n")
    print("| case | dtype | tensors | MB | _foreach_norm ms | GB/s |")
    print("|---|---|---|---|---|---|")
    for name, shapes in cases:
        if only and name != only:
            continue
        for dname, dtype in dtypes:
            size = torch.tensor([], dtype=dtype).element_size()
            if shapes is None:
                nbytes = (256 << 20) if name == "single-256MiB" else (1 << 30)
                shapes_d = [(nbytes // size,)]
            else:
                shapes_d = shapes
            total = sum(torch.Size(s).numel() for s in shapes_d) * size
            free, _ = torch.cuda.mem_get_info()
            if total + (512 << 20) > free:
                print(f"| {name} | {dname} | {len(shapes_d)} | "
                      f"{total / 1e6:.0f} | skipped: {free >> 20} MiB free | |")
                continue
            ts = [torch.empty(s, dtype=dtype, device="cuda").normal_()
                  for s in shapes_d]
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            times = []
            for r in range(REPS + 2):
                start.record()
                torch._foreach_norm(ts)
                stop.record()
                stop.synchronize()
                if r >= 2:
                    times.append(start.elapsed_time(stop))
            ms = statistics.median(times)
            print(f"| {name} | {dname} | {len(ts)} | {total / 1e6:.0f} | "
                  f"{ms:.3f} | {total / (ms * 1e6):.0f} |")
            del ts
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
