"""gpupool.core.pool_advice run in-process against the Kubernetes API simulator: the DeviceClasses as device_class
writes them, nodes, slices and claims as the driver and the scheduler write them (tests/support/advice_beds.py).
Advice: it reads, never writes."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.action import device_class, pool_advice
from tests.support import advice_beds as b
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CLUSTER = b.cluster_data(b.H100)  # 1 node of 4 H100s, max_node_count 3
GROUP = "resource.k8s.io"


def cluster(api, waiting):
    """3 of the node's 4 GPUs allocated, `waiting` claims of one whole GPU each."""
    assert run_action(device_class, cluster=CLUSTER, **CONNECTION)["changed"] is True
    api.put("", "v1", "nodes", b.node("h100-0", "h100"))
    api.put(GROUP, "v1", "resourceslices", b.rslice("h100-0", [b.full_gpu(m) for m in range(4)]))
    api.put("", "v1", "namespaces", {"metadata": {"name": "ml"}})
    for m in range(3):
        api.put(GROUP, "v1", "resourceclaims", b.claim("run-%d" % m, "h100", allocated=[("h100-0", "gpu-%d" % m)]))
    for k in range(waiting):
        api.put(GROUP, "v1", "resourceclaims", b.claim("wait-%d" % k, "h100"))
    return len(api.writes())


def run(**args):
    return run_action(pool_advice, cluster=CLUSTER, **CONNECTION, **args)


def test_one_waiting_claim_fits_the_free_gpu(api):
    writes = cluster(api, waiting=1)
    out = run()
    assert out.get("failed") is not True, out
    assert out["changed"] is False and len(api.writes()) == writes
    assert [(w["namespace"], w["name"], w["reason"]) for w in out["waiting"]] == [("ml", "wait-0", "free_now")]
    assert "free for it now on node h100-0" in out["waiting"][0]["message"]


def test_more_waiting_claims_than_gpus_advise_a_node_more(api):
    writes = cluster(api, waiting=3)
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert len(api.writes()) == writes
    advice = out["pools"]["h100"]["advice"]
    assert advice and "node_count 1 -> 2" in advice["text"]
    assert run()["pools"] == out["pools"]


def test_an_unreadable_inventory_file_says_what_to_give(api, tmp_path):
    cluster(api, waiting=1)
    out = run(inventory_file=str(tmp_path / "missing.yml"))
    assert out["failed"] is True
    assert "cannot be read" in said(out) and "host_vars file that holds gpupool_cluster" in said(out)
