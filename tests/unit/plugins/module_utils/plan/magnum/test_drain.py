"""Unit tests of the drain before a Magnum shrink or delete (plugins/module_utils/plan/magnum/drain.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.drain import (
    action_removes_nodes,
    drain_candidate,
    node_drain_plan,
    plan_drain,
    removal_preview,
    removes_nodes,
    server_id,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import plan_nodegroup
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import gpu_use


def node(name, gpu_pods=0, cordoned=False, provider="openstack:///srv-%s"):
    return {
        "name": name,
        "provider_id": provider % name if provider and "%s" in provider else provider,
        "unschedulable": cordoned,
        "gpu_pods": [{"namespace": "ml", "name": "%s-p%d" % (name, i)} for i in range(gpu_pods)],
    }


def test_drain_prefers_cordoned_then_idle_then_newest():
    nodes = [
        node("k8s-gpu-abc-node-0", 0),
        node("k8s-gpu-abc-node-1", 2),
        node("k8s-gpu-abc-node-2", 1),
        node("k8s-gpu-abc-node-3", 3, cordoned=True),
        node("k8s-gpu-abc-node-4", 0),
    ]
    plan_ = plan_drain(nodes, 3)
    assert plan_["victims"] == ["k8s-gpu-abc-node-3", "k8s-gpu-abc-node-4", "k8s-gpu-abc-node-0"]
    assert plan_["nodes_to_remove"] == ["srv-k8s-gpu-abc-node-3", "srv-k8s-gpu-abc-node-4", "srv-k8s-gpu-abc-node-0"]
    assert plan_["cordon"] == ["k8s-gpu-abc-node-4", "k8s-gpu-abc-node-0"]
    assert [p["name"] for p in plan_["evict"]] == [
        "k8s-gpu-abc-node-3-p0",
        "k8s-gpu-abc-node-3-p1",
        "k8s-gpu-abc-node-3-p2",
    ]


def test_drain_nothing_to_remove():
    assert plan_drain([node("a")], 0) == {"victims": [], "nodes_to_remove": [], "cordon": [], "evict": []}


def test_drain_needs_enough_registered_nodes():
    with pytest.raises(Problems, match="only 1 of its nodes are registered"):
        plan_drain([node("a")], 2)


@pytest.mark.parametrize(
    "provider, expected",
    [
        ("openstack:///abc", "abc"),
        ("openstack://RegionOne/abc", "abc"),
        ("aws:///i-1", None),
        (None, None),
        ("openstack:///", None),
    ],
)
def test_server_id_from_provider_id(provider, expected):
    assert server_id({"provider_id": provider}) == expected


def test_node_without_provider_id_is_removed_by_name():
    assert plan_drain([node("n-1", provider=None)], 1)["nodes_to_remove"] == ["n-1"]


@pytest.mark.parametrize(
    "spec, uses",
    [
        ({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, True),
        ({"containers": [{"resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}}]}, True),
        ({"initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}], "containers": []}, True),
        ({"containers": [{"name": "x"}], "resourceClaims": [{"name": "gpu"}]}, True),
        ({"containers": [{"resources": {"limits": {"cpu": "1"}}}]}, False),
        ({"containers": [{}]}, False),
    ],
)
def test_the_drain_and_the_mig_rollout_share_one_gpu_pod_rule(spec, uses):
    assert (gpu_use({"spec": spec}) is not None) is uses


def test_drain_candidate_from_a_node_and_its_gpu_pods():
    node_ = {"metadata": {"name": "n-1"}, "spec": {"providerID": "openstack:///abc", "unschedulable": True}}
    pods = [{"metadata": {"namespace": "ml", "name": "train"}}]
    assert drain_candidate(node_, pods) == {
        "name": "n-1",
        "provider_id": "openstack:///abc",
        "unschedulable": True,
        "gpu_pods": [{"namespace": "ml", "name": "train"}],
    }


# ------------------------------------------------------------------------------------------- a plan's drain
CLUSTER = {"uuid": "c-1", "name": "k8s", "flavor_id": "m1", "labels": {}}
WHERE = "nodegroup 'gpu' of cluster 'k8s'"


def magnum_plan(node_count=None, state="present", count=3, **fields):
    from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import desired_state

    desired = desired_state(dict({"name": "gpu", "merge_labels": True, "node_count": node_count}, **fields))
    observed = {"uuid": "ng-1", "name": "gpu", "role": "worker", "flavor_id": "g1", "node_count": count}
    observed.update(min_node_count=0, max_node_count=None, labels={}, status="CREATE_COMPLETE", is_default=False)
    return plan_nodegroup(desired, observed, CLUSTER, (1, 12), state)


def k8s_node(i, cordoned=False):
    spec = {"providerID": "openstack:///srv-%d" % i, "unschedulable": cordoned}
    return {"metadata": {"name": "gpu-node-%d" % i}, "spec": spec}


def pod(name):
    return {"metadata": {"namespace": "ml", "name": name}}


# node 0: one GPU pod to evict; node 1: one GPU pod the skip_pods selector leaves alone; node 2: idle
NODES = [k8s_node(0), k8s_node(1), k8s_node(2)]
PODS = {"gpu-node-0": ([pod("train")], []), "gpu-node-1": ([], [pod("keep")]), "gpu-node-2": ([], [])}


def test_which_plans_remove_nodes():
    assert removes_nodes(magnum_plan(node_count=1)) and removes_nodes(magnum_plan(state="absent"))
    assert not removes_nodes(magnum_plan(node_count=5)) and not removes_nodes(magnum_plan(max_node_count=8))
    shrink, grow = magnum_plan(node_count=1).actions[0], magnum_plan(node_count=5).actions[0]
    assert action_removes_nodes(shrink) and not action_removes_nodes(grow)


def test_a_shrink_drains_the_chosen_nodes_and_names_their_servers():
    out = node_drain_plan(magnum_plan(node_count=1), NODES, PODS, WHERE)
    assert out["victims"] == ["gpu-node-2", "gpu-node-1"], "idle nodes first, then the newest"
    assert out["nodes_to_remove"] == ["srv-2", "srv-1"]
    assert out["evict"] == [] and out["skip"] == [{"node": "gpu-node-1", "namespace": "ml", "name": "keep"}]


def test_a_delete_drains_every_node_and_names_none():
    out = node_drain_plan(magnum_plan(state="absent"), NODES, PODS, WHERE)
    assert sorted(out["victims"]) == ["gpu-node-0", "gpu-node-1", "gpu-node-2"]
    assert out["nodes_to_remove"] == [], "the whole nodegroup goes: Magnum is told no servers"
    assert out["evict"] == [{"node": "gpu-node-0", "namespace": "ml", "name": "train"}]


def test_a_shrink_below_the_registered_nodes_is_refused():
    with pytest.raises(Problems, match="only 3 of its nodes are registered"):
        node_drain_plan(magnum_plan(node_count=0, count=5), NODES, PODS, WHERE)


def test_the_preview_shows_the_nodes_that_stay_and_what_leaves_the_others():
    drain = node_drain_plan(magnum_plan(node_count=2), NODES, PODS, WHERE)
    preview = removal_preview(WHERE, PODS, drain)
    assert preview["before"] == {"nodes": ["gpu-node-0", "gpu-node-1", "gpu-node-2"]}
    assert preview["after"]["nodes"] == ["gpu-node-0", "gpu-node-1"]
    assert list(preview["after"]["drained before removal"]) == ["gpu-node-2"]
    assert preview["before_header"] == WHERE + ": Kubernetes nodes"
