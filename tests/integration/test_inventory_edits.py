"""The inventory edits gpupool exists for, on the sandbox, through site.yml as a person runs it (issue #14's
"done when"): each edit is first shown by ``--check --diff`` with zero writes (Kubernetes audit log and Magnum's
request log), then applied, then a second run changes nothing and writes nothing.

The edits here, in order, on one cluster of unique pool names on the shared sandbox: scale up; time-slicing ->
MPS; add a pool; a tenant's claim template added. The edits that take GPUs away from pods (scale down with a GPU
pod on the node that goes, a MIG layout change with MIG pods, remove a pool) are test_site_safe_changes.py's.
Each test is one edit and depends on the ones before it (the file runs in order).
"""

from __future__ import annotations

import copy
import uuid

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

pytestmark = pytest.mark.sandbox
ADMIN = "gpupool-admin"
SITE = "%s/playbooks/site.yml" % ROOT
NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from kubernetes import client

    from testbed import binaries
    from testbed.sandbox import SIMULATION_CHART

    suffix = uuid.uuid4().hex[:5]
    names = {
        "cluster": "edits-%s" % suffix,
        "t4": "ed-t4-%s" % suffix,
        "a100": "ed-a100-%s" % suffix,
        "h100": "ed-h100-%s" % suffix,
        "ns": "ed-team-%s" % suffix,
        "driver_ns": "ed-dra-%s" % suffix,
    }
    chart_version = yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"]
    cluster = {
        "name": names["cluster"],
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "dra_driver": {"chart": str(SIMULATION_CHART), "version": chart_version, "namespace": names["driver_ns"]},
        # no kubelet on the sandbox: an evicted pod only goes when its grace period is 0
        "drain": {"grace_period": 0, "timeout": 120},
        "pools": [
            {
                "name": names["t4"],
                "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1, "max_node_count": 3},
                "gpu": {"model": "T4"},
                "sharing": {"time_slicing": {"interval": "Medium"}},
            },
            {
                "name": names["a100"],
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
            },
        ],
        "tenants": [{"namespace": names["ns"], "templates": [{"name": "one-t4", "pool": names["t4"]}]}],
    }
    tmp = tmp_path_factory.mktemp("inventory-edits")
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "dra_driver_helm_binary": str(binaries.find("helm").path),
    }
    core = client.CoreV1Api(sandbox.cp.api_client())
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=names["ns"])))
    b = Bed(names, cluster, host, tmp, sandbox, core)
    b.write()
    yield b
    b.cleanup()


