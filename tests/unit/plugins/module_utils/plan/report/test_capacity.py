"""Capacity beyond the anchors: what more can be allocated now, per profile and per tenant template (pure, no I/O).

Devices are written here as the NVIDIA DRA driver publishes them (reference nvidia-dra-driver-published.md):
static MIG devices with memorySlice<N> capacities, DynamicMIG devices one per possible placement with
memory-slice-<N> counters; placements are spelled out by hand, not computed by the code under test.
"""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mig_placement
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.plan.report import capacity as plan_capacity
from ansible_collections.gpupool.core.plugins.module_utils.plan.report import pool_report as plan_pool_report
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from tests.support.advice_beds import PROFILES

DRIVER = "gpu.nvidia.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
BASE = {
    "name": "c1",
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB", "per_node": 4},
            "device_classes": {"extra": [{"name": "h100-big", "min_memory": "79Gi"}]},
        },
    ],
    "tenants": [
        {
            "namespace": "ml",
            "templates": [
                {"name": "slice", "pool": "a100", "mig_profile": "3g.20gb"},
                {"name": "pair", "pool": "h100", "count": 2},
                {"name": "pair-same-root", "pool": "h100", "count": 2, "match_attribute": PCIE_ROOT},
                {"name": "big", "pool": "h100", "device_class": "h100-big"},
                {"name": "whole-node", "pool": "h100", "allocation_mode": "All"},
            ],
        }
    ],
}
# A100-40GB placement starts (NVIDIA MIG user guide, -lgipp)
A100_STARTS = {
    "1g.5gb": range(7),
    "1g.10gb": (0, 2, 4, 6),
    "2g.10gb": (0, 2, 4),
    "3g.20gb": (0, 4),
    "4g.20gb": (0,),
    "7g.40gb": (0,),
}
A100 = {profile: PROFILES[profile] for profile in A100_STARTS}  # (GI profile id, memory slices): advice_beds'


def load(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def node(name, labels, ready=True, unschedulable=False):
    return {
        "metadata": {"name": name, "labels": labels},
        # as node_pools leaves it: the pools' default GPU taint
        "spec": {
            "unschedulable": unschedulable,
            "taints": [{"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def full_gpu(minor, root=None):
    attrs = {
        "type": {"string": "gpu"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x41 + minor)},
    }
    if root:
        attrs[PCIE_ROOT] = {"string": root}
    return {"name": "gpu-%d" % minor, "attributes": attrs}


def static_mig(minor, profile, start):
    gi, size = A100[profile]
    return {
        "name": "gpu-%d-mig-%s-%d-%d" % (minor, profile.replace(".", ""), gi, start),
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x41 + minor)},
        },
        "capacity": {"memorySlice%d" % s: {"value": "1"} for s in range(start, start + size)},
    }


def dynamic_mig(minor):
    """Every possible placement of every profile, consuming memory-slice counters (no memorySlice capacities)."""
    out = []
    for profile, starts in A100_STARTS.items():
        gi, size = A100[profile]
        for start in starts:
            out.append(
                {
                    "name": "gpu-%d-mig-%s-%d-%d" % (minor, profile.replace(".", ""), gi, start),
                    "attributes": {"type": {"string": "mig"}, "profile": {"string": profile}},
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-%d-counter-set" % minor,
                            "counters": {"memory-slice-%d" % s: {"value": "1"} for s in range(start, start + size)},
                        }
                    ],
                }
            )
    return out


def rslice(node_name, devices):
    return {
        "metadata": {"name": node_name + "-gpu"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1},
            "devices": devices,
        },
    }


def claim(name, node_name, *devices):
    return {
        "metadata": {"namespace": "ml", "name": name},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": DRIVER, "pool": node_name, "device": d} for d in devices]
                }
            }
        },
    }


def static_a100(minor):
    return [static_mig(minor, "3g.20gb", 4), static_mig(minor, "2g.10gb", 0), static_mig(minor, "2g.10gb", 2)]


def report(cluster, nodes, slices, claims):
    return plan_pool_report.build_report(cluster, Observed(nodes, slices, claims), capacity=True)


def test_static_mig_counts_free_devices_only():
    nodes = [node("a100-0", {"gpu": "a100"})]
    slices = [rslice("a100-0", static_a100(0) + static_a100(1))]
    rep = report(load(), nodes, slices, [claim("train", "a100-0", "gpu-0-mig-3g20gb-9-4")])
    capacity = rep["pools"]["a100"]["capacity"]
    assert capacity["allocatable"] == {"3g.20gb": 1, "2g.10gb": 4}
    assert capacity["templates"] == [
        {"namespace": "ml", "name": "slice", "count": 1, "device_class": "a100-3g.20gb", "allocatable": 1}
    ]
    row = rep["pools"]["a100"]["nodes"][0]
    assert row["allocatable"] == {"3g.20gb": 1, "2g.10gb": 4}
    gpu0 = row["gpu_devices"][0]
    assert gpu0["index"] == 0 and gpu0["memory_slices"] == 8 and gpu0["full"] is None
    assert [(i["profile"], i["slices"], i["claim"]) for i in gpu0["instances"]] == [
        ("2g.10gb", [0, 1], None),
        ("2g.10gb", [2, 3], None),
        ("3g.20gb", [4, 5, 6, 7], "ml/train"),
    ]


