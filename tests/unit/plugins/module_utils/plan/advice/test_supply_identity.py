"""GPUs by identity (issue #26): the real driver publishes no GPU index, a GPU with MIG on and no instances publishes
nothing, so a node's GPUs are placed at the inventory's index by their PCI bus ID among the pool's, never by their
position among what the node publishes. Beds as the driver publishes (beds.py: GPU minor m sits on bus 0x41+m)."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import pool_supply
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import current_slices, slices_by_node
from tests.support import advice_beds as b

TWO = dict(b.A100, nodegroup={"flavor": "g4.p2.40g", "node_count": 2, "max_node_count": 3})


def supply_of(pool_data, slices, allocated, nodes=None):
    pool = b.load(b.cluster_data(pool_data)).pool(pool_data["name"])
    nodes = nodes or [b.node("a100-0", "a100"), b.node("a100-1", "a100")]
    return pool_supply(pool, nodes, slices_by_node(current_slices(slices)), allocated)


def test_a_node_publishing_only_its_second_gpu_holds_index_1_not_0():
    # a100-0: GPU 0 (bus 0x41) has MIG on and no instances, so it publishes only GPU 1 (bus 0x42), which holds a
    # claim. a100-1 publishes both. By position a100-0's GPU would be index 0; by identity it is index 1.
    slices = [b.rslice("a100-0", b.a100_gpu(1)), b.rslice("a100-1", b.a100_gpu(0) + b.a100_gpu(1))]
    allocated = {(b.DRIVER, "a100-0", "gpu-1-mig-3g20gb-9-4"): "ml/held"}
    supply = supply_of(TWO, slices, allocated)
    row = supply["nodes"][0]
    assert sorted(row["gpus"]) == [1] and row["gpus"][1]["held"] == ["ml/held"]
    assert sorted(supply["frozen"]) == [1] and supply["uncertain"] == []


def test_the_minor_is_not_the_index_the_bus_id_is():
    # minor 0 sits on bus 0x51 and minor 1 on 0x41 (driver issue #563): NVML index 0 is minor 1
    devices = b.a100_gpu(0) + b.a100_gpu(1)
    for dev in devices:
        minor = int(dev["name"].split("-")[1])
        dev["attributes"]["resource.kubernetes.io/pciBusID"] = {
            "string": "0000:%s:00.0" % ("51" if minor == 0 else "41")
        }
    allocated = {(b.DRIVER, "a100-0", "gpu-0-mig-3g20gb-9-4"): "ml/held"}
    supply = supply_of(TWO, [b.rslice("a100-0", devices)], allocated, [b.node("a100-0", "a100")])
    assert supply["nodes"][0]["gpus"][1]["device"]["minor"] == 0 and sorted(supply["frozen"]) == [1]


def test_published_index_attribute_wins():
    devices = copy.deepcopy(b.a100_gpu(1))
    for dev in devices:
        dev["attributes"]["parentIndex"] = {"int": 0}
    allocated = {(b.DRIVER, "a100-0", "gpu-1-mig-3g20gb-9-4"): "ml/held"}
    supply = supply_of(TWO, [b.rslice("a100-0", devices)], allocated, [b.node("a100-0", "a100")])
    assert sorted(supply["nodes"][0]["gpus"]) == [0] and sorted(supply["frozen"]) == [0]


def test_when_no_node_shows_every_slot_the_index_is_uncertain_and_every_possible_one_freezes():
    # Every node publishes only bus 0x42: the pool knows one slot of two, so the GPU is index 0 or 1.
    slices = [b.rslice("a100-0", b.a100_gpu(1)), b.rslice("a100-1", b.a100_gpu(1))]
    allocated = {(b.DRIVER, "a100-1", "gpu-1-mig-2g10gb-14-0"): "ml/held"}
    supply = supply_of(TWO, slices, allocated)
    assert sorted(supply["frozen"]) == [0, 1]
    assert supply["uncertain"] == ["a100-0", "a100-1"]
    assert any("placed at" in text for text in supply["frozen"][0] + supply["frozen"][1])


def test_without_bus_ids_an_allocated_gpu_freezes_every_index():
    devices = copy.deepcopy(b.a100_gpu(1))
    for dev in devices:
        del dev["attributes"]["resource.kubernetes.io/pciBusID"]
    allocated = {(b.DRIVER, "a100-0", "gpu-1-mig-3g20gb-9-4"): "ml/held"}
    supply = supply_of(TWO, [b.rslice("a100-0", devices)], allocated, [b.node("a100-0", "a100")])
    assert sorted(supply["frozen"]) == [0, 1] and supply["uncertain"] == ["a100-0"]


def test_unallocated_uncertain_gpus_freeze_nothing():
    slices = [b.rslice("a100-0", b.a100_gpu(1))]
    supply = supply_of(TWO, slices, {}, [b.node("a100-0", "a100")])
    assert supply["frozen"] == {} and supply["uncertain"] == ["a100-0"]


def test_rows_name_the_mig_group_each_node_carries():
    grouped = copy.deepcopy(TWO)
    grouped["mig"]["groups"] = [{"name": "small", "nodes": 1, "layout": {"1g.5gb": 7}}]
    nodes = [b.node("a100-0", "a100"), b.node("a100-1", "a100")]
    nodes[1]["metadata"]["labels"]["nvidia.com/mig.config"] = "gpupool-a100-small"
    slices = [b.rslice("a100-0", b.a100_gpu(0) + b.a100_gpu(1))]
    supply = supply_of(grouped, slices, {}, nodes)
    assert [(r["name"], r["group"]) for r in supply["nodes"]] == [("a100-0", None), ("a100-1", "small")]
