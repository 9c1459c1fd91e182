"""The DRA driver SIMULATOR follows the gates it is given, the way the real driver's binaries do.

Real parts: kube-apiserver (validates every slice and claim status the simulator writes), helm, the
simulation chart packaged as 0.4.1 and 0.5.1 (testbed/chart_repo.py). Simulated: the driver itself
(testbed/dra_simulator.py with its own rule table testbed/dra_driver_rules.py) - what these tests
check is that it fails where the real driver fails, so the collection's tests can fail for real.
"""

from __future__ import annotations

import time
import uuid

import pytest

from testbed import dra_dynamic_mig, mig_tables

RELEASE = "dra-driver-nvidia-gpu"
PLUGIN = RELEASE + "-kubelet-plugin"
CERN_LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
SLICES = ("resource.k8s.io", "v1", "resourceslices")


def wait_for(what, fn, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def custom(sandbox):
    from kubernetes import client

    return client.CustomObjectsApi(sandbox.cp.api_client())


@pytest.fixture(scope="module")
def node(sandbox):
    """One registered node with 2 x A100-40GB (no Magnum needed)."""
    name = "sim-gates-%s" % uuid.uuid4().hex[:6]
    sandbox.nodes.register_node(name, "g4.p2.40g")
    yield name
    sandbox.nodes.remove_node(name)


@pytest.fixture
def driver(sandbox, dra_chart_repo):
    """install(version, *--set) the simulation chart into a fresh namespace (no --wait); uninstalled after."""
    ns = "sim-%s" % uuid.uuid4().hex[:6]

    def install(version, *sets):
        args = [
            "upgrade",
            "--install",
            RELEASE,
            str(dra_chart_repo.archive(version)),
            "--namespace",
            ns,
            "--create-namespace",
            "--reset-values",
            "--set",
            "gpuResourcesEnabledOverride=true",
        ]
        for s in sets:
            args += ["--set", s]
        sandbox.cp.helm(*args)
        return ns

    install.namespace = ns
    yield install
    sandbox.cp.helm("uninstall", RELEASE, "--namespace", ns, "--wait", check=False)
    sandbox.cp.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def slices(custom, node):
    items = custom.list_cluster_custom_object(*SLICES, field_selector="spec.nodeName=%s" % node)["items"]
    return [s for s in items if s["spec"]["driver"] == "gpu.nvidia.com"]


def crashing_pod(sandbox, ns, node):
    """The plugin pod on the node once its containers are reported in CrashLoopBackOff (None before)."""
    from kubernetes import client

    pods = client.CoreV1Api(sandbox.cp.api_client()).list_namespaced_pod(ns, field_selector="spec.nodeName=" + node)
    for pod in pods.items:
        waiting = [c.state.waiting for c in pod.status.container_statuses or [] if c.state.waiting]
        if waiting and all(w.reason == "CrashLoopBackOff" for w in waiting):
            return pod
    return None


def controller_ready(sandbox, ns):
    out = sandbox.cp.kubectl(
        "get", "deployment", RELEASE + "-controller", "-n", ns, "-o", "jsonpath={.status.readyReplicas}", check=False
    ).stdout
    return out.strip() == "1"


def test_an_unknown_gate_stops_the_0_4_driver(sandbox, driver, node, custom):
    ns = driver("0.4.1", "featureGates.HostManagedIMEXDaemon=true")

    # the simulator knows the refused gate from the DaemonSet at once, and the node once the real scheduler has bound
    # the plugin pod there (CI once read the state in between): wait for both
    def crash_on_node():
        state = sandbox.dra.plugins.get("%s/%s" % (ns, PLUGIN)) or {}
        return state if state.get("error") and node in state.get("nodes", ()) else None

    state = wait_for("the crash to be seen on %s" % node, crash_on_node)
    assert "unrecognized feature gate: HostManagedIMEXDaemon" in state["error"]
    assert state["ready"] == []
    # The real pod (DaemonSet controller, scheduler) runs and crashes, as the node simulator (kubelet) reports it
    pod = wait_for("the plugin pod's crash loop", lambda: crashing_pod(sandbox, ns, node))
    ready = {c.type: c.status for c in pod.status.conditions}
    assert pod.status.phase == "Running" and ready["Ready"] == "False"
    for container in pod.status.container_statuses:
        assert "unrecognized feature gate: HostManagedIMEXDaemon" in container.state.waiting.message
    for _ in range(3):
        sandbox.sync()
    assert slices(custom, node) == [] and not controller_ready(sandbox, ns)
    # the same gate is known to 0.5: the driver starts, publishes and the controller becomes ready
    driver("0.5.1", "featureGates.HostManagedIMEXDaemon=true")
    wait_for("slices on 0.5", lambda: slices(custom, node))
    assert sandbox.dra.plugins["%s/%s" % (ns, PLUGIN)]["error"] is None
    wait_for("the controller to be ready", lambda: controller_ready(sandbox, ns))


def test_validate_feature_gates_conflicts_stop_the_driver(sandbox, driver, node):
    ns = driver("0.5.1", "featureGates.DynamicMIG=true", "featureGates.MPSSupport=true")
    error = wait_for("the crash", lambda: (sandbox.dra.plugins.get("%s/%s" % (ns, PLUGIN)) or {}).get("error"))
    assert "DynamicMIG is currently mutually exclusive with MPSSupport" in error
    driver("0.5.1", "featureGates.IMEXDaemonsWithDNSNames=false")  # ComputeDomainCliques (default on) needs it
    error = wait_for(
        "the next crash",
        lambda: (
            "requires" in str((sandbox.dra.plugins.get("%s/%s" % (ns, PLUGIN)) or {}).get("error"))
            and sandbox.dra.plugins["%s/%s" % (ns, PLUGIN)]["error"]
        ),
    )
    assert "ComputeDomainCliques requires IMEXDaemonsWithDNSNames" in error


def _claim(sandbox, ns, name, node, device, strategy):
    parameters = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": {"strategy": strategy}}
    opaque = {"driver": "gpu.nvidia.com", "parameters": parameters}
    from kubernetes import client

    custom = client.CustomObjectsApi(sandbox.cp.api_client())
    custom.create_namespaced_custom_object(
        "resource.k8s.io",
        "v1",
        ns,
        "resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                    "config": [{"requests": ["gpu"], "opaque": opaque}],
                }
            },
        },
    )
    # the test plays the scheduler: the allocation (with the claim's config copied in, as the scheduler does)
    custom.patch_namespaced_custom_object_status(
        "resource.k8s.io",
        "v1",
        ns,
        "resourceclaims",
        name,
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": device}],
                        "config": [{"source": "FromClaim", "requests": ["gpu"], "opaque": opaque}],
                    },
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                        ]
                    },
                }
            }
        },
    )


