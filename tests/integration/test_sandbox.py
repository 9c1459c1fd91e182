"""The sandbox: unmodified openstacksdk, kubernetes client, helm and kubectl against the Magnum
emulator, the real kube-apiserver and the node / DRA driver / MIG manager simulators."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import mig_parted_config
from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu"
MV = {"OpenStack-API-Version": "container-infra 1.14"}
NG_LABEL = "magnum.openstack.org/nodegroup"
DRA_NS = "dra-driver-nvidia-gpu"
RELEASE = "dra-driver-nvidia-gpu"
MIG_NS, MIG_CM = "gpu-operator", "gpupool-mig-parted-config"
CERN_LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}


wait_for = functools.partial(h.wait_for, timeout=15.0, interval=0.05)


# ---- clients (the real ones, unmodified) -------------------------------------------------------------
class Magnum:
    """openstacksdk's container-infra proxy (keystoneauth session) with the microversion header."""

    def __init__(self, sandbox):
        import openstack

        self.conn = openstack.connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
        self.proxy = self.conn.container_infrastructure_management
        self.cluster = sandbox.cluster()["uuid"]

    def call(self, method, path, headers=MV, **kwargs):
        return self.proxy.request(path, method, headers=headers, raise_exc=False, **kwargs)

    def create(self, name, flavor, count, **extra):
        body = dict(
            {
                "name": name,
                "flavor_id": flavor,
                "node_count": count,
                "labels": {"nvidia_gpu_enabled": "true"},
                "merge_labels": True,
            },
            **extra,
        )
        r = self.call("POST", "/clusters/%s/nodegroups" % self.cluster, json=body)
        assert r.status_code == 202, r.text
        return self.wait(name, "CREATE_COMPLETE")

    def resize(self, name, count):
        r = self.call(
            "POST", "/clusters/%s/actions/resize" % self.cluster, json={"node_count": count, "nodegroup": name}
        )
        assert r.status_code == 202, r.text
        # the conductor picks the resize up after a moment: wait for the new count to be complete
        return wait_for(
            "resize of %s" % name,
            lambda: (lambda ng: ng if ng and ng["node_count"] == count and ng["status"] == "UPDATE_COMPLETE" else None)(
                self.show(name)
            ),
        )

    def delete(self, name):
        r = self.call("DELETE", "/clusters/%s/nodegroups/%s" % (self.cluster, name))
        assert r.status_code == 204, r.text
        wait_for(
            "deletion of %s" % name,
            lambda: self.call("GET", "/clusters/%s/nodegroups/%s" % (self.cluster, name)).status_code == 404,
        )

    def show(self, name):
        r = self.call("GET", "/clusters/%s/nodegroups/%s" % (self.cluster, name))
        return r.json() if r.status_code == 200 else None

    def wait(self, name, status):
        def done():
            ng = self.show(name)
            assert not (ng and ng["status"].endswith("_FAILED")), ng
            return ng if ng and ng["status"] == status else None

        return wait_for("%s %s" % (name, status), done)


@pytest.fixture(scope="module")
def magnum(sandbox):
    return Magnum(sandbox)


@pytest.fixture(scope="module")
def core(sandbox):
    from kubernetes import client

    return client.CoreV1Api(sandbox.cp.api_client())


@pytest.fixture(scope="module")
def custom(sandbox):
    from kubernetes import client

    return client.CustomObjectsApi(sandbox.cp.api_client())


def nodes_of(core, nodegroup):
    return sorted(core.list_node(label_selector="%s=%s" % (NG_LABEL, nodegroup)).items, key=lambda n: n.metadata.name)


def dra_version():
    """The resource.k8s.io version of the session's release (testbed/k8s_releases.py; checked against discovery
    in test_controlplane.py)."""
    from testbed import k8s_releases

    return k8s_releases.release().resource_version


def slices_of(custom, node):
    """The node's ResourceSlices by driver, read in the version the server serves, in the v1 shape."""
    from testbed import dra_api

    version = dra_version()
    items = custom.list_cluster_custom_object(
        "resource.k8s.io", version, "resourceslices", field_selector="spec.nodeName=%s" % node
    )["items"]
    return {s["spec"]["driver"]: dra_api.slice_from(version, s) for s in items}


def device_names(sl):
    return sorted(d["name"] for d in sl["spec"]["devices"])


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:5])


