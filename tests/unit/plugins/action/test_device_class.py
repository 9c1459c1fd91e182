"""gpupool.core.device_class run in-process against the Kubernetes API simulator: check mode writes nothing, a
second run changes nothing, `changed` follows a real difference, and a refused inventory names what to fix."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import device_class
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [
        {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
    ],
}


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    return run_action(device_class, cluster=copy.deepcopy(cluster), **CONNECTION, **args)


def names(api):
    return sorted(o["metadata"]["name"] for o in api.items("resource.k8s.io", "deviceclasses"))


def test_check_mode_reports_the_classes_and_writes_nothing(api):
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert out["changed"] is True
    assert {o["action"] for o in out["objects"]} == {"created"}
    assert api.writes() == [] and names(api) == []


def test_a_second_run_changes_nothing(api):
    first = run()
    assert first["changed"] is True, first
    created = sorted(o["name"] for o in first["objects"] if o["action"] == "created")
    assert created == names(api) and len(created) >= 3
    writes = len(api.writes())
    second = run()
    assert second["changed"] is False, second
    assert {o["action"] for o in second["objects"]} == {"unchanged"}
    assert len(api.writes()) == writes


def test_changed_follows_a_real_difference(api):
    run()
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"] = cluster["pools"][:1]  # the a100 pool is gone: its classes are pruned
    out = run(cluster)
    assert out["changed"] is True
    deleted = sorted(o["name"] for o in out["objects"] if o["action"] == "deleted")
    assert deleted and all(name.startswith("a100") for name in deleted)
    assert not any(name.startswith("a100") for name in names(api))
    assert run(cluster)["changed"] is False


def test_a_class_someone_else_made_is_left_alone_with_a_fix(api):
    wanted = run(_ansible_check_mode=True)["objects"][0]["name"]
    api.put("resource.k8s.io", "v1", "deviceclasses", {"metadata": {"name": wanted}, "spec": {"selectors": []}})
    out = run()
    assert out["failed"] is True
    assert "not managed by gpupool" in said(out) and wanted in said(out)
    assert "rename the object in the inventory (gpupool_cluster.pools[0])" in said(out)
    assert api.get("resource.k8s.io", "deviceclasses", wanted)["spec"] == {"selectors": []}


def test_a_refused_inventory_fails_before_any_request(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][1]["mig"]["layout"] = {"3g.20gb": 9}
    out = run(cluster)
    assert out["failed"] is True
    assert "a100" in said(out) and "3g.20gb" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())
    assert api.requests == []