def test_static_slices_no_instance_covers_are_not_capacity():
    # layout 3g.20gb alone: slices 0-3 stay unconfigured, and nothing there can be allocated until the layout changes
    cluster = load(lambda d: d["pools"][0]["mig"].update(layout={"3g.20gb": 1}))
    rep = report(
        cluster,
        [node("a100-0", {"gpu": "a100"})],
        [rslice("a100-0", [static_mig(0, "3g.20gb", 4), static_mig(1, "3g.20gb", 4)])],
        [],
    )
    assert rep["pools"]["a100"]["capacity"]["allocatable"] == {"3g.20gb": 2}


def dynamic_cluster():
    def mutate(data):
        data["pools"][0]["mig"] = {"mode": "dynamic"}
        data["pools"][1]["gpu"]["model"] = "L4"  # not MIG-capable: may stay beside dynamic MIG
        data["pools"][1]["device_classes"] = {}
        data["tenants"][0]["templates"] = [{"name": "slice", "pool": "a100", "mig_profile": "3g.20gb"}]

    return load(mutate)


def test_dynamic_mig_counts_what_still_fits_beside_the_allocated_instances():
    nodes = [node("a100-0", {"gpu": "a100"})]
    slices = [rslice("a100-0", dynamic_mig(0) + dynamic_mig(1))]
    # GPU 0: 1g.5gb at slices 0 and 3 allocated. Six slices are free, but a 3g.20gb starts only at 0 or 4 and a
    # 2g.10gb at 0, 2 or 4: one of each fits, not the three 2g.10gb the free memory would suggest.
    claims = [claim("a", "a100-0", "gpu-0-mig-1g5gb-19-0"), claim("b", "a100-0", "gpu-0-mig-1g5gb-19-3")]
    rep = report(dynamic_cluster(), nodes, slices, claims)
    gpus = rep["pools"]["a100"]["nodes"][0]["gpu_devices"]
    assert gpus[0]["dynamic"] and [i["slices"] for i in gpus[0]["instances"] if i["claim"]] == [[0], [3]]
    per_gpu = [plan_capacity.gpu_allocatable(dynamic_cluster().pools[0], g) for g in gpus]
    # 1g.5gb: 5 by compute (7 - 2) and five free starts (1, 2, 4, 5, 6); 1g.5gb+me: the GPU's one JPEG/OFA unit is
    # still free (plain 1g.5gb instances take none); 1g.10gb: starts 4 and 6; 4g.20gb and 7g.40gb need slice 0
    assert per_gpu[0] == {
        "1g.5gb": 5,
        "1g.5gb+me": 1,
        "1g.10gb": 2,
        "2g.10gb": 1,
        "3g.20gb": 1,
        "4g.20gb": 0,
        "7g.40gb": 0,
    }
    assert per_gpu[1] == {
        "1g.5gb": 7,
        "1g.5gb+me": 1,
        "1g.10gb": 4,
        "2g.10gb": 3,
        "3g.20gb": 2,
        "4g.20gb": 1,
        "7g.40gb": 1,
    }
    capacity = rep["pools"]["a100"]["capacity"]
    assert capacity["allocatable"]["3g.20gb"] == 3 and capacity["allocatable"]["7g.40gb"] == 1
    assert capacity["templates"][0]["allocatable"] == 3


def test_dynamic_whole_gpu_is_allocatable_only_when_nothing_of_it_is():
    slices = [rslice("a100-0", [full_gpu(0)] + dynamic_mig(0) + [full_gpu(1)] + dynamic_mig(1))]
    claims = [claim("a", "a100-0", "gpu-0-mig-3g20gb-9-4"), claim("b", "a100-0", "gpu-1")]
    rep = report(dynamic_cluster(), [node("a100-0", {"gpu": "a100"})], slices, claims)
    gpus = rep["pools"]["a100"]["nodes"][0]["gpu_devices"]
    pool = dynamic_cluster().pools[0]
    first, second = (plan_capacity.gpu_allocatable(pool, g) for g in gpus)
    assert first["gpu"] == 0 and first["3g.20gb"] == 1 and first["4g.20gb"] == 1
    assert second["gpu"] == 0 and set(second.values()) == {0}  # the whole GPU is taken: no slice of it is free


