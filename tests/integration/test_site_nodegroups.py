"""playbooks/site.yml on the sandbox: ONE gpupool.core.nodegroup call per cluster, whatever the number of pools.

The Magnum emulator's request log is the witness: each site.yml run lists the cluster's nodegroups exactly once,
and the nodegroups step has exactly one task result for the cluster (no per-pool loop). A second run writes
nothing to Magnum; a cluster-wide Magnum label change is reported as drift without failing the play; pools set
to `state: absent` are drained and their nodegroups deleted, which is also how this test cleans up.
"""

from __future__ import annotations

import os
import re
import sys
import time

import pytest
import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, run_playbook

pytestmark = pytest.mark.sandbox
HOST = "ngsite"
MV = {"OpenStack-API-Version": "container-infra 1.14"}
STEP = "TASK [gpupool.core.nodegroups : Converge the Magnum nodegroups of the pools]"


def pools(state="present"):
    return [
        # stays: a cluster whose pools are all absent needs allow_empty, which would prune every gpupool object
        {
            "name": "ngsite-t4a",
            "state": "present",
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1},
            "gpu": {"model": "T4"},
        },
        {
            "name": "ngsite-t4b",
            "state": state,
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2, "max_node_count": 3},
            "gpu": {"model": "T4"},
        },
        {"name": "ngsite-a100", "state": state, "nodegroup": {"flavor": "g4.p1.40g"}, "gpu": {"model": "A100-40GB"}},
    ]


def inventory(sandbox, pool_list, labels, host=HOST, **settings):
    """The inventory of one host; `settings` go into its gpupool_cluster (another name, prune_nodegroups...)."""
    cluster = {
        "name": host,
        "kubeconfig": str(sandbox.kubeconfig),
        # This test counts the nodegroup step's Magnum calls; the DRA driver role (tested in
        # test_dra_driver_module.py and molecule) is off, as its chart is not part of this inventory.
        "dra_driver": {"enabled": False},
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name, "labels": labels},
        # a ConfigMap of its own: this inventory must not prune the MIG configs of other tests' pools
        "mig_manager": {"config_map": host + "-mig-parted-config", "namespace": sandbox.mig_namespace},
        "pools": pool_list,
    }
    cluster["magnum"].update(settings.pop("magnum", {}))
    cluster.update(settings)
    return yaml.safe_dump(
        {
            "all": {
                "children": {
                    "gpupool_clusters": {
                        "hosts": {
                            host: {
                                "ansible_connection": "local",
                                "ansible_python_interpreter": sys.executable,
                                "gpupool_cluster": cluster,
                            }
                        }
                    }
                }
            }
        }
    )


def site(sandbox, tmp_path, pool_list, labels):
    tmp_path.mkdir()
    sandbox.magnum.clear_requests()
    start = time.time()  # the emulator logs a request when it is answered: the test's own reads may come late
    result = run_playbook(os.path.join(ROOT, "playbooks", "site.yml"), inventory(sandbox, pool_list, labels), tmp_path)
    requests = [r for r in sandbox.magnum.magnum_requests() if r["time"] >= start]
    reads = sorted(r["path"] for r in requests if r["method"] == "GET")
    # the step addresses the Magnum cluster as the inventory names it (gpupool_cluster.magnum.cluster)
    lists = [r for r in reads if r == "/v1/clusters/%s/nodegroups" % sandbox.cluster_name]
    writes = [(r["method"], r["path"]) for r in requests if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]
    return result, lists, writes, reads


def step_results(stdout):
    """The result lines of the nodegroups step: one per host, or one per item if it looped."""
    assert stdout.count(STEP) == 1, stdout[-4000:]
    section = stdout.split(STEP, 1)[1].split("\nTASK [", 1)[0]
    return re.findall(r"^(ok|changed|failed|fatal|skipping): \[([^\]]+)\]( => \(item=.*)?", section, re.M)


