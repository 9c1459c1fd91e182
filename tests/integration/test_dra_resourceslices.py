"""The simulators' pure parts: flavor table, GFD labels, ResourceSlice builders, mig-parted parsing,
DaemonSet scheduling predicates, the test chart's CRD - and the apiserver's verdict on every slice."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import mig_parted_config
from testbed import dra_resourceslices as rs
from testbed import gpu_flavors, mig_tables
from testbed.dra_simulator import feature_gates, schedules_on
from testbed.mig_manager_simulator import ConfigError, parse_config, resolve, select
from testbed.mig_tables import LayoutRefused
from testbed.node_simulator import clique_id, node_object, node_status

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu"
A100 = mig_tables.get("A100-40GB")
CERN = {"3g.20gb": 1, "2g.10gb": 2}
GPU_FLAVORS = sorted(f for f, (gpu, n) in gpu_flavors.FLAVORS.items() if gpu)


# ---- flavors and GFD/NFD labels ----------------------------------------------------------------------
def test_cern_flavors_as_documented():
    assert {f: gpu_flavors.FLAVORS[f] for f in ("g2.5xlarge", "g4.p1.40g", "g4.p2.40g", "g4.p4.40g")} == {
        "g2.5xlarge": ("T4", 1),
        "g4.p1.40g": ("A100-40GB", 1),
        "g4.p2.40g": ("A100-40GB", 2),
        "g4.p4.40g": ("A100-40GB", 4),
    }
    assert gpu_flavors.flavor("g4.p2.40g")[3:5] == (32, 240 * 1024)  # vCPUs, RAM MiB (webinar table)
    assert {gpu_flavors.FLAVORS[f][0] for f in ("g5.h100x4", "g5.h200x8", "g6.gb200x4")} == {
        "H100-80GB",
        "H200-141GB",
        "GB200",
    }


def test_gfd_labels():
    labels = gpu_flavors.gfd_labels("g4.p4.40g")
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert labels["nvidia.com/gpu.count"] == "4" and labels["nvidia.com/gpu.memory"] == "40960"
    assert labels["nvidia.com/mig.capable"] == "true" and labels["nvidia.com/gpu.family"] == "ampere"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert gpu_flavors.gfd_labels("g2.5xlarge")["nvidia.com/mig.capable"] == "false"
    assert "nvidia.com/gpu.clique" not in gpu_flavors.gfd_labels("g4.p4.40g", clique="x.1")
    assert gpu_flavors.gfd_labels("g6.gb200x4", clique="x.1")["nvidia.com/gpu.clique"] == "x.1"
    assert gpu_flavors.gfd_labels("m2.large") == {} and gpu_flavors.gfd_labels("no-such") == {}


def test_gpus_from_labels():
    assert gpu_flavors.gpus_from_labels({"node.kubernetes.io/instance-type": "g5.h200x8"})[:2] == (
        mig_tables.get("H200-141GB"),
        8,
    )
    # no known flavor: GFD's product and count
    gpu, count, flavor = gpu_flavors.gpus_from_labels(
        {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "2"}
    )
    assert (gpu.key, count, flavor) == ("H100-80GB", 2, None)
    assert gpu_flavors.gpus_from_labels({"nvidia.com/gpu.present": "true"}) == (None, 0, None)


def test_clique_ids_group_18_nodes_per_nvlink_domain():
    a = clique_id("c", "ng", "x-node-0")
    assert a == clique_id("c", "ng", "x-node-17") != clique_id("c", "ng", "x-node-18")
    assert a.split(".")[0] != clique_id("c", "other-ng", "x-node-0").split(".")[0]
    assert a.endswith(".1")


# ---- ResourceSlice builders ------------------------------------------------------------------------------
def test_full_gpus():
    sl, _compute_domains = rs.resource_slices("n1", "g4.p2.40g", owner={"name": "n1", "uid": "u-1"})
    assert sl["spec"]["driver"] == "gpu.nvidia.com" and sl["spec"]["nodeName"] == "n1"
    assert sl["spec"]["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in sl["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert sl["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    attrs = sl["spec"]["devices"][0]["attributes"]
    assert attrs["cudaComputeCapability"] == {"version": "8.0.0"}
    assert attrs["driverVersion"] == {"version": "570.158.1"}
    assert attrs["uuid"]["string"].startswith("GPU-")
    assert rs.resource_slices("n1", "m2.large") == [] and rs.resource_slices("n1", "no-such") == []


def test_mig_devices_are_named_like_the_driver_names_them():
    devs = rs.gpu_devices("n1", "g4.p2.40g", {0: CERN})
    names = [d["name"] for d in devs]
    assert names == ["gpu-0-mig-2g10gb-14-0", "gpu-0-mig-2g10gb-14-2", "gpu-0-mig-3g20gb-9-4", "gpu-1"]
    big = devs[2]
    assert big["attributes"]["parentUUID"] == {"string": rs.gpu_uuid("n1", 0)}
    assert big["attributes"]["profile"] == {"string": "3g.20gb"} and big["attributes"]["type"] == {"string": "mig"}
    slices = sorted(k for k in big["capacity"] if k.startswith("memorySlice"))
    assert slices == ["memorySlice%d" % i for i in range(4, 8)]
    # rfc1123 as the driver does it: '+' and every other character outside [a-z0-9-.] become '-'
    assert rs.mig_device_name(0, "1g.10gb+me", 20, 0) == "gpu-0-mig-1g10gb-me-20-0"
    assert rs.mig_device_name(3, "1g.24gb+me.all", 65, 9) == "gpu-3-mig-1g24gb-meall-65-9"
    assert rs.mig_device_name(1, "2g.48gb-me", 66, 6) == "gpu-1-mig-2g48gb-me-66-6"


def test_device_names_use_the_minor_not_the_index():
    """gpu-<N> is /dev/nvidiaN's minor (driver issue #563); attributes still belong to the NVML index."""
    a100 = mig_tables.get("A100-40GB")
    devs = rs.devices("n1", a100, 2, {0: None, 1: {"7g.40gb": 1}}, minors=[3, 1])
    assert [d["name"] for d in devs] == ["gpu-3", "gpu-1-mig-7g40gb-0-0"]
    assert devs[0]["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": rs.pci_bus_id(0)}
    assert devs[1]["attributes"]["parentUUID"] == {"string": rs.gpu_uuid("n1", 1)}


