"""gpupool.core.pool_info run in-process against the Kubernetes API simulator, with nodes and ResourceSlices written
as the NVIDIA DRA driver publishes them (tests/support/advice_beds.py). A report: it reads, never writes."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.action import pool_info
from tests.support import advice_beds as b
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CLUSTER = b.cluster_data(b.H100)


def cluster(api, gpus=4):
    node = b.node("h100-0", "h100")
    node["spec"]["taints"] = [{"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}]
    api.put("", "v1", "nodes", node)
    api.put("resource.k8s.io", "v1", "resourceslices", b.rslice("h100-0", [b.full_gpu(m) for m in range(gpus)]))
    return api


def run(**args):
    return run_action(pool_info, cluster=CLUSTER, **CONNECTION, **args)


def test_the_report_counts_what_the_driver_publishes_and_writes_nothing(api):
    cluster(api)
    out = run()
    assert out.get("failed") is not True, out
    assert out["changed"] is False and api.writes() == []
    assert out["ok"] is True and out["mismatches"] == []
    assert "h100" in out["pools"] and "h100" in out["summary"]
    assert run(_ansible_check_mode=True)["pools"] == out["pools"]


def test_markdown_and_pictures_on_request(api):
    cluster(api)
    out = run(markdown=True)
    assert "h100" in out["markdown"] and out["pictures"]


def test_a_node_publishing_fewer_gpus_is_a_mismatch(api):
    cluster(api, gpus=3)
    out = run()
    assert out["changed"] is False and out["ok"] is False
    assert [(m["node"], m["kind"]) for m in out["mismatches"]] == [("h100-0", "wrong_layout")]
    assert "GPU 3: wants full GPU, publishes nothing" in out["mismatches"][0]["message"]
    failed = run(fail_on_mismatch=True)
    assert failed["failed"] is True
    assert "mismatch(es) between the inventory and the cluster" in said(failed) and "h100" in said(failed)
    assert api.writes() == []


def test_a_pool_the_inventory_does_not_have_names_the_known_ones(api):
    out = run(pools=["a100"])
    assert out["failed"] is True and "a100" in said(out) and "h100" in said(out)
    assert api.requests == []
