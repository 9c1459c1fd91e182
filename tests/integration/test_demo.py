"""`make demo`'s converge: the example pools on the sandbox, twice; the second run changes nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.integration.playbook import ROOT

pytestmark = pytest.mark.sandbox


def test_demo_converges_the_example_pools_idempotently(tmp_path):
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.join(ROOT, ".build", "collections"), ROOT]),
        GPUPOOL_STATE=str(tmp_path / "state"),
        GPUPOOL_SANDBOX_INVENTORY=str(tmp_path / "inventory"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "testbed.demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    raw = proc.stdout + proc.stderr
    assert proc.returncode == 0, raw[-4000:]
    out = " ".join(raw.split())  # the YAML result format folds long report lines
    assert "[demo] second run: exit 0, changed=0" in out
    # The end-of-run summary: what the pools offer once converged, from the ResourceSlices the simulated driver
    # published (pool, nodes Ready, whole GPUs free/total, MIG devices free/total, allocatable now).
    # One table row per pool (read from the unfolded output: a row ends at its line's end).
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^ +(gpu-[\w-]+) +(\d+/\d+ \(wants \d+\) .*)$", raw, re.M)}
    assert re.fullmatch(
        r"1/1 \(wants 1\) +- +2g\.10gb 4/4, 3g\.20gb 2/2 +2g\.10gb x4, 3g\.20gb x2", rows["gpu-a100-mig"]
    ), rows
    assert re.fullmatch(r"2/2 \(wants 2\) +8/8 +- +8 whole GPU\(s\)", rows["gpu-gb200"]), rows
    assert "cern-gpu: nothing changed" in out  # the second run's summary
    assert "sandbox stopped" in out
