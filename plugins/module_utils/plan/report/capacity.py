# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity beyond the anchors: how many more of each device, and of each tenant's claim, fit right now.

Pure: it reads what plan/report/pool_report.py reads (observed.py: Nodes, the DRA driver's ResourceSlices,
allocated claims).
The counts are fragmentation-aware: a MIG profile is counted only where a free placement for it exists
(mig/placement.more_instances), never from free memory alone.

Facts used (reference nvidia-dra-driver-published.md, "MIG device" and "With DynamicMIG"):

* a static MIG device ``gpu-<minor>-mig-<profile>-<GI profile id>-<placement start>`` carries capacities
  ``memorySlice<N>`` = 1 for each memory slice it covers; it exists whether allocated or not, so what can be
  allocated of a profile is its free devices, and slices no instance covers are not usable until the layout
  changes;
* with DynamicMIG every possible placement of every profile is published (no ``memorySlice`` capacities, but
  ``consumesCounters`` with ``memory-slice-<N>`` counters); the allocated ones occupy their slices and the
  others can be created on demand where they still fit, together with what is allocated (compute slices,
  media engines, per-profile maximum);
* a full GPU (``gpu-<minor>``) is allocatable when neither it nor any MIG device of it is allocated;
* every device of one claim comes from one node; ``matchAttribute`` further keeps them on devices with one
  value of the attribute.

