"""gpupool.core.mig_layout run in-process against the Kubernetes API simulator. The test plays the MIG manager: when a
node's nvidia.com/mig.config label changes, it reports nvidia.com/mig.config.state=success at once (the real one
runs on the node: tests/integration/test_mig_layout.py runs the sandbox's MIG manager simulator)."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import mig_layout
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CONFIG, STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        }
    ],
}
FAST = dict(wait_timeout=5, wait_sleep=0.05, relabel_delay=0)


def mig_manager(api):
    def react(key, obj):
        labels = obj["metadata"].get("labels") or {}
        if key[0] == "core_nodes" and labels.get(CONFIG) and labels.get(STATE) != "success":
            obj["metadata"]["labels"][STATE] = "success"
            api.put("", "v1", "nodes", obj)

    api.reactions.append(react)


def cluster(api, *names):
    api.put("", "v1", "namespaces", {"metadata": {"name": "gpu-operator"}})
    for name in names:
        node = {"metadata": {"name": name, "labels": {"gpu": "a100"}}, "spec": {}}
        node["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        api.put("", "v1", "nodes", node)
    mig_manager(api)
    return api


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    return run_action(mig_layout, cluster=copy.deepcopy(cluster), **CONNECTION, **dict(FAST, **args))


def labels(api, name):
    return api.get("", "nodes", name)["metadata"]["labels"]


def test_check_mode_writes_nothing(api):
    cluster(api, "n0", "n1")
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert out["changed"] is True and api.writes() == []
    assert CONFIG not in labels(api, "n0")


def test_the_layout_rolls_out_and_a_second_run_changes_nothing(api):
    cluster(api, "n0", "n1")
    first = run()
    assert first.get("failed") is not True, first
    assert first["changed"] is True
    for name in ("n0", "n1"):
        assert labels(api, name)[CONFIG] == "gpupool-a100" and labels(api, name)[STATE] == "success"
        assert not api.get("", "nodes", name)["spec"].get("unschedulable")  # uncordoned after its wave
    config_map = api.items("", "configmaps")
    assert len(config_map) == 1 and "gpupool-a100" in config_map[0]["data"]["config.yaml"]
    writes = len(api.writes())
    second = run()
    assert second.get("failed") is not True, second
    assert second["changed"] is False and len(api.writes()) == writes


def test_a_layout_change_relabels_the_nodes(api):
    cluster(api, "n0")
    run()
    changed = copy.deepcopy(CLUSTER)
    changed["pools"][0]["mig"]["layout"] = {"1g.5gb": 7}
    before = copy.deepcopy(api.items("", "configmaps")[0]["data"])
    out = run(changed)
    assert out.get("failed") is not True, out
    assert out["changed"] is True and api.items("", "configmaps")[0]["data"] != before
    assert labels(api, "n0")[STATE] == "success"
    assert run(changed)["changed"] is False


def test_a_mig_manager_that_never_answers_fails_with_where_to_look(api):
    cluster(api, "n0")
    api.reactions.clear()
    out = run(wait_timeout=1)
    assert out["failed"] is True
    assert "node n0 did not reach nvidia.com/mig.config.state=success within 1s" in said(out)
    assert "rerun with retry_failed: true" in said(out)
    assert api.get("", "nodes", "n0")["spec"]["unschedulable"] is True  # stays cordoned, as the message says
    assert all(len(line) <= 200 for line in out["msg"].splitlines())


def test_a_refused_option_names_it(api):
    out = run(wait_sleep=0)
    assert out["failed"] is True and "wait_sleep must be greater than 0" in said(out)
    assert api.requests == []


def test_a_dry_run_without_the_mig_manager_s_namespace_fails_as_the_converge_would(api):
    """A cluster without the GPU Operator: the ConfigMap's create is sent as a dry run, so check mode says what the
    converge would say instead of 'created'."""
    node = {"metadata": {"name": "n0", "labels": {"gpu": "a100"}}, "spec": {}}
    api.put("", "v1", "nodes", dict(node, status={"conditions": [{"type": "Ready", "status": "True"}]}))
    out = run(_ansible_check_mode=True)
    assert out["failed"] is True and "namespace gpu-operator does not exist" in said(out), out
    assert "install the GPU Operator" in said(out) and api.writes() == []