class Magnum:
    """openstacksdk's container-infra proxy (the real client) for what the test reads and cleans up itself."""

    def __init__(self, sandbox):
        import openstack

        self.proxy = openstack.connect(
            load_yaml_config=False, load_envvars=False, **sandbox.cloud
        ).container_infrastructure_management
        self.base = "/clusters/%s/nodegroups" % sandbox.cluster()["uuid"]

    def ours(self, prefix="ngsite-"):
        resp = self.proxy.request(self.base, "GET", headers=MV, raise_exc=False)
        assert resp.status_code == 200, resp.text
        return sorted(ng["name"] for ng in resp.json()["nodegroups"] if ng["name"].startswith(prefix))

    def show(self, name):
        """The nodegroup's full view (its labels, status)."""
        resp = self.proxy.request("%s/%s" % (self.base, name), "GET", headers=MV, raise_exc=False)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def delete(self, name):
        self.proxy.request("%s/%s" % (self.base, name), "DELETE", headers=MV, raise_exc=False)


def test_site_yml_makes_one_nodegroup_call_per_cluster(sandbox, tmp_path):
    labels = {"nvidia_gpu_enabled": "true"}
    magnum = Magnum(sandbox)
    try:
        first, lists, writes, reads = site(sandbox, tmp_path / "first", pools(), labels)
        assert first.rc == 0, first.stdout[-6000:] + first.stderr[-3000:]
        assert step_results(first.stdout) == [("changed", HOST, "")]
        assert len(lists) == 1, "one nodegroup list for the cluster"
        assert [m for m, _p in writes] == ["POST", "POST", "POST"]
        assert magnum.ours() == ["ngsite-a100", "ngsite-t4a", "ngsite-t4b"]

        again, lists, writes, reads = site(sandbox, tmp_path / "again", pools(), labels)
        assert again.rc == 0 and again.changed(HOST) == 0, again.stdout[-6000:]
        assert step_results(again.stdout) == [("ok", HOST, "")]
        assert len(lists) == 1 and writes == []
        # Read once: the list (its headers give the microversion) and each pool's nodegroup in full (the list
        # view has no min/max_node_count or labels to compare) - no version document, no cluster read.
        base = "/v1/clusters/%s/nodegroups" % sandbox.cluster_name
        assert reads == [base] + sorted("%s/%s" % (base, p["name"]) for p in pools()), reads

        # A cluster-wide Magnum label changes: every nodegroup keeps its label (Magnum cannot relabel), the play
        # goes on and says so once per nodegroup, instead of failing every pool.
        drift = dict(labels, nvidia_driver_version="580")
        drifted, lists, writes, reads = site(sandbox, tmp_path / "drift", pools(), drift)
        assert drifted.rc == 0 and drifted.changed(HOST) == 0, drifted.stdout[-6000:]
        assert step_results(drifted.stdout) == [("ok", HOST, "")]
        assert writes == [] and len(lists) == 1
        warned = re.sub(r"\s+", " ", drifted.stderr)
        assert warned.count("keeps the Magnum label(s) it was created with: nvidia_driver_version=None") == 3, warned

        # Pools set to absent: drained (nodes cordoned first) and their nodegroups deleted, in the same one call;
        # the last pool is deleted by the clean-up below.
        gone, lists, writes, reads = site(sandbox, tmp_path / "gone", pools("absent"), labels)
        assert gone.rc == 0, gone.stdout[-6000:] + gone.stderr[-3000:]
        assert step_results(gone.stdout) == [("changed", HOST, "")]
        assert len(lists) == 1 and [m for m, _p in writes] == ["DELETE", "DELETE"]
        assert magnum.ours() == ["ngsite-t4a"]
    finally:
        for name in magnum.ours():
            magnum.delete(name)


# ---- two owners on one Magnum cluster (#32) ------------------------------------------------------------------------
OWNER_A, OWNER_B = "ngown-a", "ngown-b"
ADMIN = "gpupool-admin"
OWN_NS = "ngown-jobs"


