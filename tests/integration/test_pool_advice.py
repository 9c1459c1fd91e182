"""gpupool.core.pool_advice on the sandbox (issue #20): why claims wait, and advice that, applied with site.yml,
lets the claims be allocated.

The pools are the example's A100 and H100 shapes (A100-40GB x 2 with 3g.20gb + 2 x 2g.10gb, whole H100-80GB x 4),
plus two T4 pools for the node reasons (one at node_count 0). site.yml converges them through the Magnum emulator
and the node and MIG manager simulators; a kubelet-plugin DaemonSet made here lets the DRA driver simulator
publish the slices. The REAL kube-scheduler allocates: a claim is allocated once a pod that uses it is created (the
test creates the claims as users would, and a pod for each claim it wants scheduled; a claim no pod uses yet waits,
which is the advisor's "free now"). Each pod the scheduler cannot place stays Pending with the scheduler's own
reason (PodScheduled=False), checked beside the advisor's reason.

In order, on one cluster (site.yml runs three times: converge, --check --diff of the advice, the advice):
1. nothing waits (one 3g.20gb allocated): nothing to change;
2. one claim per reason, one advice run: each claim gets its reason;
3. the reason-only claims go; 1g.10gb, 3g.40gb and two whole-GPU claims wait: the advice (playbooks/advise.yml,
   with the inventory file's diff) is applied by pasting its snippet, previewed with site.yml --check --diff,
   converged with site.yml; then pods for every waiting claim are scheduled and their claims allocated by the
   scheduler, and the allocated 3g.20gb was never in the way: same device, same GPU layout;
4. nothing waits any more: nothing to change.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from testbed import dra_api
from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, run_playbook

# dra_api: the scheduler's reasons and the advice on every release of the matrix (1.32's v1beta1 included)
pytestmark = [pytest.mark.sandbox, pytest.mark.dra_api]
HOST = "advise"
ADMIN = "gpupool-admin"
NS = "advise-test"
NG_LABEL = "magnum.openstack.org/nodegroup"
A100, H100, T4, EMPTY = "adv-a100", "adv-h100", "adv-t4", "adv-empty"
POOLS = [A100, H100, T4, EMPTY]
LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
MV = {"OpenStack-API-Version": "container-infra 1.14"}
ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"


def pools():
    return [
        {
            "name": A100,
            "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1, "max_node_count": 2},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": dict(LAYOUT)},
        },
        {
            "name": H100,
            "nodegroup": {"flavor": "g5.h100x4", "node_count": 1},
            "gpu": {"model": "H100-80GB", "per_node": 4},
        },
        {
            "name": T4,
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 1, "max_node_count": 1},
            "gpu": {"model": "T4"},
        },
        {
            "name": EMPTY,
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 0, "max_node_count": 0},
            "gpu": {"model": "T4"},
        },
    ]


def cluster(sandbox, pool_list):
    return {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name, "labels": {"nvidia_gpu_enabled": "true"}},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        # the kubelet plugin is the DaemonSet made below: the DRA driver role is not what this test is about
        "dra_driver": {"enabled": False},
        "drain": {"timeout": 60, "grace_period": 0},
        "pools": pool_list,
        # the template keeps 3g.20gb in the A100 pool: the advice may not drop it
        "tenants": [{"namespace": NS, "templates": [{"name": "a100-3g", "pool": A100, "mig_profile": "3g.20gb"}]}],
    }


class Inventory:
    """A file inventory as a site keeps it: hosts.yml and host_vars/<cluster>/gpupool.yml (the file advised on)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "host_vars" / HOST).mkdir(parents=True)
        host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        (path / "hosts.yml").write_text(
            yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": {HOST: host}}}}})
        )

    @property
    def file(self) -> Path:
        return self.path / "host_vars" / HOST / "gpupool.yml"

    def write(self, data: dict) -> None:
        self.file.write_text(
            "---\n# the test's GPU pools\n" + yaml.safe_dump({"gpupool_cluster": data}, sort_keys=False)
        )

    def read(self) -> dict:
        return yaml.safe_load(self.file.read_text())["gpupool_cluster"]


