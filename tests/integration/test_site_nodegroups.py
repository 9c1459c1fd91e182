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


def inventory(sandbox, pool_list, labels):
    cluster = {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        # This test counts the nodegroup step's Magnum calls; the DRA driver role (tested in
        # test_dra_driver_module.py and molecule) is off, as its chart is not part of this inventory.
        "dra_driver": {"enabled": False},
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name, "labels": labels},
        # a ConfigMap of its own: this inventory must not prune the MIG configs of other tests' pools
        "mig_manager": {"config_map": "ngsite-mig-parted-config", "namespace": sandbox.mig_namespace},
        "pools": pool_list,
    }
    return yaml.safe_dump(
        {
            "all": {
                "children": {
                    "gpupool_clusters": {
                        "hosts": {
                            HOST: {
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

    def ours(self):
        resp = self.proxy.request(self.base, "GET", headers=MV, raise_exc=False)
        assert resp.status_code == 200, resp.text
        return sorted(ng["name"] for ng in resp.json()["nodegroups"] if ng["name"].startswith("ngsite-"))

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
