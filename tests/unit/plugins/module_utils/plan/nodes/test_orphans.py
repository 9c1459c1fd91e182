"""Nodes and nodegroups of pools that left the inventory: recognised by gpupool.io/pool, never handed back
schedulable, reported on every run; and the labels and taints Magnum gives a pool's nodes from birth."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans as plan_orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import pool_nodes as plan_nodes
from ansible_collections.gpupool.core.plugins.module_utils.plan.report import pool_report as plan_pool_report
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed

NG = "magnum.openstack.org/nodegroup"
POOL = "gpupool.io/pool"
GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
BASE = {
    "name": "c1",
    "magnum": {"cloud": "x", "cluster": "y"},
    "pools": [
        {
            "name": "t4",
            "nodegroup": {"flavor": "g2.xlarge", "node_count": 1},
            "gpu": {"model": "T4"},
            "node_labels": {
                "example.com/team": "ml",
                "node-role.kubernetes.io/gpu": "",
                "node.kubernetes.io/accelerator": "t4",
            },
            "taints": [{"key": "example.com/dedicated", "value": "ml", "effect": "NoExecute"}],
        },
        {"name": "l4", "node_selector": {"gpu": "l4"}, "gpu": {"model": "L4"}},
        {"name": "old", "state": "absent", "node_selector": {"gpu": "old"}, "gpu": {"model": "L4"}},
    ],
}


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def node(name, labels, taints=(), ours="", unschedulable=False, cordoned_by=None):
    annotations = {"gpupool.io/taints": ours} if ours else {}
    if cordoned_by:
        annotations["gpupool.io/cordoned-by"] = cordoned_by
    spec = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    # who set spec.unschedulable: gpupool for its own cordon, a person (kubectl cordon) for one without its mark
    manager = "gpupool" if cordoned_by else "kubectl-cordon"
    fields = [{"manager": manager, "operation": "Update", "fieldsV1": {"f:spec": {"f:unschedulable": {}}}}]
    return {
        "metadata": {"name": name, "labels": dict(labels), "annotations": annotations, "managedFields": fields},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


NODES = [
    node("t4-0", {NG: "t4", POOL: "t4"}),
    node("l4-0", {"gpu": "l4", POOL: "l4"}),
    node("l4-1", {"gpu": "l4-retired", POOL: "l4"}, [GPU_TAINT], ours="node-role.kubernetes.io/gpu:NoSchedule"),
    node("old-0", {"gpu": "old", POOL: "old"}, [GPU_TAINT], ours="node-role.kubernetes.io/gpu:NoSchedule"),
    node(
        "gone-0",
        {NG: "gone", POOL: "gone", "gpupool.io/orphaned": "true", "gpupool.io/owner": "c1"},  # this inventory's
        [GPU_TAINT, {"key": "other", "effect": "NoSchedule"}],
        ours="node-role.kubernetes.io/gpu:NoSchedule",
        unschedulable=True,
        cordoned_by="node-pool",
    ),
    node("cpu-0", {NG: "default-worker"}),
]


def members(c):
    assigned = plan_nodes.assign_nodes(c.present_pools, NODES)
    return [n["metadata"]["name"] for group in assigned.values() for n in group]


def test_orphans_are_the_labelled_nodes_no_present_pool_claims():
    c = cluster()
    found = [(n["metadata"]["name"], pool) for n, pool in plan_orphans.find_orphans(NODES, members(c))]
    assert found == [("gone-0", "gone"), ("l4-1", "l4"), ("old-0", "old")]
    assert [plan_orphans.orphan_reason(p, c) for _n, p in found] == [
        "pool gone is no longer in the inventory",
        "pool l4 no longer selects it (its node_selector or nodegroup changed)",
        "pool old is absent",
    ]


def test_a_limited_run_only_sees_the_orphans_of_its_pools():
    c = cluster()
    scope = ["l4"]
    assigned = plan_nodes.assign_nodes([p for p in c.present_pools if p.name in scope], NODES)
    claimed = [n["metadata"]["name"] for group in assigned.values() for n in group]
    assert [n["metadata"]["name"] for n, _p in plan_orphans.find_orphans(NODES, claimed, scope)] == ["l4-1"]
    # t4-0 is not claimed in this run (t4 is out of scope), and still no orphan
    assert "t4-0" not in claimed


def test_an_orphan_keeps_what_gpupool_set_and_is_labelled_and_cordoned():
    old = NODES[3]
    labels = plan_orphans.orphan_labels(old, ["gpupool.io/pool", "gpu", "nvidia.com/gpu.present"], "old")
    # owned keys keep their current values (a key gpupool owns but the node lacks is not invented)
    assert labels == {"gpupool.io/pool": "old", "gpu": "old", "gpupool.io/orphaned": "true"}
    assert plan_orphans.kept_taints(old) == [GPU_TAINT]
    assert plan_orphans.kept_taints(NODES[4]) == [GPU_TAINT]  # someone else's taint is not ours to keep
    assert plan_orphans.needs_orphan_cordon(old) and not plan_orphans.needs_orphan_cordon(NODES[4])
    assert plan_orphans.orphan_cordon_patch() == {
        "metadata": {"annotations": {"gpupool.io/cordoned-by": "node-pool"}},
        "spec": {"unschedulable": True},
    }


def test_only_node_pools_own_cordon_is_lifted():
    assert plan_orphans.lifts_orphan_cordon(NODES[4])
    drained = node("x", {POOL: "l4"}, unschedulable=True, cordoned_by="nodegroup")
    by_hand = node("y", {POOL: "l4"}, unschedulable=True)
    assert not plan_orphans.lifts_orphan_cordon(drained) and not plan_orphans.lifts_orphan_cordon(by_hand)
    assert not plan_orphans.lifts_orphan_cordon(NODES[0])
    # node_pool's orphan cordon that a person set again afterwards (kubectl uncordon, kubectl cordon): theirs now
    recordoned = node("z", {POOL: "l4"}, unschedulable=True, cordoned_by="node-pool")
    recordoned["metadata"]["managedFields"][0]["manager"] = "kubectl-cordon"
    assert not plan_orphans.lifts_orphan_cordon(recordoned)


def test_pool_report_lists_orphans_on_every_run_and_flags_a_schedulable_one():
    c = cluster()
    report = plan_pool_report.build_report(c, Observed(NODES))
    rows = {r["name"]: r for r in report["orphaned"]}
    assert sorted(rows) == ["gone-0", "l4-1", "old-0"]
    assert rows["gone-0"] == {
        "name": "gone-0",
        "pool": "gone",
        "reason": "pool gone is no longer in the inventory",
        "schedulable": False,
        "cordoned_by": "node-pool",
        "labelled": True,
        "taints": ["node-role.kubernetes.io/gpu=true:NoSchedule"],
        "nodegroup": "gone",
    }
    assert rows["old-0"]["schedulable"] is True and rows["old-0"]["nodegroup"] is None
    kinds = [(m["kind"], m["node"]) for m in report["mismatches"] if m["kind"] == "orphaned_node"]
    assert sorted(kinds) == [("orphaned_node", "gone-0"), ("orphaned_node", "l4-1"), ("orphaned_node", "old-0")]
    messages = {m["node"]: m["message"] for m in report["mismatches"] if m["kind"] == "orphaned_node"}
    assert messages["gone-0"] == (
        "node gone-0 (pool gone is no longer in the inventory) is kept cordoned with gpupool's taints and the label "
        "gpupool.io/orphaned=true; to give it up, set gpupool_cluster.magnum.prune_nodegroups: true to drain and "
        "delete its nodegroup gone; to use it again, declare a pool that selects it (or run gpupool.core.node_pool "
        "with release_orphans: true to hand it back untainted)"
    )
    assert messages["old-0"].startswith(
        "node old-0 (pool old is absent) is SCHEDULABLE: ordinary pods can land on a GPU node nobody declares; run "
        "site.yml (or gpupool.core.node_pool) to cordon it"
    )
    assert "[orphaned_node] node gone-0" in plan_pool_report.summary(report)
    limited = plan_pool_report.build_report(c, Observed(NODES), pools=[c.pool("l4")])
    assert [r["name"] for r in limited["orphaned"]] == ["l4-1"]


def test_pool_report_lists_no_node_of_another_owner_or_of_an_undeclared_pool_without_owner_as_an_orphan():
    c = cluster()
    theirs = node("a-0", {"gpu": "old", POOL: "old", "gpupool.io/owner": "team-a"})  # pool name shared with us
    legacy = node("b-0", {POOL: "elsewhere"})  # made before owner labels, of a pool this inventory never declared
    ours_legacy = node("old-1", {"gpu": "old", POOL: "old"})  # made before owner labels, of our absent pool
    report = plan_pool_report.build_report(c, Observed(NODES + [theirs, legacy, ours_legacy]))
    assert sorted(r["name"] for r in report["orphaned"]) == ["gone-0", "l4-1", "old-0", "old-1"]
    lost = cluster(lambda d: d.update(owner="team-b"))  # the same nodes seen by another owner: gone-0 is c1's
    assert "gone-0" not in [r["name"] for r in plan_pool_report.build_report(lost, Observed(NODES))["orphaned"]]


def test_a_nodegroup_is_prunable_only_when_gpupool_provably_made_it():
    nodes = NODES + [node("mixed-0", {NG: "mixed", POOL: "mixed"}), node("mixed-1", {NG: "mixed"})]
    assert plan_orphans.nodegroup_pool({"name": "x", "node_labels": {POOL: "gpu-x"}}, nodes) == "gpu-x"
    assert plan_orphans.nodegroup_pool({"name": "gone"}, nodes) == "gone"
    assert plan_orphans.nodegroup_pool({"name": "mixed"}, nodes) is None  # one node is not labelled for it
    assert plan_orphans.nodegroup_pool({"name": "default-worker"}, nodes) is None
    assert plan_orphans.nodegroup_pool({"name": "empty", "node_labels": {}}, nodes) is None


def test_birth_labels_are_what_kubelet_may_set_and_taints_all_of_the_pool():
    t4 = cluster().pool("t4")
    # node-role.kubernetes.io is not kubelet's to set (Magnum refuses it): node_pool sets it after the join
    assert plan_nodes.birth_node_labels(t4) == {
        "example.com/team": "ml",
        "node.kubernetes.io/accelerator": "t4",
        "gpupool.io/pool": "t4",
    }
    assert plan_nodes.birth_node_taints(t4) == [
        GPU_TAINT,
        {"key": "example.com/dedicated", "value": "ml", "effect": "NoExecute"},
    ]
    assert [
        k
        for k in (
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "a.kubelet.kubernetes.io/x",
            "example.com/x",
            "k8s.io/x",
            "x.k8s.io/y",
            "node-restriction.kubernetes.io/z",
        )
        if plan_nodes.kubelet_may_set(k)
    ] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone", "a.kubelet.kubernetes.io/x", "example.com/x"]
