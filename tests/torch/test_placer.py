"""gnmr_torch.Placer: gnmr.h's placer from PyTorch. Its placements must
equal those of gnmr.h's placer compiled on its own (tests/torch/
place_replay.c, build/torch_place_replay) on the same signals, bit for
bit, checkpoint included; a run resumed from its state_dict must go on as
one never interrupted; its switches must follow it."""

import ctypes
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

REPLAY = os.path.join(ROOT, "build", "torch_place_replay")
STEPS = 120
CONFIG = {"budget": 0.4, "warmup_steps": 10}


def run_c(cfg, costs, signals, save_at):
    if not os.path.exists(REPLAY):
        pytest.fail("%s missing: run `make test-torch`" % REPLAY)
    n = len(costs)
    data = bytes(cfg) + struct.pack("III", n, len(signals), save_at)
    data += struct.pack("%dd" % n, *costs)
    for update, qerr in signals:
        data += struct.pack("%dd" % n, *update) + struct.pack("%dd" % n,
                                                              *qerr)
    out = subprocess.run([REPLAY], input=data, stdout=subprocess.PIPE,
                         check=True).stdout
    highs = [list(out[t * n:(t + 1) * n]) for t in range(len(signals))]
    rest = out[len(signals) * n:]
    (length,) = struct.unpack("Q", rest[:8])
    return highs, rest[8:8 + length]


def model(seed=0):
    torch.manual_seed(seed)
    lins = [torch.nn.Linear(16, 64), torch.nn.Linear(64, 64),
            torch.nn.Linear(64, 64), torch.nn.Linear(64, 4)]
    sws = [G.PrecisionSwitch(G.FP8Delayed(lin, fmt="e2m1"), lin)
           for lin in lins]
    net = torch.nn.Sequential(sws[0], torch.nn.Tanh(), sws[1],
                              torch.nn.Tanh(), sws[2], torch.nn.Tanh(),
                              sws[3])
    return net, lins, sws


def train(steps=STEPS, config=CONFIG):
    """An FP4 (E2M1) MLP trained with AdamW, the learning rate decaying to
    nothing (updates shrink against the weights' quantization error: the
    placer fires). Returns the placer, its signals, placements and the
    switches' paths (where the placer places GEMMs other than
    GNMR_GEMM_ALL: their placed_gemms)."""
    net, lins, sws = model()
    pl = G.Placer({"l%d" % i: sw for i, sw in enumerate(sws)},
                  config=config)
    whole = pl.gemms == G.GNMR_GEMM_ALL
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: max(0.0, 1 - t / steps) ** 2)
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(16, 4, generator=gen)
    signals, highs, paths = [], [], []
    for _ in range(steps):
        x = torch.randn(32, 16, generator=gen)
        y = torch.tanh(x @ w)
        opt.zero_grad(set_to_none=True)
        ((net(x) - y) ** 2).mean().backward()
        pl.snapshot()
        opt.step()
        sched.step()
        signals.append(pl.signals())
        placed = pl.step()
        highs.append([1 if n in placed else 0 for n in pl.names])
        paths.append([sw.high_fidelity_now if whole else sw.placed_gemms
                      for sw in sws])
    return pl, signals, highs, paths, lins


@pytest.fixture(scope="module")
def trained():
    return train()


def test_placements_equal_the_c_placer(trained):
    pl, signals, highs, paths, lins = trained
    assert pl.costs == [6.0 * lin.in_features * lin.out_features
                        for lin in lins]
    c_highs, c_ckpt = run_c(pl.config, pl.costs, signals, STEPS + 1)
    # the C placer's high: the GEMMs on (7, GNMR_GEMM_ALL: the whole unit)
    assert all(h in (0, G.GNMR_GEMM_ALL) for row in c_highs for h in row)
    assert highs == [[h and 1 for h in row] for row in c_highs]
    assert pl.checkpoint() == c_ckpt
    rep = pl.report()
    # not vacuous: it fired, some units went high and some stayed low
    assert rep["fired_step"] is not None, rep
    after = highs[rep["fired_step"]:]
    assert any(any(h) for h in after) and any(not all(h) for h in after)
    # the switches ran what the placer said
    assert paths == [[bool(x) for x in h] for h in highs]