def h100_node(name, **kwargs):
    return node(name, {"gpu": "h100"}, **kwargs)


def h100_slice(name):
    # each GPU under its own PCIe root, as on the test bed's nodes
    return rslice(name, [full_gpu(i, root="pci0000:%02x" % (0x40 + i * 0x10)) for i in range(4)])


def test_templates_count_claims_per_node_with_their_constraint():
    nodes = [h100_node("h100-0"), h100_node("h100-1")]
    slices = [h100_slice("h100-0"), h100_slice("h100-1")]
    claims = [claim("x", "h100-0", "gpu-0"), claim("y", "h100-1", "gpu-0", "gpu-1", "gpu-2")]
    rep = report(load(), nodes, slices, claims)
    capacity = rep["pools"]["h100"]["capacity"]
    assert capacity["allocatable"] == {"gpu": 4}
    rows = {t["name"]: t for t in capacity["templates"]}
    # pairs: h100-0 has 3 free GPUs (one pair), h100-1 one (none): the 4 free GPUs make 1 pair, not 2
    assert rows["pair"]["allocatable"] == 1
    # the same pair under one PCIe root: no two free GPUs share a root
    assert rows["pair-same-root"]["allocatable"] == 0
    assert rows["big"] == {
        "namespace": "ml",
        "name": "big",
        "count": 1,
        "device_class": "h100-big",
        "allocatable": 4,
        "note": "at most: the extra class's own selectors are not evaluated",
    }
    # All: every GPU of the node must be free; neither node has all four free
    assert rows["whole-node"]["allocatable"] == 0
    rep = report(load(), nodes + [h100_node("h100-2")], slices + [h100_slice("h100-2")], claims)
    assert {t["name"]: t["allocatable"] for t in rep["pools"]["h100"]["capacity"]["templates"]}["whole-node"] == 1


def test_cordoned_and_not_ready_nodes_offer_nothing():
    nodes = [h100_node("h100-0", unschedulable=True), h100_node("h100-1", ready=False), h100_node("h100-2")]
    slices = [h100_slice(n["metadata"]["name"]) for n in nodes]
    capacity = report(load(), nodes, slices, [])["pools"]["h100"]["capacity"]
    assert capacity["allocatable"] == {"gpu": 4}
    assert capacity["left_out"] == [{"node": "h100-0", "why": "cordoned"}, {"node": "h100-1", "why": "NotReady"}]


def test_report_without_tenants_or_devices():
    rep = report(load(lambda d: d.pop("tenants")), [h100_node("h100-0")], [], [])
    assert rep["pools"]["h100"]["capacity"] == {"allocatable": {"gpu": 0}, "templates": [], "left_out": []}
    assert rep["pools"]["h100"]["nodes"][0]["gpu_devices"] == []
    # the report keeps its own keys
    assert rep["pools"]["h100"]["mismatches"][0]["kind"] == "not_published"
    assert plan_pool_report.summary(rep).startswith("a100: 0/0 nodes Ready")


def test_more_instances_follows_the_placement_rules():
    # nothing allocated: the profile's own maximum
    assert mig_placement.more_instances("A100-40GB", "3g.20gb") == 2
    # a 2g.10gb at slices 2-3: the 3g.20gb at 0 would overlap it, only the one at 4 is left
    assert mig_placement.more_instances("A100-40GB", "3g.20gb", occupied=0b00001100, kept={"2g.10gb": 1}) == 1
    # a 4g.20gb at slices 0-3: four slices are free, but no 1g.5gb starts at slice 7
    assert mig_placement.more_instances("A100-40GB", "1g.5gb", occupied=0b00001111, kept={"4g.20gb": 1}) == 3
    # 3g.20gb at 4-7 and 2g.10gb at 0-1 leave slices 2-3 and two compute slices: one more 2g.10gb
    assert (
        mig_placement.more_instances("A100-40GB", "2g.10gb", occupied=0b11110011, kept={"3g.20gb": 1, "2g.10gb": 1})
        == 1
    )
    assert mig_placement.more_instances("A100-40GB", "3g.20gb", occupied=0b11110000, kept={"3g.20gb": 1}) == 1
    assert mig_placement.more_instances("A100-40GB", "4g.20gb", occupied=0b11110000, kept={"3g.20gb": 1}) == 1
    # a 3g.20gb fits beside a 4g.20gb (3 + 4 compute slices); a second 4g.20gb never does (at most one per GPU)
    assert mig_placement.more_instances("A100-40GB", "3g.20gb", occupied=0b00001111, kept={"4g.20gb": 1}) == 1
    assert mig_placement.more_instances("A100-40GB", "4g.20gb", occupied=0b11110000, kept={"4g.20gb": 1}) == 0
    assert mig_placement.more_instances("A100-40GB", "5g.99gb") == 0
