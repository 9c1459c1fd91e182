"""playbooks/validate.yml on the example inventory, and on broken copies of it."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

EXAMPLE = ROOT + "/inventories/example"
PLAYBOOK = ROOT + "/playbooks/validate.yml"
VARS = "host_vars/cern-gpu/gpupool.yml"


def broken_copy(tmp_path, mutate):
    dest = tmp_path / "inv"
    shutil.copytree(EXAMPLE, dest)
    data = yaml.safe_load((dest / VARS).read_text())
    mutate(data["gpupool_cluster"])
    (dest / VARS).write_text(yaml.safe_dump(data))
    return str(dest)


def test_example_inventory_validates(tmp_path):
    res = run_playbook(PLAYBOOK, EXAMPLE, tmp_path)
    assert res.rc == 0, res.stdout + res.stderr
    # ok=3: the check that the run has clusters (delegated to localhost, counted for cern-gpu) and two tasks.
    assert res.recap["cern-gpu"] == {
        "ok": 3,
        "changed": 0,
        "unreachable": 0,
        "failed": 0,
        "skipped": 0,
        "rescued": 0,
        "ignored": 0,
    }
    assert "4 pool(s) valid: gpu-t4, gpu-a100-mig, gpu-h100, gpu-gb200" in res.stdout


@pytest.mark.parametrize(
    "mutate, path, words",
    [
        (
            lambda c: c["pools"][0]["nodegroup"].update(node_cout=3),
            "gpupool_cluster.pools[0] (gpu-t4).nodegroup.node_cout",
            "did you mean 'node_count'",
        ),
        (
            lambda c: c["pools"][1]["mig"].update(layout={"3g.20gb": 2, "2g.10gb": 1}),
            "gpupool_cluster.pools[1] (gpu-a100-mig).mig.layout",
            "needs 8 compute slices but A100-40GB has 7",
        ),
        (
            lambda c: c["pools"][0]["nodegroup"].update(min_node_count=5, max_node_count=3),
            "gpupool_cluster.pools[0] (gpu-t4).nodegroup.min_node_count",
            "min_node_count 5 is greater than max_node_count 3",
        ),
    ],
    ids=["typo-key", "infeasible-layout", "min-gt-max"],
)
def test_broken_inventory_fails_naming_the_key(tmp_path, mutate, path, words):
    res = run_playbook(PLAYBOOK, broken_copy(tmp_path, mutate), tmp_path)
    assert res.rc != 0
    assert res.recap["cern-gpu"]["failed"] == 1 and res.recap["cern-gpu"]["changed"] == 0
    assert path in res.stdout and words in res.stdout, res.stdout
    assert "nothing was changed" in res.stdout


def test_min_memory_no_gpu_has_is_a_warning_not_a_failure(tmp_path):
    """An H100 80GB publishes 81559 MiB: a class asking for 80Gi matches nothing; validate says so and passes."""
    res = run_playbook(
        PLAYBOOK,
        broken_copy(tmp_path, lambda c: c["pools"][2]["device_classes"]["extra"][0].update(min_memory="80Gi")),
        tmp_path,
    )
    out = res.stdout + res.stderr
    assert res.rc == 0, out
    assert "gpupool_cluster.pools[2] (gpu-h100).device_classes.extra[0].min_memory" in out
    assert "every H100-80GB publishes 81559 MiB" in out


def test_duplicate_key_in_the_inventory_fails(tmp_path):
    """A pool with two `gpu:` keys must not validate the second: validate reads the host's files itself and names
    the file and the line (ansible-core's own check is off in ansible.cfg, as it refuses `<<` merge overrides)."""
    dest = tmp_path / "inv"
    shutil.copytree(EXAMPLE, dest)
    text = (dest / VARS).read_text()
    once = "      gpu: {model: A100-40GB, per_node: 2}\n"
    assert once in text
    (dest / VARS).write_text(text.replace(once, once + "      gpu: {model: A100-80GB, per_node: 2}\n", 1))
    line = text[: text.index(once)].count("\n") + 2  # the second gpu: key, 1-based
    res = run_playbook(PLAYBOOK, str(dest), tmp_path)
    assert res.rc != 0
    out = " ".join(res.stdout.split())
    assert (
        "%s:%d: gpupool_cluster.pools[1] (gpu-a100-mig).gpu: written twice (first at line %d)" % (VARS, line, line - 1)
        in out
    ), res.stdout
    assert "pool(s) valid" not in res.stdout


def test_failure_prints_the_problems_as_yaml(tmp_path):
    """callback_result_format = yaml: the failed task's result is YAML (a msg block, one line per problem), not a
    JSON line with escaped newlines. (ansible-core 2.19 also puts the message in its "[ERROR]: Task failed" line.)"""
    res = run_playbook(PLAYBOOK, broken_copy(tmp_path, lambda c: c["pools"][0].update(gpu="T4")), tmp_path)
    assert res.rc != 0
    assert (
        "    msg: |-\n        1 problem(s) in the GPU-pool inventory; nothing was changed:\n"
        "          - gpupool_cluster.pools[0] (gpu-t4).gpu: must be a mapping" in res.stdout
    ), res.stdout
    assert '"msg":' not in res.stdout and "\\n" not in res.stdout