def test_state_dict_resumes_bit_identically(trained):
    pl, signals, highs, _, _ = trained
    half = STEPS // 2
    first = G.Placer({"l%d" % i: lin for i, lin in enumerate(model()[1])},
                     config=CONFIG)
    for update, qerr in signals[:half]:
        first.step(update=update, qerr=qerr)
    _, c_ckpt = run_c(first.config, first.costs, signals, half)
    assert first.checkpoint() == c_ckpt
    second = G.Placer({"l%d" % i: lin for i, lin in enumerate(model()[1])},
                      config={"budget": 1.0})  # the checkpoint's config wins
    second.load_state_dict(first.state_dict())
    assert second.config.budget == CONFIG["budget"]
    got = []
    for update, qerr in signals[half:]:
        placed = second.step(update=update, qerr=qerr)
        got.append([1 if n in placed else 0 for n in second.names])
    assert got == highs[half:]
    assert second.checkpoint() == pl.checkpoint()


def test_bad_input_raises_and_changes_nothing():
    _, lins, sws = model()
    pl = G.Placer({"a": sws[0], "b": [lins[1], lins[2]]}, config=CONFIG)
    assert pl.costs[1] == 6.0 * (64 * 64 * 2)
    with pytest.raises(RuntimeError, match="snapshot"):
        pl.step()
    pl.step(update=[1.0, 1.0], qerr=[0.5, 0.5])
    state = pl.checkpoint()
    for update, qerr, exc in [([-1.0, 1.0], [1.0, 1.0], G.GnmrError),
                              ([1.0], [1.0, 1.0], ValueError),
                              ([1.0, 1.0], None, ValueError)]:
        with pytest.raises(exc):
            pl.step(update=update, qerr=qerr)
        assert pl.checkpoint() == state
    with pytest.raises(G.GnmrError) as info:
        G.Placer({"a": lins[0]}, config={"budget": 2.0})
    assert info.value.field == "budget"
    with pytest.raises(ValueError, match="no Linear"):
        G.Placer({"a": torch.nn.Tanh()})
    # a module is switched whole: one GEMM of it cannot be placed
    with pytest.raises(ValueError, match="gemms"):
        G.Placer({"a": lins[0]}, config={"gemms": 1})
    with pytest.raises(ValueError, match="units"):
        pl.load_state_dict(dict(pl.state_dict(), units=["x", "y"]))
    assert pl.checkpoint() == state


def test_placer_layout_mismatch_is_refused(monkeypatch):
    class Shorter(ctypes.Structure):  # a field gone: size and offsets
        _fields_ = [f for f in G.Place._fields_ if f[0] != "credit"]

    class Moved(ctypes.Structure):  # two fields swapped: offsets only
        _fields_ = [f for f in G.PlaceReportC._fields_]
        _fields_[2], _fields_[3] = _fields_[3], _fields_[2]
    for name, mirror in (("gnmr_place", Shorter),
                         ("gnmr_place_report", Moved)):
        with monkeypatch.context() as m:
            m.setitem(G._MIRRORS, name, mirror)
            with pytest.raises(G.LayoutError, match=name):
                G._check_layout(G.load_library())


def test_a_plan_fires_where_its_credit_reaches_the_end():
    """Told the run's steps, the placer fires at the step whose credit
    carries every unit to the end: with budget 0.25 over 40 steps, the
    last 10 (the decisions of steps 29 to 38), none before, and past the
    plan the last planned step's placement stays (rule P7)."""
    _, lins, _ = model()
    pl = G.Placer({"l%d" % i: lin for i, lin in enumerate(lins)},
                  config={"budget": 0.25, "planned_steps": 40})
    placed = [len(pl.step(update=[1.0] * 4, qerr=[1.0] * 4))
              for _ in range(40)]
    assert placed[:39] == [0] * 29 + [4] * 10
    assert placed[39] == 4



def test_backward_gemms_placed_keep_the_forward_on_the_format():
    """Placed per GEMM (gemms = DGRAD | WGRAD, the placement for a model
    served in FP4), the placements are the C placer's, and a placed unit's
    switch stays on its cheap path (the forward on the format) with those
    GEMMs' bits handed to its quantizer."""
    cfg = dict(CONFIG, gemms=G.GNMR_GEMM_DGRAD | G.GNMR_GEMM_WGRAD)
    pl, signals, highs, paths, _ = train(config=cfg)
    c_highs, c_ckpt = run_c(pl.config, pl.costs, signals, STEPS + 1)
    assert highs == [[h and 1 for h in row] for row in c_highs]
    assert pl.checkpoint() == c_ckpt
    assert paths == c_highs  # placed_gemms: the C placer's bits
    assert any(6 in row for row in paths) and any(0 in row for row in paths)
    assert not any(sw.high_fidelity_now for sw in pl.modules[0])


