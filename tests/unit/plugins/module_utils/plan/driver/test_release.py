"""Release comparison, rollout status and GPU Operator coexistence for the DRA driver (pure)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import gpu_operator as op
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release import (
    rollout_status,
    upgrade_reasons,
)

META = {"name": "dra", "chart": "dra-driver-nvidia-gpu", "version": "0.5.1", "status": "deployed", "revision": 2}
VALUES = {"featureGates": {}, "resources": {"gpus": {"enabled": True}}}


def test_upgrade_reasons():
    assert upgrade_reasons(META, VALUES, VALUES, "dra-driver-nvidia-gpu", "0.5.1") == []
    assert upgrade_reasons(None, None, VALUES, "dra-driver-nvidia-gpu", "0.5.1") == ["not installed"]
    reasons = upgrade_reasons(
        dict(META, status="failed", chart="nvidia-dra-driver-gpu", version="0.4.1"),
        VALUES,
        dict(VALUES, featureGates={"MPSSupport": True}),
        "dra-driver-nvidia-gpu",
        "0.5.1",
    )
    assert reasons == [
        "release status is failed",
        "chart nvidia-dra-driver-gpu -> dra-driver-nvidia-gpu",
        "version 0.4.1 -> 0.5.1",
        "1 value(s) differ: featureGates.MPSSupport",
    ]


def node(name, ready=True):
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": str(ready)}]}}


def ds(desired, ready, updated=None, generation=2, observed=2):
    return {
        "metadata": {"name": "dra-kubelet-plugin", "generation": generation},
        "status": {
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "observedGeneration": observed,
            "updatedNumberScheduled": desired if updated is None else updated,
        },
    }


def dep(ready, generation=1, observed=1):
    return {
        "metadata": {"name": "dra-controller", "generation": generation},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": observed, "updatedReplicas": ready, "readyReplicas": ready},
    }


def test_rollout_done_only_when_every_pool_node_publishes():
    nodes = [node("a"), node("b"), node("c", ready=False)]
    done = rollout_status([ds(2, 2)], [dep(1)], nodes, ["a", "b"])
    assert done["done"] and done["nodes_not_ready"] == ["c"]
    assert done["message"] == "kubelet plugin ready on 2 node(s), 2 pool node(s) publishing"
    missing = rollout_status([ds(1, 1)], [dep(1)], nodes, ["a"])
    assert not missing["done"] and missing["nodes_without_plugin"] == ["b"]
    assert "1 pool node(s) without the plugin's ResourceSlices: b" in missing["message"]


def test_rollout_is_stricter_than_helm():
    # maxUnavailable 100%: helm calls this ready; it is not
    assert "kubelet plugin 0/2 ready" in rollout_status([ds(2, 0)], [], [], [])["message"]
    assert "new revision not yet seen" in rollout_status([ds(2, 2, observed=1)], [], [], [])["message"]
    assert "deployment(s) not ready: dra-controller" in rollout_status([ds(0, 0)], [dep(0)], [], [])["message"]
    assert rollout_status([], [], [], [])["message"] == "no kubelet-plugin DaemonSet"


def test_gpu_operator_facts_and_driver_root():
    assert op.operator_facts([]) == {"found": False, "name": None, "driver_container": False, "device_plugin": False}
    facts = op.operator_facts([{"metadata": {"name": "cluster-policy"}, "spec": {"driver": {"enabled": True}}}])
    assert facts == {"found": True, "name": "cluster-policy", "driver_container": True, "device_plugin": True}
    assert op.driver_root(facts, "/", configured_explicitly=False) == "/run/nvidia/driver"
    assert op.driver_root(facts, "/", configured_explicitly=True) == "/"
    host = op.operator_facts(
        [{"metadata": {"name": "p"}, "spec": {"driver": {"enabled": False}, "devicePlugin": {"enabled": "false"}}}]
    )
    assert host["driver_container"] is False and host["device_plugin"] is False
    assert op.driver_root(host, "/", False) == "/"


def test_nodes_that_would_run_the_device_plugin():
    facts = {"found": True, "name": "p", "device_plugin": True}
    nodes = [
        {"metadata": {"name": "b", "labels": {}}},
        {"metadata": {"name": "a", "labels": {op.DEVICE_PLUGIN_LABEL: "false"}}},
        {"metadata": {"name": "c", "labels": {op.DEVICE_PLUGIN_LABEL: "true"}}},
    ]
    assert op.nodes_with_device_plugin(facts, nodes) == ["b", "c"]
    assert op.nodes_with_device_plugin(dict(facts, device_plugin=False), nodes) == []
    text = op.refusal(facts, ["b", "c"])
    assert "ClusterPolicy p" in text and "b, c" in text and "nvidia.com/gpu.deploy.device-plugin=false" in text
