"""`make gpu-check` (tools/gpu_check.py) against the fake libnvidia-ml through the real, unmodified pynvml.

The fake (testbed/fakenvml) takes its GPUs from the test bed's own tables, never from the catalog, so a match here
is two independent transcriptions agreeing; a fake configured to differ (another memory size, other placements,
a renamed or missing profile) must come out as a mismatch with exit status 1. The fake logs every state-changing
NVML call: the check must make none. Without a usable NVIDIA driver the check says so in one line and exits 0.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.fixtures.nvml import FakeNvml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "gpu_check.py")
NVML_ERROR_NO_PERMISSION = 4


def check(fake: FakeNvml, *args: str, env: dict | None = None):
    proc = fake.run([sys.executable, TOOL, *args], env=env)
    assert proc.stderr == "", proc.stderr
    return proc.returncode, proc.stdout.splitlines()


def row(lines, gpu, name):
    """The table line of GPU label `gpu` and check `name`, split into its columns' words."""
    for line in lines:
        if line.startswith(gpu + " ") and line[len(gpu) :].lstrip().startswith(name + " "):
            return line
    raise AssertionError("no row %s / %s in:\n%s" % (gpu, name, "\n".join(lines)))


def test_a_fake_a100_node_matches_the_catalog_and_nothing_is_written(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB"}, {"model": "A100-40GB"}], driver_version="570.172.08")
    rc, lines = check(fake_nvml)
    assert rc == 0, "\n".join(lines)
    assert lines[0] == "gpu-check: 2 GPU(s), NVIDIA driver 570.172.08, read-only (no setting changed)"
    assert lines[1].split() == ["GPU", "check", "NVML", "catalog", "result"]
    assert row(lines, "GPU 0-1", "product name").split()[-1] == "match"
    assert "NVIDIA A100-SXM4-40GB" in row(lines, "GPU 0-1", "product name")
    assert row(lines, "GPU 0-1", "memory MiB").split()[-3:] == ["40960", "40960", "match"]
    three = row(lines, "GPU 0-1", "MIG 3g.20gb")
    assert three.count("id 9 3c/4m x2 @0,4 20096 MiB 42 SM") == 2 and three.endswith("match")
    assert lines[-1] == "2 GPU(s), 13 check(s) against the catalog: all match"
    assert fake_nvml.calls() == []  # no MIG mode, instance or any other NVML write
    assert fake_nvml.state().gpus[0]["mig"] == [0, 0]


def test_mig_mode_and_instances_are_read_not_touched(fake_nvml):
    fake_nvml.configure(
        [
            {"model": "H100-80GB", "mig": True, "instances": [{"profile": "3g.40gb", "start": 0}]},
            {"model": "T4"},
        ]
    )
    before = fake_nvml.state_text()
    rc, lines = check(fake_nvml)
    assert rc == 0, "\n".join(lines)
    assert row(lines, "GPU 0", "MIG mode").split()[4] == "on"
    assert row(lines, "GPU 1", "MIG capable").split()[-3:] == ["no", "no", "match"]
    assert not any(line.startswith("GPU 1  MIG 1g") for line in lines)
    assert fake_nvml.calls() == [] and fake_nvml.state_text() == before


def test_inferred_placements_are_confirmed_when_the_gpu_agrees(fake_nvml):
    fake_nvml.configure([{"model": "H200-141GB"}])
    rc, lines = check(fake_nvml)
    assert rc == 0
    assert row(lines, "GPU 0", "MIG 3g.71gb").endswith("match (confirms inferred placements)")


@pytest.mark.parametrize(
    "gpu,name,says",
    [
        ({"memory_mib": 40000}, "memory MiB", "MISMATCH"),
        ({"profile_starts": {"3g.20gb": [0]}}, "MIG 3g.20gb", "MISMATCH (placements)"),
        ({"profile_names": {"3g.20gb": "3g.19gb"}}, "MIG 3g.19gb (catalog: 3g.20gb)", "MISMATCH (name)"),
        ({"drop_profiles": ["1g.10gb"]}, "MIG 1g.10gb", "MISMATCH (older driver?)"),
        ({"name": "NVIDIA A100-SXM4-40GB-X"}, "product name", "found by PCI device id only"),
    ],
)
def test_a_gpu_that_differs_from_the_catalog_is_a_mismatch(fake_nvml, gpu, name, says):
    fake_nvml.configure([dict({"model": "A100-40GB"}, **gpu)])
    rc, lines = check(fake_nvml)
    assert rc == 1, "\n".join(lines)
    assert says in row(lines, "GPU 0", name)
    assert lines[-1].endswith("1 mismatch(es)")
    assert fake_nvml.calls() == []


def test_no_nvml_library_is_one_line_and_success(fake_nvml):
    rc, lines = check(fake_nvml, "--nvml-library", os.path.join(fake_nvml.directory, "nowhere", "libnvidia-ml.so.1"))
    assert rc == 0 and len(lines) == 1
    assert lines[0].startswith("gpu-check: no NVIDIA GPU here, nothing checked: no NVML library at ")


def test_a_driver_that_is_not_loaded_is_one_line_and_success(fake_nvml):
    # the fake without a node description answers nvmlInit with NVML_ERROR_DRIVER_NOT_LOADED
    rc, lines = check(fake_nvml, env={"FAKE_NVML_CONFIG": ""})
    assert rc == 0 and len(lines) == 1
    assert lines[0].startswith("gpu-check: no NVIDIA GPU here, nothing checked: libnvidia-ml.so.1 is installed but")


def test_a_node_without_gpus_is_one_line_and_success(fake_nvml):
    fake_nvml.configure([])
    rc, lines = check(fake_nvml)
    assert (rc, lines) == (0, ["gpu-check: no NVIDIA GPU here, nothing checked: NVML lists no GPU"])


def test_nvml_that_refuses_is_a_failure_not_a_missing_gpu(fake_nvml):
    fake_nvml.configure([{"model": "A100-40GB"}], init_return=NVML_ERROR_NO_PERMISSION)
    rc, lines = check(fake_nvml)
    assert rc == 2 and len(lines) == 1 and "Insufficient Permissions" in lines[0]
