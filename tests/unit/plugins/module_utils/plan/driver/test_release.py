"""Release comparison, rollout status and GPU Operator coexistence for the DRA driver (pure)."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import gpu_operator as op
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release import (
    cert_manager_refusal,
    chart_name,
    driver_slice_nodes,
    helm_problem,
    present_pool_nodes,
    release_summary,
    rollout_failure,
    rollout_status,
    rollout_warnings,
    upgrade_reasons,
    values_diff_entry,
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


# ------------------------------------------------------------------------------------------- the step's decisions
@pytest.mark.parametrize(
    "version, refused",
    [("v3.14.4+g81c902a", False), ("v3.13.0", False), ("v4.0.1", False), ("v3.12.3+gabc", True), ("dev", False)],
)
def test_helm_older_than_3_13_is_refused(version, refused):
    problem = helm_problem(version)
    assert (problem is not None) is refused
    if refused:
        assert problem == (
            "helm %s is too old: the module needs helm 3.13 or later (--dry-run=server, get metadata)" % version
        )


def test_chart_name_as_helm_records_it():
    assert chart_name("oci://ghcr.io/nvidia/k8s-dra-driver-gpu/", None, "25.8.0") == "k8s-dra-driver-gpu"
    assert chart_name("./charts/dra", {"name": "nvidia-dra-driver-gpu", "version": "25.8.0"}, "25.8.0") == (
        "nvidia-dra-driver-gpu"
    )
    with pytest.raises(Problems) as refused:
        chart_name("./charts/dra", {"name": "nvidia-dra-driver-gpu", "version": "25.3.0"}, "25.8.0")
    assert refused.value.as_list() == [
        {
            "path": "gpupool_cluster.dra_driver.chart",
            "message": "the local chart ./charts/dra is version 25.3.0 but gpupool_cluster.dra_driver.version is "
            "25.8.0; point chart at the 25.8.0 chart or change the version",
        }
    ]


def test_release_summary_keeps_what_the_result_shows():
    assert release_summary(None) is None and release_summary({}) is None
    assert release_summary(dict(META, appVersion="v0.5.1", namespace="nvidia", deployedAt="x")) == dict(
        name="dra",
        namespace="nvidia",
        chart="dra-driver-nvidia-gpu",
        version="0.5.1",
        appVersion="v0.5.1",
        revision=2,
        status="deployed",
    )


class Settings:
    namespace, release_name, version = "nvidia-dra", "dra", "0.5.1"


def test_values_diff_entry_is_yaml_before_and_after():
    entry = values_diff_entry(Settings, META, {"a": 1}, {"a": 2, "b": [1]}, "dra-driver-nvidia-gpu")
    assert entry == {
        "before_header": "helm values of nvidia-dra/dra (revision 2)",
        "after_header": "desired values (dra-driver-nvidia-gpu 0.5.1)",
        "before": "a: 1\n",
        "after": "a: 2\nb:\n- 1\n",
    }
    fresh = values_diff_entry(Settings, None, None, {"a": 2}, "dra-driver-nvidia-gpu")
    assert fresh["before_header"] == "helm values of nvidia-dra/dra (not installed)" and fresh["before"] == "{}\n"


def test_cert_manager_refusal_names_what_is_missing():
    text = cert_manager_refusal(["certificates.cert-manager.io", "issuers.cert-manager.io"])
    assert "has no certificates.cert-manager.io and no issuers.cert-manager.io: install cert-manager" in text


def test_pool_nodes_and_publishing_nodes():
    cluster = load_cluster(
        {
            "name": "k",
            "pools": [
                {"name": "a", "gpu": {"model": "T4"}, "node_selector": {"x": "1"}},
                {"name": "b", "state": "absent", "gpu": {"model": "T4"}, "node_selector": {"x": "2"}},
            ],
        }
    )
    nodes = [
        {"metadata": {"name": n, "labels": {"gpupool.io/pool": p}}} for n, p in (("n1", "a"), ("n2", "b"), ("n3", "c"))
    ]
    present = [p.name for p in cluster.present_pools]
    assert [n["metadata"]["name"] for n in present_pool_nodes(nodes + [{"metadata": {"name": "n4"}}], present)] == [
        "n1"
    ]
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1"}},
        {"spec": {"driver": "compute-domain.nvidia.com", "nodeName": "n2"}},
        {"spec": {"driver": "gpu.nvidia.com"}},
    ]
    assert driver_slice_nodes(slices) == ["n1", None]


def test_rollout_end_texts():
    status = {"message": "kubelet plugin 1/2 ready (2 updated)", "nodes_not_ready": []}
    assert rollout_failure(600, status, "nvidia-dra").startswith(
        "the DRA driver did not roll out within 600s: kubelet plugin 1/2 ready (2 updated). Check the pods in "
        "namespace nvidia-dra (kubectl -n nvidia-dra get pods)"
    )
    # A node whose taint the plugin does not tolerate has no pod to look at: the DaemonSet controller makes none.
    assert "the DaemonSet controller then makes no pod for it at all" in rollout_failure(600, status, "nvidia-dra")
    assert rollout_warnings(status) == []
    assert rollout_warnings(dict(status, nodes_not_ready=["n2", "n5"])) == [
        "pool node(s) not Ready, not checked for the kubelet plugin: n2, n5"
    ]


def test_driver_root_warning_only_for_an_explicit_other_root_next_to_the_driver_container():
    container = {"driver_container": True}
    assert op.driver_root_warning(container, "/", True) == (
        "the GPU Operator runs its driver container (root /run/nvidia/driver) but dra_driver.nvidia_driver_root is /"
    )
    assert op.driver_root_warning(container, "/", False) is None
    assert op.driver_root_warning(container, "/run/nvidia/driver", True) is None
    assert op.driver_root_warning({"driver_container": False}, "/", True) is None
