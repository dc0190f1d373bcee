"""Controller.step_scaled with a GradScaler: the controller reads the true
(unscaled) gradients whatever the loss scale does, and a step the scaler
skips for Inf/NaN is skipped by the controller too.

This torch (1.13, CPU) has no CPU GradScaler: torch.cuda.amp.GradScaler
disables itself without CUDA, and its unscale and update kernels
(_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_) exist for
CUDA only. CpuGradScaler below subclasses it and replaces those three
pieces (scale, _unscale_grads_, update) with plain torch on CPU; the state
machine step_scaled relies on (unscale_, _per_optimizer_states,
_found_inf_per_device, step skipping the optimizer) is torch's own. Where
CUDA is present the same runs go through torch's real GradScaler on a CUDA
model (its own unscale and update kernels, the bridge's device norms)."""

import os
import sys
from collections import defaultdict

import pytest
import torch
from torch.cuda.amp import grad_scaler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402

CONFIG = {"warmup_steps": 8, "max_recovering": 1}
STEPS, SPIKE = 60, 45


class CpuGradScaler(grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 10, growth_interval=20):
        super().__init__(enabled=False)  # no CUDA: set up by hand below
        self._enabled = True
        self._init_scale, self._scale = init_scale, None
        self._growth_factor, self._backoff_factor = 2.0, 0.5
        self._growth_interval = growth_interval
        self._init_growth_tracker, self._growth_tracker = 0, None
        self._per_optimizer_states = defaultdict(
            grad_scaler._refresh_per_optimizer_state)

    def scale(self, outputs):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        if not bool(torch.isfinite(p.grad).all()):
                            found_inf.fill_(1.0)
                        p.grad.mul_(inv_scale)
        return {found_inf.device: found_inf}

    def update(self):
        found = sum(float(f) for st in self._per_optimizer_states.values()
                    for f in st["found_inf_per_device"].values())
        if found:
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
        else:
            self._growth_tracker += 1
            if int(self._growth_tracker) == self._growth_interval:
                self._scale.mul_(self._growth_factor)
                self._growth_tracker.fill_(0)
        self._per_optimizer_states = defaultdict(
            grad_scaler._refresh_per_optimizer_state)


def model_and_controller(device="cpu"):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                            torch.nn.Linear(32, 32), torch.nn.Tanh(),
                            torch.nn.Linear(32, 1)).to(device)
    ctl = G.Controller({"in": m[0].parameters(), "mid": m[2].parameters(),
                        "out": m[4].parameters()}, config=CONFIG)
    return m, ctl, torch.optim.SGD(m.parameters(), lr=0.05)


def batch(step, device="cpu"):
    gen = torch.Generator().manual_seed(100 + step)
    x = torch.randn(32, 8, generator=gen)
    y = torch.sin(x.sum(1, keepdim=True))
    if step == SPIKE:
        y[3] += 100.0
    return x.to(device), y.to(device)


def run(scaler=None, overflow_at=None, skip=(), unscale_first=False,
        device="cpu"):
    """Per step taken: (step, the decisions' bytes, norms); and facts."""
    m, ctl, opt = model_and_controller(device)
    out, scales = [], []
    for step in range(STEPS):
        if step in skip:
            continue
        x, y = batch(step, device)
        opt.zero_grad(set_to_none=True)
        loss = ((m(x) - y) ** 2).mean()
        if step == overflow_at:
            loss = loss * float("inf")  # every gradient Inf/NaN
        if scaler is None:
            loss.backward()
            res = ctl.step()
            opt.step()
        else:
            scaler.scale(loss).backward()
            if unscale_first:  # e.g. to clip: step_scaled does not redo it
                scaler.unscale_(opt)
            res = ctl.step_scaled(scaler, opt)
            scales.append(float(scaler._scale))
            scaler.step(opt)
            scaler.update()
        if res is None:
            out.append((step, None, None))
            continue
        out.append((step, bytes(ctl._decisions),
                    [res.norms[n] for n in ctl.names]))
    return out, ctl, scales, m