def test_mig_capacities_are_the_tables_lgip_numbers():
    (dev,) = rs.devices("n1", mig_tables.get("H200-141GB"), 1, {0: {"1g.18gb+me": 1}})
    cap = {k: v["value"] for k, v in dev["capacity"].items()}
    assert dev["name"] == "gpu-0-mig-1g18gb-me-20-0"
    assert (cap["memory"], cap["multiprocessors"]) == ("16384Mi", "16")  # 16.00 GiB, 16 SMs (mig-parted #120)
    assert [cap[k] for k in ("copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")] == [
        "1",
        "1",
        "0",
        "1",
        "1",
    ]
    rtx = rs.devices("n1", mig_tables.get("RTX-PRO-6000"), 1, {0: {"2g.48gb": 1, "1g.24gb": 2}})
    assert [d["name"] for d in rtx] == ["gpu-0-mig-2g48gb-5-0", "gpu-0-mig-1g24gb-14-6", "gpu-0-mig-1g24gb-14-9"]
    assert sorted(k for k in rtx[0]["capacity"] if k.startswith("memorySlice")) == sorted(
        "memorySlice%d" % i for i in range(6)
    )


def test_mig_on_without_instances_publishes_nothing_for_that_gpu():
    assert [d["name"] for d in rs.gpu_devices("n1", "g4.p2.40g", {0: {}, 1: None})] == ["gpu-1"]


def test_infeasible_layout_raises():
    with pytest.raises(LayoutRefused):
        rs.gpu_devices("n1", "g4.p1.40g", {0: {"7g.40gb": 1, "1g.5gb": 1}})
    with pytest.raises(LayoutRefused):
        rs.gpu_devices("n1", "g2.5xlarge", {0: {"1g.5gb": 1}})
    with pytest.raises(LayoutRefused, match="jpeg"):  # A30: one JPEG/OFA unit for both +me instances
        rs.devices("n1", mig_tables.get("A30"), 1, {0: {"1g.6gb+me": 1, "2g.12gb+me": 1}})


@pytest.mark.parametrize("flavor", ["g6.gb200x4", "g4.p2.40g"])
def test_every_gpu_node_gets_a_compute_domain_slice(flavor):
    """The CD plugin publishes channel-0 and daemon-0 wherever it runs, NVLink fabric or not."""
    gpu_slice, cd = rs.resource_slices("n", flavor)
    assert gpu_slice["spec"]["driver"] == "gpu.nvidia.com"
    assert cd["spec"]["driver"] == "compute-domain.nvidia.com"
    assert [(d["name"], d["attributes"]["type"]["string"]) for d in cd["spec"]["devices"]] == [
        ("channel-0", "channel"),
        ("daemon-0", "daemon"),
    ]
    # only the containers that run publish: a chart with computeDomains disabled has no CD slice
    (only,) = rs.node_slices("gb", mig_tables.get("GB200"), 4, drivers=(rs.GPU_DRIVER,))
    assert only["spec"]["driver"] == "gpu.nvidia.com"


