"""The --diff entries of a drain: nodes that go or change, and per node the pods evicted first or skipped."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import drain_preview as plan_drain_preview


def pod(namespace, name):
    return {"metadata": {"namespace": namespace, "name": name}, "spec": {}}


def test_a_shrink_shows_the_nodes_that_go_and_the_pods_evicted_from_them_first():
    diff = plan_drain_preview.removal_diff(
        "nodegroup 'gpu-t4' of cluster 'k8s'",
        ["t4-0", "t4-1", "t4-2"],
        ["t4-2"],
        {"t4-2": [pod("ml", "train-b"), {"namespace": "ml", "name": "train-a"}], "t4-0": [pod("ml", "serve")]},
        {"t4-2": [pod("mon", "probe")]},
    )
    assert diff == {
        "before": {"nodes": ["t4-0", "t4-1", "t4-2"]},
        "after": {
            "nodes": ["t4-0", "t4-1"],
            "drained before removal": {"t4-2": {"evict": ["ml/train-a", "ml/train-b"], "skip": ["mon/probe"]}},
        },
        "before_header": "nodegroup 'gpu-t4' of cluster 'k8s': Kubernetes nodes",
        "after_header": "nodegroup 'gpu-t4' of cluster 'k8s': Kubernetes nodes",
    }


def test_without_a_drain_the_diff_says_which_pods_go_down_with_their_node():
    diff = plan_drain_preview.removal_diff("x", ["a", "b"], ["a", "b"], {"a": [pod("ml", "p")]}, drain=False)
    assert diff["after"] == {"nodes": [], "removed without a drain (drain.enabled is false)": {"a": ["ml/p"], "b": []}}