class Runs:
    def __init__(self, sandbox, inventory: Inventory, tmp: Path) -> None:
        self.sandbox, self.inventory, self.tmp, self.count = sandbox, inventory, tmp, 0

    def playbook(self, name: str, check: bool = False, **extra):
        self.count += 1
        work = self.tmp / ("run%d" % self.count)
        work.mkdir()
        mark = self.sandbox.cp.audit.mark()
        extra_vars = dict({"gpupool_pools": ",".join(POOLS)}, **extra)
        result = run_playbook(
            str(Path(ROOT) / "playbooks" / name),
            str(self.inventory.path),
            work,
            check=check,
            diff=check,
            extra_vars=extra_vars,
        )
        assert result.rc == 0, result.stdout[-8000:] + result.stderr[-3000:]
        result.window = self.sandbox.cp.audit.since(mark)
        return result

    def advice(self, tmp_name: str) -> dict:
        """The module's result, through a one-task play (every key of it, not only what advise.yml prints)."""
        play = h.GpupoolPlay(self.sandbox.cp, self.tmp / tmp_name, self.inventory.read())
        (result,), _res, window = play.run(
            [("gpupool.core.pool_advice", {"cluster": "{{ gpupool_cluster }}", "namespaces": [NS]})]
        )
        assert not result.get("failed"), result.get("msg")
        assert result["changed"] is False and window.writes(user=ADMIN) == []
        return result


# ---- the cluster's objects, as the tests (playing users and the scheduler) make them ---------------------------


_SERVED: dict = {}


def served(sandbox) -> str:
    """The newest resource.k8s.io version the session's server serves (v1beta1 on 1.32): the test speaks it."""
    if sandbox.cp.server not in _SERVED:
        out = sandbox.cp.kubectl("api-versions").stdout.split()
        _SERVED[sandbox.cp.server] = next(v for v in dra_api.KNOWN_VERSIONS if "resource.k8s.io/" + v in out)
    return _SERVED[sandbox.cp.server]


def claim(sandbox, name, device_class, count=1, attribute=None):
    devices = {
        "requests": [
            {
                "name": "gpu",
                "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count},
            }
        ]
    }
    if attribute:
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": attribute}]
    version = served(sandbox)
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}}
    body["spec"] = {"devices": devices}
    h.custom(sandbox.cp).create_namespaced_custom_object(
        "resource.k8s.io", version, NS, "resourceclaims", dra_api.claim_to(version, body)
    )


def delete_claims(sandbox, names):
    for name in names:
        sandbox.cp.kubectl("delete", "resourceclaim", "-n", NS, name, "--ignore-not-found", "--wait=false", check=False)


def allocation(sandbox, name):
    status = (
        h.custom(sandbox.cp)
        .get_namespaced_custom_object("resource.k8s.io", served(sandbox), NS, "resourceclaims", name)
        .get("status")
        or {}
    )
    return [
        (r["pool"], r["device"]) for r in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    ]


GPU_TAINT_KEY = "node-role.kubernetes.io/gpu"  # every pool node's NoSchedule taint (docs/operations.md)
POOL_LABEL = "gpupool.io/pool"


def pod(sandbox, claim_name, pool=None):
    """A user's pod that uses the claim, tolerates the GPU pools' taint and (given a pool) selects its nodes."""
    spec = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
        "containers": [
            {"name": "work", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpu"}]}}
        ],
    }
    if pool:
        spec["nodeSelector"] = {POOL_LABEL: pool}
    h.core(sandbox.cp).create_namespaced_pod(
        NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-" + claim_name}, "spec": spec}
    )


