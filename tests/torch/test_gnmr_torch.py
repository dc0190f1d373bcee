"""Tests of examples/torch/gnmr_torch.py (make test-torch: builds
build/libgnmr.so and build/torch_replay, then runs these with pytest).

The reference is gnmr.h itself: tests/torch/replay.c compiles its own copy of
the controller and replays the same norms; the Python bridge must give the
same decisions, bit for bit, and resume from its state_dict as if never
interrupted. CUDA cases skip without a GPU (or without build/
libgnmr_cuda.so)."""

import ctypes
import gzip
import os
import struct
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402

REPLAY = os.path.join(ROOT, "build", "torch_replay")
TRACES = os.path.join(ROOT, "bench", "data")
STEPS = 600  # rows of each trace replayed: about a second per case


def read_trace(name, steps=STEPS):
    """The per-tensor norms of a real run (bench/data/README.md): a list of
    rows of float32-rounded floats, and the tensor names."""
    with gzip.open(os.path.join(TRACES, name), "rt") as f:
        header = f.readline().strip().split(",")[2:]
        rows = []
        for line in f:
            rows.append([struct.unpack("f", struct.pack("f", float(x)))[0]
                         for x in line.strip().split(",")[2:]])
            if len(rows) == steps:
                break
    return header, rows


def run_c(cfg, rows, save_at):
    """gnmr.h's controller in tests/torch/replay.c over rows: per step the
    raw decisions and the recovering flags, and the checkpoint bytes."""
    if not os.path.exists(REPLAY):
        pytest.fail("%s missing: run `make test-torch`" % REPLAY)
    n = len(rows[0])
    data = bytes(cfg) + struct.pack("III", n, len(rows), save_at)
    data += b"".join(struct.pack("%df" % n, *r) for r in rows)
    out = subprocess.run([REPLAY], input=data, stdout=subprocess.PIPE,
                         check=True).stdout
    per = n * ctypes.sizeof(G.DecisionC) + 4 * n
    steps = []
    for t in range(len(rows)):
        chunk = out[t * per:(t + 1) * per]
        steps.append((chunk[:n * ctypes.sizeof(G.DecisionC)],
                      list(struct.unpack("%di" % n,
                                         chunk[n * ctypes.sizeof(
                                             G.DecisionC):]))))
    rest = out[len(rows) * per:]
    (length,) = struct.unpack("Q", rest[:8])
    return steps, rest[8:8 + length]


def py_replay(ctl, rows):
    """The bridge over rows: per step the raw decision bytes and the
    recovering flags, as run_c gives them."""
    steps = []
    for r in rows:
        res = ctl.step(norms=r, apply=False)
        rec = [1 if n in res.recovering else 0 for n in ctl.names]
        steps.append((bytes(ctl._decisions), rec))
    return steps


CONFIGS = [
    # The library's defaults, whatever gnmr_config_default() is today.
    ("default", {"max_recovering": 4}),
    ("noise", {"rule": "NOISE", "max_recovering": 4, "warmup_steps": 20}),
    ("paper", {"rule": "PAPER", "max_recovering": 2, "warmup_steps": 16,
               "ratio_threshold": 1.3, "delta_threshold": 0.2}),
    # rule 10 narrow enough to act on these traces
    ("band", {"band_k": 1.0, "max_recovering": 4, "ratio_threshold": 1.3}),
]
TRACE_FILES = ["trace_fp8_lr1e-3.csv.gz", "trace_bf16_lr2e-2_w10.csv.gz"]


def make_ctl(names, overrides):
    return G.Controller(list(names), config=overrides)


@pytest.mark.parametrize("trace", TRACE_FILES)
@pytest.mark.parametrize("label,overrides", CONFIGS)
def test_decisions_equal_c_controller(trace, label, overrides):
    names, rows = read_trace(trace)
    ctl = make_ctl(names, overrides)
    c_steps, c_ckpt = run_c(ctl.config, rows, save_at=len(rows))
    p_steps = py_replay(ctl, rows)
    flagged = 0
    for t, (c, p) in enumerate(zip(c_steps, p_steps)):
        assert p[0] == c[0], "%s/%s: decisions differ at step %d" % (
            trace, label, t)
        assert p[1] == c[1], "recovering differs at step %d" % t
        flagged += sum(1 for u in range(len(names))
                       if G.DecisionC.from_buffer_copy(
                           p[0], u * ctypes.sizeof(G.DecisionC)).flags
                       & ~G_WARMUP)
    assert ctl.checkpoint() == c_ckpt
    # Not a vacuous comparison: the replay exercised the rules.
    assert flagged > 0, "%s/%s flagged nothing" % (trace, label)