def owner_pools(owner, *names):
    return [
        {"name": name, "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1}, "gpu": {"model": "T4"}} for name in names
    ]


def owned_site(sandbox, tmp_path, host, pool_list, check=False, **settings):
    """site.yml for one owner: the result with its Magnum requests and the audit window of the run."""
    tmp_path.mkdir()
    sandbox.magnum.clear_requests()
    mark = sandbox.cp.audit.mark()
    start = time.time()
    text = inventory(sandbox, pool_list, {"nvidia_gpu_enabled": "true"}, host=host, **settings)
    result = run_playbook(os.path.join(ROOT, "playbooks", "site.yml"), text, tmp_path, check=check, diff=check)
    assert result.rc == 0, result.stdout[-8000:] + result.stderr[-3000:]
    result.window = sandbox.cp.audit.since(mark)
    result.magnum = [r for r in sandbox.magnum.magnum_requests() if r["time"] >= start]
    result.magnum_writes = [r for r in result.magnum if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]
    result.text = " ".join(result.stdout.split())
    return result


def test_a_second_owner_with_prune_never_touches_the_first_owners_nodegroups_nodes_or_pods(sandbox, tmp_path):
    """Owner A converges two pools; owner B (its own name, its own pool, prune_nodegroups: true, the same Magnum
    cluster) previews and converges: B's --check --diff says it leaves each of A's nodegroups (owned by A), and
    neither run sends a write for one of them to Magnum (the emulator's request log) nor touches A's nodes or the
    pod on them (the kube-apiserver's audit log). B's own nodegroup is made, with B's owner label."""
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    magnum = Magnum(sandbox)
    a_groups, b_groups = ["ngown-t4", "ngown-l4"], ["ngown-b-t4"]
    core.create_namespace({"metadata": {"name": OWN_NS}})
    try:
        first = owned_site(sandbox, tmp_path / "a", OWNER_A, owner_pools(OWNER_A, *a_groups))
        assert sorted(r["body"]["name"] for r in first.magnum_writes if r["method"] == "POST") == sorted(a_groups)
        a_info = {name: magnum.show(name) for name in a_groups}
        assert all(ng["labels"]["gpupool.io/owner"] == OWNER_A for ng in a_info.values()), a_info
        a_idents = {ident for ng in a_info.values() for ident in (ng["name"], ng["uuid"])}
        a_nodes = sorted(
            n.metadata.name
            for name in a_groups
            for n in core.list_node(label_selector="magnum.openstack.org/nodegroup=%s" % name).items
        )
        assert len(a_nodes) == 2
        h.wait_for_default_service_account(core, OWN_NS)
        core.create_namespaced_pod(
            OWN_NS,
            {
                "metadata": {"name": "train-a"},
                "spec": {
                    "nodeName": a_nodes[0],
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "c", "image": "registry.example/cuda:12"}],
                },
            },
        )
        before = {name: core.read_node(name).metadata.resource_version for name in a_nodes}

        b_settings = {"magnum": {"prune_nodegroups": True}}
        b_pools = owner_pools(OWNER_B, *b_groups)
        check = owned_site(sandbox, tmp_path / "b-check", OWNER_B, b_pools, check=True, **b_settings)
        for name in a_groups:
            line = "leave nodegroup '%s' of cluster '%s': owned by '%s'" % (name, sandbox.cluster_name, OWNER_A)
            assert line in check.text, check.stdout[-8000:]
            assert "delete nodegroup '%s'" % name not in check.text
        assert check.magnum_writes == [] and check.window.writes(user=ADMIN) == []

        real = owned_site(sandbox, tmp_path / "b", OWNER_B, b_pools, **b_settings)
        sent = [(r["method"], r["path"], r["body"]) for r in real.magnum_writes]
        assert [(m, (b or {}).get("name")) for m, _p, b in sent] == [("POST", "ngown-b-t4")], sent
        for method, path, body in sent:
            assert not a_idents & set(path.split("/")) and (body or {}).get("nodegroup") not in a_idents, sent
        assert [magnum.show(name)["status"] for name in a_groups] == ["CREATE_COMPLETE"] * 2
        assert magnum.show("ngown-b-t4")["labels"]["gpupool.io/owner"] == OWNER_B
        for name in a_nodes:
            assert real.window.writes(user=ADMIN, resource="nodes", name=name) == []
            assert not core.read_node(name).spec.unschedulable
        assert {name: core.read_node(name).metadata.resource_version for name in a_nodes} == before
        assert real.window.writes(user=ADMIN, resource="pods") == []
        assert [p.metadata.name for p in core.list_namespaced_pod(OWN_NS).items] == ["train-a"]
    finally:
        for name in magnum.ours("ngown-"):
            magnum.delete(name)
        core.delete_namespace(OWN_NS)
