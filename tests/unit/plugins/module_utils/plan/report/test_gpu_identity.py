"""GPU index by identity in the pool report (issue #26): the real driver publishes no index (uuid and pciBusID only),
and a GPU with MIG on and no instances publishes nothing; the pool's nodes share PCI slots, so the bus IDs seen on
all of them number each node's GPUs."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import pool_bus_ids, published_gpus
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import (
    indexed_gpus,
    published_layout,
)


def dev(name, kind, bus, profile=None, **ints):
    attrs = {"type": {"string": kind}, "uuid": {"string": "GPU-" + name}}
    if bus:
        attrs["resource.kubernetes.io/pciBusID"] = {"string": bus}
    if profile:
        attrs["profile"] = {"string": profile}
    attrs.update((k, {"int": v}) for k, v in ints.items())
    return ("n", {"name": name, "attributes": attrs})


FULL_NODE = [
    dev("gpu-0", "gpu", "0000:41:00.0"),
    dev("gpu-1", "gpu", "0000:51:00.0"),
    dev("gpu-2", "gpu", "0000:61:00.0"),
]
# GPU 1 (bus 0x51) has MIG on and no instances: it publishes nothing
PARTIAL_NODE = [dev("gpu-0", "gpu", "0000:41:00.0"), dev("gpu-2-mig-7g40gb-0-0", "mig", "0000:61:00.0", "7g.40gb")]


def test_the_pools_bus_ids_place_a_partial_nodes_gpus():
    bus_ids = pool_bus_ids([published_gpus(FULL_NODE), published_gpus(PARTIAL_NODE)])
    assert bus_ids == ["0000:41:00.0", "0000:51:00.0", "0000:61:00.0"]
    assert published_layout(PARTIAL_NODE, None, 3, bus_ids) == {0: None, 2: {"7g.40gb": 1}}
    placed = indexed_gpus(PARTIAL_NODE, None, 3, bus_ids)
    assert [g["maybe"] for _i, g in placed] == [None, None]


def test_by_position_the_partial_node_would_be_wrong_and_is_marked_uncertain():
    # the node alone: 2 bus IDs for 3 GPUs - placed by position (0, 1) and marked with the indices each may have
    placed = indexed_gpus(PARTIAL_NODE, None, 3, pool_bus_ids([published_gpus(PARTIAL_NODE)]))
    assert [(i, g["maybe"]) for i, g in placed] == [(0, [0, 1]), (1, [1, 2])]


def test_a_published_index_wins_over_the_bus_order():
    devs = [dev("gpu-0", "gpu", "0000:41:00.0", index=1), dev("gpu-1", "gpu", "0000:51:00.0", index=0)]
    assert [(i, g["minor"]) for i, g in indexed_gpus(devs, None, 2, ["0000:41:00.0", "0000:51:00.0"])] == [
        (1, 0),
        (0, 1),
    ]