def _max_layouts(flavor):
    """The largest layouts the test bed's tables accept (each profile at its max, greedily)."""
    gpu, count = gpu_flavors.gpus_of(flavor)
    if not gpu.mig:
        return None
    options = []
    for first in gpu.mig.profiles:
        layout = {first.name: first.max_instances}
        for prof in gpu.mig.profiles:
            while mig_tables.feasible(gpu, dict(layout, **{prof.name: layout.get(prof.name, 0) + 1})):
                layout[prof.name] = layout.get(prof.name, 0) + 1
        if mig_tables.feasible(gpu, layout):
            options.append(layout)
    return {i: options[i % len(options)] for i in range(count)}


@pytest.mark.parametrize("flavor", GPU_FLAVORS)
def test_api_limits_per_device(flavor):
    """resource.k8s.io/v1: at most 32 attributes+capacities per device, 128 devices per slice."""
    for layouts in (None, _max_layouts(flavor)):
        for sl in rs.resource_slices("n", flavor, layouts):
            assert len(sl["spec"]["devices"]) <= 128
            for dev in sl["spec"]["devices"]:
                assert len(dev.get("attributes", {})) + len(dev.get("capacity", {})) <= 32


# ---- mig-parted config -----------------------------------------------------------------------------------
def test_parse_the_collections_config():
    text = yaml.safe_dump(mig_parted_config({"gpupool-a100": [("all", CERN)], "split": [([0], CERN), ([1], None)]}))
    configs = parse_config(text)
    assert select(configs, "all-disabled") == [{"devices": "all", "mig-enabled": False}]
    assert resolve(select(configs, "gpupool-a100"), A100, 2, {}) == {0: CERN, 1: CERN}
    assert resolve(select(configs, "split"), A100, 2, {}) == {0: CERN, 1: None}
    # a GPU no entry selects keeps its layout; an index the node lacks is ignored
    assert resolve([{"devices": [1, 5], "mig-enabled": False}], A100, 2, {0: CERN}) == {0: CERN, 1: None}
    # later entries win
    assert resolve(
        [{"devices": "all", "mig-enabled": True, "mig-devices": CERN}, {"devices": [0], "mig-enabled": False}],
        A100,
        2,
        {},
    ) == {0: None, 1: CERN}
    # a device filter for another GPU model selects nothing
    assert resolve(
        [{"devices": "all", "mig-enabled": True, "mig-devices": CERN, "device-filter": "0x233010DE"}], A100, 1, {}
    ) == {0: None}
    assert resolve([{"devices": "all", "mig-enabled": True, "mig-devices": {}}], A100, 1, {}) == {0: {}}
    with pytest.raises(ConfigError, match="not in the mig-parted config"):
        select(configs, "nope")


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "version"),
        ("version: v1\nmig-configs: {}", "non-empty"),
        ("version: v1\nextra: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "top-level"),
        ("version: v1\nmig-configs: {a: [{devices: all}]}", "mig-enabled is required"),
        ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}", "mig-devices is required"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {1g.5gb: 1}}]}",
            "must be empty",
        ),
        ("version: v1\nmig-configs: {a: [{devices: some, mig-enabled: false}]}", "devices must be"),
        ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, colour: red}]}", "unknown field"),
        (": :", "not YAML"),
    ],
)
def test_invalid_mig_parted_files(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_mig_on_a_gpu_without_mig_is_infeasible():
    with pytest.raises(LayoutRefused, match="does not support MIG"):
        resolve([{"devices": "all", "mig-enabled": True, "mig-devices": {}}], mig_tables.get("T4"), 1, {})


# ---- DaemonSet scheduling -------------------------------------------------------------------------------
def _chart_pod_spec(**values):
    data = yaml.safe_load((CHART / "values.yaml").read_text())["kubeletPlugin"]
    data.update(values)
    return {"affinity": data["affinity"], "tolerations": data["tolerations"], "nodeSelector": data["nodeSelector"]}


def _node(labels, taints=()):
    return {"metadata": {"name": "n", "labels": labels}, "spec": {"taints": list(taints)}}


def test_plugin_affinity_needs_nfd_or_gpu_operator_labels():
    spec = _chart_pod_spec()
    assert schedules_on(spec, _node({"feature.node.kubernetes.io/pci-10de.present": "true"}))
    assert schedules_on(spec, _node({"nvidia.com/gpu.present": "true"}))
    assert not schedules_on(spec, _node({"nvidia.com/gpu.present": "false"}))
    assert not schedules_on(spec, _node({}))
    assert not schedules_on(dict(spec, nodeSelector={"pool": "a"}), _node({"nvidia.com/gpu.present": "true"}))


def test_taints_need_tolerations():
    gpu = {"nvidia.com/gpu.present": "true"}
    spec = _chart_pod_spec()
    assert schedules_on(spec, _node(gpu, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]))
    assert schedules_on(spec, _node(gpu, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]))
    assert schedules_on(spec, _node(gpu, [{"key": "x", "effect": "PreferNoSchedule"}]))
    tainted = _node(gpu, [{"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}])
    assert not schedules_on(spec, tainted)
    assert schedules_on(dict(spec, tolerations=[{"operator": "Exists"}]), tainted)
    assert schedules_on(
        dict(
            spec,
            tolerations=[
                {"key": "node-role.kubernetes.io/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
            ],
        ),
        tainted,
    )
    # the apiserver's not-ready taint on a new Node: DaemonSet pods do not tolerate NoSchedule
    assert not schedules_on(spec, _node(gpu, [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]))


def test_feature_gates_env():
    ds = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "gpus",
                            "env": [{"name": "FEATURE_GATES", "value": "DynamicMIG=true,MPSSupport=false,"}],
                        }
                    ]
                }
            }
        }
    }
    assert feature_gates(ds) == {"DynamicMIG": True, "MPSSupport": False}


