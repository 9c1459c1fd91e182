# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU and MIG devices the NVIDIA DRA driver publishes for a node, read once each. Pure.

Facts used (reference nvidia-dra-mig-imex.md §1.5-1.6, §2.2):

* a full GPU is device ``gpu-<minor>`` with attribute ``type`` = gpu, a MIG device is ``gpu-<parent minor>-mig-...``
  with ``type`` = mig and ``profile``. The number is the /dev/nvidiaN *minor*, not the NVML index that mig-parted's
  ``devices`` and the inventory's ``mig.layouts`` use (driver issue #563), so it only tells which devices share a
  GPU. The index is the ``index`` / ``parentIndex`` attribute where the driver publishes it (v25.3.x); newer
  drivers do not (gpu_identity.py places those GPUs by ``resource.kubernetes.io/pciBusID``);
* attributes are published bare (``type``) or qualified by the driver (``gpu.nvidia.com/type``), under
  ``attributes`` (v1) or ``basic.attributes`` (v1beta1), each value as {"string" | "int" | "bool" | "version": v}.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER, PCI_BUS_ID, PCIE_ROOT

Obj = Dict[str, Any]
# (owner pool, device, "gpu" | "mig", minor, MIG profile or None, published index or None, bus ID or None, pcieRoot)
GpuDevice = Tuple[str, Obj, str, int, Optional[str], Optional[int], Optional[str], Any]

# The parent's minor in a device name: which devices belong to one GPU (not its index).
_FULL = re.compile(r"^gpu-(\d+)$")
_MIG = re.compile(r"^gpu-(\d+)-mig-")


def _value(value):
    """A published attribute's value: {"string": v} (or int, bool, version) unwrapped; a bare value as is."""
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version"):
            if key in value:
                return value[key]
    return value


def attribute(device: Obj, name: str) -> Any:
    """An attribute value of a device (v1: device.attributes; v1beta1: device.basic.attributes), bare or qualified
    by the driver; None when absent."""
    attrs = (device.get("basic") or device).get("attributes") or {}
    value = attrs.get(name)
    if value is None:
        value = attrs.get("%s/%s" % (DRIVER, name))
    return _value(value)


_NAMES: Dict[str, Optional[Tuple[str, int]]] = {}  # device name -> ("gpu" | "mig", minor) or None: names repeat


def _name_facts(name: str) -> Optional[Tuple[str, int]]:
    if name not in _NAMES:
        if len(_NAMES) > 100000:
            _NAMES.clear()
        full, mig = _FULL.match(name), _MIG.match(name)
        _NAMES[name] = ("gpu", int(full.group(1))) if full else ("mig", int(mig.group(1))) if mig else None
    return _NAMES[name]


_Q_TYPE, _Q_PROFILE = DRIVER + "/type", DRIVER + "/profile"
_Q_INDEX, _Q_PARENT = DRIVER + "/index", DRIVER + "/parentIndex"
_Q_BUS = DRIVER + "/pcieBusID"


def read_gpu_devices(devices: Iterable[Tuple[str, Obj]]) -> List[GpuDevice]:
    """[(owner, device, kind, minor, profile, index, bus, root)] of the whole-GPU ("gpu") and MIG ("mig") devices
    the driver published, each device's attributes read once; its other devices (channels, daemons) are left out.
    minor: from the device name (gpu-<minor>...); profile: a MIG device's; index: the published ``index`` /
    ``parentIndex`` (older drivers) or None; bus: the PCI bus ID, lowercase, or None; root: the pcieRoot or None.
    Hot at scale (2,000 nodes x 8 GPUs is 150,000 devices): plain tuples and direct lookups."""
    out = []
    names = _NAMES
    for owner, dev in devices:
        name = dev.get("name") or ""
        facts = names.get(name) if name in names else _name_facts(name)
        if facts is None:
            continue
        attrs = (dev.get("basic") or dev).get("attributes") or {}
        get = attrs.get
        kind = _value(get("type") or get(_Q_TYPE))
        if kind != facts[0]:
            continue
        index = get("index" if kind == "gpu" else "parentIndex")
        if index is None:  # a bare 0 is an index too
            index = get(_Q_INDEX if kind == "gpu" else _Q_PARENT)
        bus = get(PCI_BUS_ID) or get("pcieBusID") or get(_Q_BUS)
        root = get(PCIE_ROOT)
        profile = (_value(get("profile") or get(_Q_PROFILE)) or "unknown") if kind == "mig" else None
        bus = _value(bus) if bus is not None else None
        index = _value(index) if index is not None else None
        out.append(
            (
                owner,
                dev,
                kind,
                facts[1],
                profile,
                int(index) if index is not None else None,
                str(bus).lower() if bus else None,
                _value(root) if root is not None else None,
            )
        )
    return out


def gpu_devices(devices: Iterable[Tuple[str, Obj]]):
    """(owner, device, type, minor) of each whole-GPU ("gpu") and MIG ("mig") device the driver published; its
    other devices (channels, daemons) are left out. The minor comes from the device name (gpu-<minor>...)."""
    for d in read_gpu_devices(devices):
        yield d[0], d[1], d[2], d[3]


def published_gpus(devices: Optional[Iterable[Tuple[str, Obj]]], read: Optional[List[GpuDevice]] = None) -> List[dict]:
    """The node's GPUs as published: [{"minor", "index" (or None), "order", "bus", "layout"}] where layout is None
    for a full GPU or {profile: count} of its MIG devices; "order" sorts like NVML enumerates (PCI bus ID, else the
    minor). `read`: the devices already read (read_gpu_devices), else they are read from `devices`."""
    gpus: Dict[int, dict] = {}
    for d in read if read is not None else read_gpu_devices(devices or []):
        gpu = gpus.get(d[3])
        if gpu is None:
            gpu = gpus[d[3]] = {"minor": d[3], "index": None, "order": None, "bus": None, "layout": None}
        if d[5] is not None:
            gpu["index"] = d[5]
        if d[6]:
            gpu["order"] = gpu["bus"] = d[6]
        if d[2] == "mig":
            layout = gpu["layout"]
            if layout is None:
                layout = gpu["layout"] = {}
            layout[d[4]] = layout.get(d[4], 0) + 1
    return sorted(gpus.values(), key=lambda g: (g["order"] is None, g["order"] or "", g["minor"]))


def pool_bus_ids(gpus_of_nodes: Iterable[List[dict]]) -> List[str]:
    """The sorted PCI bus IDs the GPUs of a pool's nodes publish (`gpus_of_nodes`: published_gpus of each node).
    The nodes of one pool share a flavor, so the same PCI slots: NVML numbers the GPUs in PCI bus order, so when
    the set has one bus ID per GPU of a node, a GPU's index is its bus ID's place in it, on every node, whether
    the node publishes all its GPUs or not (a GPU with MIG on and no instances publishes nothing)."""
    return sorted({g["bus"] for gpus in gpus_of_nodes for g in gpus if g["bus"]})
