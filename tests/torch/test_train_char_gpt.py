"""Tests of the char-level GPT demo's fault model (examples/torch/
train_char_gpt.py, --stress): a fault lives on the FP8 path of a block's MLP
only, so a unit in recovery (float32) is rid of it, as in the C demos."""

import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import train_char_gpt as D  # noqa: E402

MASK = torch.ones(4, 4).triu(1).bool()


def test_fault_scales_the_forward_not_the_upstream_gradient():
    f = D.CheapPathFault(torch.nn.Identity())
    # small integers: x + x * 9 is 10 * x exactly
    x = (torch.arange(15.0) - 7.0).reshape(3, 5).requires_grad_()
    f.fault = (1, 10.0)
    y = f(x)
    want = x.detach().clone()
    want[:, 1] *= 10.0
    assert torch.equal(y.detach(), want)
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones(3, 5))


def test_fault_is_on_the_fp8_path_only():
    torch.manual_seed(0)
    b = D.Block(8, 2, fp8=True).eval()  # eval: no amax history updates
    x = torch.randn(2, 4, 8)
    clean_fp8 = b(x, MASK)
    b.fault = (3, 1000.0)
    assert b.fault == (3, 1000.0)
    assert not torch.allclose(b(x, MASK), clean_fp8)
    b.fc.high_fidelity = True  # the MLP's unit in recovery
    faulty_f32 = b(x, MASK)
    b.fault = None
    assert torch.equal(faulty_f32, b(x, MASK))
    b.fc.high_fidelity = False
    assert torch.equal(b(x, MASK), clean_fp8)


def test_a_float32_block_has_no_fault():
    torch.manual_seed(0)
    b = D.Block(8, 2, fp8=False).eval()
    x = torch.randn(2, 4, 8)
    clean = b(x, MASK)
    b.fault = (3, 1000.0)
    assert b.fault is None
    assert torch.equal(b(x, MASK), clean)


def test_ddp_two_ranks_run_and_agree(tmp_path):
    """--ddp 2 (gloo, CPU) end to end on a small text, on an FP4 (E2M1)
    cheap path: both ranks decide the same on every step (the script checks
    a digest of every step's decisions, and of the placer's placements,
    and fails otherwise); the place arm's placer fires (its warm-up cut
    short, the learning rate decaying from the first step)."""
    import subprocess
    data = tmp_path / "data"
    data.mkdir()
    torch.manual_seed(0)
    text = "".join("fortune %d: %s\n%%\n" % (
        i, " ".join("w%d" % int(w) for w in torch.randint(50, (12,))))
        for i in range(400))
    (data / "fortunes").write_text(text)
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "torch",
                                      "train_char_gpt.py"),
         "--ddp", "2", "--steps", "6", "--arms", "gnmr,gnmr-fwd,place",
         "--fmt", "e2m1", "--warmup", "1", "--place", "warmup_steps=1",
         "--place", "fire_level=0.9", "--eval-batches", "1",
         "--data", str(data),
         "--out", str(tmp_path / "out"), "--device", "cpu"],
        capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    for arm in ("gnmr", "gnmr-fwd", "place"):
        assert "%s: decisions identical on 2 ranks" % arm in r.stdout
    assert "place: the placer fired at step" in r.stdout, r.stdout
    assert (tmp_path / "out" / "train_char_gpt.csv").exists()


def test_loss_plot_labels_both_axes(tmp_path):
    """loss.svg names its y axis and labels steps on its x axis (it had
    neither: five loss values and 'step (of N)' alone)."""
    import re
    rows = [(arm, str(i), str(3.0 - 0.01 * i + 0.1 * j))
            for j, arm in enumerate(("lowp", "gnmr")) for i in range(101)]
    path = str(tmp_path / "loss.svg")
    D.svg_plot(path, rows, ["lowp", "gnmr"])
    svg = open(path).read()
    assert "training loss" in svg and "rotate(-90" in svg
    ticks = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert ticks == ["0", "25", "50", "75", "100"], ticks
