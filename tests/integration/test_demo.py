"""`make demo`: the example pools converged on the sandbox, twice (the second run changes nothing), then a tenant's
pod with the a100-3g template gets a 3g.20gb on the A100 pool's node from the real kube-scheduler."""

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
    # The tenant's pod: its claim made from the template by the resourceclaim controller, allocated and bound by the
    # scheduler; node's pool label and device's profile attribute as the demo read them back from the API server.
    (allocation,) = re.findall(
        r"\[demo\] claim (\S+) allocated in [\d.]+s: node (\S+) \(pool (\S+)\), device (\S+) of (\S+), profile (\S+)",
        out,
    )
    claim, node, pool, device, driver, profile = allocation
    assert claim.startswith("a100-3g-demo-gpu-"), claim  # <pod>-<claim ref>-<random>: the controller's naming
    assert (pool, driver, profile) == ("gpu-a100-mig", "gpu.nvidia.com", "3g.20gb"), allocation
    assert re.fullmatch(r"gpu-\d-mig-3g20gb-\d+-\d+", device), device  # a static MIG device of the A100 node
    assert "gpu-a100-mig" in node, node  # the node of the pool's Magnum nodegroup
    assert "the tenant's pod has its GPU" in out
    assert "sandbox stopped" in out
