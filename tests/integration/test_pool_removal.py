"""A pool leaves the inventory: its nodes are never handed back schedulable (gpupool.core.node_pool keeps them
cordoned and tainted, labelled gpupool.io/orphaned) and gpupool.core.pool_info reports them on every run; a pool
that claims them again adopts them, and release_orphans hands them back on purpose.

Through ansible-playbook against the real control plane; writes counted in its audit log.
"""

from __future__ import annotations

import copy

import pytest

from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
ADMIN = "gpupool-admin"
GPU_TAINT = ("node-role.kubernetes.io/gpu", "true", "NoSchedule")
CLUSTER = {
    "name": "rm",
    "pools": [
        {"name": "rm-keep", "node_selector": {"rm-gpu": "keep"}, "gpu": {"model": "T4"}},
        {"name": "rm-old", "node_selector": {"rm-gpu": "old"}, "gpu": {"model": "L4"}, "node_labels": {"team": "ml"}},
    ],
}
NODES = {"rm-keep-0": {"rm-gpu": "keep"}, "rm-old-0": {"rm-gpu": "old"}, "rm-old-1": {"rm-gpu": "old"}}


def tasks(**node_pool):
    base = {"cluster": "{{ gpupool_cluster }}"}
    return [("gpupool.core.node_pool", dict(base, **node_pool)), ("gpupool.core.pool_info", dict(base))]


def without_old():
    cluster = copy.deepcopy(CLUSTER)
    cluster["pools"] = cluster["pools"][:1]
    return cluster


def state(cp, name):
    node = h.core(cp).read_node(name)
    taints = [(t.key, t.value, t.effect) for t in node.spec.taints or [] if not t.key.startswith("node.kubernetes.io/")]
    return {
        "unschedulable": bool(node.spec.unschedulable),
        "labels": node.metadata.labels,
        "cordoned_by": (node.metadata.annotations or {}).get("gpupool.io/cordoned-by"),
        "taints": taints,
    }


def orphan_kinds(info):
    return [(m["kind"], m["node"]) for m in info["mismatches"] if m["kind"] == "orphaned_node"]


def test_nodes_of_a_removed_pool_stay_cordoned_tainted_and_reported_until_adopted_or_released(control_plane, tmp_path):
    cp = control_plane
    for name, labels in NODES.items():
        h.make_node(cp, name, labels)
    play = h.GpupoolPlay(cp, tmp_path, copy.deepcopy(CLUSTER))
    try:
        (first, _info), _res, _window = play.run(tasks())
        assert h.actions(first) == dict.fromkeys(NODES, "updated"), first
        check_removal(play)
        adopt_and_release(play)
    finally:
        h.delete_nodes(cp, list(NODES))


def check_removal(play):
    cp = play.cp
    play.cluster = dict(without_old(), kubeconfig=play.cluster["kubeconfig"])

    # a run limited to the other pool cannot tell a removed pool from one it was not asked about: it leaves them
    limited = ("gpupool.core.node_pool", {"cluster": "{{ gpupool_cluster }}", "pools": ["rm-keep"]})
    (limited, check, _check_info), _res, check_window = play.run([limited] + tasks(), check=True)
    assert limited["changed"] is False and limited["orphaned"] == []
    assert check_window.writes(user=ADMIN) == []
    assert h.actions(check) == {"rm-keep-0": "unchanged", "rm-old-0": "orphaned", "rm-old-1": "orphaned"}
    (real, info), _res, window = play.run(tasks())
    assert h.comparable_diff(check) == h.comparable_diff(real)
    assert h.actions(real) == {"rm-keep-0": "unchanged", "rm-old-0": "orphaned", "rm-old-1": "orphaned"}
    diff = next(d for d in real["diff"] if "rm-old-0" in d["before_header"])
    assert diff["before"]["spec"]["unschedulable"] is False and diff["after"]["spec"]["unschedulable"] is True
    assert diff["after"]["metadata"]["labels"]["gpupool.io/orphaned"] == "true"
    assert real["orphaned"] == [
        {"name": n, "pool": "rm-old", "reason": "pool rm-old is no longer in the inventory"}
        for n in ("rm-old-0", "rm-old-1")
    ]
    assert any(
        "node rm-old-0: pool rm-old is no longer in the inventory, so it is kept cordoned" in w
        for w in real["warnings"]
    )
    # per node: one label apply (gpupool.io/orphaned) and one cordon patch, nothing else
    assert h.write_counts(window) == {("patch", "nodes"): 4}
    for name in ("rm-old-0", "rm-old-1"):
        now = state(cp, name)
        assert now["unschedulable"] and now["cordoned_by"] == "node-pool" and now["taints"] == [GPU_TAINT]
        assert {k: now["labels"].get(k) for k in ("gpupool.io/pool", "gpupool.io/orphaned", "team")} == {
            "gpupool.io/pool": "rm-old",
            "gpupool.io/orphaned": "true",
            "team": "ml",
        }
    rows = {r["name"]: r for r in info["orphaned"]}
    assert sorted(rows) == ["rm-old-0", "rm-old-1"]
    assert rows["rm-old-0"]["schedulable"] is False and rows["rm-old-0"]["taints"] == [
        "node-role.kubernetes.io/gpu=true:NoSchedule"
    ]

    # every later run: nothing written, still reported
    (again, again_info), res, window = play.run(tasks())
    assert again["changed"] is False and window.writes(user=ADMIN) == [] and res.recap["cern-gpu"]["changed"] == 0
    assert [r["name"] for r in again_info["orphaned"]] == ["rm-old-0", "rm-old-1"]
    assert orphan_kinds(again_info) == [("orphaned_node", "rm-old-0"), ("orphaned_node", "rm-old-1")]


def adopt_and_release(play):
    cp = play.cp
    # the pool comes back: it adopts its nodes (orphan label gone, node_pool's own cordon lifted)
    play.cluster = dict(copy.deepcopy(CLUSTER), kubeconfig=play.cluster["kubeconfig"])
    (back, back_info), _res, _window = play.run(tasks())
    assert h.actions(back) == {"rm-keep-0": "unchanged", "rm-old-0": "adopted", "rm-old-1": "adopted"}
    assert back_info["orphaned"] == [] and orphan_kinds(back_info) == []
    now = state(cp, "rm-old-0")
    assert not now["unschedulable"] and now["cordoned_by"] is None and "gpupool.io/orphaned" not in now["labels"]

    # removed again, one node cordoned by a person meanwhile; then handed back on purpose with release_orphans
    h.core(cp).patch_node("rm-old-1", {"spec": {"unschedulable": True}})
    play.cluster = dict(without_old(), kubeconfig=play.cluster["kubeconfig"])
    release = ("gpupool.core.node_pool", {"cluster": "{{ gpupool_cluster }}", "release_orphans": True})
    (orphaned, released, info), _res, _window = play.run(tasks()[:1] + [release] + tasks()[1:])
    assert h.actions(orphaned) == {"rm-keep-0": "unchanged", "rm-old-0": "orphaned", "rm-old-1": "orphaned"}, orphaned
    assert h.actions(released) == {"rm-keep-0": "unchanged", "rm-old-0": "released", "rm-old-1": "released"}
    assert released["orphaned"] == [] and info["orphaned"] == []
    zero, one = state(cp, "rm-old-0"), state(cp, "rm-old-1")
    assert not zero["unschedulable"] and zero["taints"] == [] and "gpupool.io/pool" not in zero["labels"]
    assert zero["cordoned_by"] is None
    assert one["unschedulable"] and one["taints"] == []  # the person's cordon was not node_pool's to lift