def _ready(custom, ns, name):
    devices = (
        custom.get_namespaced_custom_object("resource.k8s.io", "v1", ns, "resourceclaims", name).get("status") or {}
    ).get("devices") or []
    return devices and devices[0]["conditions"][0]


def test_sharing_claims_fail_to_prepare_without_their_gate(sandbox, driver, node, custom):
    ns = driver("0.5.1")
    wait_for("slices", lambda: slices(custom, node))
    _claim(sandbox, ns, "ts", node, "gpu-0", "TimeSlicing")
    _claim(sandbox, ns, "mps", node, "gpu-1", "MPS")
    ts = wait_for("the time-slicing claim to be prepared", lambda: _ready(custom, ns, "ts"))
    assert ts["status"] == "False" and ts["reason"] == "PrepareFailed"
    assert ts["message"] == (
        '"TimeSlicing" is selected as the GPU sharing strategy, but the "TimeSlicingSettings" '
        "feature gate is not enabled"
    )
    mps = wait_for("the MPS claim", lambda: _ready(custom, ns, "mps"))
    assert mps["status"] == "False" and '"MPSSupport" feature gate is not enabled' in mps["message"]
    driver("0.5.1", "featureGates.TimeSlicingSettings=true")  # the real fix: the gate in the chart values
    wait_for("the time-slicing claim to prepare", lambda: (_ready(custom, ns, "ts") or {}).get("status") == "True")
    assert _ready(custom, ns, "mps")["status"] == "False"  # MPS still off
    assert sandbox.dra.prepared["%s/ts" % ns] == [
        {"device": "gpu-0", "ready": True, "message": "prepared by the DRA driver simulator"}
    ]