def test_served_low_places_the_backward_and_never_the_forward():
    """serve = GNMR_SERVE_LOW over the whole unit's gemms: gnmr.h's placer
    drops the forward GEMM, so the placements are the C placer's, DGRAD |
    WGRAD or nothing, and the run is the one placed with gemms = DGRAD |
    WGRAD (the same signals, switches and checkpointed state but the
    config). After the run a placed unit's forward is the format's, bit
    for bit, while its backward GEMMs read the true operands."""
    bwd = G.GNMR_GEMM_DGRAD | G.GNMR_GEMM_WGRAD
    cfg = dict(CONFIG, serve=G.GNMR_SERVE_LOW)  # gemms: GNMR_GEMM_ALL
    pl, signals, highs, paths, lins = train(config=cfg)
    assert pl.config.gemms == G.GNMR_GEMM_ALL and pl.gemms == bwd
    c_highs, c_ckpt = run_c(pl.config, pl.costs, signals, STEPS + 1)
    assert paths == c_highs  # placed_gemms: the C placer's bits
    assert highs == [[h and 1 for h in row] for row in c_highs]
    assert pl.checkpoint() == c_ckpt
    assert {h for row in paths for h in row} == {0, bwd}
    _, bwd_signals, _, bwd_paths, _ = train(config=dict(CONFIG, gemms=bwd))
    assert paths == bwd_paths and signals == bwd_signals
    sws = [mods[0] for mods in pl.modules]
    assert pl.high_gemms == [sw.placed_gemms for sw in sws]
    placed = [sw for sw in sws if sw.placed_gemms]
    assert placed and len(placed) < len(sws), pl.high_gemms  # not vacuous
    gen = torch.Generator().manual_seed(2)
    for sw in sws:
        sw.eval()  # the scales as the run left them
        lin = sw.high
        x0 = torch.randn(8, lin.in_features, generator=gen)
        dy = torch.randn(8, lin.out_features, generator=gen)
        got = []
        for forced in (None, False):
            x = x0.clone().requires_grad_()
            lin.zero_grad(set_to_none=True)
            if forced is None:
                y = sw(x)
            else:
                with sw.forced(forced):
                    y = sw(x)
            y.backward(dy)
            got.append((y.detach(), x.grad, lin.weight.grad))
        (y, dx, dw), (y0, dx0, dw0) = got
        assert not sw.high_fidelity_now
        assert torch.equal(y, y0)  # served on the format
        assert not torch.allclose(y, lin(x0).detach())
        if sw.placed_gemms:
            assert not torch.allclose(dx, dx0)
            assert not torch.allclose(dw, dw0)
            wt = lin.weight.detach()
            assert torch.allclose(dx, dy.matmul(wt), rtol=1e-6, atol=1e-6)
            assert torch.allclose(dw, dy.t().matmul(x0), rtol=1e-6,
                                  atol=1e-6)
        else:
            assert torch.equal(dx, dx0) and torch.equal(dw, dw0)


