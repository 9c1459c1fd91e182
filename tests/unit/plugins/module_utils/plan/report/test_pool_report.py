"""Pool report: pure tests (no I/O, no test bed) of inventory + Nodes + ResourceSlices + ResourceClaims => report."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import get_gpu
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import plan
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import inventory as model_inventory
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CONFIG_LABEL, DRIVER, STATE_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.report import pool_report as pr
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import attribute
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import (
    expected_layout,
    published_layout,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed, allocated_devices

NG = "magnum.openstack.org/nodegroup"
BASE = {
    "name": "c1",
    "magnum": {"cloud": "x", "cluster": "y"},
    "pools": [
        {
            "name": "a100",
            "nodegroup": {"flavor": "g4.p2.40g", "node_count": 2},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {"name": "t4", "nodegroup": {"flavor": "g2.xlarge", "node_count": 1}, "gpu": {"model": "T4"}},
        {"name": "l4", "node_selector": {"gpu": "l4"}, "gpu": {"model": "L4"}},
    ],
}
A100 = get_gpu("A100-40GB")


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


GPU_TAINT = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}


def node(name, labels=None, ready=True, config=None, state=None, unschedulable=False, taints=(GPU_TAINT,)):
    """A node as gpupool leaves it (the pools' default GPU taint on), unless `taints` says otherwise."""
    labels = dict(labels or {})
    if config:
        labels[CONFIG_LABEL] = config
    if state:
        labels[STATE_LABEL] = state
    spec = {"taints": [dict(t) for t in taints]}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def gpu_dev(index):
    return {"name": "gpu-%d" % index, "attributes": {"type": {"string": "gpu"}, "uuid": {"string": "GPU-%d" % index}}}


def mig_devs(gpu, index, layout):
    """Devices as the NVIDIA DRA driver names them (reference §1.6)."""
    out = []
    for inst in plan(gpu, layout):
        name = "gpu-%d-mig-%s-%d-%d" % (index, inst.profile.replace(".", "").lower(), inst.profile_id, inst.start)
        out.append({"name": name, "attributes": {"type": {"string": "mig"}, "profile": {"string": inst.profile}}})
    return out


def rslice(node_name, devices, generation=1, driver=DRIVER, name=None):
    return {
        "metadata": {"name": name or "%s-%s-%d" % (node_name, driver, generation)},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def claim(ns, name, *devices):
    return {
        "metadata": {"namespace": ns, "name": name},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": d[0], "pool": d[1], "device": d[2]} for d in devices]
                }
            }
        },
    }


LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
CFG = "gpupool-a100"


def healthy():
    nodes = [
        node("a100-0", {NG: "a100"}, config=CFG, state="success"),
        node("a100-1", {NG: "a100"}, config=CFG, state="success"),
        node("t4-0", {NG: "t4"}),
        node("cpu-0", {NG: "default-worker"}),
    ]
    slices = [rslice(n, mig_devs(A100, 0, LAYOUT) + mig_devs(A100, 1, LAYOUT)) for n in ("a100-0", "a100-1")]
    slices.append(rslice("t4-0", [gpu_dev(0)]))
    slices.append(
        rslice(
            "a100-0",
            [{"name": "channel-0", "attributes": {"type": {"string": "channel"}}}],
            driver="compute-domain.nvidia.com",
        )
    )
    return nodes, slices


