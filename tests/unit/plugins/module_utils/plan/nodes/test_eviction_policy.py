"""The inventory's drain policy applied to pods: skip_pods, and the settings a module's options override."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction

CLUSTER = {
    "name": "c",
    "drain": {"timeout": 300, "skip_pods": "gpupool.io/drain=skip"},
    "pools": [
        {"name": "a", "node_selector": {"x": "a"}, "gpu": {"model": "T4"}, "drain": {"when_budget_blocks": "fail"}}
    ],
}


def pod(name, labels=None, gpu=True, **meta):
    limits = {"nvidia.com/gpu": "1"} if gpu else {}
    return {
        "metadata": dict({"name": name, "namespace": "ml", "labels": labels or {}}, **meta),
        "spec": {"nodeName": "n0", "containers": [{"resources": {"limits": limits}}]},
    }


def test_skip_pods_leaves_the_selected_gpu_pods_with_a_reason():
    pods = [pod("train"), pod("monitor", {"gpupool.io/drain": "skip"}), pod("web", {"gpupool.io/drain": "skip"}, False)]
    evict, wait_for, skipped = plan_eviction.pods_to_evict(pods, "n0", "gpupool.io/drain=skip")
    assert [p["metadata"]["name"] for p, _why in evict] == ["train"] and wait_for == []
    assert [(p["metadata"]["name"], why) for p, why in skipped] == [
        ("monitor", "matches the drain policy's skip_pods (gpupool.io/drain=skip)")
    ]
    # without a selector the same pod is evicted
    assert [p["metadata"]["name"] for p, _why in plan_eviction.pods_to_evict(pods, "n0")[0]] == ["monitor", "train"]


def test_settings_come_from_the_inventory_and_module_options_win():
    cluster = model_load.load_cluster(copy.deepcopy(CLUSTER))
    policy = drain_policy(cluster, cluster.pools[0])
    assert plan_eviction.drain_settings(policy) == (True, 300, None, "gpupool.io/drain=skip", "fail")
    assert plan_eviction.drain_settings(policy, enabled=False, timeout=60, grace_period=0) == (
        False,
        60,
        0,
        "gpupool.io/drain=skip",
        "fail",
    )
    # standalone (no inventory): no drain unless the module is told to
    assert plan_eviction.drain_settings() == (False, 600, None, None, "wait")
    assert plan_eviction.drain_settings(enabled=True).enabled is True
