"""The ranking on hand-made cases whose best answer is known (worked out by hand in each docstring)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import ranking
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import advise
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from tests.support import advice_beds as b

HELD_3G_GPU0 = ("a100-0", "gpu-0-mig-3g20gb-9-4")


def advice_for(data, nodes, slices, claims, pods=()):
    cluster = b.load(data)
    classes = [d.obj for d in cluster_device_classes(cluster)]
    return advise(cluster, data, Observed(nodes, slices, claims, classes, list(pods)))


def one_a100_node(max_nodes=2, gpus=2):
    pool = dict(b.A100, nodegroup=dict(b.A100["nodegroup"], max_node_count=max_nodes))
    devices = []
    for minor in range(gpus):
        devices += b.a100_gpu(minor)
    return pool, [b.node("a100-0", "a100")], [b.rslice("a100-0", devices)]


def test_more_nodes_come_before_a_re_partition():
    """GPU 0's 3g.20gb is used, GPU 1's is free; two more 3g.20gb wait. GPU 1 -> 2 x 3g.20gb serves them by
    re-partitioning the node; node_count 1 -> 2 serves them (two 3g.20gb on the new node, one on GPU 1 too) and
    disturbs nothing: the advice is the node, the re-partition the runner-up."""
    pool, nodes, slices = one_a100_node(max_nodes=2)
    claims = [
        b.claim("held", "a100-3g.20gb", allocated=[HELD_3G_GPU0]),
        b.claim("w1", "a100-3g.20gb"),
        b.claim("w2", "a100-3g.20gb"),
    ]
    entry = advice_for(b.cluster_data(pool), nodes, slices, claims)["pools"]["a100"]
    assert entry["advice"]["kind"] == "nodes" and entry["advice"]["node_count"] == {"from": 1, "to": 2}
    assert entry["advice"]["nodes_repartitioned"] == [] and entry["advice"]["layouts"] == {}
    layout = [o for o in entry["options"] if o["kind"] == "layout"][0]
    assert layout["layouts"] == {"1": {"3g.20gb": 2}} and layout["nodes_repartitioned"] == ["a100-0"]


def test_the_re_partition_when_the_nodegroup_is_at_its_maximum():
    """The same demand with max_node_count 1: only GPU 1 -> 2 x 3g.20gb serves it (GPU 0 holds an allocated
    instance, so it is never changed)."""
    pool, nodes, slices = one_a100_node(max_nodes=1)
    claims = [
        b.claim("held", "a100-3g.20gb", allocated=[HELD_3G_GPU0]),
        b.claim("w1", "a100-3g.20gb"),
        b.claim("w2", "a100-3g.20gb"),
    ]
    result = advice_for(b.cluster_data(pool), nodes, slices, claims)
    entry = result["pools"]["a100"]
    assert [o["kind"] for o in entry["options"]] == ["layout"]
    assert entry["advice"]["layouts"] == {"1": {"3g.20gb": 2}} and entry["advice"]["node_count"] is None
    assert entry["advice"]["inventory"]["mig"] == {
        "mode": "static",
        "layouts": {0: {"3g.20gb": 1, "2g.10gb": 2}, 1: {"3g.20gb": 2}},
    }


def test_fewest_gpus_changed_and_fewest_instances_taken_away():
    """Nothing allocated, one 1g.10gb waits. Changing one GPU is enough; of the layouts over the pool's profiles
    (3g.20gb, 2g.10gb) and 1g.10gb that hold a 1g.10gb, 3g.20gb + 2g.10gb + 1g.10gb takes only one 2g.10gb away.
    Indices are tried from the last, so GPU 1 changes."""
    pool, nodes, slices = one_a100_node(max_nodes=1)
    entry = advice_for(b.cluster_data(pool), nodes, slices, [b.claim("w", "a100-1g.10gb")])["pools"]["a100"]
    assert entry["advice"]["layouts"] == {"1": {"3g.20gb": 1, "2g.10gb": 1, "1g.10gb": 1}}
    assert entry["advice"]["gpus_changed"] == 1 and entry["advice"]["idle_gpus"] == 1.75


def test_an_allocated_instance_is_never_in_the_way():
    """Two nodes; a 2g.10gb is allocated on GPU 1 of the second node only. A 7g.40gb waits. Pool-wide, GPU 1 is
    frozen (a node carrying the pool's layout holds an instance there), so the pool-wide change turns GPU 0 into a
    7g.40gb on both nodes; but the idle node a100-0 alone can take a layout of its own (a MIG group of one node),
    which re-partitions one node instead of two: that is the advice, the pool-wide change the runner-up."""
    pool = dict(b.A100, nodegroup=dict(b.A100["nodegroup"], node_count=2, max_node_count=2))
    nodes = [b.node("a100-0", "a100"), b.node("a100-1", "a100")]
    slices = [b.rslice(n, b.a100_gpu(0) + b.a100_gpu(1)) for n in ("a100-0", "a100-1")]
    claims = [
        b.claim("held", "a100-2g.10gb", allocated=[("a100-1", "gpu-1-mig-2g10gb-14-0")]),
        b.claim("w", "a100-7g.40gb"),
    ]
    result = advice_for(b.cluster_data(pool), nodes, slices, claims)
    entry = result["pools"]["a100"]
    advice = entry["advice"]
    assert advice["kind"] == "group" and advice["nodes_repartitioned"] == ["a100-0"]
    assert advice["group"]["nodes"] == ["a100-0"] and advice["layouts"] == {}
    changed = {i: lay for i, lay in advice["group"]["layouts"].items() if lay != {"3g.20gb": 1, "2g.10gb": 2}}
    assert list(changed.values()) == [{"7g.40gb": 1}]
    assert advice["inventory"]["mig"]["groups"] == [
        {"nodes": 1, "layouts": {0: {"3g.20gb": 1, "2g.10gb": 2}, 1: {"7g.40gb": 1}}, "prefer": ["a100-0"]}
    ]
    pool_wide = [o for o in entry["options"] if o["kind"] == "layout"][0]
    assert pool_wide["layouts"] == {"0": {"7g.40gb": 1}}
    assert pool_wide["nodes_repartitioned"] == ["a100-0", "a100-1"]
    assert result["problems"] == []


def test_templates_keep_their_profile():
    """A tenant template asks for 3g.20gb. Nothing is allocated and 2 x 7g.40gb wait on a one-node pool at its
    maximum: both GPUs as 7g.40gb would drop 3g.20gb from the pool, which the template needs - no change serves
    both. The largest servable set is the older claim: GPU 1 becomes a 7g.40gb, GPU 0 keeps the template's
    3g.20gb, and the younger claim is unserved, with why."""
    pool, nodes, slices = one_a100_node(max_nodes=1)
    tenants = [{"namespace": "ml", "templates": [{"name": "t", "pool": "a100", "mig_profile": "3g.20gb"}]}]
    claims = [
        b.claim("w1", "a100-7g.40gb", created="2026-01-01T00:00:00Z"),
        b.claim("w2", "a100-7g.40gb", created="2026-01-02T00:00:00Z"),
    ]
    result = advice_for(b.cluster_data(pool, tenants=tenants), nodes, slices, claims)
    entry = result["pools"]["a100"]
    assert entry["advice"]["layouts"] == {"1": {"7g.40gb": 1}} and result["nothing_to_change"] is False
    assert [u["claim"] for u in entry["unserved"]] == ["ml/w2"]
    assert (
        "at most 1 claim(s) of 1 x 7g.40gb" in entry["unserved"][0]["why"]
        and "ml/w2 cannot be served" in result["summary"]
    )
    # one 7g.40gb alone: GPU 1 becomes a 7g.40gb, GPU 0 keeps the template's 3g.20gb
    result = advice_for(b.cluster_data(pool, tenants=tenants), nodes, slices, claims[:1])
    assert result["pools"]["a100"]["advice"]["layouts"] == {"1": {"7g.40gb": 1}}


def test_the_pods_a_re_partition_evicts_are_named_and_outrank_idle_gpus():
    """A pod uses the allocated 3g.20gb. Two more 3g.20gb wait: GPU 1 -> 2 x 3g.20gb would drain the node and
    evict the pod (0.5 GPU left idle); one more node evicts nothing but leaves 2.5 GPUs idle. Disruption ranks
    first: the node is advised, the re-partition is listed with the pod it evicts."""
    pool, nodes, slices = one_a100_node(max_nodes=2)
    claims = [
        b.claim("held", "a100-3g.20gb", allocated=[HELD_3G_GPU0]),
        b.claim("w1", "a100-3g.20gb"),
        b.claim("w2", "a100-3g.20gb"),
    ]
    pods = [b.pod("trainer", "a100-0", ["held"]), b.pod("elsewhere", "other-node", ["x"])]
    entry = advice_for(b.cluster_data(pool), nodes, slices, claims, pods)["pools"]["a100"]
    assert entry["advice"]["kind"] == "nodes" and entry["advice"]["idle_gpus"] == 2.5
    layout = [o for o in entry["options"] if o["kind"] == "layout"][0]
    assert layout["pods_evicted"] == ["ml/trainer"] and layout["idle_gpus"] == 0.5
    assert "evicts 1 pod(s): ml/trainer" in layout["text"]


def test_no_drain_evicts_no_pod():
    """With the pool's drain off, mig_layout evicts nothing (the pod keeps running while the GPU next to it
    changes): the option says so."""
    pool, nodes, slices = one_a100_node(max_nodes=1)
    pool = dict(pool, drain={"enabled": False})
    claims = [b.claim("held", "a100-3g.20gb", allocated=[HELD_3G_GPU0]), b.claim("w", "a100-1g.10gb")]
    advice = advice_for(b.cluster_data(pool), nodes, slices, claims, [b.pod("trainer", "a100-0", ["held"])])
    assert advice["pools"]["a100"]["advice"]["pods_evicted"] == []


def candidate(**changes):
    base = dict(
        pool="p",
        changed={},
        nodes_added=0,
        nodes_repartitioned=[],
        pods_evicted=[],
        gpus_changed=0,
        idle_gpus=0.0,
        lost_instances=0,
    )
    base.update(changes)
    return Candidate(**base)


def test_change_key_orders_by_disruption_then_idle():
    evicts = candidate(changed={0: None}, nodes_repartitioned=["n"], pods_evicted=["ml/p"], gpus_changed=1)
    repartitions = candidate(changed={0: None}, nodes_repartitioned=["n", "m"], gpus_changed=2)
    idle = candidate(nodes_added=2, idle_gpus=7.5)
    less_idle = candidate(nodes_added=1, idle_gpus=3.5)
    assert ranking.ranked([evicts, repartitions, idle, less_idle]) == [less_idle, idle, repartitions, evicts]
    assert [ranking.kind(c) for c in (evicts, idle)] == ["layout", "nodes"]