def test_healthy_static_pool_counts_mig_devices_by_profile_and_allocation():
    nodes, slices = healthy()
    claims = [
        claim("ml", "train", (DRIVER, "a100-0", "gpu-0-mig-3g20gb-9-4")),
        claim("ml", "infer", (DRIVER, "t4-0", "gpu-0"), ("other.example.com", "a100-1", "gpu-0-mig-x")),
        {"metadata": {"namespace": "ml", "name": "pending"}, "status": {}},
    ]
    c = cluster()
    rep = pr.build_report(c, Observed(nodes, slices, claims))
    a = rep["pools"]["a100"]
    assert a["mismatches"] == []
    assert a["mig_devices"] == {
        "3g.20gb": {"total": 4, "allocated": 1, "free": 3},
        "2g.10gb": {"total": 8, "allocated": 0, "free": 8},
    }
    assert a["gpus"] == {"total": 0, "allocated": 0, "free": 0}
    assert a["devices"] == {"total": 12, "allocated": 1, "free": 11}
    assert a["config_name"] == CFG and a["expected_nodes"] == 2 and a["ready_nodes"] == 2
    assert a["expected_layout"] == {"0": LAYOUT, "1": LAYOUT}
    assert a["selector"] == "magnum.openstack.org/nodegroup=a100"
    n0 = a["nodes"][0]
    assert n0["name"] == "a100-0" and n0["mig_state"] == "success" and n0["published"]
    assert n0["layout"] == {"0": LAYOUT, "1": LAYOUT}
    assert n0["allocated"] == [{"device": "gpu-0-mig-3g20gb-9-4", "claim": "ml/train"}]
    t4 = rep["pools"]["t4"]
    assert t4["gpus"] == {"total": 1, "allocated": 1, "free": 0} and t4["mismatches"] == []
    assert t4["config_name"] is None and t4["expected_layout"] == {"0": None}
    assert rep["totals"]["mig_devices"]["2g.10gb"]["total"] == 8
    assert rep["totals"]["nodes"] == 3 and rep["totals"]["devices"]["allocated"] == 2
    # a pool without nodes: nothing found
    assert rep["pools"]["l4"]["nodes"] == []
    text = pr.summary(rep)
    assert "a100: 2/2 nodes Ready (nodegroup wants 2); 8 x 2g.10gb, 8 free; 4 x 3g.20gb, 3 free; OK" in text
    assert "t4: 1/1 nodes Ready (nodegroup wants 1); 1 full GPU(s), 0 free; OK" in text


def kinds(rep, pool=None):
    return [(m["pool"], m["node"], m["kind"]) for m in rep["mismatches"] if pool in (None, m["pool"])]


def test_missing_node_and_extra_nodes():
    nodes, slices = healthy()
    rep = pr.build_report(cluster(), Observed([n for n in nodes if n["metadata"]["name"] != "a100-1"], slices))
    assert kinds(rep, "a100") == [("a100", None, "missing_nodes")]
    mm = rep["mismatches"][0]
    assert mm["expected"] == 2 and mm["found"] == 1 and "1 of the 2 nodes" in mm["message"]
    rep = pr.build_report(cluster(), Observed(nodes + [node("t4-1", {NG: "t4"})], slices))
    assert ("t4", None, "extra_nodes") in kinds(rep)
    assert ("t4", "t4-1", "not_published") in kinds(rep)


def test_wrong_layout_is_compared_per_gpu_as_profile_counts():
    nodes, slices = healthy()
    other = [rslice("a100-1", mig_devs(A100, 0, {"1g.5gb": 7}) + mig_devs(A100, 1, LAYOUT), generation=2)]
    rep = pr.build_report(cluster(), Observed(nodes, slices + other))
    assert kinds(rep, "a100") == [("a100", "a100-1", "wrong_layout")]
    mm = rep["mismatches"][0]
    assert "GPU 0: wants MIG 2g.10gb x2 + 3g.20gb x1, publishes MIG 1g.5gb x7" in mm["message"]
    assert "GPU 1" not in mm["message"]
    assert mm["published"]["0"] == {"1g.5gb": 7}
    # only the newest generation counts: the report's devices are the new ones
    assert rep["pools"]["a100"]["mig_devices"]["1g.5gb"]["total"] == 7


def test_same_layout_at_other_placements_is_not_a_mismatch():
    nodes, slices = healthy()
    moved = copy.deepcopy(slices)
    for dev in moved[0]["spec"]["devices"]:
        dev["name"] = dev["name"].rsplit("-", 1)[0] + "-9"  # other placement starts
    rep = pr.build_report(cluster(), Observed(nodes, moved))
    assert kinds(rep, "a100") == []