def test_dynamic_mig_wipes_static_layouts_and_publishes_every_placement(sandbox, driver, node, custom):
    sandbox.inventory.set_layouts(node, {0: CERN_LAYOUT, 1: CERN_LAYOUT})
    driver("0.5.1", "featureGates.DynamicMIG=true")
    got = wait_for("partitionable slices", lambda: len(slices(custom, node)) == 3 and slices(custom, node))
    # Ampere: MIG mode stays on (a change needs a reset), the instances it did not create are gone
    assert sandbox.inventory.layouts(node) == {0: {}, 1: {}}
    by_name = {s["metadata"]["name"]: s for s in got}
    counters = by_name["%s-gpu.nvidia.com-counters" % node]["spec"]
    assert [c["name"] for c in counters["sharedCounters"]] == ["gpu-0-counter-set", "gpu-1-counter-set"]
    assert counters["pool"]["resourceSliceCount"] == 3 and "devices" not in counters
    gpu0 = by_name["%s-gpu.nvidia.com-gpu-0" % node]["spec"]["devices"]
    names = {d["name"] for d in gpu0}
    assert "gpu-0" not in names  # Ampere with MIG on: no full GPU
    # every profile at every placement start (the test bed's A100-40GB table)
    table = mig_tables.get("A100-40GB")
    assert len(gpu0) == sum(len(p.starts) for p in table.mig.profiles) >= 25
    assert {"gpu-0-mig-1g5gb-19-6", "gpu-0-mig-3g20gb-9-4", "gpu-0-mig-7g40gb-0-0"} <= names
    three = next(d for d in gpu0 if d["name"] == "gpu-0-mig-3g20gb-9-4")
    assert "uuid" not in three["attributes"] and not any(k.startswith("memorySlice") for k in three["capacity"])
    used = three["consumesCounters"][0]
    assert used["counterSet"] == "gpu-0-counter-set"
    assert {k for k in used["counters"] if k.startswith("memory-slice-")} == {
        "memory-slice-%d" % i for i in range(4, 8)
    }


def test_dynamic_mig_layout_rules():
    """Hopper turns MIG off at the plugin's start-up; a GPU without MIG publishes nothing."""
    get_gpu = mig_tables.get
    assert dra_dynamic_mig.wiped_layouts(get_gpu("H100-80GB"), {0: {"7g.80gb": 1}, 1: None}) == {0: None, 1: None}
    assert dra_dynamic_mig.node_slices("n", get_gpu("T4"), 1, {}) == []
    h100 = dra_dynamic_mig.gpu_devices("n", get_gpu("H100-80GB"), 0, mig_on=False)
    assert h100[0]["name"] == "gpu-0" and h100[0]["consumesCounters"][0]["counterSet"] == "gpu-0-counter-set"


def test_dynamic_mig_slice_shape_follows_the_server_release():
    """driver.go shouldUseSplitResourceSlices: combined before 1.35 (each GPU's counter set beside its devices), the
    counters in a slice of their own from 1.35; an unreadable version counts as new."""
    h100 = mig_tables.get("H100-80GB")
    assert [dra_dynamic_mig.split_counters(v) for v in ((1, 34), (1, 35), (1, 36), None)] == [False, True, True, True]
    combined = dra_dynamic_mig.node_slices("n", h100, 2, {}, split=False)
    assert [s["metadata"]["name"] for s in combined] == ["n-gpu.nvidia.com-gpu-0", "n-gpu.nvidia.com-gpu-1"]
    for index, sl in enumerate(combined):
        spec = sl["spec"]
        assert spec["pool"]["resourceSliceCount"] == 2
        assert [c["name"] for c in spec["sharedCounters"]] == ["gpu-%d-counter-set" % index]
        assert {c["counterSet"] for d in spec["devices"] for c in d["consumesCounters"]} == {
            c["name"] for c in spec["sharedCounters"]
        }
    split = dra_dynamic_mig.node_slices("n", h100, 2, {})
    assert [s["spec"]["pool"]["resourceSliceCount"] for s in split] == [3, 3, 3]
    assert [bool(s["spec"].get("sharedCounters")) for s in split] == [True, False, False]
    assert [bool(s["spec"].get("devices")) for s in split] == [False, True, True]
    # the same devices either way
    assert [d for s in combined for d in s["spec"]["devices"]] == [
        d for s in split for d in s["spec"].get("devices", [])
    ]