def delete_pods(sandbox, claim_names):
    """Gone now (grace 0: no container runs anywhere); the resourceclaim controller then releases their claims."""
    from kubernetes.client.rest import ApiException

    for name in claim_names:
        try:
            h.core(sandbox.cp).delete_namespaced_pod("pod-" + name, NS, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise


def scheduled(sandbox, claim_name):
    """(node, [(pool, device)]) once the scheduler bound the claim's pod and allocated the claim, else None."""
    node = h.core(sandbox.cp).read_namespaced_pod("pod-" + claim_name, NS).spec.node_name
    devices = allocation(sandbox, claim_name)
    return (node, devices) if node and devices else None


def schedule(sandbox, claim_name, pool=None):
    """Create the claim's pod and wait until the scheduler placed it: (node, [device names])."""
    pod(sandbox, claim_name, pool)
    wait_for(lambda: scheduled(sandbox, claim_name), "the scheduler to allocate " + claim_name)
    node, devices = scheduled(sandbox, claim_name)
    assert {p for p, _d in devices} == {node}  # the devices of the node the pod is bound to
    return node, [d for _p, d in devices]


def unschedulable(sandbox, claim_name):
    """ "<reason>: <message>" of the claim's Pending pod's PodScheduled=False condition (the scheduler's), else None."""
    status = h.core(sandbox.cp).read_namespaced_pod("pod-" + claim_name, NS).status
    for cond in status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return "%s: %s" % (cond.reason, cond.message)
    return None


def node_names(sandbox, pool):
    return sorted(
        n.metadata.name for n in h.core(sandbox.cp).list_node(label_selector="%s=%s" % (NG_LABEL, pool)).items
    )


def published(sandbox, node):
    slices = h.kubectl_json(sandbox.cp, "get", "resourceslices")["items"]
    return sorted(
        d["name"]
        for s in slices
        if s["spec"].get("nodeName") == node and s["spec"]["driver"] == "gpu.nvidia.com"
        for d in s["spec"].get("devices") or []
    )


def wait_for(predicate, what, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError("timed out waiting for %s" % what)


def kubelet_plugin(sandbox, nodegroups=None, name="advise"):
    """The DRA driver's kubelet plugin as the chart makes it, for the test's nodegroups (the simulator plays its pods)."""
    from kubernetes import client

    term = {"matchExpressions": [{"key": NG_LABEL, "operator": "In", "values": list(nodegroups or POOLS)}]}
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
        "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "gpus", "image": "registry.example/dra:v0.5.1"}],
    }
    client.AppsV1Api(sandbox.cp.api_client()).create_namespaced_daemon_set(
        NS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "%s-kubelet-plugin" % name},
            "spec": {
                "selector": {"matchLabels": {"app": "%s-plugin" % name}},
                "template": {"metadata": {"labels": {"app": "%s-plugin" % name}}, "spec": spec},
            },
        },
    )


def magnum_delete(sandbox, name):
    import openstack

    proxy = openstack.connect(
        load_yaml_config=False, load_envvars=False, **copy.deepcopy(sandbox.cloud)
    ).container_infrastructure_management
    proxy.request(
        "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], name), "DELETE", headers=MV, raise_exc=False
    )


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("advise")
    h.ensure_namespace(sandbox.cp, NS)
    kubelet_plugin(sandbox)
    inventory = Inventory(tmp / "inventory")
    inventory.write(cluster(sandbox, pools()))
    runs = Runs(sandbox, inventory, tmp)
    try:
        runs.playbook("site.yml")
        a100, h100 = node_names(sandbox, A100), node_names(sandbox, H100)
        assert len(a100) == 1 and len(h100) == 1 and len(node_names(sandbox, T4)) == 1
        wait_for(lambda: sum("-mig-" in d for d in published(sandbox, a100[0])) == 6, "the A100 layout published")
        wait_for(lambda: published(sandbox, h100[0]) == ["gpu-%d" % i for i in range(4)], "the H100s published")
        yield {"runs": runs, "inventory": inventory, "a100": a100[0], "h100": h100[0], "tmp": tmp}
    finally:
        sandbox.cp.kubectl("uncordon", *node_names(sandbox, T4), check=False)
        for name in POOLS:
            magnum_delete(sandbox, name)
        sandbox.cp.kubectl(
            "delete", "deviceclass", "-l", "gpupool.io/pool in (%s)" % ",".join(POOLS), "--wait=false", check=False
        )
        sandbox.cp.kubectl(
            "delete", "deviceclass", "advise-stray-4g", "--ignore-not-found", "--wait=false", check=False
        )
        sandbox.cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_nothing_waits_nothing_to_change(bed, sandbox):
    claim(sandbox, "held-3g", A100 + "-3g.20gb")
    assert schedule(sandbox, "held-3g", A100) == (bed["a100"], ["gpu-0-mig-3g20gb-9-4"])
    result = bed["runs"].advice("nothing")
    assert result["waiting"] == [] and result["nothing_to_change"] is True and result["pools"] == {}
    assert result["snippet"] == "" and result["inventory_diff"] == ""
    assert result["summary"].splitlines() == ["advise: no claim waits", "nothing to change"]


REASON_CLAIMS = ["r-noclass", "r-stray", "r-toomany", "r-pair", "r-empty", "r-cordoned", "r-frag", "f-3g"]


