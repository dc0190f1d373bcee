"""Controller(..., forward_signals=True): a unit "u.fwd" beside each unit
u, fed by forward hooks on u's PrecisionSwitch modules with the relative
quantization error of their GEMM inputs (gnmr.h's manual, "What to feed
it"), as the C demos' forward arms do."""

import math
import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402


class Fault(torch.nn.Module):
    """The cheap path reading channel 2 of its input times .gain."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.gain = inner, 1.0

    def forward(self, x):
        if self.gain != 1.0:
            x = x.clone()
            x[..., 2] *= self.gain
        return self.inner(x)


def net(seed=0):
    torch.manual_seed(seed)
    lin1, lin2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)
    fault = Fault(G.FP8Delayed(lin1))
    sw1 = G.PrecisionSwitch(fault, lin1)
    sw2 = G.PrecisionSwitch(G.FP8Delayed(lin2), lin2)
    model = torch.nn.Sequential(sw1, torch.nn.Tanh(), sw2)
    return model, lin1, lin2, fault, sw1, sw2


def rel_err(q, x):
    return math.sqrt(float((q.double() - x.double()).square().sum())
                     / float(x.double().square().sum()))


def test_off_by_default():
    model, lin1, lin2, *_ = net()
    ctl = G.Controller({"a": lin1.parameters(), "b": lin2.parameters()})
    assert ctl.names == ["a", "b"]


def steps_warned(ctl, model, n=3):
    """The forward_signals warnings of n training steps."""
    import warnings
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(n):
            opt.zero_grad()
            model(torch.randn(4, 8)).square().mean().backward()
            ctl.step()
            opt.step()
    return [w for w in caught if "forward_signals" in str(w.message)]


def attached(switched=("a", "b"), **kw):
    """A fresh net, a Controller over units a and b (kw: its options) with
    the switches of the units named in switched attached; (ctl, model)."""
    model, lin1, lin2, fault, sw1, sw2 = net()
    ctl = G.Controller({"a": lin1.parameters(), "b": lin2.parameters()},
                       **kw)
    for name, sw in (("a", sw1), ("b", sw2)):
        if name in switched:
            ctl.attach(name, sw)
    return ctl, model


def test_unset_they_are_suggested_once_where_the_bridge_owns_the_quantizer():
    """Left unset, forward signals stay off; where every unit then runs
    through a switch with a quantizer (the settings suite's case for them),
    the first step says so, once. False, or a unit without a switch: no
    warning."""
    ctl, model = attached()
    said = steps_warned(ctl, model)
    assert len(said) == 1 and issubclass(said[0].category, UserWarning)
    assert "forward_signals=True" in str(said[0].message)
    assert ctl.names == ["a", "b"]  # still off
    assert bytes(ctl.config) == bytes(G.load_library().gnmr_config_default())
    assert steps_warned(*attached(forward_signals=False)) == []
    # b has no switch: the bridge owns a's quantizer alone
    assert steps_warned(*attached(switched=("a",))) == []
    assert steps_warned(*attached(forward_signals=True)) == []


def test_forward_signals_take_the_forward_preset():
    # gnmr_config_forward() (the settings suite's thresholds for forward
    # signals) unless config says otherwise; without them, the defaults.
    lib = G.load_library()
    model, lin1, lin2, *_ = net()
    on = G.Controller({"a": lin1.parameters()}, forward_signals=True)
    off = G.Controller({"a": lin1.parameters()})
    assert bytes(on.config) == bytes(lib.gnmr_config_forward())
    assert bytes(off.config) == bytes(lib.gnmr_config_default())
    assert on.config.ratio_threshold == 8.0
    assert on.config.delta_threshold == 6.0
    over = G.Controller({"a": lin1.parameters()}, forward_signals=True,
                        config={"ratio_threshold": 2.5})
    assert over.config.ratio_threshold == 2.5
    assert over.config.delta_threshold == 6.0


def test_signal_is_the_gemm_inputs_relative_error():
    model, lin1, lin2, fault, sw1, sw2 = net()
    ctl = G.Controller({"a": lin1.parameters(), "b": lin2.parameters(),
                        "c": [torch.nn.Parameter(torch.ones(2))]},
                       forward_signals=True)
    assert ctl.names == ["a", "b", "c", "a.fwd", "b.fwd", "c.fwd"]
    ctl.attach("a", sw1)
    ctl.attach("b", sw2)
    torch.manual_seed(1)
    for _ in range(3):  # fill the amax histories: scales != 1
        model(torch.randn(32, 8)).sum().backward()
        ctl.step()
    x = torch.randn(32, 8)
    fp8a = fault.inner
    want_a = rel_err(fp8a.quantize_input(x), x)  # this step's scale
    h = torch.tanh(lin1(fp8a.quantize_input(x)))  # not the exact cheap h
    model(x).sum().backward()
    norms = ctl.unit_norms()
    assert norms[3] == pytest.approx(want_a, rel=1e-6)
    assert 0.005 < norms[3] < 0.1  # E4M3's 3 mantissa bits
    assert 0.005 < norms[4] < 0.1 and h is not None
    assert norms[5] == 0.0  # c has no switch: absent
    # cleared at each read; evaluation (eval mode) adds nothing
    assert ctl.unit_norms()[3:] == [0.0, 0.0, 0.0]
    model.eval()
    model(x)
    assert ctl.unit_norms()[3:] == [0.0, 0.0, 0.0]
    model.train()
    # two forwards before a step: the sums pool over both
    x2 = torch.randn(32, 8) * 3
    q1, q2 = fp8a.quantize_input(x), fp8a.quantize_input(x2)
    model(x)
    model(x2)
    pooled = math.sqrt(
        (float((q1.double() - x.double()).square().sum())
         + float((q2.double() - x2.double()).square().sum()))
        / (float(x.double().square().sum())
           + float(x2.double().square().sum())))
    assert ctl.unit_norms()[3] == pytest.approx(pooled, rel=1e-6)


def test_a_cheap_path_fault_is_seen_and_the_unit_recovers():
    """An outlier on the cheap path's input (its GEMM reads channel 2 x 1000)
    raises a.fwd at once, in its own unit; a.fwd is admitted and the switch
    runs high fidelity, where the fault does not exist."""
    model, lin1, lin2, fault, sw1, sw2 = net()
    ctl = G.Controller({"a": lin1.parameters(), "b": lin2.parameters()},
                       config={"warmup_steps": 8, "max_recovering": 1},
                       forward_signals=True)
    ctl.attach("a", sw1)
    ctl.attach("b", sw2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(2)
    quiet = []
    for step in range(28):  # admitted at 20: high fidelity for 8 steps
        fault.gain = 1000.0 if step >= 20 else 1.0
        x = torch.randn(32, 8)
        opt.zero_grad()
        model(x).square().mean().backward()
        res = ctl.step()
        opt.step()
        if step < 20:
            quiet.append(res.norms["a.fwd"])
            assert not sw1.high_fidelity
        elif step == 20:
            assert res.norms["a.fwd"] > 10 * max(quiet)  # saturated at 448
            assert res.decisions["a.fwd"].action == "RECOVER"
            assert sw1.high_fidelity and not sw2.high_fidelity
            assert res.decisions["a.fwd"].scale < 1  # its scale: unused
            assert all(p.grad is not None and float(p.grad.abs().sum()) > 0
                       for p in lin1.parameters())
        else:  # high fidelity: the true input, its error at the scale
            assert sw1.high_fidelity
            assert res.norms["a.fwd"] < 2 * max(quiet), step


def test_a_switch_without_a_quantizer_is_refused():
    lin = torch.nn.Linear(4, 4)
    ctl = G.Controller({"a": lin.parameters()}, forward_signals=True)
    with pytest.raises(TypeError, match="quantize_input"):
        ctl.attach("a", G.PrecisionSwitch(torch.nn.Identity(), lin))
    with pytest.raises(KeyError):
        ctl.attach("a.fwd", G.PrecisionSwitch(G.FP8Delayed(lin), lin))
