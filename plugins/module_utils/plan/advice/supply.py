# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each pool has: per node and GPU index its devices, what is free of each unit, what is held. Pure.

Read the way the pool report reads it (one source of truth): the GPU and MIG devices a node publishes and the claim
holding each come from plan/report/capacity.read_node_gpus, what more fits on a GPU from capacity.gpu_allocatable
(fragmentation-aware: mig/placement.more_instances for dynamic MIG). A *unit* is what a DeviceClass offers: whole
GPUs (capacity.FULL_GPU) or one MIG profile.

A GPU index is *frozen* when a device of that GPU is allocated on any node of the pool: a pool's MIG layout is the
same on every node (but on the nodes of a MIG group), and a GPU whose layout changes loses every instance on it (the MIG manager creates the GPU's
new instances from scratch), so the advisor never changes the layout of such an index. Which index a GPU has comes
from its identity, never its position among what a node publishes (gpu_identity.place_gpus): the driver publishes no
index, and a GPU with MIG on and no instances publishes nothing; a GPU that cannot be placed by identity freezes
every index it may have.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import more_instances
from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER, PCI_BUS_ID, PCIE_ROOT
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_ready, node_schedulable
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import (
    FULL_GPU,
    gpu_allocatable,
    place_node_gpus,
    read_node_gpus,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import (
    pool_bus_ids,
    read_gpu_devices,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import expected_layout
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import node_devices

Obj = Dict[str, Any]


def unit_slices(pool, unit: str) -> int:
    """Memory slices one device of `unit` covers (a whole GPU: all of them; 1 without MIG geometry)."""
    gpu = pool.catalog_gpu
    total = gpu.mig.memory_slices if gpu is not None and gpu.mig else 1
    if unit == FULL_GPU:
        return total
    profile = profile_by_name(gpu, unit) if gpu is not None and gpu.mig else None
    return profile.memory_slices if profile else total


_EMPTY_MAX: Dict[str, Dict[str, int]] = {}


def _dynamic_max(pool) -> Dict[str, int]:
    """Per profile, how many instances an empty GPU of the pool's model holds (dynamic MIG publishes placements)."""
    model = pool.catalog_gpu
    if model is None or not model.mig:
        return {}
    if model.key not in _EMPTY_MAX:
        _EMPTY_MAX[model.key] = {p.name: more_instances(model, p.name) for p in model.mig.profiles}
    return _EMPTY_MAX[model.key]


def _gpu_state(pool, gpu: dict) -> dict:
    """One GPU as the advisor needs it: free and total units, held claims, free memory slices, free fraction."""
    free = gpu_allocatable(pool, gpu)
    total: Dict[str, int] = {}
    if gpu["full"] is not None:
        total[FULL_GPU] = 1
    if gpu["dynamic"]:
        total.update(_dynamic_max(pool))
    else:
        for instance in gpu["instances"]:
            total[instance["profile"]] = total.get(instance["profile"], 0) + 1
    held = [i["claim"] for i in gpu["instances"] if i["claim"]]
    if gpu["full"] is not None and gpu["full"]["claim"]:
        held.append(gpu["full"]["claim"])
    size = gpu["memory_slices"]
    if size:
        taken = {s for i in gpu["instances"] if i["claim"] for s in i["slices"]}
        free_slices = (
            [] if gpu["full"] is not None and gpu["full"]["claim"] else [s for s in range(size) if s not in taken]
        )
        fraction = len(free_slices) / float(size)
    else:
        free_slices = []
        fraction = 0.0 if held else 1.0
    return {
        "index": gpu["index"],
        "free": {u: n for u, n in free.items() if n},
        "total": total,
        "held": held,
        "free_slices": free_slices,
        "free_fraction": fraction,
        "attributes": gpu.get("attributes") or {},
        "device": gpu,
    }


def node_supply(
    pool,
    node: Obj,
    by_node: Dict[str, Dict[str, List[Obj]]],
    allocated,
    read=None,
    bus_ids=None,
    group: Optional[str] = None,
) -> dict:
    """{"name", "usable", "why", "group", "gpus": {index: GPU state}, "node"} of one node of the pool; `read`: its
    capacity.read_node_gpus (else read here), `bus_ids`: pool_bus_ids of the pool's nodes, `group`: the MIG group
    whose layout the node carries (node_groups.assign_groups; None: the pool's)."""
    name = (node.get("metadata") or {}).get("name")
    ready, schedulable = node_ready(node), node_schedulable(node)
    if read is None:
        read = read_node_gpus(pool, name, by_node.get(name) or {}, allocated)
    expected = expected_layout(pool, group) if group is not None else None
    gpus = place_node_gpus(pool, read, expected, bus_ids)
    return {
        "name": name,
        "usable": ready and schedulable,
        "why": None if ready and schedulable else ("NotReady" if not ready else "cordoned"),
        "group": group,
        "gpus": {g["index"]: _gpu_state(pool, g) for g in gpus},
        "node": node,
    }


def pool_supply(pool, nodes: List[Obj], by_node, allocated) -> dict:
    """{"pool", "nodes": [node supply], "frozen": {index: ["node GPU i: claim", ...]}, "uncertain": [node names]}
    of one present pool.

    Each GPU is placed at its index by identity (gpu_identity.place_gpus: the published index, else its PCI bus ID
    among the pool's). A GPU that could not be placed so ("maybe": the indices it may have) freezes every index it
    may have while it holds an allocated device, and its node is listed in "uncertain"."""
    ordered = sorted(nodes, key=lambda n: n["metadata"]["name"])
    read = {
        n["metadata"]["name"]: read_node_gpus(
            pool, n["metadata"]["name"], by_node.get(n["metadata"]["name"]) or {}, allocated
        )
        for n in ordered
    }
    bus_ids = pool_bus_ids(r[1] for r in read.values())
    assignment = assign_groups(pool, ordered)
    rows = [
        node_supply(
            pool, n, by_node, allocated, read[n["metadata"]["name"]], bus_ids, assignment.get(n["metadata"]["name"])
        )
        for n in ordered
    ]
    frozen: Dict[int, List[str]] = {}
    uncertain = []
    for row in rows:
        for index, gpu in row["gpus"].items():
            maybe = gpu["device"].get("maybe")
            if maybe is not None and row["name"] not in uncertain:
                uncertain.append(row["name"])
            for claim in gpu["held"]:
                for at in maybe if maybe is not None else [index]:
                    where = "GPU %d" % index if at == index else "GPU %d (placed at %d by position)" % (at, index)
                    frozen.setdefault(at, []).append("%s %s: %s" % (row["name"], where, claim))
    return {"pool": pool, "nodes": rows, "frozen": frozen, "uncertain": uncertain}


def groups(row: dict, attribute: Optional[str]) -> Dict[Any, List[int]]:
    """The node's GPU indices grouped by the value of `attribute` (None: one group, the node). A GPU that
    publishes no value (nothing published) is a group of its own: it cannot be matched with another."""
    if attribute is None:
        return {None: sorted(row["gpus"])}
    out: Dict[Any, List[int]] = {}
    for index in sorted(row["gpus"]):
        value = row["gpus"][index]["attributes"].get(attribute)
        out.setdefault(value if value is not None else ("gpu", index), []).append(index)
    return out


def index_partition(row: dict, per_node: int, attribute: Optional[str]) -> List[List[int]]:
    """The node's GPU indices 0..per_node-1 in groups by `attribute` (None: one group), indices it does not
    publish each alone."""
    if attribute is None:
        return [list(range(per_node))]
    seen = groups(row, attribute)
    parts = [sorted(v) for v in seen.values()]
    known = {i for part in parts for i in part}
    return sorted(parts + [[i] for i in range(per_node) if i not in known])


def _published(device: Obj, attribute: str) -> Any:
    """A device's value of the fully qualified `attribute` (``gpu.nvidia.com/parentUUID``), as the scheduler looks
    it up: qualified, or bare when the domain is the driver's (the NVIDIA driver publishes its own bare); None when
    absent. A list value (DRAListTypeAttributes) as a tuple, to compare."""
    attrs = (device.get("basic") or device).get("attributes") or {}
    value = attrs.get(attribute)
    domain, _slash, name = attribute.rpartition("/")
    if value is None and domain in ("", DRIVER):
        value = attrs.get(name)
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version"):
            if key in value:
                value = value[key]
                break
    if isinstance(value, list):
        value = tuple(value)
    return value if value is None or isinstance(value, (str, int, bool, float, tuple)) else repr(value)


def add_attributes(supply: dict, attributes: Iterable[str], by_node) -> None:
    """Read the `attributes` (those the waiting claims' matchAttribute constraints name) into each GPU's
    "attributes", and how the pool publishes each into supply["attribute_kinds"]: "gpu" (every device of a GPU has
    the GPU's value: parentUUID, productName, a whole GPU's uuid - the GPUs are grouped by it), "device" (devices of
    one GPU differ: a MIG device's uuid - no two devices share a value) or "none" (no device publishes it: the
    scheduler allocates no device under the constraint). pcieRoot and pciBusID are read with the devices already
    (capacity.read_node_gpus). Only called when a claim names another attribute: the devices are read again."""
    wanted = sorted({a for a in attributes if a and a not in (PCIE_ROOT, PCI_BUS_ID)})
    kinds = supply.setdefault("attribute_kinds", {})
    wanted = [a for a in wanted if a not in kinds]
    if not wanted:
        return
    seen = dict.fromkeys(wanted, "none")
    for row in supply["nodes"]:
        by_minor: Dict[int, List[Obj]] = {}
        for d in read_gpu_devices(node_devices(by_node.get(row["name"]) or {}, row["name"])):
            by_minor.setdefault(d[3], []).append(d[1])
        for gpu in row["gpus"].values():
            devices = by_minor.get(gpu["device"].get("minor"), [])
            attrs = gpu["device"].setdefault("attributes", {})
            for attribute in wanted:
                values = [_published(d, attribute) for d in devices]
                present = {v for v in values if v is not None}
                if len(present) == 1 and None not in values:
                    attrs[attribute] = present.pop()
                    if seen[attribute] == "none":
                        seen[attribute] = "gpu"
                elif present:
                    seen[attribute] = "device"  # no value of the GPU: each device alone (its group is the GPU's)
            gpu["attributes"] = attrs
    kinds.update(seen)