# ---- the test chart ------------------------------------------------------------------------------------------
def test_chart_crd_is_the_integration_manifest():
    shared = ROOT / "tests" / "integration" / "manifests" / "computedomain-crd.yaml"
    assert (CHART / "crds" / "resource.nvidia.com_computedomains.yaml").read_text() == shared.read_text()


def test_chart_says_it_is_a_simulation():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["name"], chart["version"], chart["kubeVersion"]) == ("dra-driver-nvidia-gpu", "0.5.1", ">=1.32.0-0")
    assert "SIMULATION" in chart["description"] and "not NVIDIA's" in chart["description"]
    assert "not NVIDIA's chart" in (CHART / "README.md").read_text()


# ---- the version's shape (testbed/dra_api.py; the real servers check it in the dra_api tests below) ----------
def test_v1beta1_slices_nest_the_device_under_basic_and_read_back_as_v1():
    from testbed import dra_api

    (sl, _cd) = rs.resource_slices("n1", "g4.p2.40g")
    old = dra_api.slice_to("v1beta1", sl)
    assert old["apiVersion"] == "resource.k8s.io/v1beta1"
    assert old["spec"]["devices"][0] == {
        "name": "gpu-0",
        "basic": {
            "attributes": sl["spec"]["devices"][0]["attributes"],
            "capacity": sl["spec"]["devices"][0]["capacity"],
        },
    }
    assert dra_api.slice_from("v1beta1", old)["spec"] == sl["spec"]
    assert dra_api.slice_to("v1beta2", sl)["spec"] == sl["spec"]  # v1beta2 has v1's shape
    assert sl["apiVersion"] == "resource.k8s.io/v1"  # the input is left as it was


def test_v1beta1_claims_put_the_request_fields_on_the_request():
    from testbed import dra_api

    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x", "count": 2}}]}},
    }
    old = dra_api.claim_to("v1beta1", claim)
    assert old["spec"]["devices"]["requests"] == [{"name": "gpu", "deviceClassName": "x", "count": 2}]
    assert dra_api.claim_from("v1beta1", old)["spec"] == claim["spec"]
    template = {"kind": "ResourceClaimTemplate", "spec": {"spec": claim["spec"]}}
    old_template = dra_api.claim_to("v1beta1", template)
    assert old_template["spec"]["spec"]["devices"]["requests"][0]["deviceClassName"] == "x"
    assert dra_api.claim_from("v1beta1", old_template, "ResourceClaimTemplate")["spec"] == template["spec"]


# ---- what the apiserver says -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kube(control_plane):
    from testbed.simulator_client import Kube

    return Kube(control_plane.kubeconfig, "builder-test")


