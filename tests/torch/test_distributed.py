"""The bridge under torch.distributed (gloo, CPU, localhost): 2 and 4
processes spawned here, each running tests/torch/dist_run.py (DDP, then
ZeRO-2 style sharded gradients, a checkpoint saved on rank 0 and loaded on
every rank). Every rank must decide the same, bit for bit, and as the
one-process run on the same global batch: the same actions and flags on
every step, scales within 1e-6 relative."""

import json
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_run as D  # noqa: E402
from ranks import run_ranks  # noqa: E402

if not (torch.distributed.is_available()
        and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available",
                allow_module_level=True)

TIMEOUT = 120  # seconds for one job of every rank; a hang fails, not waits


def launch(world, out):
    run_ranks("dist_run.py", world, out, TIMEOUT)
    return {mode: [json.load(open(os.path.join(str(out), "%s.%d.json" % (
        mode, r)))) for r in range(world)] for mode in D.MODES}


@pytest.fixture(scope="module")
def single():
    return D.run("single")


@pytest.fixture(scope="module", params=[2, 4])
def job(request, tmp_path_factory):
    world = request.param
    return world, launch(world, tmp_path_factory.mktemp("dist%d" % world))


def test_reference_run_is_not_vacuous(single):
    """The spike is caught (an admission and clipped scales) and the
    restarted controller equals its uninterrupted twin."""
    steps = single["steps"]
    spike = steps[D.SPIKE]
    assert "RECOVER" in spike["action"]
    assert all(s < 1.0 for s in spike["scale"])
    assert sum(1 for s in steps if s["recovering"]) >= 4
    assert single["twin_equal"]


@pytest.mark.parametrize("mode", ["ddp", "zero2"])
def test_ranks_decide_as_one_process(job, single, mode):
    world, runs = job
    ref = single["steps"]
    worst = 0.0
    for rank, r in enumerate(runs[mode]):
        assert len(r["steps"]) == len(ref)
        for t, (got, want) in enumerate(zip(r["steps"], ref)):
            # every rank: the same bits as rank 0
            assert got["raw"] == runs[mode][0]["steps"][t]["raw"], (
                "%s, %d ranks: rank %d differs from rank 0 at step %d"
                % (mode, world, rank, t))
            assert got["norms"] == runs[mode][0]["steps"][t]["norms"]
            # and the one-process run's decisions
            assert got["action"] == want["action"], (mode, world, t)
            assert got["flags"] == want["flags"], (mode, world, t)
            assert got["recovering"] == want["recovering"], (mode, world, t)
            for a, b in zip(got["scale"], want["scale"]):
                assert a == pytest.approx(b, rel=1e-6, abs=0), (
                    mode, world, t)
            for a, b in zip(got["norms"], want["norms"]):
                worst = max(worst, abs(a - b) / b)
        assert r["twin_equal"], "%s rank %d: the controller loaded from " \
            "rank 0's checkpoint left its uninterrupted twin" % (mode, rank)
    # The gradients themselves differ from the one-process run's by
    # rounding (a sum over ranks in another order): the norms agree to a
    # few float32 ulps.
    assert worst < 1e-5, worst
    print("%s, %d ranks: norms within %.1e relative of one process"
          % (mode, world, worst))


def test_sharded_ranks_hold_parts(job):
    """The slices cut through the units: with 4 ranks some rank holds no
    part of some unit (it adds 0 to that unit's sum)."""
    world, runs = job
    slots = [r["slots"] for r in runs["zero2"]]
    assert slots[0][0] == 0 and all(a[1] == b[0] for a, b in
                                    zip(slots, slots[1:]))
    if world == 4:
        assert any(r["holds_no_part_of_a_unit"] for r in runs["zero2"])


def test_forward_signals_agree_across_ranks(job):
    """DDP with forward signals: each rank's activations differ, so the
    forward sums are all-reduced; every rank sees the same signal and
    decides the same, bit for bit."""
    world, runs = job
    r0 = runs["ddp_fwd"][0]["steps"]
    for r in runs["ddp_fwd"][1:]:
        assert [s["raw"] for s in r["steps"]] == [s["raw"] for s in r0]
        assert r["twin_equal"]
    mid_fwd = [s["norms"][4] for s in r0]  # in, mid, out, in.fwd, mid.fwd
    assert all(0.001 < x < 0.2 for x in mid_fwd[1:]), mid_fwd
    assert all(s["norms"][3] == 0.0 for s in r0)  # no switch: absent