G_WARMUP = 1 << 5


@pytest.mark.parametrize("label,overrides", CONFIGS)
def test_state_dict_resumes_bit_identically(label, overrides, tmp_path):
    names, rows = read_trace("trace_bf16_lr2e-2_w10.csv.gz")
    half = len(rows) // 2
    whole = make_ctl(names, overrides)
    ref = py_replay(whole, rows)
    first = make_ctl(names, overrides)
    py_replay(first, rows[:half])
    path = tmp_path / "ckpt.pt"
    torch.save({"gnmr": first.state_dict()}, str(path))
    second = make_ctl(names, {})  # its config comes from the checkpoint
    try:  # what torch >= 2.6 does by default: no pickled objects
        loaded = torch.load(str(path), weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        loaded = torch.load(str(path))
    second.load_state_dict(loaded["gnmr"])
    assert G.config_dict(second.config) == G.config_dict(first.config)
    assert py_replay(second, rows[half:]) == ref[half:]
    assert second.checkpoint() == whole.checkpoint()
    # And the C controller's checkpoint at the same step is the same bytes.
    _, c_ckpt = run_c(first.config, rows, save_at=half)
    assert first.checkpoint() == c_ckpt


def small_model(dtype=torch.float32, device="cpu"):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 4)).to(device, dtype)
    return m


def test_cpu_norms_equal_gnmr_unit_norms_all_dtypes_and_views():
    lib = G.load_library()
    for dtype, code in [(torch.float32, G.DTYPE_F32),
                        (torch.float16, G.DTYPE_F16),
                        (torch.bfloat16, G.DTYPE_BF16)]:
        torch.manual_seed(1)
        base = torch.randn(37, 129).to(dtype)
        p1 = torch.nn.Parameter(torch.zeros(129, 37, dtype=dtype))
        p1.grad = base.t()  # non-contiguous
        p2 = torch.nn.Parameter(torch.zeros(5000, dtype=dtype))
        p2.grad = torch.randn(10001).to(dtype)[1::2]  # odd offset, strided
        p3 = torch.nn.Parameter(torch.zeros(3, dtype=dtype))  # no grad
        ctl = G.Controller({"a": [p1, p3], "b": [p2]})
        got = ctl.unit_norms()
        keep = [p1.grad.contiguous(), p2.grad.contiguous()]
        arr = (G.Tensor * 2)(G.Tensor(keep[0].data_ptr(), keep[0].numel(),
                                      code, 0),
                             G.Tensor(keep[1].data_ptr(), keep[1].numel(),
                                      code, 1))
        want = (ctypes.c_float * 2)()
        assert lib.gnmr_unit_norms(arr, 2, want, 2) == 0
        assert got == list(want)
        # and close to torch's own norm (a sanity check, not the reference)
        ref = torch.stack([p1.grad.double().norm(), p2.grad.double().norm()])
        assert torch.allclose(torch.tensor(got, dtype=torch.float64), ref,
                              rtol=1e-6)


def test_step_applies_scales_and_zeroes_nonfinite():
    m = small_model()
    ctl = G.Controller({"first": m[0].parameters(),
                        "last": m[2].parameters()})
    x = torch.randn(8, 16)
    m(x).sum().backward()
    m[2].weight.grad[0, 0] = float("nan")
    before = m[0].weight.grad.clone()
    res = ctl.step()
    assert res.decisions["last"].scale == 0.0
    assert "NONFINITE" in res.decisions["last"].flag_names
    assert all(bool((p.grad == 0).all()) for p in m[2].parameters())
    assert torch.equal(m[0].weight.grad, before)  # calm: scale 1
    assert res.report.flagged == 1