# ---- node simulator ----------------------------------------------------------------------------------
def test_default_nodegroups_are_nodes(sandbox, core):
    for ng, role in (("default-master", "master"), ("default-worker", "worker")):
        (node,) = nodes_of(core, ng)
        labels = node.metadata.labels
        assert labels["magnum.openstack.org/role"] == role
        assert labels["node.kubernetes.io/instance-type"] == "m2.large"
        assert "nvidia.com/gpu.present" not in labels
        assert node.status.node_info.kubelet_version == sandbox.cp.release.version
        assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
        assert node.metadata.name.startswith("digaponc-gpu-004-%s-" % ng)
    assert sandbox.cluster()["labels"]["nvidia_gpu_enabled"] == "true"


def test_openstacksdk_nodegroup_lifecycle_registers_nodes(sandbox, magnum, core):
    name = unique("gpu-a100")
    # Without the microversion header Magnum answers 1.1, which has no nodegroup API.
    assert magnum.call("GET", "/clusters/%s/nodegroups" % magnum.cluster, headers={}).status_code == 406

    ng = magnum.create(name, "g4.p2.40g", 1)
    assert ng["node_count"] == 1
    (node,) = nodes_of(core, name)  # registered before the API says CREATE_COMPLETE
    labels = node.metadata.labels
    assert labels[NG_LABEL] == name and labels["magnum.openstack.org/role"] == "worker"
    assert {
        k: labels[k]
        for k in (
            "nvidia.com/gpu.product",
            "nvidia.com/gpu.count",
            "nvidia.com/gpu.memory",
            "nvidia.com/mig.capable",
            "nvidia.com/gpu.present",
            "feature.node.kubernetes.io/pci-10de.present",
            "node.kubernetes.io/instance-type",
        )
    } == {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "40960",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/gpu.present": "true",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "node.kubernetes.io/instance-type": "g4.p2.40g",
    }
    assert "nvidia.com/gpu.clique" not in labels  # A100 PCIe/SXM4 nodes have no multi-node NVLink
    assert node.status.capacity["cpu"] == "32" and node.status.capacity["memory"] == "240Gi"
    assert node.status.node_info.kubelet_version == sandbox.cp.release.version
    assert node.spec.provider_id.startswith("openstack:///")
    assert [n.name for n in sandbox.magnum.nodes_of(sandbox.cluster_name, name)] == [node.metadata.name]

    magnum.resize(name, 3)
    assert len(nodes_of(core, name)) == 3
    magnum.resize(name, 1)
    assert len(nodes_of(core, name)) == 1
    magnum.delete(name)
    assert nodes_of(core, name) == []
    assert sandbox.nodes.errors == []


def test_nodegroup_node_labels_and_taints(sandbox, magnum, core):
    """Magnum 1.14 node_labels/node_taints reach the Nodes (kubelet --node-labels/--register-with-taints)."""
    name = unique("gpu-t4")
    magnum.create(
        name,
        "g2.5xlarge",
        1,
        node_labels={"team": "ml"},
        node_taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
    )
    (node,) = nodes_of(core, name)
    assert node.metadata.labels["team"] == "ml"
    assert node.metadata.labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert node.metadata.labels["nvidia.com/mig.capable"] == "false"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [("dedicated", "ml", "NoSchedule")]
    magnum.delete(name)
    assert nodes_of(core, name) == []


# ---- DRA driver simulator -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def a100(magnum, core):
    """One g4.p2.40g node (2 x A100-40GB) for the DRA and MIG tests."""
    name = unique("gpu-a100-mig")
    magnum.create(name, "g4.p2.40g", 1)
    (node,) = nodes_of(core, name)
    yield node.metadata.name
    magnum.delete(name)


def helm(sandbox, *args, check=True):
    return sandbox.cp.helm(*args, check=check)


@pytest.fixture(scope="module")
def dra_driver(sandbox, a100):
    """The DRA-driver-shaped test chart, installed with helm --wait (uninstalled at the end)."""
    t0 = time.monotonic()
    out = helm(
        sandbox,
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        DRA_NS,
        "--create-namespace",
        "--set",
        "gpuResourcesEnabledOverride=true",
        "--wait",
        "--timeout",
        "60s",
    )
    yield {"seconds": time.monotonic() - t0, "stdout": out.stdout}
    helm(sandbox, "uninstall", RELEASE, "--namespace", DRA_NS, "--wait", check=False)


