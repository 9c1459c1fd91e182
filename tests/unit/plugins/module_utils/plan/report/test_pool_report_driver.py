"""Pool report: the DRA driver's gates against what pools use, and ComputeDomain readiness (pure)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.driver_state import (
    compute_domain_state,
    driver_plugin,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.pool_report import build_report

CLUSTER = {
    "name": "c",
    "dra_driver": {"namespace": "dra"},
    "pools": [
        {"name": "mps", "node_selector": {"p": "mps"}, "gpu": {"model": "T4"}, "sharing": {"mps": {}}},
        {
            "name": "gb",
            "node_selector": {"p": "gb"},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"name": "dom", "namespace": "ml"}},
        },
    ],
}


def plugin_ds(namespace, gates):
    env = [{"name": "FEATURE_GATES", "value": gates}] if gates is not None else []
    return {
        "metadata": {"name": "dra-driver-nvidia-gpu-kubelet-plugin", "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [{"name": "gpus", "env": env}]}}},
    }


def cd(status=None):
    obj = {"metadata": {"name": "dom", "namespace": "ml"}}
    if status is not None:
        obj["status"] = status
    return obj


def report(daemonsets, compute_domains):
    return build_report(load_cluster(CLUSTER), Observed(daemonsets=daemonsets, compute_domains=compute_domains))


def kinds(rep):
    return [(m["pool"], m["kind"]) for m in rep["mismatches"]]


def test_driver_plugin_prefers_the_inventory_namespace():
    assert driver_plugin([plugin_ds("other", "MPSSupport=true,"), plugin_ds("dra", "")], "dra")["namespace"] == "dra"
    assert driver_plugin([plugin_ds("other", "MPSSupport=true,")], "dra")["gates"] == {"MPSSupport": True}
    assert driver_plugin([plugin_ds("x", None), plugin_ds("y", None)], "dra") is None  # ambiguous


def test_a_pool_whose_gate_is_off_is_a_mismatch():
    rep = report([plugin_ds("dra", "TimeSlicingSettings=true,")], [cd()])
    assert kinds(rep) == [("mps", "gate_missing")]
    msg = rep["mismatches"][0]["message"]
    assert "runs without the feature gate MPSSupport" in msg and "fail at prepare time" in msg
    assert report([plugin_ds("dra", "MPSSupport=true,")], [cd()])["mismatches"] == []
    assert "no NVIDIA DRA driver kubelet plugin was found" in report([], [cd()])["mismatches"][0]["message"]


def test_compute_domain_readiness():
    ok = [plugin_ds("dra", "MPSSupport=true,")]
    assert kinds(report(ok, [])) == [("gb", "compute_domain_missing")]
    rep = report(ok, [cd()])
    assert rep["pools"]["gb"]["compute_domain"]["state"] == "idle" and rep["mismatches"] == []
    waiting = cd(
        {"status": "NotReady", "nodes": [{"name": "n1", "status": "Ready"}, {"name": "n2", "status": "NotReady"}]}
    )
    rep = report(ok, [waiting])
    assert kinds(rep) == [("gb", "compute_domain_not_ready")] and "not ready on n2" in rep["mismatches"][0]["message"]
    assert compute_domain_state(cd({"status": "Ready"})) == "Ready" and compute_domain_state(None) is None


def test_checks_are_skipped_without_the_reads():
    rep = build_report(load_cluster(CLUSTER), Observed())
    assert rep["mismatches"] == [] and rep["driver"] is None and "compute_domain" not in rep["pools"]["gb"]


def test_host_imex_pools_keep_their_compute_domain():
    """Host-managed IMEX still hands out channels through the ComputeDomain: it must not be pruned."""
    from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import (
        cluster_compute_domains,
    )

    data = {
        "name": "c",
        "pools": [
            dict(
                CLUSTER["pools"][1],
                nvlink={
                    "mode": "host_imex",
                    "imex_nodes": ["10.0.0.1", "10.0.0.2"],
                    "compute_domain": {"name": "dom", "namespace": "ml"},
                },
            )
        ],
    }
    (desired,) = cluster_compute_domains(load_cluster(data))
    assert (desired.obj["metadata"]["namespace"], desired.obj["metadata"]["name"]) == ("ml", "dom")