@pytest.fixture(scope="module")
def reasons(bed, sandbox):
    """One claim per reason (and the whole-GPU, 1g.10gb and 3g.40gb claims the advice is for), one advice run.
    Each claim but the two whole-GPU ones the advice is for gets a pod, which the scheduler leaves Pending."""
    # what is allocated first, one pod after the other: three of the four H100s; the other A100's 3g.20gb (both
    # GPUs hold one now)
    for name in ("h-0", "h-1", "h-2"):
        claim(sandbox, name, H100)
        assert schedule(sandbox, name, H100)[0] == bed["h100"]
    assert [allocation(sandbox, "h-%d" % i) for i in range(3)] == [[(bed["h100"], "gpu-%d" % i)] for i in range(3)]
    claim(sandbox, "f-3g", A100 + "-3g.20gb")
    assert schedule(sandbox, "f-3g", A100) == (bed["a100"], ["gpu-1-mig-3g20gb-9-4"])
    sandbox.cp.kubectl("apply", "-f", "-", input=json.dumps(stray_class(served(sandbox))))
    sandbox.cp.kubectl("cordon", *node_names(sandbox, T4))
    claim(sandbox, "r-noclass", "advise-nosuch")
    claim(sandbox, "r-stray", "advise-stray-4g")
    claim(sandbox, "r-toomany", A100 + "-3g.20gb", count=3)
    claim(sandbox, "r-pair", H100, count=2, attribute=ROOT_ATTRIBUTE)
    claim(sandbox, "r-empty", EMPTY)
    claim(sandbox, "r-cordoned", T4)
    claim(sandbox, "r-frag", A100 + "-3g.20gb")
    for name, device_class in WAITING.items():
        claim(sandbox, name, device_class)
    # the users' pods; the whole-GPU claims get theirs after the advice (one would take the free H100 at once)
    for name, pool in POD_POOLS.items():
        pod(sandbox, name, pool)
    wait_for(lambda: all(unschedulable(sandbox, n) for n in POD_POOLS), "the scheduler's verdict on every pod")
    result = bed["runs"].advice("reasons")
    said = {n: unschedulable(sandbox, n) for n in POD_POOLS}
    return {row["name"]: dict(row, scheduler=said.get(row["name"])) for row in result["waiting"]}, result


# the claims that get a pod in `reasons`, and the pool whose nodes it selects (None: a class of no pool)
POD_POOLS = {
    "r-noclass": None,
    "r-stray": None,
    "r-toomany": A100,
    "r-pair": H100,
    "r-empty": EMPTY,
    "r-cordoned": T4,
    "r-frag": A100,
    "w-1g": A100,
    "w-3g40": H100,
}


WAITING = {"w-1g": A100 + "-1g.10gb", "w-3g40": H100 + "-3g.40gb", "w-whole-1": H100, "w-whole-2": H100}