Only Ready, schedulable nodes count: a cordoned or NotReady node takes no new pod.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import more_instances
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    DRIVER,
    PCI_BUS_ID,
    PCIE_ROOT,
    pool_has_full_gpus,
    pool_mig_profiles,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.tenants import inventory_entries, template_class
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_ready, node_schedulable
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import (
    GpuDevice,
    pool_bus_ids,
    published_gpus,
    read_gpu_devices,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import expected_layout, place_gpus
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed, meta, node_devices

# gpu-<minor>-mig-<profile>-<GI profile id>-<placement start>
_MIG = re.compile(r"^gpu-(\d+)-mig-.*-(\d+)-(\d+)$")
_SLICE_CAPACITY = re.compile(r"^memorySlice(\d+)$")
_SLICE_COUNTER = re.compile(r"^memory-slice-(\d+)$")
FULL_GPU = "gpu"  # the key of whole GPUs beside the MIG profiles


def _read_slices(device, size: Optional[int]) -> List[int]:
    spec = device.get("basic") or device
    found = sorted(int(m.group(1)) for m in (_SLICE_CAPACITY.match(k) for k in (spec.get("capacity") or {})) if m)
    if found:
        return found
    for consumed in spec.get("consumesCounters") or []:
        found += [int(m.group(1)) for m in (_SLICE_COUNTER.match(k) for k in (consumed.get("counters") or {})) if m]
    if found:
        return sorted(set(found))
    match = _MIG.match(device.get("name") or "")
    if match and size:
        start = int(match.group(3))
        return list(range(start, start + size))
    return []


_SLICES: Dict[tuple, List[int]] = {}  # (capacity names, device name, size) -> slices: the same on every node


def _slices_of(device, size: Optional[int]) -> List[int]:
    """The memory slices a MIG device covers: its memorySlice<N> capacities, else its memory-slice-<N>
    counters, else its placement start (from the name) and the profile's size from the catalog."""
    spec = device.get("basic") or device
    if spec.get("consumesCounters"):
        return _read_slices(device, size)
    capacity = spec.get("capacity")
    key = (tuple(capacity) if capacity else (), device.get("name"), size)
    found = _SLICES.get(key)
    if found is None:
        if len(_SLICES) > 100000:
            _SLICES.clear()
        found = _SLICES[key] = _read_slices(device, size)
    return list(found)


_PROFILE_SIZE: Dict[tuple, Optional[int]] = {}


def _profile_size(gpu, profile: str) -> Optional[int]:
    """Memory slices of `profile` on the catalog GPU `gpu` (None when unknown), looked up once per model."""
    key = (gpu.key if gpu is not None else None, profile)
    if key not in _PROFILE_SIZE:
        known = profile_by_name(gpu, profile) if gpu is not None else None
        _PROFILE_SIZE[key] = known.memory_slices if known else None
    return _PROFILE_SIZE[key]


def read_node_gpus(
    pool, node_name: str, slices_by_pool, allocated, read: Optional[List[GpuDevice]] = None
) -> Tuple[Dict[int, dict], List[dict]]:
    """The node's GPUs read once, not yet placed at an index: ({minor: GPU entry}, the node's published_gpus, whose
    bus IDs pool_bus_ids gathers over the pool). `slices_by_pool`: the node's slices (Observed.node_slices; all
    pools' do too, slower), `allocated`: Observed.allocated. A GPU entry, as the picture and the counts need it:
    {"minor", "memory_slices" (None without MIG geometry), "full" ({"device", "claim"} or None), "instances":
    [{"device", "profile", "slices", "claim"}] (claim None when free), "dynamic", "attributes"}; place_node_gpus
    adds "index" and "maybe" (None, or the indices the GPU may have when it could not be placed by identity).
    `read`: the node's devices already read (Observed.gpu_devices_of), else they are read here."""
    if read is None:
        read = read_gpu_devices(node_devices(slices_by_pool, node_name))
    gpu = pool.catalog_gpu
    total = gpu.mig.memory_slices if gpu is not None and gpu.mig else None
    dynamic = pool.mig.mode == "dynamic"
    by_minor: Dict[int, dict] = {}
    for owner, dev, kind, minor, profile, _index, bus, root in read:
        name = dev.get("name") or ""
        entry = by_minor.get(minor)
        if entry is None:
            entry = by_minor[minor] = {
                "minor": minor,
                "memory_slices": total,
                "full": None,
                "instances": [],
                "dynamic": dynamic,
                "attributes": {},
            }
        claim = allocated.get((DRIVER, owner, name))
        if kind == "gpu":
            entry["full"] = {"device": name, "claim": claim}
        else:
            entry["instances"].append(
                {
                    "device": name,
                    "profile": profile,
                    "claim": claim,
                    "slices": _slices_of(dev, _profile_size(gpu, profile)),
                }
            )
        if root is not None:
            entry["attributes"][PCIE_ROOT] = root
        if bus is not None:
            entry["attributes"][PCI_BUS_ID] = bus
    return by_minor, published_gpus(None, read)


def place_node_gpus(pool, read, expected=None, bus_ids=None) -> List[dict]:
    """The GPU entries of read_node_gpus' `read`, each at its index by gpu_identity.place_gpus, sorted by index
    (`expected`: the node's expected layout, default the pool's; `bus_ids`: pool_bus_ids of the pool's nodes)."""
    by_minor, published = read
    if expected is None:
        expected = expected_layout(pool)
    out = []
    for index, gpu in place_gpus(published, expected, pool.gpu.per_node, bus_ids):
        entry = by_minor[gpu["minor"]]
        entry["index"] = index
        entry["maybe"] = gpu["maybe"]
        entry["instances"].sort(key=lambda i: (i["slices"][:1] or [99], i["profile"]))
        out.append(entry)
    return sorted(out, key=lambda e: e["index"])


def gpu_allocatable(pool, gpu: dict) -> Dict[str, int]:
    """{FULL_GPU or profile: how many more can be allocated now} on one GPU (each count on its own)."""
    taken = [i for i in gpu["instances"] if i["claim"]]
    whole_taken = gpu["full"] is not None and gpu["full"]["claim"]
    out: Dict[str, int] = {}
    if gpu["full"] is not None:
        out[FULL_GPU] = 0 if (whole_taken or taken) else 1
    if not gpu["dynamic"]:
        for instance in gpu["instances"]:
            out[instance["profile"]] = out.get(instance["profile"], 0) + (0 if instance["claim"] else 1)
        return out
    model = pool.catalog_gpu
    if model is None or not model.mig:
        return out
    occupied, kept = 0, {}
    for instance in taken:
        for index in instance["slices"]:
            occupied |= 1 << index
        kept[instance["profile"]] = kept.get(instance["profile"], 0) + 1
    for profile in model.mig.profiles:
        out[profile.name] = 0 if whole_taken else more_instances(model, profile.name, occupied, kept)
    return out


def offered_units(pool) -> List[str]:
    """What the pool's DeviceClasses offer, in the order a report lists them: whole GPUs, then profiles."""
    units = [FULL_GPU] if pool_has_full_gpus(pool) or pool.mig.mode == "dynamic" else []
    return units + pool_mig_profiles(pool)


def _sum(counts: List[Dict[str, int]], units: List[str]) -> Dict[str, int]:
    return {unit: sum(c.get(unit, 0) for c in counts) for unit in units}


def _template_unit(entry):
    """(unit counted, note or None) of a template's class: whole GPUs, a profile, or None when not counted."""
    if entry.role == "gpu":
        return FULL_GPU, None
    if entry.role == "mig":
        return entry.profile, None
    if entry.role == "extra":
        return entry.profile or FULL_GPU, "at most: the extra class's own selectors are not evaluated"
    return None, "%s devices are not counted" % entry.role


def _claims(gpus: List[dict], unit: str, pool, count: int, match_attribute: Optional[str], mode: str) -> int:
    """Claims of one node: `count` devices of `unit` each, from GPUs sharing `match_attribute` when given."""
    if mode == "All":
        return 1 if _all_free(gpus, unit) else 0
    groups: Dict[object, int] = {}
    for gpu in gpus:
        key = gpu["attributes"].get(match_attribute) if match_attribute else "node"
        if key is None:
            continue  # a device without the attribute cannot meet the constraint
        groups[key] = groups.get(key, 0) + gpu_allocatable(pool, gpu).get(unit, 0)
    return sum(units // count for units in groups.values())


def _all_free(gpus: List[dict], unit: str) -> bool:
    """allocationMode All: the claim takes every device of `unit` on the node, so all must be free (and one
    must exist). Dynamic MIG publishes every possible placement, which one claim cannot all take: not counted."""
    devices = []
    for gpu in gpus:
        if gpu["dynamic"]:
            return False
        if unit == FULL_GPU and gpu["full"] is not None:
            devices.append(gpu["full"])
        devices += [i for i in gpu["instances"] if i["profile"] == unit]
    return bool(devices) and not any(d["claim"] for d in devices)


def pool_capacity(cluster, pool, nodes: List[dict], observed: Observed, root: str = "gpupool_cluster") -> dict:
    """{"allocatable": {unit: n}, "templates": [...], "nodes": {node: {"gpu_devices": [...], "allocatable": {...}}},
    "left_out": [{"node", "why"}]} for one present pool and its nodes."""
    units = offered_units(pool)
    per_node, left_out, counted = {}, [], []
    ordered = sorted(nodes, key=lambda n: meta(n).get("name"))
    names = [meta(n).get("name") for n in ordered]
    allocated = observed.allocated
    read = {name: read_node_gpus(pool, name, {}, allocated, observed.gpu_devices_of(name)) for name in names}
    bus_ids = pool_bus_ids(r[1] for r in read.values())
    groups = assign_groups(pool, nodes) if pool.mig.mode == "static" and pool.mig.groups else {}
    for node in ordered:
        name = meta(node).get("name")
        expected = expected_layout(pool, groups[name]) if groups.get(name) is not None else None
        gpus = place_node_gpus(pool, read[name], expected, bus_ids)
        counts = [gpu_allocatable(pool, g) for g in gpus]
        usable = node_ready(node) and node_schedulable(node)
        if not usable:
            left_out.append({"node": name, "why": "cordoned" if node_ready(node) else "NotReady"})
        per_node[name] = {
            "gpu_devices": gpus,
            "allocatable": _sum(counts, units) if usable else dict.fromkeys(units, 0),
        }
        if usable:
            counted.append(gpus)
    templates = []
    for entry in inventory_entries(cluster, root):
        template = entry.template
        if template.pool != pool.name:
            continue
        device_class = template_class(cluster, template)[0]
        row = {
            "namespace": entry.namespace,
            "name": template.name,
            "count": template.count,
            "device_class": device_class.name if device_class else None,
            "allocatable": None,
        }
        unit, note = _template_unit(device_class) if device_class else (None, "no DeviceClass")
        if unit is not None:
            row["allocatable"] = sum(
                _claims(gpus, unit, pool, template.count, template.match_attribute, template.allocation_mode)
                for gpus in counted
            )
        if note:
            row["note"] = note
        templates.append(row)
    return {
        "allocatable": _sum([n["allocatable"] for n in per_node.values()], units),
        "templates": templates,
        "nodes": per_node,
        "left_out": left_out,
    }