def test_the_loss_scale_does_not_reach_the_decisions():
    """The scale doubles at steps 20 and 40 (exact powers of two): with
    step_scaled the norms and decisions are those of the unscaled run, bit
    for bit, the spike at SPIKE admitted in both."""
    ref, rctl, _, rm = run()
    got, gctl, scales, gm = run(CpuGradScaler())
    assert scales[0] == 2.0 ** 10 and scales[-1] == 2.0 ** 12  # it grew
    assert got == ref
    assert rctl.counters()["admissions"] >= 1
    assert all(torch.equal(a, b) for a, b in zip(rm.parameters(),
                                                 gm.parameters()))
    got2, _, _, _ = run(CpuGradScaler(), unscale_first=True)
    assert got2 == ref


def test_a_step_the_scaler_skips_is_skipped_by_the_controller():
    """An overflow at step 30: the scaler skips the optimizer step and
    halves its scale; the controller skips it too (None), and from then on
    decides as a run that never saw that step."""
    ref, rctl, _, rm = run(skip=(30,))
    got, gctl, scales, gm = run(CpuGradScaler(), overflow_at=30)
    assert got[30] == (30, None, None)
    assert scales[30] == 2.0 ** 11 and scales[31] == 2.0 ** 10  # backed off
    assert [g for g in got if g[1] is not None] == ref
    assert gctl.counters()["steps"] == rctl.counters()["steps"] == STEPS - 1
    assert gctl.checkpoint() == rctl.checkpoint()
    assert all(torch.equal(a, b) for a, b in zip(rm.parameters(),
                                                 gm.parameters()))


def test_a_disabled_scaler_is_a_plain_step():
    m, ctl, opt = model_and_controller()
    x, y = batch(0)
    ((m(x) - y) ** 2).mean().backward()
    assert ctl.step_scaled(grad_scaler.GradScaler(enabled=False),
                           opt) is not None
    with pytest.raises(TypeError, match="GradScaler"):
        ctl.step_scaled(object.__new__(type("S", (), {
            "is_enabled": lambda self: True})), opt)


# make gpu-check sets GNMR_REQUIRE_GPU: there these cases run, and fail,
# where torch sees no GPU.
cuda = pytest.mark.skipif(
    not os.environ.get("GNMR_REQUIRE_GPU") and not torch.cuda.is_available(),
    reason="no CUDA device")


def cuda_scaler():
    """torch's own GradScaler for CUDA: torch.amp's (torch >= 2.3), else
    torch.cuda.amp's; the CPU runs' scale schedule."""
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler("cuda", init_scale=2.0 ** 10,
                              growth_interval=20)
    return grad_scaler.GradScaler(init_scale=2.0 ** 10, growth_interval=20)


@cuda
def test_cuda_grad_scaler_does_not_reach_the_decisions():
    """A CUDA model under torch's real GradScaler: the decisions and norms
    of the unscaled CUDA run, bit for bit (the scale is a power of two);
    the overflow step skipped by the scaler and the controller alike."""
    ref, rctl, _, rm = run(device="cuda")
    got, gctl, scales, gm = run(cuda_scaler(), device="cuda")
    assert next(gm.parameters()).is_cuda
    assert scales[0] == 2.0 ** 10 and scales[-1] == 2.0 ** 12  # it grew
    assert got == ref
    assert rctl.counters()["admissions"] >= 1
    assert all(torch.equal(a, b) for a, b in zip(rm.parameters(),
                                                 gm.parameters()))
    ref, rctl, _, _ = run(skip=(30,), device="cuda")
    got, gctl, scales, _ = run(cuda_scaler(), overflow_at=30, device="cuda")
    assert got[30] == (30, None, None)
    assert scales[30] == 2.0 ** 11 and scales[31] == 2.0 ** 10  # backed off
    assert [g for g in got if g[1] is not None] == ref
    assert gctl.checkpoint() == rctl.checkpoint()