def test_chart_refuses_gpus_without_override(sandbox, tmp_path):
    r = helm(sandbox, "install", "refused", str(CHART), "--namespace", "dra-refused", "--dry-run=server", check=False)
    assert r.returncode != 0
    assert "gpuResourcesEnabledOverride=true" in r.stderr and "KEP 5004" in r.stderr


@pytest.mark.dra_api
def test_helm_install_then_the_simulated_plugin_becomes_ready(sandbox, dra_driver, a100, core, custom):
    from kubernetes import client

    apps = client.AppsV1Api(sandbox.cp.api_client())
    assert dra_driver["seconds"] < 30

    # helm --wait is no promise here: its DaemonSet check wants desired - maxUnavailable pods ready, and the chart's
    # maxUnavailable is 100%, so it may return before the plugin pod is Ready (as CI on 1.32 once saw). Wait for it.
    def ready_daemon_set():
        ds = apps.read_namespaced_daemon_set("dra-driver-nvidia-gpu-kubelet-plugin", DRA_NS)
        return ds if (ds.status.number_ready or 0) >= 1 else None

    ds = wait_for("the DaemonSet controller to count the plugin pod ready", ready_daemon_set)
    st = ds.status
    assert st.observed_generation == ds.metadata.generation
    # (other tests' Nodes in the shared apiserver may count as scheduled, never as ready)
    assert st.desired_number_scheduled == st.updated_number_scheduled >= st.number_ready >= 1
    sandbox.sync()  # one simulator pass after the pod became Ready: the DRA simulator's view of it
    plugin = sandbox.dra.plugins["%s/dra-driver-nvidia-gpu-kubelet-plugin" % DRA_NS]
    assert a100 in plugin["ready"]
    assert not any(n.startswith("digaponc-gpu-004-default-") for n in plugin["nodes"])  # no GPU labels
    # The pod is real: made by the DaemonSet controller, bound by the scheduler, reported Ready by the node
    # simulator (the kubelet's part), and the DaemonSet's status is the DaemonSet controller's count of it.
    (pod,) = plugin_pods(core, a100)
    (owner,) = pod.metadata.owner_references
    assert (owner.kind, owner.uid) == ("DaemonSet", ds.metadata.uid)
    assert pod.status.phase == "Running" and pod.status.pod_ip and pod.status.host_ip
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert conditions["PodScheduled"] == conditions["Ready"] == conditions["ContainersReady"] == "True"
    assert sorted(c.name for c in pod.status.container_statuses) == ["compute-domains", "gpus"]
    assert all(c.ready and c.state.running for c in pod.status.container_statuses)
    # the DaemonSet controller asks for the node by affinity (it never sets nodeName): the scheduler bound it
    terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert [f.values for t in terms for f in t.match_fields or []] == [[a100]]
    # the kubelet's status is written once: further passes find nothing changed
    mark = sandbox.cp.audit.mark()
    for _ in range(3):
        sandbox.sync()
    writes = sandbox.cp.audit.since(mark).writes(user="testbed:node-simulator", resource="pods", namespace=DRA_NS)
    assert [e for e in writes if e["objectRef"]["name"] == pod.metadata.name] == []
    dep = apps.read_namespaced_deployment("dra-driver-nvidia-gpu-controller", DRA_NS)
    assert dep.status.ready_replicas == 1 and dep.status.observed_generation == dep.metadata.generation
    classes = {
        c["metadata"]["name"]: c
        for c in custom.list_cluster_custom_object("resource.k8s.io", dra_version(), "deviceclasses")["items"]
    }
    assert {
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
    } <= set(classes)
    # the chart sets it on v1; the server keeps it where the release has DRAExtendedResource on (1.37, not 1.34)
    from testbed import k8s_releases

    kept = "nvidia.com/gpu" if k8s_releases.release().extended_resource_name else None
    assert classes["gpu.nvidia.com"]["spec"].get("extendedResourceName") == kept