def test_full_gpu_where_mig_is_wanted_and_missing_gpu():
    nodes, slices = healthy()
    slices[1] = rslice("a100-1", [gpu_dev(0)])
    rep = pr.build_report(cluster(), Observed(nodes, slices))
    msg = rep["mismatches"][0]["message"]
    assert "GPU 0: wants MIG 2g.10gb x2 + 3g.20gb x1, publishes full GPU" in msg
    assert "GPU 1: wants MIG 2g.10gb x2 + 3g.20gb x1, publishes nothing" in msg


def test_mig_on_a_pool_without_mig():
    nodes, slices = healthy()
    slices[2] = rslice(
        "t4-0",
        [{"name": "gpu-0-mig-1g5gb-19-0", "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.5gb"}}}],
    )
    rep = pr.build_report(cluster(), Observed(nodes, slices))
    mm = [m for m in rep["mismatches"] if m["pool"] == "t4"][0]
    assert mm["kind"] == "wrong_layout" and "wants full GPU, publishes MIG 1g.5gb x1" in mm["message"]
    assert "mig.mode is off" in mm["message"]


def test_failed_state_wrong_label_not_ready_not_published():
    nodes, slices = healthy()
    nodes[0] = node("a100-0", {NG: "a100"}, config=CFG, state="failed")
    nodes[1] = node("a100-1", {NG: "a100"}, config="all-disabled", state="success", ready=False)
    rep = pr.build_report(cluster(), Observed(nodes, [s for s in slices if s["spec"]["nodeName"] != "a100-1"]))
    assert kinds(rep, "a100") == [
        ("a100", "a100-1", "node_not_ready"),
        ("a100", "a100-0", "mig_failed"),
        ("a100", "a100-1", "mig_config_label"),
        ("a100", "a100-1", "not_published"),
    ]
    by_kind = {m["kind"]: m["message"] for m in rep["mismatches"]}
    assert "retry_failed: true" in by_kind["mig_failed"]
    assert "nvidia.com/mig.config=all-disabled, the pool's config is gpupool-a100" in by_kind["mig_config_label"]
    assert "kubelet plugin" in by_kind["not_published"]
    assert "2 mismatch" not in pr.summary(rep) and "4 mismatch(es)" in pr.summary(rep)


def test_pending_layout_says_wait():
    nodes, slices = healthy()
    nodes[1] = node("a100-1", {NG: "a100"}, config=CFG, state="pending")
    slices[1] = rslice("a100-1", mig_devs(A100, 0, {"7g.40gb": 1}) + mig_devs(A100, 1, LAYOUT))
    rep = pr.build_report(cluster(), Observed(nodes, slices))
    assert "wait while nvidia.com/mig.config.state=pending" in rep["mismatches"][0]["message"]


def test_per_gpu_layouts_and_mig_on_without_instances():
    # load_cluster refuses an empty layout; the report still reads one from a shape-only model
    data = copy.deepcopy(BASE)
    data["pools"][0]["mig"] = {"mode": "static", "layouts": {0: {"7g.40gb": 1}, 1: {}}}
    with pytest.raises(model_errors.Problems, match="the layout is empty"):
        model_load.load_cluster(copy.deepcopy(data))
    c = model_inventory.Cluster.model_validate(data)
    assert expected_layout(c.pool("a100")) == {0: {"7g.40gb": 1}}
    nodes = healthy()[0]
    slices = [rslice(n, mig_devs(A100, 0, {"7g.40gb": 1})) for n in ("a100-0", "a100-1")]
    rep = pr.build_report(c, Observed(nodes, slices), pools=[c.pool("a100")])
    assert rep["mismatches"] == [] and list(rep["pools"]) == ["a100"]
    assert rep["pools"]["a100"]["mig_devices"] == {"7g.40gb": {"total": 2, "allocated": 0, "free": 2}}


