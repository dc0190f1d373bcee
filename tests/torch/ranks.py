"""Spawns one Python process per rank on localhost (gloo), for the
distributed tests: `script rank world out` each, one thread apiece."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ranks(script, world, out, timeout):
    """Runs tests/torch/<script> on ranks 0 ... world - 1 and waits for all:
    each rank's exit status must be 0 (else the test fails with its log);
    a job not done in timeout seconds is killed and fails as a hang."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, script),
                               str(r), str(world), str(out)], env=env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail("%d ranks of %s did not finish in %d s (a hang)"
                    % (world, script, timeout))
    for r, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, "rank %d of %d:\n%s" % (r, world, log)
