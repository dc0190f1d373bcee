"""The bridge's cheap formats (gnmr_torch.round_format, quantize_nvfp4)
against lab/lowp.h, the C emulation the demos train with (tests/torch/
lowp_ref.c, build/torch_lowp): the same float32 bits on every value, the
formats' own values, ties, saturation, subnormals and specials included."""

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402

LOWP = os.path.join(ROOT, "build", "torch_lowp")


def c_quantize(fmt, x, cols=1):
    if not os.path.exists(LOWP):
        pytest.fail("%s missing: run `make test-torch`" % LOWP)
    x = x.float().contiguous()
    out = subprocess.run([LOWP, fmt, str(cols)],
                         input=x.numpy().tobytes(), stdout=subprocess.PIPE,
                         check=True).stdout
    return torch.frombuffer(bytearray(out), dtype=torch.float32).reshape(
        x.shape)


def same_bits(a, b):
    nan = torch.isnan(a)
    assert torch.equal(nan, torch.isnan(b))
    ia, ib = a.view(torch.int32), b.view(torch.int32)
    bad = (ia != ib) & ~nan
    assert not bool(bad.any()), "first difference at %s: %r vs %r" % (
        int(bad.nonzero()[0]), float(a[bad][0]), float(b[bad][0]))


def grid(fmt):
    """Every non-negative value of the format, and the midpoints between
    neighbours (the ties)."""
    mbits, emin, fmax, _ = G.FORMATS[fmt]
    vals = {m / 2 ** mbits * 2.0 ** emin for m in range(2 ** mbits)}
    e = emin
    while True:
        row = [(1 + m / 2 ** mbits) * 2.0 ** e for m in range(2 ** mbits)]
        vals.update(v for v in row if v <= fmax)
        if row[-1] >= fmax:
            break
        e += 1
    vals = sorted(vals)
    mids = [(a + b) / 2 for a, b in zip(vals, vals[1:])]
    return torch.tensor(vals), torch.tensor(mids)


def probes(seed=0):
    gen = torch.Generator().manual_seed(seed)
    mag = torch.pow(2.0, torch.rand(20000, generator=gen) * 60 - 30)
    x = torch.randn(20000, generator=gen) * mag
    tiny = torch.tensor([1e-45, -1e-40, 1e-38, 2.0 ** -126, 0.0, -0.0])
    big = torch.tensor([float("inf"), -float("inf"), float("nan"), 3e38,
                        -6.5, 6.0, 448.0, 464.0, 57344.0, 61440.0, 1e5])
    return torch.cat([x, tiny, big])


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1"])
def test_element_formats_equal_lowp_h(fmt):
    vals, mids = grid(fmt)
    mbits, emin, fmax, _ = G.FORMATS[fmt]
    assert torch.equal(G.round_format(vals, fmt, native=False), vals)
    assert torch.equal(G.round_format(-vals, fmt, native=False), -vals)
    x = torch.cat([vals, -vals, mids, -mids, probes()])
    got = G.round_format(x, fmt, native=False)
    same_bits(got, c_quantize(fmt, x))
    assert float(got.abs()[torch.isfinite(got)].max()) == fmax
    if G._NATIVE.get(fmt) is not None:  # torch >= 2.1: the cast agrees
        y = x[torch.isfinite(x)]
        assert torch.equal(G.round_format(y, fmt, native=False),
                           G.round_format(y, fmt, native=True))


def test_e2m1_values_and_ties():
    vals, mids = grid("e2m1")
    assert vals.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    # ties to even: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2,
    # 3.5 -> 4, 5 -> 4
    assert G.round_e2m1(mids).tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0,
                                           4.0]
    assert G.round_e2m1(torch.tensor([7.0, -1e9])).tolist() == [6.0, -6.0]
    assert G.round_e5m2(torch.tensor([1.0 + 1 / 8, 1e9])).tolist() == [
        1.0, 57344.0]


def test_nvfp4_blocks_equal_lowp_h():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(37, 40, generator=gen)  # 40: a block of 8 at row ends
    x[5, 17] = 300.0  # an outlier block: coarse there, fine elsewhere
    x[9, :16] *= 1e-9  # a block whose E4M3 scale rounds to 0: zeros
    got = G.quantize_nvfp4(x)
    same_bits(got, c_quantize("nvfp4", x, cols=40))
    assert float(got[9, :16].abs().max()) == 0.0
    assert float(got[5, 17]) == 300.0  # a block's amax is exact (6 * s)
    err = (got - x).norm() / x.norm()
    assert 0.01 < float(err) < 0.2, float(err)


@pytest.mark.parametrize("fmt", ["e5m2", "e2m1", "nvfp4"])
def test_cheap_path_in_each_format(fmt):
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 8)
    q = G.FP8Delayed(lin, fmt=fmt)
    x = torch.randn(4, 32, requires_grad=True)
    y = q(x)
    ref = lin(x)
    rel = float((y - ref).norm() / ref.norm())
    assert 0 < rel < (0.2 if fmt == "e5m2" else 0.6), rel
    t = torch.randn(4, 32, requires_grad=True)
    G._FakeQuant.apply(t, 1.0, fmt).sum().backward()  # straight through
    assert torch.equal(t.grad, torch.ones(4, 32))
    xq = q.quantize_input(x.detach())
    assert not torch.equal(xq, x.detach())
    with pytest.raises(ValueError, match="fmt"):
        G.FP8Delayed(lin, fmt="e3m4")