def test_served_low_is_refused_only_where_it_cannot_be_honoured():
    """The config is refused as gnmr.h refuses it (GnmrError, the field
    gnmr_place_config_check names): serve LOW with no backward GEMM in
    gemms, or a serve that is neither; units that only switch whole, which
    would run the forward high too, are refused with a ValueError, in
    __init__ and in load_state_dict, changing nothing."""
    _, lins, sws = model()
    lib = G.load_library()
    for serve in (G.GNMR_SERVE_HIGH, G.GNMR_SERVE_LOW, 2):
        for gemms in range(0, 9):
            cfg = {"serve": serve, "gemms": gemms}
            valid = 1 <= gemms <= 7 and (serve == G.GNMR_SERVE_HIGH or (
                serve == G.GNMR_SERVE_LOW and gemms & 6 != 0))
            c = lib.gnmr_place_config_default()
            c.serve, c.gemms = serve, gemms
            name = ctypes.c_char_p()
            rc = lib.gnmr_place_config_check(ctypes.byref(c),
                                             ctypes.byref(name))
            assert (rc == G.GNMR_OK) == valid, cfg
            if valid:
                G.Placer({"a": sws[0], "b": sws[1]}, config=cfg)
                continue
            with pytest.raises(G.GnmrError) as info:
                G.Placer({"a": sws[0], "b": sws[1]}, config=cfg)
            assert info.value.code == G.GNMR_ECONFIG
            assert info.value.field == name.value.decode(), cfg
            if serve == G.GNMR_SERVE_LOW and 1 <= gemms <= 7:
                assert info.value.field == "serve"
                assert "backward GEMMs only" in str(info.value)
    low = {"serve": G.GNMR_SERVE_LOW}
    for mods in (lins[0], G.PrecisionSwitch(lins[0], lins[0]),
                 [sws[0], lins[1]]):
        with pytest.raises(ValueError, match="GNMR_SERVE_LOW.*unit a"):
            G.Placer({"a": mods}, config=low)
    src = G.Placer({"a": sws[0], "b": sws[1]}, config=low)
    src.step(update=[1.0, 1.0], qerr=[0.5, 0.5])
    dst = G.Placer({"a": lins[0], "b": lins[1]})
    before = dst.checkpoint()
    with pytest.raises(ValueError, match="GNMR_SERVE_LOW"):
        dst.load_state_dict(src.state_dict())
    assert dst.checkpoint() == before
    assert dst.config.serve == G.GNMR_SERVE_HIGH and dst.gemms == 7
    ok = G.Placer({"a": sws[0], "b": sws[1]})
    ok.load_state_dict(src.state_dict())
    assert ok.config.serve == G.GNMR_SERVE_LOW
    assert ok.gemms == G.GNMR_GEMM_DGRAD | G.GNMR_GEMM_WGRAD
    assert ok.checkpoint() == src.checkpoint()


def test_gemm_bits_pick_each_gemms_operands():
    """FP8Delayed.high_gemms: the forward, dx and dW each read the true
    x and W where their bit is set, the quantized ones elsewhere."""
    torch.manual_seed(3)
    lin = torch.nn.Linear(16, 8)
    q = G.FP8Delayed(lin, fmt="e2m1")
    x0 = torch.randn(2, 5, 16)
    dy = torch.randn(2, 5, 8)
    sx, sw = q._scale(q.amax_x, x0), q._scale(q.amax_w, lin.weight)
    xq = G.fake_quantize(x0, sx, "e2m1")
    wq = G.fake_quantize(lin.weight.detach(), sw, "e2m1")
    w = lin.weight.detach()
    got = {}
    for bits in (0, G.GNMR_GEMM_FWD, G.GNMR_GEMM_DGRAD | G.GNMR_GEMM_WGRAD):
        q.restart()  # the same scales each time
        q.high_gemms = bits
        x = x0.clone().requires_grad_()
        lin.zero_grad(set_to_none=True)
        y = q(x)
        y.backward(dy)
        got[bits] = (y.detach(), x.grad, lin.weight.grad, lin.bias.grad)
    d2 = dy.reshape(-1, 8)
    for bits, (y, dx, dw, db) in got.items():
        fx = xq if not bits & G.GNMR_GEMM_FWD else x0
        fw = wq if not bits & G.GNMR_GEMM_FWD else w
        gx = x0 if bits & G.GNMR_GEMM_WGRAD else xq
        gw = w if bits & G.GNMR_GEMM_DGRAD else wq
        assert torch.allclose(y, torch.nn.functional.linear(fx, fw, lin.bias),
                              rtol=1e-6, atol=1e-6)
        assert torch.allclose(dx, dy.matmul(gw), rtol=1e-6, atol=1e-6)
        assert torch.allclose(dw, d2.t().matmul(gx.reshape(-1, 16)),
                              rtol=1e-6, atol=1e-6)
        assert torch.allclose(db, d2.sum(0), rtol=1e-6, atol=1e-6)
    # the backward bits leave the forward bit for bit on the format
    assert torch.equal(got[6][0], got[0][0])
    assert not torch.allclose(got[6][1], got[0][1])
    assert not torch.allclose(got[1][0], got[0][0])