def test_layouts_with_an_unlisted_gpu_expect_a_full_gpu():
    def partial(d):
        d["pools"][0]["mig"] = {"mode": "static", "layouts": {0: {"7g.40gb": 1}}}

    c = cluster(partial)
    assert expected_layout(c.pool("a100")) == {0: {"7g.40gb": 1}, 1: None}


def test_v1beta1_basic_attributes_and_qualified_names():
    nodes = healthy()[0]
    devs = []
    for d in mig_devs(A100, 0, LAYOUT) + mig_devs(A100, 1, LAYOUT):
        attrs = {"gpu.nvidia.com/" + k: v for k, v in d["attributes"].items()}
        devs.append({"name": d["name"], "basic": {"attributes": attrs}})
    slices = [rslice(n, devs) for n in ("a100-0", "a100-1")]
    rep = pr.build_report(cluster(), Observed(nodes, slices), pools=[cluster().pool("a100")])
    assert rep["mismatches"] == []
    assert rep["pools"]["a100"]["mig_devices"]["3g.20gb"]["total"] == 4


def test_slice_pool_spanning_several_slices_and_older_generations():
    nodes = healthy()[0]
    g0 = mig_devs(A100, 0, LAYOUT)
    g1 = mig_devs(A100, 1, LAYOUT)
    slices = [
        rslice("a100-0", g0, 3, name="s1"),
        rslice("a100-0", g1, 3, name="s2"),
        rslice("a100-0", [gpu_dev(0), gpu_dev(1)], 2, name="old"),
        rslice("a100-1", g0 + g1, 1),
    ]
    rep = pr.build_report(cluster(), Observed(nodes, slices), pools=[cluster().pool("a100")])
    assert rep["mismatches"] == []
    assert rep["pools"]["a100"]["devices"]["total"] == 12


def test_node_in_two_pools_and_a_pool_without_selector():
    def overlap(d):
        d["pools"][2]["node_selector"] = {NG: "a100"}

    nodes, slices = healthy()
    rep = pr.build_report(cluster(overlap), Observed(nodes, slices))
    assert ("l4", "a100-0", "node_in_two_pools") in kinds(rep)
    # load_cluster refuses a pool without nodegroup or selector; the report still says it for a shape-only model
    no_selector = model_inventory.Cluster.model_validate(
        {"name": "c", "pools": [{"name": "x", "gpu": {"model": "T4"}}]}
    )
    rep = pr.build_report(no_selector, Observed(nodes, slices))
    assert kinds(rep) == [("x", None, "no_node_selector")]
    assert "so its nodes cannot be found; add node_selector" in rep["mismatches"][0]["message"]


def test_dynamic_pool_has_no_expected_layout():
    dynamic = model_load.load_cluster(
        {
            "name": "c",
            "pools": [
                {
                    "name": "dyn",
                    "node_selector": {"gpu": "dyn"},
                    "gpu": {"model": "A100-80GB"},
                    "mig": {"mode": "dynamic"},
                }
            ],
        }
    )
    rep = pr.build_report(dynamic, Observed(healthy()[0]))
    assert rep["pools"]["dyn"]["expected_layout"] is None and rep["pools"]["dyn"]["nodes"] == []


def test_absent_pools_are_not_reported():
    c = cluster(lambda d: d["pools"][1].update(state="absent"))
    nodes, slices = healthy()
    assert "t4" not in pr.build_report(c, Observed(nodes, slices))["pools"]


def test_unpublished_everything_and_empty_scope():
    nodes = healthy()[0]
    rep = pr.build_report(cluster(), Observed(nodes))
    assert sorted({m["kind"] for m in rep["mismatches"]}) == ["not_published"]
    assert "no devices published" in pr.summary(rep)
    assert pr.summary(pr.build_report(cluster(), Observed(nodes), pools=[])) == "no pools in scope"


