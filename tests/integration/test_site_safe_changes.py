"""Safe pool changes through playbooks/site.yml on the sandbox (issue #14): each inventory edit is first shown by
`--check --diff` with zero writes (the apiserver's audit log and the Magnum emulator's request log are the
witnesses), then applied exactly, and a second run changes nothing.

The edits, in order, on one cluster:
1. scale a pool down with a GPU pod on the node that goes: the pod is evicted before Magnum removes the node;
2. change a MIG layout with MIG pods on both nodes: each wave's pods are evicted before that wave is relabelled;
3. remove a pool from the inventory: its node stays cordoned and tainted (orphaned), the nodegroup stays;
4. let the cluster prune nodegroups: the orphaned nodegroup is drained and deleted.

The drain policy comes from the inventory only (grace_period 0, because no kubelet runs here to stop a pod that
has a grace period; a skip_pods selector): the roles pass no drain option.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from datetime import datetime

import pytest
import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, run_playbook

pytestmark = pytest.mark.sandbox
HOST = "safe"
ADMIN = "gpupool-admin"
MIG_SIM = "testbed:mig-manager-simulator"
NS = "safe-test"
MV = {"OpenStack-API-Version": "container-infra 1.14"}
NG_LABEL = "magnum.openstack.org/nodegroup"
GPU_TAINT = ("node-role.kubernetes.io/gpu", "true", "NoSchedule")
FIRST = {"3g.20gb": 1, "2g.10gb": 2}
SECOND = {"1g.5gb": 7}


def pools():
    return [
        {
            "name": "safe-t4",
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2, "max_node_count": 3},
            "gpu": {"model": "T4"},
        },
        {
            "name": "safe-a100",
            "nodegroup": {"flavor": "g4.p2.40g", "node_count": 2},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": dict(FIRST)},
        },
        {"name": "safe-old", "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}, "gpu": {"model": "T4"}},
    ]


def cluster(sandbox, pool_list, prune=False):
    return {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {
            "cloud": sandbox.cloud,
            "cluster": sandbox.cluster_name,
            "labels": {"nvidia_gpu_enabled": "true"},
            "prune_nodegroups": prune,
        },
        # the sandbox's MIG manager simulator reads this ConfigMap
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},  # not what this test is about (the DRA driver role has its own tests)
        "drain": {"timeout": 60, "grace_period": 0, "skip_pods": "gpupool.io/drain=skip"},
        "pools": pool_list,
    }


class Site:
    """site.yml runs against the sandbox, each with its audit-log window and Magnum requests."""

    def __init__(self, sandbox, tmp_path):
        self.sandbox, self.tmp, self.runs = sandbox, tmp_path, 0

    def __call__(self, data, check=False):
        self.runs += 1
        work = self.tmp / ("run%d" % self.runs)
        work.mkdir()
        inventory = yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "gpupool_clusters": {
                            "hosts": {
                                HOST: {
                                    "ansible_connection": "local",
                                    "ansible_python_interpreter": sys.executable,
                                    "gpupool_cluster": data,
                                }
                            }
                        }
                    }
                }
            }
        )
        self.sandbox.magnum.clear_requests()
        mark = self.sandbox.cp.audit.mark()
        start = time.time()
        result = run_playbook(os.path.join(ROOT, "playbooks", "site.yml"), inventory, work, check=check, diff=check)
        assert result.rc == 0, result.stdout[-8000:] + result.stderr[-3000:]
        result.window = self.sandbox.cp.audit.since(mark)
        result.magnum = [r for r in self.sandbox.magnum.magnum_requests() if r["time"] >= start]
        result.magnum_writes = [r for r in result.magnum if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]
        result.text = folded(result.stdout)
        return result

    def previewed_applied_idempotent(self, data):
        """The edit: --check --diff writes nothing, then the run, then a second run that changes nothing."""
        check = self(data, check=True)
        assert check.window.writes(user=ADMIN) == [], check.window.writes(user=ADMIN)
        assert check.magnum_writes == []
        assert check.changed(HOST) > 0
        real = self(data)
        again = self(data)
        assert again.changed(HOST) == 0, again.stdout[-6000:]
        # the run lease (taken and handed back by every real run) is bookkeeping, not a change to the pools
        writes = [e for e in again.window.writes(user=ADMIN) if e["objectRef"].get("resource") != "leases"]
        assert writes == [] and again.magnum_writes == [], writes
        return check, real


def folded(stdout):
    """The output with the diff markers (+/-) taken off each line and the whitespace folded, so that a YAML block of
    a diff reads as one line: 'drained before removal: node-1: evict: - ns/pod'."""
    lines = []
    for line in stdout.splitlines():
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            line = line[1:]
        lines.append(line)
    return " ".join(" ".join(lines).split())


def stamp(event):
    return datetime.strptime(event["requestReceivedTimestamp"].rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def evictions(window):
    return {
        (e["objectRef"].get("name")): stamp(e)
        for e in window.writes(user=ADMIN, resource="pods")
        if e["objectRef"].get("subresource") == "eviction"
    }


def node_names(core, nodegroup):
    return sorted(n.metadata.name for n in core.list_node(label_selector="%s=%s" % (NG_LABEL, nodegroup)).items)


def pod(core, name, node, limits, labels=None):
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {
                "nodeName": node,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": "registry.example/cuda:12", "resources": {"limits": limits}}],
            },
        },
    )


def test_site_previews_then_applies_shrink_mig_change_and_pool_removal_safely(sandbox, tmp_path):
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    core.create_namespace({"metadata": {"name": NS}})
    h.wait_for_default_service_account(core, NS)
    site = Site(sandbox, tmp_path)
    inventory = pools()
    try:
        site(cluster(sandbox, inventory))
        t4 = node_names(core, "safe-t4")
        a100 = node_names(core, "safe-a100")
        (old,) = node_names(core, "safe-old")
        # born with the pool's taint and label (Magnum 1.14 node_taints/node_labels)
        born = core.read_node(old)
        assert born.metadata.labels["gpupool.io/pool"] == "safe-old"
        assert GPU_TAINT in [(t.key, t.value, t.effect) for t in born.spec.taints]

        # ---- 1. scale down with a GPU pod on the node that goes (the newest: both have one GPU pod) ---------
        pod(core, "train-0", t4[0], {"nvidia.com/gpu": "1"})
        pod(core, "train-1", t4[1], {"nvidia.com/gpu": "1"})
        pod(core, "probe-1", t4[1], {"nvidia.com/gpu": "1"}, {"gpupool.io/drain": "skip"})
        inventory[0]["nodegroup"]["node_count"] = 1
        check, real = site.previewed_applied_idempotent(cluster(sandbox, inventory))
        assert ("drained before removal: %s: evict: - %s/train-1 skip: - %s/probe-1" % (t4[1], NS, NS)) in check.text
        removed_at = min(r["time"] for r in real.magnum_writes if r["path"].endswith("/actions/resize"))
        evicted = evictions(real.window)
        assert sorted(evicted) == ["train-1"] and evicted["train-1"] < removed_at  # evicted first
        assert node_names(core, "safe-t4") == [t4[0]]
        assert sorted(p.metadata.name for p in core.list_namespaced_pod(NS).items) == ["probe-1", "train-0"]

        # ---- 2. MIG layout change with MIG pods on both nodes: evicted wave by wave ---------------------------
        pod(core, "mig-0", a100[0], {"nvidia.com/mig-3g.20gb": "1"})
        pod(core, "mig-1", a100[1], {"nvidia.com/mig-2g.10gb": "1"})
        inventory[1]["mig"]["layout"] = dict(SECOND)
        check, real = site.previewed_applied_idempotent(cluster(sandbox, inventory))
        # the rollout plan of --diff: one wave per node, each with the pod evicted first
        assert ("wave 1/2: cordon, evict the GPU pods, set nvidia.com/mig.config") in check.text, check.stdout[-6000:]
        assert ("%s: reconfigure" % a100[0]) in check.text and ("evict: %s/mig-0" % NS) in check.text
        assert ("%s: reconfigure" % a100[1]) in check.text and ("evict: %s/mig-1" % NS) in check.text
        evicted = evictions(real.window)
        assert sorted(evicted) == ["mig-0", "mig-1"]
        # wave 1: its pod is evicted before its node is relabelled (the MIG manager acts only on the new label),
        # the MIG manager finishes it, and only then wave 2 evicts its pod
        manager = [stamp(e) for e in real.window.writes(user=MIG_SIM, resource="nodes", name=a100[0])]
        assert manager and evicted["mig-0"] < min(manager) <= max(manager) < evicted["mig-1"]
        for name in a100:
            node = core.read_node(name)
            assert node.metadata.labels["nvidia.com/mig.config.state"] == "success" and not node.spec.unschedulable
            assert sandbox.mig.layout(name) == {0: SECOND, 1: SECOND}

        # ---- 3. remove a pool: its node is never left schedulable -------------------------------------------
        pod(core, "old-0", old, {"nvidia.com/gpu": "1"})
        removed = [p for p in inventory if p["name"] != "safe-old"]
        check, real = site.previewed_applied_idempotent(cluster(sandbox, removed))
        assert "gpupool.io/orphaned: 'true'" in check.stdout or "gpupool.io/orphaned: true" in check.stdout
        node = core.read_node(old)
        assert node.spec.unschedulable and node.metadata.annotations["gpupool.io/cordoned-by"] == "node-pool"
        assert node.metadata.labels["gpupool.io/orphaned"] == "true"
        assert GPU_TAINT in [(t.key, t.value, t.effect) for t in node.spec.taints]
        assert [n["name"] for n in yaml.safe_load(magnum_list(sandbox))] == ["safe-a100", "safe-old", "safe-t4"]
        assert "[orphaned_node] node %s (pool safe-old is no longer in the inventory)" % old in real.text
        assert real.magnum_writes == []

        # ---- 4. the cluster prunes nodegroups: the orphan's nodegroup is drained, then deleted ------------------
        check, real = site.previewed_applied_idempotent(cluster(sandbox, removed, prune=True))
        assert ("drained before removal: %s: evict: - %s/old-0" % (old, NS)) in check.text
        deleted_at = min(r["time"] for r in real.magnum_writes if r["method"] == "DELETE")
        assert evictions(real.window)["old-0"] < deleted_at
        assert [n["name"] for n in yaml.safe_load(magnum_list(sandbox))] == ["safe-a100", "safe-t4"]
        assert node_names(core, "safe-old") == []
    finally:
        for name in ("safe-t4", "safe-a100", "safe-old"):
            magnum_delete(sandbox, name)
        core.delete_namespace(NS)


def magnum_list(sandbox):
    """The test's own read of the cluster's nodegroups (openstacksdk, the real client), as YAML text."""
    proxy = _proxy(sandbox)
    resp = proxy.request("/clusters/%s/nodegroups" % sandbox.cluster()["uuid"], "GET", headers=MV, raise_exc=False)
    assert resp.status_code == 200, resp.text
    return yaml.safe_dump(
        sorted(
            ({"name": ng["name"]} for ng in resp.json()["nodegroups"] if ng["name"].startswith("safe-")),
            key=lambda n: n["name"],
        )
    )


def magnum_delete(sandbox, name):
    _proxy(sandbox).request(
        "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], name), "DELETE", headers=MV, raise_exc=False
    )


def _proxy(sandbox):
    import openstack

    return openstack.connect(
        load_yaml_config=False, load_envvars=False, **copy.deepcopy(sandbox.cloud)
    ).container_infrastructure_management
