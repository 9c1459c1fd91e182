# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pool and unit a claim's DeviceClass stands for. Pure.

Three ways, in this order:

1. a class the inventory declares (model/names.device_class_names): its pool, and whole GPUs or its profile;
2. a name gpupool *would* give a class once the pool offers the unit: ``<pool>`` (whole GPUs) or
   ``<pool>-<profile>`` for a MIG profile of the pool's GPU (model/names: full_gpu_class_name, mig_class_name) -
   a claim that asks for it waits for a change the advisor can propose;
3. a class in the cluster the inventory does not declare: its selectors are matched against the published devices
   (plan/advice/selectors.py reads the simple shapes only); the pools and units of the devices it selects.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    DRIVER,
    device_class_names,
    full_gpu_class_name,
    mig_class_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import selectors
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import attribute, gpu_devices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import node_devices


class Offer(NamedTuple):
    """What a DeviceClass offers: `unit` (FULL_GPU or a profile) of `pool`."""

    pool: str
    unit: str
    how: str  # declared | pattern | selected
    note: Optional[str] = None


def class_unit(entry) -> Optional[str]:
    if entry.role == "gpu":
        return FULL_GPU
    if entry.role == "mig":
        return entry.profile
    if entry.role == "extra":
        return entry.profile or FULL_GPU
    return None  # vfio: not a unit the advisor counts


def declared_offers(cluster) -> Dict[str, Offer]:
    """{class name: Offer} of every class the inventory's present pools declare."""
    out: Dict[str, Offer] = {}
    for pool in cluster.present_pools:
        for entry in device_class_names(pool):
            unit = class_unit(entry)
            if unit is None:
                continue
            note = "an extra class: its own selectors (memory, compute capability) are not evaluated"
            out.setdefault(entry.name, Offer(pool.name, unit, "declared", note if entry.role == "extra" else None))
    return out


def pattern_offer(cluster, name: str) -> Optional[Offer]:
    """The pool and unit a class of that name would offer, when it is the name gpupool gives such a class."""
    for pool in sorted(cluster.present_pools, key=lambda p: -len(p.name)):
        if name == full_gpu_class_name(pool):
            return Offer(pool.name, FULL_GPU, "pattern")
        gpu = pool.catalog_gpu
        if gpu is None or not gpu.mig or not name.startswith(pool.name + "-"):
            continue
        for profile in gpu.mig.profiles:
            if mig_class_name(pool, profile.name) == name:
                return Offer(pool.name, profile.name, "pattern")
    return None


def selected_offers(device_class: dict, published: Dict[str, List[tuple]]) -> Optional[List[Offer]]:
    """Offers of a class the inventory does not declare, from the devices its selectors select; None when its
    selectors are not of the shapes the advisor reads. `published`: {pool: [(driver, device, unit)]}."""
    expressions = [
        (s.get("cel") or {}).get("expression") or "" for s in (device_class.get("spec") or {}).get("selectors") or []
    ]
    selects = selectors.parse(expressions)
    if selects is None:
        return None
    out: List[Offer] = []
    for pool, devices in published.items():
        for driver, device, unit in devices:
            if selects(driver, device):
                offer = Offer(pool, unit, "selected")
                if offer not in out:
                    out.append(offer)
    return out


def published_units(node_names: List[str], by_node: Dict[str, Dict[str, list]]) -> List[tuple]:
    """[(driver, device, unit)] of every GPU and MIG device the nodes publish (for selected_offers)."""
    out = []
    for name in node_names:
        for _owner, device, kind, _minor in gpu_devices(node_devices(by_node.get(name) or {}, name)):
            out.append((DRIVER, device, FULL_GPU if kind == "gpu" else (attribute(device, "profile") or "unknown")))
    return out