def stray_class(version):
    expression = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '4g.20gb'"
    return {
        "apiVersion": "resource.k8s.io/" + version,
        "kind": "DeviceClass",
        "metadata": {"name": "advise-stray-4g"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


# The scheduler's own words on the pods (kube-scheduler's DynamicResources plugin and filters): each pod Pending
DRA_NO = "Unschedulable: 0/"  # PodScheduled=False, reason Unschedulable, then "<n>/<m> nodes are available: ..."
CANNOT = "cannot allocate all claims"  # the DynamicResources filter found no allocation on the pool's node


def said(rows, name):
    message = rows[name]["scheduler"]
    assert message, "the scheduler said nothing about %s's pod" % name
    return message


def test_reason_no_device_class(reasons):
    rows, _result = reasons
    for name, device_class in (
        ("r-noclass", "advise-nosuch"),
        ("w-1g", A100 + "-1g.10gb"),
        ("w-3g40", H100 + "-3g.40gb"),
    ):
        assert said(rows, name).startswith(DRA_NO)
        assert "request gpu: device class %s does not exist" % device_class in said(rows, name)
    assert rows["r-noclass"]["reason"] == "no_device_class" and rows["r-noclass"]["servable"] is False
    assert rows["w-1g"]["reason"] == "no_device_class" and rows["w-1g"]["requests"][0]["unit"] == "1g.10gb"
    assert "it is the name of pool adv-a100's class for 1g.10gb" in rows["w-1g"]["message"]
    # both A100 GPUs hold an allocated 3g.20gb now, so no layout change may serve it (yet: see the advice test)
    assert rows["w-1g"]["servable"] is False and "unallocated GPUs" in rows["w-1g"]["no_change_serves"]


def test_reason_class_selects_no_device_of_any_pool(reasons):
    rows, _result = reasons
    assert rows["r-stray"]["reason"] == "selects_nothing"
    assert rows["r-stray"]["message"] == "DeviceClass advise-stray-4g selects no device any pool publishes"
    # the scheduler disagrees on the cause: the class's CEL (no has() guard) fails at run time on a whole GPU,
    # which has no `profile` attribute, so the pod is not even judged unschedulable but met a SchedulerError
    message = said(rows, "r-stray")
    assert message.startswith("SchedulerError: ") and "class advise-stray-4g" in message, message
    assert "CEL runtime error: no such key: profile" in message, message


def test_reason_pool_at_node_count_zero(reasons):
    rows, _result = reasons
    assert rows["r-empty"]["reason"] == "no_nodes"
    assert rows["r-empty"]["message"] == "pool adv-empty has no nodes: its nodegroup's node_count is 0"
    # the pod selects the pool's nodes: none matches, so no node ever got as far as the claim
    assert said(rows, "r-empty").startswith(DRA_NO) and CANNOT not in said(rows, "r-empty")
    assert "didn't match Pod's node affinity/selector" in said(rows, "r-empty")


def test_reason_nodes_cordoned(reasons, sandbox):
    rows, _result = reasons
    (node,) = node_names(sandbox, T4)
    assert rows["r-cordoned"]["reason"] == "nodes_unusable"
    assert rows["r-cordoned"]["message"].endswith("are cordoned or NotReady: %s (cordoned)" % node)
    assert said(rows, "r-cordoned").startswith(DRA_NO) and CANNOT not in said(rows, "r-cordoned")
    assert "1 node(s) were unschedulable" in said(rows, "r-cordoned")


def test_reason_more_on_one_node_than_any_node_has(reasons):
    rows, _result = reasons
    assert rows["r-toomany"]["reason"] == "too_many"
    assert (
        "asks for 3 3g.20gb MIG device(s) on one node; the most any node of pool adv-a100 has is 2"
        in rows["r-toomany"]["message"]
    )
    # the scheduler: the pool's node cannot serve the claim (it does not say why)
    assert said(rows, "r-toomany").startswith(DRA_NO) and CANNOT in said(rows, "r-toomany")


def test_reason_more_under_one_match_attribute_value_than_any_node_has(reasons):
    rows, result = reasons
    assert rows["r-pair"]["reason"] == "too_many" and rows["r-pair"]["servable"] is False
    assert (
        "under one %s value; the most any node of pool adv-h100 has is 1" % ROOT_ATTRIBUTE in rows["r-pair"]["message"]
    )
    assert [u["claim"] for u in result["pools"][H100]["unserved"]] == [NS + "/r-pair"]
    assert said(rows, "r-pair").startswith(DRA_NO) and CANNOT in said(rows, "r-pair")


def test_reason_fragmented_names_the_gpu_and_its_free_slices(reasons, bed):
    rows, _result = reasons
    message = rows["r-frag"]["message"]
    assert rows["r-frag"]["reason"] == "fragmented"
    assert "node %s GPU 0 (free memory slices 0-3)" % bed["a100"] in message
    assert "node %s GPU 1 (free memory slices 0-3)" % bed["a100"] in message
    assert "3g.20gb takes 4 memory slice(s) in a row, starting at 0 or 4" in message
    assert said(rows, "r-frag").startswith(DRA_NO) and CANNOT in said(rows, "r-frag")


def test_reason_all_matching_devices_allocated(reasons, bed):
    rows, _result = reasons
    # no pod uses these two claims yet, so the scheduler has not allocated them: the older one would get the free H100
    assert rows["w-whole-1"]["reason"] == "free_now" and rows["w-whole-1"]["scheduler"] is None
    assert "free for it now on node %s" % bed["h100"] in rows["w-whole-1"]["message"]
    assert rows["w-whole-2"]["reason"] == "all_allocated"
    assert (
        "every one of the 4 whole GPU(s) on pool adv-h100's usable nodes is allocated or reserved"
        in rows["w-whole-2"]["message"]
    )


def test_advice_applied_with_site_lets_the_claims_be_allocated(reasons, bed, sandbox):
    runs, inventory = bed["runs"], bed["inventory"]
    delete_pods(sandbox, [n for n in REASON_CLAIMS if n in POD_POOLS or n == "f-3g"])
    delete_claims(sandbox, REASON_CLAIMS)  # what the reasons needed goes; GPU 1 of the A100 is free again
    sandbox.cp.kubectl("delete", "deviceclass", "advise-stray-4g", "--ignore-not-found")
    sandbox.cp.kubectl("uncordon", *node_names(sandbox, T4))
    wait_for(lambda: not any(allocation_or_none(sandbox, n) for n in REASON_CLAIMS), "the reason claims gone")

    reports = bed["tmp"] / "reports"
    advise = runs.playbook("advise.yml", gpupool_report_dir=str(reports), gpupool_advice_namespaces=NS)
    assert advise.window.writes(user=ADMIN) == []
    out = reports / HOST
    snippet = yaml.safe_load((out / "advice.yml").read_text())
    assert snippet == [
        # GPU 0 holds the allocated 3g.20gb: only GPU 1 changes, and it keeps the template's 3g.20gb
        {
            "name": A100,
            "mig": {"mode": "static", "layouts": {0: LAYOUT, 1: {"3g.20gb": 1, "2g.10gb": 1, "1g.10gb": 1}}},
        },
        # GPUs 0-2 are allocated: GPU 3 becomes 2 x 3g.40gb, and one more node brings the whole GPUs
        {"name": H100, "mig": {"mode": "static", "layouts": {3: {"3g.40gb": 2}}}, "nodegroup": {"node_count": 2}},
    ]
    diff = (out / "advice.diff").read_text()
    assert diff.startswith("--- %s\n" % inventory.file)
    removed = sorted(line[1:].strip() for line in diff.splitlines() if line[:1] == "-" and not line.startswith("---"))
    added = sorted(line[1:].strip() for line in diff.splitlines() if line[:1] == "+" and not line.startswith("+++"))
    # the file is written in block style: the block of `layout` goes, the new `layouts` come in the example's style
    assert removed == sorted(["layout:", "3g.20gb: 1", "2g.10gb: 2", "node_count: 1"]), diff
    assert added == sorted(
        [
            "layouts:",
            "0: {3g.20gb: 1, 2g.10gb: 2}",
            "1: {3g.20gb: 1, 2g.10gb: 1, 1g.10gb: 1}",
            "node_count: 2",
            "mig:",
            "mode: static",
            "layouts:",
            "3: {3g.40gb: 2}",
        ]
    ), diff
    for pool in (A100, H100):
        svg = (out / ("advice-%s.svg" % pool)).read_text()
        assert svg.startswith("<svg") and "%s after" % bed[pool.split("-")[1]] in svg
    assert "[no_device_class]" in advise.stdout and "advice for adv-a100" in advise.stdout
    # the allocated devices' pods run on the nodes the advice re-partitions: a drain evicts them (a node's GPU pods
    # all go, whichever GPU changes), and the advice says so
    lines = " ".join(advise.stdout.split())
    assert "adv-a100 (waiting: 1 x 1g.10gb)" in lines and "evicts 1 pod(s)" in lines, advise.stdout[-4000:]
    assert "evicts 3 pod(s)" in lines, advise.stdout[-4000:]

    # the diff applies to the inventory file (patch(1)), and says what pasting the snippet says
    pasted = inventory.read()
    for change in snippet:
        pool = next(p for p in pasted["pools"] if p["name"] == change["name"])
        pool["mig"] = change["mig"]
        pool["nodegroup"].update(change.get("nodegroup") or {})
    subprocess.run(["patch", "--quiet", str(inventory.file), str(out / "advice.diff")], check=True)
    assert inventory.read() == pasted
    assert inventory.file.read_text().startswith("---\n# the test's GPU pools\n")  # the comment is kept
    # preview the rollout, converge
    check = runs.playbook("site.yml", check=True)
    assert check.window.writes(user=ADMIN) == []
    text = " ".join(check.stdout.split())
    # the rollout the advice causes: the A100 node re-partitioned, the H100 node partitioned for the first time
    assert "MIG rollout of pool adv-a100" in text and "%s: reconfigure" % bed["a100"] in text, check.stdout[-6000:]
    assert "MIG rollout of pool adv-h100" in text and "%s: configure" % bed["h100"] in text, check.stdout[-6000:]
    runs.playbook("site.yml")
    (old, new) = sorted(node_names(sandbox, H100), key=lambda n: n != bed["h100"])
    assert old == bed["h100"]
    wait_for(
        lambda: any(d.startswith("gpu-1-mig-1g10gb-") for d in published(sandbox, bed["a100"])), "the A100's 1g.10gb"
    )
    wait_for(lambda: sum("3g40gb" in d for d in published(sandbox, old)) == 2, "the H100's 3g.40gb")
    wait_for(lambda: len(published(sandbox, new)) >= 3, "the new H100 node's devices")

    # the rollout's drains evicted the pods of the allocated devices (GPU pods of a re-partitioned node): the
    # resourceclaim controller released their claims, which keep waiting for a pod
    held = ["held-3g", "h-0", "h-1", "h-2"]
    wait_for(lambda: not any(pod_exists(sandbox, n) for n in held), "the drains' evictions")
    wait_for(lambda: not any(allocation(sandbox, n) for n in held), "the evicted pods' claims released")
    # the GPU 0 layout of the A100 was kept: the 3g.20gb device the evicted pod had is still there
    assert {"gpu-0-mig-3g20gb-9-4", "gpu-0-mig-2g10gb-14-0", "gpu-0-mig-2g10gb-14-2"} <= set(
        published(sandbox, bed["a100"])
    )
    assert {"gpu-0", "gpu-1", "gpu-2"} <= set(published(sandbox, old))
    assert sandbox.mig.layout(bed["a100"])[0] == LAYOUT

    # the scheduler places the pods that waited (it retries them as the classes and slices appear), the
    # whole-GPU claims' pods, created now, and the evicted pods, created again as their controllers would
    for name in ["w-whole-1", "w-whole-2"] + held:
        pod(sandbox, name, H100 if name != "held-3g" else A100)
    wait_for(lambda: all(scheduled(sandbox, n) for n in list(WAITING) + held), "the scheduler to allocate all")
    done = {n: scheduled(sandbox, n) for n in list(WAITING) + held}
    one_g_node, one_g = done["w-1g"]
    assert one_g_node == bed["a100"] and one_g[0][1].startswith("gpu-1-mig-1g10gb-")
    # the layout applies to both H100 nodes, so either has a 3g.40gb for it: the scheduler picks (the allocator
    # simulator used to take the first node by name)
    assert done["w-3g40"][0] in (old, new) and "-mig-3g40gb-" in done["w-3g40"][1][0][1]
    # five whole-GPU claims, three whole H100s left on each node
    whole = [done[n] for n in ("w-whole-1", "w-whole-2", "h-0", "h-1", "h-2")]
    assert all(node in (old, new) and len(devices) == 1 for node, devices in whole)
    assert len({devices[0] for _node, devices in whole}) == 5
    assert all(d.split("/")[-1] in ("gpu-0", "gpu-1", "gpu-2") for _n, devices in whole for _p, d in devices)
    assert done["held-3g"][0] == bed["a100"] and "-mig-3g20gb-" in done["held-3g"][1][0][1]

    # everything is allocated: nothing waits, nothing to change
    result = runs.advice("after")
    assert result["waiting"] == [] and result["nothing_to_change"] is True


def pod_exists(sandbox, claim_name):
    from kubernetes.client.rest import ApiException

    try:
        h.core(sandbox.cp).read_namespaced_pod("pod-" + claim_name, NS)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def allocation_or_none(sandbox, name):
    from kubernetes.client.rest import ApiException

    try:
        return allocation(sandbox, name) or True
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


# ---- issue #26: a pool of four nodes, where the advice re-partitions only the nodes it names ---------------------

GROUPED = "adv-grp"  # four 2 x A100-40GB nodes, each GPU 2 x 3g.20gb; the nodegroup is at its maximum
GROUPED_LAYOUT = {"3g.20gb": 2}
GROUPED_WAITING = ["g-1g-%d" % k for k in range(3)]
GROUPED_HELD = ["g-held-0", "g-held-1"]


def grouped_cluster(sandbox):
    return {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name, "labels": {"nvidia_gpu_enabled": "true"}},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},
        "drain": {"timeout": 60, "grace_period": 0},
        "pools": [
            {
                "name": GROUPED,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 4, "max_node_count": 4},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": dict(GROUPED_LAYOUT)},
            }
        ],
    }


