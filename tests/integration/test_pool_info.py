"""gpupool.core.pool_info end to end: ansible-playbook against the real kube-apiserver of the sandbox.

Two pools of simulated nodes (2 x A100-40GB with a static MIG layout, rolled out with gpupool.core.mig_layout;
1 x T4 without MIG); the DRA driver simulator publishes their ResourceSlices. Runs in order: the report after the
rollout (with an allocated device), then a node switched to another layout by hand, then a missing node.
"""

from __future__ import annotations

import time

import pytest

from tests.integration import k8s_helpers as h

pytestmark = [pytest.mark.controlplane, pytest.mark.sandbox]
ADMIN = "gpupool-admin"
NG_LABEL = "magnum.openstack.org/nodegroup"
NS = "poolinfo-test"
A100_NODES = ["poolinfo-a100-0", "poolinfo-a100-1"]
T4_NODES = ["poolinfo-t4-0"]
LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
CONFIG = "gpupool-poolinfo-a100"


def cluster_data(sandbox):
    return {
        "name": "poolinfo",
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": "unused", "cluster": "unused"},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "pools": [
            {
                "name": "poolinfo-a100",
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 2},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": dict(LAYOUT)},
            },
            {"name": "poolinfo-t4", "nodegroup": {"flavor": "g2.xlarge", "node_count": 1}, "gpu": {"model": "T4"}},
        ],
    }


INFO = ("gpupool.core.pool_info", {"cluster": "{{ gpupool_cluster }}"})
NODE_POOLS = (
    "gpupool.core.node_pool",
    {"cluster": "{{ gpupool_cluster }}", "pools": ["poolinfo-a100", "poolinfo-t4"]},
)
ROLLOUT = (
    "gpupool.core.mig_layout",
    {"cluster": "{{ gpupool_cluster }}", "pools": ["poolinfo-a100"], "wait_sleep": 0.2, "wait_timeout": 60},
)


def wait_for(predicate, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for %s" % what)


def slice_devices(cp, node_name):
    slices = h.kubectl_json(cp, "get", "resourceslices")["items"]
    return sorted(
        d["name"]
        for s in slices
        if s["spec"].get("nodeName") == node_name and s["spec"]["driver"] == "gpu.nvidia.com"
        for d in s["spec"].get("devices") or []
    )


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    cp = sandbox.cp
    from kubernetes import client

    h.ensure_namespace(cp, NS)
    client.AppsV1Api(cp.api_client()).create_namespaced_daemon_set(
        NS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "poolinfo-kubelet-plugin"},
            "spec": {
                "selector": {"matchLabels": {"app": "poolinfo-plugin"}},
                "template": {
                    "metadata": {"labels": {"app": "poolinfo-plugin"}},
                    "spec": {
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchExpressions": [
                                                {
                                                    "key": NG_LABEL,
                                                    "operator": "In",
                                                    "values": ["poolinfo-a100", "poolinfo-t4"],
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        },
                        # as the dra_driver role makes it: the plugin tolerates the pools' taints
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "gpus", "image": "registry.example/dra:v0.5.1"}],
                    },
                },
            },
        },
    )
    for name in A100_NODES:
        sandbox.nodes.register_node(name, "g4.p2.40g", nodegroup="poolinfo-a100")
    for name in T4_NODES:
        sandbox.nodes.register_node(name, "g2.xlarge", nodegroup="poolinfo-t4")
    play = h.GpupoolPlay(cp, tmp_path_factory.mktemp("pool-info"), cluster_data(sandbox))
    # the nodes as site.yml leaves them: labelled and tainted (a node without its pool's taint is a mismatch)
    (labelled, rollout), _res, _window = play.run([NODE_POOLS, ROLLOUT])
    assert not labelled.get("failed"), labelled.get("msg")
    assert not rollout.get("failed"), rollout.get("msg")
    yield {"cp": cp, "play": play, "sandbox": sandbox}
    for name in A100_NODES + T4_NODES:
        try:
            sandbox.nodes.remove_node(name)
        except Exception:
            pass
    cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    cp.kubectl(
        "delete", "deviceclass", "-l", "gpupool.io/pool in (poolinfo-a100,poolinfo-t4)", "--wait=false", check=False
    )