class Bed:
    def __init__(self, names, cluster, host, tmp, sandbox, core):
        self.names, self.cluster, self.host, self.tmp = names, cluster, host, tmp
        self.sandbox, self.core = sandbox, core
        self.inventory = tmp / "hosts.yml"

    def write(self):
        hosts = {self.names["cluster"]: dict(self.host, gpupool_cluster=self.cluster)}
        self.inventory.write_text(yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": hosts}}}}))

    def pool(self, key):
        (pool,) = [p for p in self.cluster["pools"] if p["name"] == self.names[key]]
        return pool

    def edit(self, change):
        """Edit the inventory as a person would (a copy of the cluster, changed, written back)."""
        cluster = copy.deepcopy(self.cluster)
        change(cluster)
        self.cluster = cluster
        self.write()

    def site(self, check=False):
        """site.yml; returns (result, Kubernetes writes but the run lease's, Magnum writes)."""
        k8s_mark = self.sandbox.cp.audit.mark()
        magnum_before = len(self.sandbox.magnum.magnum_requests(writes_only=True))
        res = run_playbook(SITE, str(self.inventory), self.tmp, check=check, diff=check, timeout=900)
        assert res.rc == 0, res.stdout[-6000:] + res.stderr[-2000:]
        window = self.sandbox.cp.audit.since(k8s_mark)
        k8s = [
            e for e in window.writes(user=ADMIN) if (e.get("objectRef") or {}).get("resource") != "leases"
        ]  # the run lease is bookkeeping of every real run, not a change to the pools
        magnum = self.sandbox.magnum.magnum_requests(writes_only=True)[magnum_before:]
        return res, k8s, magnum

    def check_then_apply(self):
        """--check --diff writes nothing; the real run changes something; a second run changes and writes nothing.
        Returns the check run's output and the real run's (result, writes)."""
        check, k8s, magnum = self.site(check=True)
        assert (k8s, magnum) == ([], []), "check mode wrote: %s %s" % (_short(k8s), magnum)
        real, k8s_writes, magnum_writes = self.site()
        assert real.changed(self.names["cluster"]) > 0, real.stdout[-3000:]
        again, k8s, magnum = self.site()
        assert again.changed(self.names["cluster"]) == 0, again.stdout[-4000:]
        assert (k8s, magnum) == ([], []), "the second run wrote: %s %s" % (_short(k8s), magnum)
        return check.stdout, (real, k8s_writes, magnum_writes)

    def nodes(self, key):
        selector = "%s=%s" % (NODEGROUP_LABEL, self.names[key])
        return sorted(self.core.list_node(label_selector=selector).items, key=lambda n: n.metadata.name)

    def cleanup(self):
        import openstack

        magnum = openstack.connect(load_yaml_config=False, load_envvars=False, **self.sandbox.cloud)
        cluster_id = self.sandbox.cluster()["uuid"]
        for key in ("t4", "a100", "h100"):
            magnum.container_infrastructure_management.request(
                "/clusters/%s/nodegroups/%s" % (cluster_id, self.names[key]),
                "DELETE",
                raise_exc=False,
                headers={"OpenStack-API-Version": "container-infra 1.14"},
            )
        cp = self.sandbox.cp
        cp.kubectl("delete", "namespace", self.names["ns"], "--wait=false", check=False)
        pools = ",".join(self.names[k] for k in ("t4", "a100", "h100"))
        cp.kubectl("delete", "deviceclasses", "-l", "gpupool.io/pool in (%s)" % pools, check=False)
        cp.helm("uninstall", "dra-driver-nvidia-gpu", "-n", self.names["driver_ns"], "--wait", check=False)
        cp.kubectl("delete", "namespace", self.names["driver_ns"], "--wait=false", check=False)


def _short(events):
    return [
        "%s %s/%s" % (e["verb"], (e.get("objectRef") or {}).get("resource"), (e.get("objectRef") or {}).get("name"))
        for e in events
    ]


def test_0_the_pools_converge_and_a_second_run_changes_nothing(bed):
    """The baseline every edit starts from."""
    real, _k8s, _magnum = bed.site()
    assert real.changed(bed.names["cluster"]) > 0
    again, k8s, magnum = bed.site()
    assert again.changed(bed.names["cluster"]) == 0 and (k8s, magnum) == ([], []), _short(k8s)
    assert len(bed.nodes("t4")) == 1 and len(bed.nodes("a100")) == 1


def test_1_scale_up(bed):
    bed.edit(lambda c: c["pools"][0]["nodegroup"].update(node_count=2))
    diff, (_real, _k8s, magnum) = bed.check_then_apply()
    assert "node_count" in diff and bed.names["t4"] in diff
    assert [w["path"].rsplit("/", 1)[-1] for w in magnum if w["method"] == "POST"][-1:] == ["resize"], magnum
    nodes = bed.nodes("t4")
    assert len(nodes) == 2
    for node in nodes:  # the new node too: labelled and tainted as the pool says
        assert node.metadata.labels.get("gpupool.io/pool") == bed.names["t4"]
        assert {"node-role.kubernetes.io/gpu", "NoSchedule"} <= {
            x for t in node.spec.taints or [] for x in (t.key, t.effect)
        }


def test_2_time_slicing_to_mps(bed):
    def to_mps(cluster):
        cluster["pools"][0]["sharing"] = {"mps": {}}

    bed.edit(to_mps)
    diff, _ = bed.check_then_apply()
    assert "MPSSupport" in diff
    release = bed.sandbox.cp.helm("get", "values", "dra-driver-nvidia-gpu", "-n", bed.names["driver_ns"], "-o", "yaml")
    gates = yaml.safe_load(release.stdout)["featureGates"]
    assert gates.get("MPSSupport") is True and not gates.get("TimeSlicingSettings"), gates


def test_3_add_a_pool(bed):
    def add(cluster):
        cluster["pools"].append(
            {
                "name": bed.names["h100"],
                "nodegroup": {"flavor": "g5.h100x4", "node_count": 1},
                "gpu": {"model": "H100-80GB", "per_node": 4},
            }
        )

    bed.edit(add)
    diff, _ = bed.check_then_apply()
    assert bed.names["h100"] in diff
    (node,) = bed.nodes("h100")
    assert node.metadata.labels.get("gpupool.io/pool") == bed.names["h100"]
    classes = bed.sandbox.cp.kubectl(
        "get", "deviceclasses", "-l", "gpupool.io/pool=%s" % bed.names["h100"], "-o", "name"
    )
    assert classes.stdout.strip(), "the new pool publishes its DeviceClass"


def test_4_a_tenants_claim_template_added(bed):
    def add_template(cluster):
        cluster["tenants"][0]["templates"].append(
            {"name": "a100-slice", "pool": bed.names["a100"], "mig_profile": "2g.10gb", "count": 2}
        )

    bed.edit(add_template)
    diff, _ = bed.check_then_apply()
    assert "a100-slice" in diff
    template = bed.sandbox.cp.kubectl("get", "resourceclaimtemplate", "a100-slice", "-n", bed.names["ns"], "-o", "yaml")
    body = yaml.safe_load(template.stdout)
    (request,) = body["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 2 and "2g.10gb" in request["exactly"]["deviceClassName"], request
