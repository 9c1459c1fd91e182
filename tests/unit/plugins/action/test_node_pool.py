"""gpupool.core.node_pool run in-process against the Kubernetes API simulator: the pools' nodes get gpupool's labels
and taints by merge patches that carry the resourceVersion they were read at. The simulator runs no kubelet: nodes
are Ready because the test writes them so."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import node_pool
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [
        {
            "name": "t4",
            "node_selector": {"gpu": "t4"},
            "gpu": {"model": "T4"},
            "taints": [{"key": "example.org/gpu", "effect": "NoSchedule"}],
        }
    ],
}


def node(name, labels):
    return {
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def nodes(api, *names, labels=None):
    for name in names:
        api.put("", "v1", "nodes", node(name, labels or {"gpu": "t4"}))
    return api


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    args.setdefault("wait", False)
    return run_action(node_pool, cluster=copy.deepcopy(cluster), **CONNECTION, **args)


def live(api, name):
    return api.get("", "nodes", name)


def test_check_mode_writes_nothing(api):
    nodes(api, "n0", "n1")
    before = [live(api, n) for n in ("n0", "n1")]
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert out["changed"] is True
    assert api.writes() == [] and [live(api, n) for n in ("n0", "n1")] == before


def test_the_pool_nodes_get_the_taint_and_a_second_run_changes_nothing(api):
    nodes(api, "n0", "n1")
    nodes(api, "other", labels={"gpu": "none"})
    first = run()
    assert first["changed"] is True, first
    for name in ("n0", "n1"):
        assert {"key": "example.org/gpu", "effect": "NoSchedule"} in [
            {k: t[k] for k in ("key", "effect")} for t in live(api, name)["spec"].get("taints") or []
        ]
    assert [path for _method, path in api.writes()] == ["/api/v1/nodes/n0", "/api/v1/nodes/n1"]
    assert all("resourceVersion" in body["metadata"] for m, _p, _q, body in api.requests if m == "PATCH")
    assert live(api, "other")["spec"] == {}
    writes = len(api.writes())
    second = run()
    assert second["changed"] is False, second
    assert len(api.writes()) == writes


def test_changed_follows_a_real_difference(api):
    nodes(api, "n0")
    run()
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"][0]["taints"] = []
    out = run(cluster)
    assert out["changed"] is True
    assert "example.org/gpu" not in [t["key"] for t in live(api, "n0")["spec"].get("taints") or []]
    assert run(cluster)["changed"] is False


def test_a_node_changed_between_read_and_write_is_read_again(api):
    nodes(api, "n0")
    real = api._merge
    calls = []

    def someone_else_first(key, doc, dry, query):
        if not calls:  # another client labels the node after gpupool read it: gpupool's patch is refused with 409
            calls.append(key)
            api.put(
                "",
                "v1",
                "nodes",
                dict(live(api, "n0"), metadata=dict(live(api, "n0")["metadata"], labels={"gpu": "t4", "x": "y"})),
            )
        return real(key, doc, dry, query)

    api._merge = someone_else_first
    out = run()
    assert out.get("failed") is not True, out
    assert live(api, "n0")["metadata"]["labels"]["x"] == "y"
    assert [m for m, path, _q, _b in api.requests if path == "/api/v1/nodes/n0"].count("PATCH") == 2  # 409, then again
    assert live(api, "n0")["spec"].get("taints")


def test_a_pool_the_inventory_does_not_have_names_the_known_ones(api):
    nodes(api, "n0")
    out = run(pools=["h100"])
    assert out["failed"] is True
    assert "h100" in said(out) and "t4" in said(out)
    assert api.requests == []


def test_too_few_ready_nodes_fails_with_the_count(api):
    nodes(api, "n0")
    out = run(wait=True, min_ready=2, wait_timeout=1, wait_sleep=0.2)
    assert out["failed"] is True
    assert "pool t4 has 1 of 2 (nodes found: n0)" in said(out) and "kubectl get nodes" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())


def cordoned(name, manager):
    """A node of pool t4 that a killed mig_layout run cordoned; `manager` set spec.unschedulable last."""
    out = node(name, {"gpu": "t4"})
    out["spec"]["unschedulable"] = True
    out["metadata"]["annotations"] = {
        "gpupool.io/cordoned-by": "mig-layout",
        "gpupool.io/cordon-reason": "mig-layout:t4:gpupool-t4",  # t4 is no static MIG pool: the reason is gone
    }  # no gpupool.io/cordon-run: this step runs without a lease, and would spare a cordon a run recorded
    fields = {"f:spec": {"f:unschedulable": {}}}
    out["metadata"]["managedFields"] = [{"manager": manager, "operation": "Update", "fieldsV1": fields}]
    return out


def test_a_cordon_is_lifted_only_if_gpupool_set_it_last(api):
    api.put("", "v1", "nodes", cordoned("ours", "gpupool"))
    api.put("", "v1", "nodes", cordoned("persons", "kubectl"))  # kubectl uncordon + kubectl cordon after the kill
    out = run()
    assert out.get("failed") is not True, out
    assert [c["name"] for c in out["cordons_lifted"]] == ["ours"] and not live(api, "ours")["spec"].get("unschedulable")
    assert [(c["name"], c["manager"]) for c in out["cordons_left"]] == [("persons", "kubectl")]
    left = live(api, "persons")
    assert left["spec"]["unschedulable"] is True
    assert not {k for k in left["metadata"].get("annotations") or {} if k.startswith("gpupool.io/cordon")}
    assert any("node persons: cordoned by kubectl after gpupool's cordon; left cordoned" in w for w in out["warnings"])
    assert run()["cordons_left"] == []  # a person's plain cordon now: never judged again


def test_a_person_who_cordons_between_gpupools_read_and_its_lift_keeps_the_cordon(api):
    api.put("", "v1", "nodes", cordoned("n0", "gpupool"))
    real = api._merge

    def person_first(key, doc, dry, query):
        if (doc.get("spec") or {}).get("unschedulable", False) is None and not dry:
            # kubectl uncordon + kubectl cordon land after gpupool's LIST: the lift, at the old version, gets a 409
            api.put("", "v1", "nodes", dict(live(api, "n0"), metadata=cordoned("n0", "kubectl")["metadata"]))
            api._merge = real
        return real(key, doc, dry, query)

    api._merge = person_first
    out = run()
    assert out.get("failed") is not True, out
    assert live(api, "n0")["spec"]["unschedulable"] is True
    assert out["cordons_lifted"] == [] and [c["name"] for c in out["cordons_left"]] == ["n0"]
    lifts = [b for m, p, _q, b in api.requests if m == "PATCH" and b.get("spec", {}).get("unschedulable", 0) is None]
    assert lifts and all(b["metadata"]["resourceVersion"] for b in lifts)


def orphan(name, manager):
    """A node node_pool cordoned as an orphan of t4, which t4 selects again (it is adopted: its cordon lifted)."""
    out = cordoned(name, manager)
    out["metadata"]["labels"].update({"gpupool.io/pool": "t4", "gpupool.io/orphaned": "true"})
    out["metadata"]["annotations"] = {"gpupool.io/cordoned-by": "node-pool", "gpupool.io/cordon-reason": "orphan:t4"}
    return out


def test_an_adopted_orphans_cordon_is_lifted_at_the_version_it_was_decided_on(api):
    api.put("", "v1", "nodes", orphan("n0", "gpupool"))
    real = api._merge

    def person_first(key, doc, dry, query):
        if (doc.get("spec") or {}).get("unschedulable", False) is None and not dry:
            api.put("", "v1", "nodes", dict(live(api, "n0"), metadata=orphan("n0", "kubectl")["metadata"]))
            api._merge = real
        return real(key, doc, dry, query)

    api._merge = person_first
    out = run()
    assert out.get("failed") is not True, out
    assert live(api, "n0")["spec"].get("unschedulable") is True  # a person's cordon that landed first stays
    assert [(c["name"], c["manager"]) for c in out["cordons_left"]] == [("n0", "kubectl")]
    assert any("node n0: cordoned by kubectl after gpupool's cordon" in w for w in out["warnings"])
    # without a person in between, the adoption lifts node_pool's own cordon
    api.put("", "v1", "nodes", orphan("n1", "gpupool"))
    out = run()
    assert out.get("failed") is not True, out
    assert not live(api, "n1")["spec"].get("unschedulable") and live(api, "n0")["spec"]["unschedulable"] is True
    lifts = [b for m, p, _q, b in api.requests if m == "PATCH" and b.get("spec", {}).get("unschedulable", 0) is None]
    assert lifts and all(b["metadata"]["resourceVersion"] for b in lifts)