def test_named_parameters_mapping():
    m = small_model()
    ctl = G.Controller(lambda name: "w" if name.endswith("weight") else None,
                       named_parameters=m.named_parameters())
    assert ctl.names == ["w"] and len(ctl.params[0]) == 2
    ctl2 = G.Controller({"0.weight": "a", "2.weight": "b", "2.bias": "b"},
                        named_parameters=m.named_parameters())
    assert ctl2.names == ["a", "b"] and len(ctl2.params[1]) == 2


def test_bad_input_raises_and_changes_nothing():
    names, rows = read_trace("trace_fp8_lr1e-3.csv.gz", steps=30)
    ctl = make_ctl(names, {"warmup_steps": 5})
    for r in rows:
        ctl.step(norms=r, apply=False)
    state = ctl.checkpoint()
    good = rows[-1]
    bad = [
        (good[:-1], ValueError),                 # wrong unit count
        (good + [1.0], ValueError),
        (good[:3] + [-1.0] + good[4:], G.GnmrError),  # negative norm
        (good[:3] + [None] + good[4:], TypeError),
        (good[:3] + ["x"] + good[4:], ValueError),
        (5, TypeError),
    ]
    for norms, exc in bad:
        with pytest.raises(exc):
            ctl.step(norms=norms, apply=False)
        assert ctl.checkpoint() == state
    with pytest.raises(G.GnmrError) as info:
        ctl.step(norms=good[:3] + [-1.0] + good[4:])
    assert info.value.code == -7 and "negative" in str(info.value)
    # NaN and Inf are signals, not errors (gnmr.h rule 1)
    probe = make_ctl(names, {"warmup_steps": 5})
    probe.load_state_dict(ctl.state_dict())
    res = probe.step(norms=[float("nan")] + [float("inf")] + good[2:])
    assert res.decisions[names[0]].scale == 0.0
    assert "NONFINITE" in res.decisions[names[1]].flag_names
    # corrupted, truncated, foreign and None states
    sd = ctl.state_dict()
    sd["checkpoint"] = bytes(sd["checkpoint"].tolist())  # bytes work too
    flipped = bytearray(sd["checkpoint"])
    flipped[len(flipped) // 2] ^= 1
    for broken, exc in [
            (dict(sd, checkpoint=bytes(flipped)), G.GnmrError),
            (dict(sd, checkpoint=sd["checkpoint"][:-5]), G.GnmrError),
            (dict(sd, checkpoint=b""), G.GnmrError),
            (dict(sd, units=names[:-1]), ValueError),
            (dict(sd, checkpoint=None), TypeError),
            (dict(sd, checkpoint=torch.zeros(3)), TypeError),
            (None, TypeError)]:
        with pytest.raises(exc):
            ctl.load_state_dict(broken)
        assert ctl.checkpoint() == state
    # a checkpoint of another unit count, names aside
    other = make_ctl(names[:-1], {})
    with pytest.raises(G.GnmrError) as info:
        ctl.load_state_dict({"units": names,
                             "checkpoint": other.state_dict()["checkpoint"]})
    assert info.value.code == -5  # GNMR_EMISMATCH
    assert ctl.checkpoint() == state
    # bad configs: gnmr_config_check's refusal, unknown names
    with pytest.raises(G.GnmrError):
        make_ctl(names, {"lock_steps": 0})
    with pytest.raises(KeyError):
        make_ctl(names, {"no_such_field": 1})
    with pytest.raises(ValueError):
        make_ctl(names, {"spike_policy": "SOMETIMES"})
    with pytest.raises(G.GnmrError):
        ctl.reconfigure(max_recovering=len(names) + 1)
    assert ctl.checkpoint() == state


def test_layout_mismatch_is_refused(monkeypatch):
    class Shorter(ctypes.Structure):
        _fields_ = G.Ctl._fields_[:-1]
    monkeypatch.setitem(G._MIRRORS, "gnmr_ctl", Shorter)
    with pytest.raises(G.LayoutError):
        G._check_layout(G.load_library())


def test_default_config_comes_from_c():
    lib = G.load_library()
    ctl = make_ctl(["a"], {})
    assert bytes(ctl.config) == bytes(lib.gnmr_config_default())


def test_calm_config_comes_from_c_and_takes_overrides():
    lib = G.load_library()
    assert bytes(G.config_calm()) == bytes(lib.gnmr_config_calm())
    assert G.config_calm().band_k == 4.0
    assert G.config_default().band_k == 0.0  # the band is off by default
    assert G.config_calm(band_steps=3).band_steps == 3
    ctl = make_ctl(["a"], {"band_k": 4.0})
    assert bytes(ctl.config) == bytes(lib.gnmr_config_calm())
    with pytest.raises(G.GnmrError) as e:
        make_ctl(["a"], {"band_k": -1.0})
    assert e.value.field == "band_k"


def test_precision_switch_follows_recovery():
    lin = torch.nn.Linear(8, 8)
    sw = G.PrecisionSwitch(G.FP8Delayed(lin), lin)
    other = torch.nn.Linear(2, 2)
    ctl = G.Controller({"u": lin.parameters(), "v": other.parameters()},
                       config={"rule": "PAPER", "warmup_steps": 2,
                               "max_recovering": 1, "lock_steps": 2,
                               "cooldown_steps": 0})
    ctl.attach("u", sw)
    for g in [1.0, 1.0, 1.0]:
        ctl.step(norms=[g, 1.0], apply=False)
        assert not sw.high_fidelity
    res = ctl.step(norms=[100.0, 1.0], apply=False)
    assert res.admitted == ["u"] and sw.high_fidelity
    x = torch.randn(4, 8)
    assert torch.equal(sw(x), lin(x))
    with sw.forced(False):
        assert not torch.equal(sw(x), lin(x))
    ctl.step(norms=[1.0, 1.0], apply=False)
    assert sw.high_fidelity
    ctl.step(norms=[1.0, 1.0], apply=False)
    assert not sw.high_fidelity  # released after lock_steps = 2


def test_amax_history_restarts_on_recover_and_follows_high_steps():
    """gnmr.h's manual (RECOVER): an admitted unit's amax history starts
    afresh, and its high-fidelity steps refill it from the true tensors;
    a fault's amax must not outlive the lock."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)
    sw = G.PrecisionSwitch(G.FP8Delayed(lin), lin)
    q = sw.cheap
    other = torch.nn.Linear(2, 2)
    ctl = G.Controller({"u": lin.parameters(), "v": other.parameters()},
                       config={"rule": "PAPER", "warmup_steps": 2,
                               "max_recovering": 1, "lock_steps": 3,
                               "cooldown_steps": 0})
    ctl.attach("u", sw)
    for _ in range(3):
        sw(torch.randn(4, 8))
        ctl.step(norms=[1.0, 1.0], apply=False)
    sw(torch.full((4, 8), 2376.6))  # the fault's amax enters the history
    assert float(q.amax_x.max()) == pytest.approx(2376.6)
    res = ctl.step(norms=[100.0, 1.0], apply=False)
    assert res.admitted == ["u"] and sw.high_fidelity
    assert float(q.amax_x.max()) == 0 and float(q.amax_w.max()) == 0
    seen = []
    for _ in range(3):  # the lock: high fidelity, the true amax pushed
        x = torch.randn(4, 8)
        assert torch.equal(sw(x), lin(x))
        seen.insert(0, float(x.abs().max()))
        ctl.step(norms=[1.0, 1.0], apply=False)
    assert not sw.high_fidelity  # released: back on the cheap path
    assert q.amax_x[:3].tolist() == seen and float(q.amax_x[3:].max()) == 0
    assert float(q.amax_w[0]) == float(lin.weight.abs().max())
    sw.eval()  # evaluation pushes nothing
    with sw.forced(True):
        sw(torch.full((4, 8), 1e4))
    assert q.amax_x[:3].tolist() == seen


def test_e4m3_rounding():
    # every E4M3 value round-trips; midpoints go to the even neighbour
    vals = []
    for e in range(-6, 9):
        for m in range(8):
            vals.append((1 + m / 8) * 2.0 ** e)
    vals += [m / 8 * 2.0 ** -6 for m in range(1, 8)]  # subnormals
    vals = [v for v in vals if v <= 448]
    t = torch.tensor(vals)
    assert torch.equal(G._round_e4m3_emulated(t), t)
    assert torch.equal(G._round_e4m3_emulated(-t), -t)
    assert G.round_e4m3(torch.tensor([1e6])).item() == 448.0
    mid = torch.tensor([1 + 1 / 16, 1 + 3 / 16, 2 ** -9 / 2])
    assert G._round_e4m3_emulated(mid).tolist() == [1.0, 1.25, 0.0]
    if G._F8 is not None:  # torch >= 2.1: the emulation equals the cast
        x = torch.randn(10000) * 100
        assert torch.equal(G.round_e4m3(x, native=False),
                           G.round_e4m3(x, native=True))


# make gpu-check sets GNMR_REQUIRE_GPU: there these cases run, and fail,
# where torch sees no GPU or the library is missing.
cuda = pytest.mark.skipif(
    not os.environ.get("GNMR_REQUIRE_GPU") and (
        not torch.cuda.is_available() or not os.path.exists(
            os.path.join(ROOT, "build", "libgnmr_cuda.so"))),
    reason="no CUDA device (or build/libgnmr_cuda.so not built)")


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   torch.bfloat16])
def test_cuda_norms_equal_cpu_bit_for_bit(dtype):
    torch.manual_seed(2)
    # real parameter shapes (a GPT-2 block's) and views at odd offsets
    shapes = [(50257, 768), (768, 2304), (2304,), (768, 768), (3072, 768),
              (768,), (4097 * 3 + 1,), (300, 200)]
    views = [lambda t: t] * 6 + [lambda t: t[1::3], lambda t: t.t()]
    bases = [torch.randn(*s).to(dtype) for s in shapes]

    def controller(device):
        params = []
        for b, view in zip(bases, views):
            g = view(b.to(device))
            p = torch.nn.Parameter(torch.zeros(g.shape, dtype=dtype,
                                               device=device))
            p.grad = g
            params.append(p)
        units = {"mixed": params[:2]}  # two tensors in one unit
        units.update({"u%d" % i: [params[i]] for i in range(2, len(params))})
        return G.Controller(units)

    want = controller("cpu").unit_norms()
    assert controller("cuda").unit_norms() == want


@cuda
def test_cuda_step_scales_in_place():
    m = small_model(device="cuda")
    ctl = G.Controller({"first": m[0].parameters(),
                        "last": m[2].parameters()})
    m(torch.randn(8, 16, device="cuda")).sum().backward()
    m[2].bias.grad[0] = float("inf")
    res = ctl.step()
    assert res.decisions["last"].scale == 0.0
    assert all(bool((p.grad == 0).all()) for p in m[2].parameters())


@pytest.mark.skipif(not os.path.exists(
    os.path.join(ROOT, "build", "libgnmr_cuda.so")),
    reason="build/libgnmr_cuda.so not built (no nvcc)")
def test_cuda_library_loads_and_reports_errors():
    """Runs without a GPU too: the library loads, its functions resolve,
    and a plan over no GPU fails with the CUDA error's text, not a crash."""
    lib = G._load_cuda()
    t = (G.Tensor * 1)(G.Tensor(None, 0, G.DTYPE_F32, 0))
    handle = ctypes.c_void_p()
    rc = lib.gnmr_cuda_plan_new(t, 1, 1, ctypes.byref(handle))
    try:
        if torch.cuda.is_available():
            assert rc == 0
        else:
            assert rc == G.GNMR_CUDA_ECUDA
            assert lib.gnmr_cuda_error_string(handle).decode()
        bad = (G.Tensor * 1)(G.Tensor(None, 0, 7, 0))  # unknown dtype
        h2 = ctypes.c_void_p()
        assert lib.gnmr_cuda_plan_new(bad, 1, 1, ctypes.byref(h2)) == \
            G.GNMR_EINVAL
        lib.gnmr_cuda_plan_free(h2)
    finally:
        lib.gnmr_cuda_plan_free(handle)
    assert lib.gnmr_cuda_norms(None, None, None) == G.GNMR_EINVAL