@pytest.fixture(scope="module")
def grouped(sandbox, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("advise-grp")
    h.ensure_namespace(sandbox.cp, NS)
    kubelet_plugin(sandbox, [GROUPED], name="advise-grp")
    inventory = Inventory(tmp / "inventory")
    inventory.write(grouped_cluster(sandbox))
    runs = Runs(sandbox, inventory, tmp)
    try:
        runs.playbook("site.yml", gpupool_pools=GROUPED)
        nodes = node_names(sandbox, GROUPED)
        assert len(nodes) == 4
        for node in nodes:
            wait_for(lambda n=node: sum("-mig-3g20gb-" in d for d in published(sandbox, n)) == 4, node + "'s layout")
        yield {"runs": runs, "inventory": inventory, "nodes": nodes, "tmp": tmp}
    finally:
        delete_pods(sandbox, GROUPED_WAITING + GROUPED_HELD)
        delete_claims(sandbox, GROUPED_WAITING + GROUPED_HELD)
        magnum_delete(sandbox, GROUPED)
        sandbox.cp.kubectl("delete", "deviceclass", "-l", "gpupool.io/pool=" + GROUPED, "--wait=false", check=False)
        sandbox.cp.kubectl("delete", "daemonset", "-n", NS, "advise-grp-kubelet-plugin", "--wait=false", check=False)


def mig_configs(sandbox, nodes):
    return {
        n: (h.kubectl_json(sandbox.cp, "get", "node", n)["metadata"].get("labels") or {}).get("nvidia.com/mig.config")
        for n in nodes
    }


def test_advice_for_a_pool_of_four_re_partitions_only_the_nodes_it_names(grouped, sandbox):
    """Two 3g.20gb are allocated (pods running), three 1g.10gb wait and no node can be added. One idle node as a MIG
    group serves them: the advice names it, and applied with site.yml only that node is relabelled and drained (no
    pod evicted anywhere), the allocated devices stay where they are, and the real scheduler allocates the claims
    that waited on the named node."""
    runs, inventory, nodes = grouped["runs"], grouped["inventory"], grouped["nodes"]
    held = {}
    for name in GROUPED_HELD:
        claim(sandbox, name, GROUPED + "-3g.20gb")
        held[name] = schedule(sandbox, name, GROUPED)
    for name in GROUPED_WAITING:
        claim(sandbox, name, GROUPED + "-1g.10gb")
        pod(sandbox, name, GROUPED)
    wait_for(lambda: all(unschedulable(sandbox, n) for n in GROUPED_WAITING), "the scheduler's verdict on the pods")

    reports = grouped["tmp"] / "reports"
    advise = runs.playbook(
        "advise.yml", gpupool_pools=GROUPED, gpupool_report_dir=str(reports), gpupool_advice_namespaces=NS
    )
    assert advise.window.writes(user=ADMIN) == []
    result = runs.advice("grouped")
    entry = result["pools"][GROUPED]
    advice = entry["advice"]
    assert advice is not None and entry["unserved"] == [], result["summary"]
    named = advice["nodes_repartitioned"]
    busy = {node for node, _devices in held.values()}
    # the fewest nodes: one 2 x A100 node holds the three 1g.10gb; an idle one, so nothing is evicted
    assert len(named) == 1 and named[0] in nodes and named[0] not in busy, result["summary"]
    assert advice["pods_evicted"] == [] and advice["node_count"] is None, result["summary"]

    # apply it by pasting the snippet, as an operator would
    snippet = yaml.safe_load((reports / HOST / "advice.yml").read_text())
    assert [change["name"] for change in snippet] == [GROUPED]
    pasted = inventory.read()
    pool = pasted["pools"][0]
    pool["mig"] = snippet[0]["mig"]
    pool["nodegroup"].update(snippet[0].get("nodegroup") or {})
    assert pool["mig"]["layout"] == GROUPED_LAYOUT and pool["mig"]["groups"], pool["mig"]  # the rest keep theirs
    inventory.write(pasted)
    before = mig_configs(sandbox, nodes)
    check = runs.playbook("site.yml", check=True, gpupool_pools=GROUPED)
    assert check.window.writes(user=ADMIN) == []
    converge = runs.playbook("site.yml", gpupool_pools=GROUPED)
    written = sorted({name for _verb, res, name in h.writes(converge.window, ADMIN) if res == "nodes"})
    assert written == named, converge.stdout[-6000:]
    evictions = [
        e
        for e in converge.window.writes(user=ADMIN, resource="pods")
        if (e.get("objectRef") or {}).get("subresource") == "eviction"
    ]
    assert evictions == []
    after = mig_configs(sandbox, nodes)
    assert {n: after[n] for n in nodes if n not in named} == {n: before[n] for n in nodes if n not in named}
    assert after[named[0]] != before[named[0]]

    # the real scheduler places the pods that waited, on the named node; the held claims kept their devices
    wait_for(lambda: all(scheduled(sandbox, n) for n in GROUPED_WAITING), "the scheduler to allocate the 1g.10gb")
    for name in GROUPED_WAITING:
        node, devices = scheduled(sandbox, name)
        assert node == named[0] and "-mig-1g10gb-" in devices[0][1]
    assert {name: scheduled(sandbox, name) for name in GROUPED_HELD} == {
        name: (node, [(node, d) for d in devices]) for name, (node, devices) in held.items()
    }
    assert runs.advice("grouped-after")["nothing_to_change"] is True