@pytest.mark.dra_api
def test_report_after_rollout_counts_mig_devices_by_profile_read_only(bed):
    cp, play = bed["cp"], bed["play"]
    # A claim the real scheduler allocates for a user's pod (on the first A100 node), in the release's version,
    # through the pool's class for the profile.
    (classes,), _res, _window = play.run([("gpupool.core.device_class", {"cluster": "{{ gpupool_cluster }}"})])
    assert not classes.get("failed"), classes.get("msg")
    from kubernetes import client

    from testbed import dra_api

    version = cp.release.resource_version
    co = client.CustomObjectsApi(cp.api_client())
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "poolinfo-a100-3g.20gb"}}]}},
    }
    co.create_namespaced_custom_object(
        "resource.k8s.io", version, NS, "resourceclaims", dra_api.claim_to(version, claim)
    )
    h.wait_for_default_service_account(h.core(cp), NS)
    h.core(cp).create_namespaced_pod(
        NS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train"},
            "spec": {
                "automountServiceAccountToken": False,
                "nodeSelector": {"kubernetes.io/hostname": A100_NODES[0]},
                "tolerations": [{"key": "node-role.kubernetes.io/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "train"}],
                "containers": [
                    {"name": "train", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpu"}]}}
                ],
            },
        },
    )

    def results():
        status = co.get_namespaced_custom_object("resource.k8s.io", version, NS, "resourceclaims", "train")
        return ((status.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results")

    wait_for(results, what="the scheduler to allocate the claim")
    ((result),) = results()
    device = result["device"]
    assert result["pool"] == A100_NODES[0] and device in slice_devices(cp, A100_NODES[0]) and "-mig-3g20gb-" in device

    (real, again), _res, window = play.run([INFO, INFO])
    (in_check,), _res, check_window = play.run([INFO], check=True)
    for r in (real, again, in_check):
        assert not r.get("failed"), r.get("msg")
        assert r["changed"] is False
    assert window.writes(user=ADMIN) == [] and check_window.writes(user=ADMIN) == []
    assert real["pools"] == in_check["pools"]
    a100 = real["pools"]["poolinfo-a100"]
    assert a100["mig_devices"] == {
        "3g.20gb": {"total": 4, "allocated": 1, "free": 3},
        "2g.10gb": {"total": 8, "allocated": 0, "free": 8},
    }
    assert a100["gpus"]["total"] == 0 and a100["ready_nodes"] == 2 and a100["mismatches"] == []
    assert [(n["name"], n["mig_config"], n["mig_state"]) for n in a100["nodes"]] == [
        (A100_NODES[0], CONFIG, "success"),
        (A100_NODES[1], CONFIG, "success"),
    ]
    assert a100["nodes"][0]["allocated"] == [{"device": device, "claim": NS + "/train"}]
    t4 = real["pools"]["poolinfo-t4"]
    assert t4["gpus"] == {"total": 1, "allocated": 0, "free": 1} and t4["mig_devices"] == {}
    assert real["ok"] is True and real["mismatches"] == []
    assert real["resource_api_version"] == "resource.k8s.io/" + version
    assert (
        "poolinfo-a100: 2/2 nodes Ready (nodegroup wants 2); 8 x 2g.10gb, 8 free; 4 x 3g.20gb, 3 free; OK"
        in real["summary"]
    )


@pytest.mark.dra_api
def test_wrong_layout_and_missing_node_are_mismatches(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    # Someone switches one node to another config by hand: the MIG manager applies it.
    cp.kubectl("label", "node", A100_NODES[1], "nvidia.com/mig.config=all-disabled", "--overwrite")
    wait_for(lambda: sandbox.mig.layout(A100_NODES[1]) == {0: None, 1: None}, what="all-disabled applied")
    wait_for(lambda: slice_devices(cp, A100_NODES[1]) == ["gpu-0", "gpu-1"], what="slices republished")
    (res,), _out, _window = play.run([INFO])
    kinds = [(m["node"], m["kind"]) for m in res["mismatches"]]
    assert kinds == [(A100_NODES[1], "mig_config_label"), (A100_NODES[1], "wrong_layout")]
    wrong = res["mismatches"][1]
    assert "GPU 0: wants MIG 2g.10gb x2 + 3g.20gb x1, publishes full GPU" in wrong["message"]
    assert wrong["published"] == {"0": None, "1": None}
    assert res["ok"] is False and res["changed"] is False
    assert res["pools"]["poolinfo-a100"]["gpus"]["total"] == 2

    # A node of the nodegroup is gone.
    sandbox.nodes.remove_node(A100_NODES[0])
    strict_task = ("gpupool.core.pool_info", dict(INFO[1], fail_on_mismatch=True))
    (res, strict), _out, window = play.run([INFO, strict_task])
    missing = [m for m in res["mismatches"] if m["kind"] == "missing_nodes"]
    assert (
        missing and missing[0]["pool"] == "poolinfo-a100" and missing[0]["expected"] == 2 and missing[0]["found"] == 1
    )
    assert "1 of the 2 nodes" in missing[0]["message"]
    assert strict.get("failed") is True and "mismatch(es)" in strict["msg"] and "missing_nodes" in strict["msg"]
    assert window.writes(user=ADMIN) == []