@pytest.mark.parametrize(
    "value,want",
    [
        ({"string": "mig"}, "mig"),
        ({"int": 3}, 3),
        ({"bool": True}, True),
        ({"version": "1.2.3"}, "1.2.3"),
        ("raw", "raw"),
        (None, None),
    ],
)
def test_attribute_values(value, want):
    assert attribute({"attributes": {"type": value}}, "type") == want


def test_allocated_devices():
    got = allocated_devices(
        [
            claim("a", "c1", ("d", "p", "x"), ("d", "p", "y")),
            claim("b", "c2", ("d", "p", "x")),
            {"metadata": {"namespace": "z", "name": "none"}},
        ]
    )
    assert got == {("d", "p", "x"): "a/c1", ("d", "p", "y"): "a/c1"}


# ---- gpu-<N> is the minor, not the NVML index ---------------------------------------------------------
def _dev(name, dtype, bus=None, profile=None, **ints):
    attrs = {"type": {"string": dtype}}
    if bus:
        attrs["resource.kubernetes.io/pciBusID"] = {"string": bus}
    if profile:
        attrs["profile"] = {"string": profile}
    attrs.update((k, {"int": v}) for k, v in ints.items())
    return ("n", {"name": name, "attributes": attrs})


def test_device_name_number_is_the_minor_and_pci_order_gives_the_index():
    # NVML index 0 sits on bus 0x41 and is /dev/nvidia3; index 1 (bus 0x51) is /dev/nvidia0.
    devs = [_dev("gpu-0", "gpu", "0000:51:00.0"), _dev("gpu-3-mig-7g40gb-0-0", "mig", "0000:41:00.0", "7g.40gb")]
    assert published_layout(devs) == {0: {"7g.40gb": 1}, 1: None}


def test_index_attribute_of_older_drivers_wins():
    # v25.3.x published index (full GPU) and parentIndex (MIG device)
    devs = [
        _dev("gpu-0", "gpu", "0000:41:00.0", index=1),
        _dev("gpu-1-mig-7g40gb-0-0", "mig", "0000:51:00.0", "7g.40gb", parentIndex=0),
    ]
    assert published_layout(devs) == {0: {"7g.40gb": 1}, 1: None}


def test_a_gpu_publishing_nothing_keeps_the_others_at_their_index():
    # GPU 0: MIG on, no instances (publishes nothing, left out of expected too); GPU 1: 7g.
    devs = [_dev("gpu-1-mig-7g40gb-0-0", "mig", "0000:51:00.0", "7g.40gb")]
    assert published_layout(devs, expected={1: {"7g.40gb": 1}}, gpus_per_node=2) == {1: {"7g.40gb": 1}}
    assert published_layout(devs) == {0: {"7g.40gb": 1}}


def test_a_node_without_the_pools_taint_is_a_mismatch_not_ok():
    """A removed GPU taint leaves the node open to any pod: reported with the taint and the fix. Someone else's
    extra taint does not hide it, and a taint with another value is not the pool's."""
    nodes = [
        node("t4-0", {NG: "t4"}, taints=(GPU_TAINT, {"key": "x", "effect": "NoExecute"})),
        node("t4-1", {NG: "t4"}, taints=()),
        node("t4-2", {NG: "t4"}, taints=(dict(GPU_TAINT, value="false"),)),
    ]
    rep = pr.build_report(cluster(), Observed(nodes))
    missing = [m for m in rep["mismatches"] if m["kind"] == "taint_missing"]
    assert [m["node"] for m in missing] == ["t4-1", "t4-2"]
    assert "node-role.kubernetes.io/gpu=true:NoSchedule" in missing[0]["message"]
    assert "gpupool.core.node_pool" in missing[0]["message"]
    # a pool that opts out of the GPU taint expects none
    no_taint = cluster(lambda d: d["pools"][1].update(gpu_taint=False))
    rep = pr.build_report(no_taint, Observed([node("t4-1", {NG: "t4"}, taints=())]))
    assert not [m for m in rep["mismatches"] if m["kind"] == "taint_missing"]