@pytest.mark.dra_api
@pytest.mark.parametrize("flavor", GPU_FLAVORS)
def test_apiserver_accepts_every_flavors_slices(kube, flavor):
    """Server-side dry run: the real validation of the slices (full GPUs and maximal MIG layouts), in the version the
    server serves (v1beta1 on 1.32: attributes and capacity under `basic:`); what comes back reads as what was sent."""
    from testbed import dra_api

    version = dra_api.served_version(kube)
    for layouts in (None, _max_layouts(flavor)):
        for sl in rs.resource_slices("dry-run-node", flavor, layouts):
            body = dra_api.slice_to(version, sl)
            out = kube.request("POST", dra_api.path(version, "resourceslices"), body=body, query={"dryRun": "All"})
            back = dra_api.slice_from(version, out)["spec"]["devices"]
            # (capacities come back in the server's canonical form: 16384Mi is 16Gi)
            assert [(d["name"], d.get("attributes"), sorted(d.get("capacity") or {})) for d in back] == [
                (d["name"], d.get("attributes"), sorted(d.get("capacity") or {})) for d in sl["spec"]["devices"]
            ]


def test_apiserver_accepts_the_node_objects(kube):
    for flavor in ("g6.gb200x4", "m2.large"):
        body = node_object(
            "dry-run-" + flavor.replace(".", "-"),
            flavor=flavor,
            role="worker",
            nodegroup="ng",
            clique="c.1",
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        )
        body.update(node_status(body["metadata"]["name"], flavor=flavor, address="10.0.0.1"))
        kube.request("POST", "/api/v1/nodes", body=body, query={"dryRun": "All"})


def _gpu_view(slices: list, node: str) -> list:
    """What the pool report reads of a node's dynamic MIG slices (plan/report: observed, devices, capacity): per
    device its kind, GPU minor, profile and memory slices (from its counters, else from its name and the catalog)."""
    from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import get_gpu
    from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import _profile_size, _slices_of
    from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed

    catalog = get_gpu("A100-40GB")
    return sorted(
        (kind, minor, profile, tuple(_slices_of(dev, _profile_size(catalog, profile)) if profile else ()))
        for _owner, dev, kind, minor, profile, *_rest in Observed(slices=slices).gpu_devices_of(node)
    )


@pytest.mark.dra_api
def test_dynamic_mig_slices_in_the_shape_of_each_release_and_read_alike(kube, control_plane):
    """The DRA driver publishes dynamic MIG's shared counters beside each GPU's devices before 1.35 and in a slice of
    their own from 1.35 (KEP-4815: a slice holds one or the other). The session's server takes the shape of its
    release (server-side dry run), keeps the counters only where DRAPartitionableDevices is on (1.36 and the base
    release; alpha and off on 1.33-1.35, absent on 1.32), refuses the old shape where it keeps them from 1.35 on, and
    the pool report reads the same GPUs, profiles and memory slices from what it answers in either shape."""
    from testbed import dra_api, dra_dynamic_mig
    from testbed.simulator_client import KubeError

    version = dra_api.served_version(kube)
    minor = tuple(int(p) for p in control_plane.release.minor.split("."))
    split = dra_dynamic_mig.split_counters(minor)
    assert split is (minor >= (1, 35))
    node = "dry-run-dynmig"

    def dry_run(slices):
        return [
            dra_api.slice_from(
                version,
                kube.request(
                    "POST",
                    dra_api.path(version, "resourceslices"),
                    body=dra_api.slice_to(version, sl),
                    query={"dryRun": "All"},
                ),
            )
            for sl in slices
        ]

    built = dra_dynamic_mig.node_slices(node, A100, 2, {}, split=split)
    assert len(built) == (3 if split else 2)
    answered = dry_run(built)
    kept = any(sl["spec"].get("sharedCounters") for sl in answered)
    assert kept is (minor >= (1, 36)), [sl["spec"].get("sharedCounters") for sl in answered]
    consumes = [d.get("consumesCounters") for sl in answered for d in sl["spec"].get("devices") or []]
    assert all(consumes) if kept else not any(consumes)
    if kept:  # from 1.36 (so split): the old shape, as a driver that does not read the release would publish it
        with pytest.raises(KubeError) as refused:
            dry_run(dra_dynamic_mig.node_slices(node, A100, 2, {}, split=False))
        assert refused.value.status == 422 and "only one of `sharedCounters` or `devices`" in str(refused.value)
    # the report reads both shapes, and the server's answer, alike: 2 GPUs, every placement of every profile
    view = _gpu_view(answered, node)
    assert view == _gpu_view(built, node) == _gpu_view(dra_dynamic_mig.node_slices(node, A100, 2, {}), node)
    per_gpu = 1 + sum(len(p.starts) for p in A100.mig.profiles)  # MIG off: the full GPU too
    assert len(view) == 2 * per_gpu and {m for _k, m, _p, _s in view} == {0, 1} and ("gpu", 1, None, ()) in view
    assert ("mig", 0, "3g.20gb", (4, 5, 6, 7)) in view
