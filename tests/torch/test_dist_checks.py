"""The distributed mistakes of tests/torch/dist_checks.py, 2 gloo processes
on localhost: each must be caught on every rank alike (a RankMismatch with
a message that says what differs), not diverge in silence or hang."""

import json
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ranks import run_ranks  # noqa: E402

if not (torch.distributed.is_available()
        and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available",
                allow_module_level=True)

TIMEOUT = 120  # a hang fails, not waits
WORLD = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("checks")
    run_ranks("dist_checks.py", WORLD, out, TIMEOUT)
    return [json.load(open(os.path.join(str(out), "checks.%d.json" % r)))
            for r in range(WORLD)]


def test_forward_signals_built_before_init_process_group(runs):
    """Decided at the first step: the forward sums are all-reduced, every
    rank reads the same signal (each rank's activations differ)."""
    a, b = (r["fwd_before_init"]["ok"] for r in runs)
    assert a == b
    mid_fwd = [s[4] for s in a]  # in, mid, out, in.fwd, mid.fwd, out.fwd
    assert all(x > 0 for x in mid_fwd), mid_fwd


@pytest.mark.parametrize("case,says", [
    ("ddp_order", "differ across ranks"),
    ("ddp_fewer", "differ across ranks"),
    ("ddp_grouping", "differ across ranks"),
    ("zero2_fewer", "differ across ranks"),
    ("zero2_order", "differ across ranks")])
def test_a_layout_that_differs_across_ranks_is_refused(runs, case, says):
    for rank, r in enumerate(runs):
        got = r[case]
        assert got.get("error") == "RankMismatch", (case, rank, got)
        assert says in got["text"] and "rank 1 differs" in got["text"]


def test_check_decisions_catches_a_gradient_changed_after_the_reduce(runs):
    for rank, r in enumerate(runs):
        got = r["ddp_nan_after_reduce"]
        assert got.get("error") == "RankMismatch", (rank, got)
        assert got["text"].startswith("step 12:"), got["text"]