@pytest.mark.dra_api
def test_resourceslices_match_the_flavor(sandbox, dra_driver, a100, custom):
    slices = wait_for("slices of %s" % a100, lambda: slices_of(custom, a100))
    # the compute-domain plugin publishes channel-0/daemon-0 on every node it runs on, NVLink fabric or not
    assert set(slices) == {"gpu.nvidia.com", "compute-domain.nvidia.com"}
    assert device_names(slices["compute-domain.nvidia.com"]) == ["channel-0", "daemon-0"]
    sl = slices["gpu.nvidia.com"]
    assert sl["metadata"]["uid"]  # accepted and stored by the apiserver
    assert sl["spec"]["pool"]["name"] == a100 and sl["spec"]["pool"]["resourceSliceCount"] == 1
    assert device_names(sl) == ["gpu-0", "gpu-1"]
    gpu0 = sl["spec"]["devices"][0]
    assert gpu0["attributes"]["type"] == {"string": "gpu"}
    assert gpu0["attributes"]["productName"] == {"string": "NVIDIA A100-SXM4-40GB"}
    assert {
        "uuid",
        "brand",
        "architecture",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
    } <= set(gpu0["attributes"])
    assert gpu0["capacity"]["memory"]["value"] == "40Gi"  # the server's canonical form of 40960Mi
    assert sl["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert sandbox.errors == [] and sandbox.dra.errors == []  # every write was accepted


def plugin_pods(core, node):
    """The kubelet-plugin pods bound to the node (made by the real DaemonSet controller, bound by the scheduler)."""
    pods = core.list_namespaced_pod(DRA_NS, field_selector="spec.nodeName=%s" % node).items
    return [p for p in pods if any(o.kind == "DaemonSet" for o in p.metadata.owner_references or [])]


def test_gpu_taint_without_toleration_unschedules_the_plugin(sandbox, dra_driver, a100, core, custom):
    """The real kubelet plugin tolerates only nvidia.com/gpu: a node tainted otherwise gets no plugin
    pod and so no ResourceSlices, until the chart's kubeletPlugin.tolerations include the taint."""
    (running,) = plugin_pods(core, a100)
    taint = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
    core.patch_node(a100, {"spec": {"taints": [taint]}})
    try:
        # A NoSchedule taint evicts nothing (the DaemonSet controller lets a running daemon pod continue): the
        # plugin restarts (e.g. a node reboot), and the real DaemonSet controller makes no new pod for the node.
        core.delete_namespaced_pod(running.metadata.name, DRA_NS)
        wait_for("the plugin pod to be gone", lambda: plugin_pods(core, a100) == [])
        wait_for("slices of the tainted node to go", lambda: slices_of(custom, a100) == {})
        assert a100 not in sandbox.dra.plugins["%s/dra-driver-nvidia-gpu-kubelet-plugin" % DRA_NS]["nodes"]
        helm(
            sandbox,
            "upgrade",
            RELEASE,
            str(CHART),
            "--namespace",
            DRA_NS,
            "--reuse-values",
            "--wait",
            "--timeout",
            "60s",
            "--set",
            "kubeletPlugin.tolerations[0].key=nvidia.com/gpu",
            "--set",
            "kubeletPlugin.tolerations[0].operator=Exists",
            "--set",
            "kubeletPlugin.tolerations[1].key=node-role.kubernetes.io/gpu",
            "--set",
            "kubeletPlugin.tolerations[1].operator=Exists",
        )
        wait_for("slices to come back", lambda: slices_of(custom, a100))
        (pod,) = plugin_pods(core, a100)  # a new pod, placed by the scheduler on the tolerated taint
        assert pod.metadata.uid != running.metadata.uid and pod.status.phase == "Running"
    finally:
        core.patch_node(a100, {"spec": {"taints": None}})


def write_mig_config(core, configs):
    from kubernetes.client.rest import ApiException

    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": MIG_CM, "namespace": MIG_NS},
        "data": {"config.yaml": yaml.safe_dump(mig_parted_config(configs), sort_keys=False)},
    }
    try:
        core.create_namespaced_config_map(MIG_NS, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        core.replace_namespaced_config_map(MIG_CM, MIG_NS, body)


def label(sandbox, core, node, value, timeout=10.0):
    """Set nvidia.com/mig.config and return the states the MIG manager went through for it, up to a
    final one (its own record: a label read could still show the previous value's final state)."""
    mark = len(sandbox.mig.state(node)["history"])
    core.patch_node(node, {"metadata": {"labels": {"nvidia.com/mig.config": value}}})

    def final():
        seen = [st for cfg, st, _msg in sandbox.mig.state(node)["history"][mark:] if cfg == value]
        return seen if seen and seen[-1] in ("success", "failed") else None

    seen = wait_for("a final MIG state for %s on %s" % (value, node), final, timeout=timeout)
    assert state_of(core, node) == seen[-1]  # and the label on the Node says so
    return seen


def state_of(core, node):
    return (core.read_node(node).metadata.labels or {}).get("nvidia.com/mig.config.state")


@pytest.mark.dra_api
def test_mig_config_label_changes_the_mig_devices(sandbox, dra_driver, a100, core, custom):
    write_mig_config(core, {"gpupool-a100": [("all", CERN_LAYOUT)]})
    before = wait_for("slices", lambda: slices_of(custom, a100))["gpu.nvidia.com"]
    assert label(sandbox, core, a100, "gpupool-a100") == ["pending", "success"]
    assert sandbox.mig.layout(a100) == {0: CERN_LAYOUT, 1: CERN_LAYOUT}
    sl = slices_of(custom, a100)["gpu.nvidia.com"]  # republished before the state said success
    assert device_names(sl) == sorted(
        "gpu-%d-mig-%s" % (i, d) for i in (0, 1) for d in ("3g20gb-9-4", "2g10gb-14-0", "2g10gb-14-2")
    )
    assert sl["spec"]["pool"]["generation"] == before["spec"]["pool"]["generation"] + 1
    mig = next(d for d in sl["spec"]["devices"] if d["name"] == "gpu-0-mig-3g20gb-9-4")
    assert mig["attributes"]["type"] == {"string": "mig"} and mig["attributes"]["profile"] == {"string": "3g.20gb"}
    assert {"memorySlice%d" % i for i in range(4, 8)} <= set(mig["capacity"])

    assert label(sandbox, core, a100, "all-disabled") == ["pending", "success"]  # mig-parted's built-in name
    assert device_names(slices_of(custom, a100)["gpu.nvidia.com"]) == ["gpu-0", "gpu-1"]
    assert sandbox.mig.layout(a100) == {0: None, 1: None}


def test_mig_config_failures(sandbox, dra_driver, a100, core, custom):
    write_mig_config(core, {"gpupool-a100": [("all", CERN_LAYOUT)], "too-big": [("all", {"7g.40gb": 1, "1g.5gb": 1})]})
    # a valid file, but the layout does not fit an A100-40GB: found out while applying
    assert label(sandbox, core, a100, "too-big") == ["pending", "failed"]
    # the simulated GPU (test bed tables, not the collection's planner) says why
    assert "A100-40GB refuses MIG layout" in sandbox.mig.state(a100)["message"]
    assert "compute slices" in sandbox.mig.state(a100)["message"]
    assert device_names(slices_of(custom, a100)["gpu.nvidia.com"]) == ["gpu-0", "gpu-1"]

    assert label(sandbox, core, a100, "no-such-config") == ["failed"]  # refused before any change

    sandbox.mig.inject_fault(node=a100)
    assert label(sandbox, core, a100, "gpupool-a100") == ["pending", "failed"]
    assert "injected" in sandbox.mig.state(a100)["message"]
    assert sandbox.mig.layout(a100) == {0: None, 1: None}
    assert label(sandbox, core, a100, "all-disabled") == ["success"]  # already so: "assert" passes at once


@pytest.mark.dra_api
def test_nvlink_flavor_gets_a_clique_and_compute_domain_devices(sandbox, dra_driver, magnum, core, custom):
    name = unique("gpu-gb200")
    magnum.create(name, "g6.gb200x4", 2)
    nodes = nodes_of(core, name)
    assert len(nodes) == 2
    cliques = {n.metadata.labels["nvidia.com/gpu.clique"] for n in nodes}
    assert len(cliques) == 1  # one NVLink domain per nodegroup
    cluster_uuid, clique = cliques.pop().split(".")
    assert uuid.UUID(cluster_uuid) and clique == "1"
    assert {n.metadata.labels["kubernetes.io/arch"] for n in nodes} == {"arm64"}  # Grace CPUs
    for n in nodes:
        slices = wait_for(
            "slices of %s" % n.metadata.name,
            lambda: len(slices_of(custom, n.metadata.name)) == 2 and slices_of(custom, n.metadata.name),
        )
        assert device_names(slices["gpu.nvidia.com"]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        assert device_names(slices["compute-domain.nvidia.com"]) == ["channel-0", "daemon-0"]
    magnum.delete(name)
    assert nodes_of(core, name) == []
    for n in nodes:  # the Node owned its slices: gone with it
        wait_for("slices of the deleted %s to go" % n.metadata.name, lambda: slices_of(custom, n.metadata.name) == {})


@pytest.mark.dra_api
def test_uninstall_deletes_the_slices(sandbox, dra_driver, a100, custom):
    assert slices_of(custom, a100)
    helm(sandbox, "uninstall", RELEASE, "--namespace", DRA_NS, "--wait")
    wait_for("slices to go with the DaemonSet", lambda: slices_of(custom, a100) == {})
    assert (
        custom.list_cluster_custom_object(
            "resource.k8s.io", dra_version(), "resourceslices", label_selector="testbed.gpupool.io/simulated=true"
        )["items"]
        == []
    )


# ---- one command: up / status / down ----------------------------------------------------------------
def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not a running process
        return Path("/proc/%d/stat" % pid).read_text().split()[2] != "Z"
    except OSError:
        return False


def test_cli_up_status_down_leaves_nothing(tmp_path, monkeypatch):
    env = dict(
        os.environ,
        GPUPOOL_STATE=str(tmp_path / "state"),
        PYTHONPATH=os.pathsep.join([str(ROOT / ".build" / "collections"), str(ROOT)]),
    )
    inventory = tmp_path / "inventory"
    cli = [sys.executable, "-m", "testbed.sandbox"]
    opts = ["--inventory", str(inventory), "--magnum-delay", "0.2", "--mig-delay", "0.3"]

    def run(*args, check=True):
        return subprocess.run(
            cli + list(args), env=env, cwd=ROOT, capture_output=True, text=True, timeout=180, check=check
        )

    up = run("up", *opts)
    try:
        assert "export KUBECONFIG=" in up.stdout
        assert "starting the control plane" in up.stderr  # progress is printed while it starts
        status = json.loads(run("status").stdout)
        assert status["up"] is True
        pids = [status["pid"]] + list(status["controlplane_pids"].values())
        assert all(_alive(p) for p in pids)
        # the inventory mirrors the example, pointed at the sandbox
        host_vars = yaml.safe_load((inventory / "host_vars" / "cern-gpu" / "gpupool.yml").read_text())
        cluster = host_vars["gpupool_cluster"]
        assert cluster["kubeconfig"] == status["kubeconfig"]
        assert cluster["magnum"]["cluster"] == "digaponc-gpu-004"
        assert cluster["magnum"]["cloud"]["auth"]["auth_url"].startswith(status["magnum_url"])
        example = yaml.safe_load((ROOT / "inventories/example/host_vars/cern-gpu/gpupool.yml").read_text())
        assert cluster["pools"] == example["gpupool_cluster"]["pools"]
        assert yaml.safe_load((inventory / "hosts.yml").read_text()) == yaml.safe_load(
            (ROOT / "inventories/example/hosts.yml").read_text()
        )
        # the real clients reach it: openstacksdk through the clouds.yaml, kubectl through the kubeconfig
        import openstack

        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", status["clouds_yaml"])
        conn = openstack.connect(cloud=status["cloud_name"])
        r = conn.container_infrastructure_management.get("/clusters", headers=MV)
        assert [c["name"] for c in r.json()["clusters"]] == ["digaponc-gpu-004"]
        from testbed.controlplane import ControlPlane

        names = ControlPlane.attach(status["controlplane_workdir"]).kubectl("get", "nodes", "-o", "name").stdout.split()
        assert len(names) == 2 and all(n.startswith("node/digaponc-gpu-004-default-") for n in names)
        assert "already up" in run("up", *opts).stdout
    finally:
        down = run("down", check=False)
    assert down.returncode == 0, down.stderr
    assert "sandbox stopped" in down.stdout
    wait_for("sandbox processes to exit", lambda: not any(_alive(p) for p in pids), timeout=30)
    assert not inventory.exists()
    assert not Path(status["controlplane_workdir"]).exists()
    assert run("status", check=False).returncode == 1
