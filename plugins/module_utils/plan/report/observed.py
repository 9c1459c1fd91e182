# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a step saw in the cluster, as one object the pool report, the capacity counts and the advisor read. Pure.

The step that lists the objects builds one `Observed` (plain dicts as the API returns them: resource.k8s.io v1,
v1beta2 or v1beta1) and hands it down; the views read from the lists (the newest slices per pool and per node, the
allocated devices) are worked out once, on first use, and shared by every reader.

Facts used (reference nvidia-dra-mig-imex.md §1.5-1.6):

* a ResourceSlice pool may span several slices and is republished with a higher ``spec.pool.generation``; only the
  newest generation counts;
* the NVIDIA DRA driver publishes one pool per node, named after the node (``spec.nodeName`` names it too);
* an allocated device is listed in a ResourceClaim's ``status.allocation.devices.results`` by ``driver``, ``pool``
  and ``device``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import GpuDevice, read_gpu_devices

Obj = Dict[str, Any]
SlicesByPool = Dict[str, List[Obj]]


def meta(obj: Obj) -> Obj:
    """An object's metadata ({} when it has none)."""
    return obj.get("metadata") or {}


def current_slices(slices: List[Obj], driver: str = DRIVER) -> SlicesByPool:
    """Slices of `driver` in the newest generation of their pool: {pool name: [slices]}."""
    newest: Dict[str, Tuple[int, List[Obj]]] = {}
    for sl in slices:
        spec = sl.get("spec") or {}
        if spec.get("driver") != driver:
            continue
        pool = (spec.get("pool") or {}).get("name") or spec.get("nodeName")
        gen = int((spec.get("pool") or {}).get("generation") or 0)
        have = newest.get(pool)
        if have is None or gen > have[0]:
            newest[pool] = (gen, [sl])
        elif gen == have[0]:
            have[1].append(sl)
    return {pool: sls for pool, (_gen, sls) in newest.items()}


def slices_by_node(slices_by_pool: SlicesByPool) -> Dict[str, SlicesByPool]:
    """{node: {pool: [slices]}} holding, for each node, exactly the slices node_devices takes for it (those with its
    nodeName, and those of the pool named after it), so reading 2,000 nodes stays linear."""
    out: Dict[str, SlicesByPool] = {}
    for pool, sls in slices_by_pool.items():
        for sl in sls:
            for key in {(sl.get("spec") or {}).get("nodeName"), pool} - {None}:
                out.setdefault(key, {}).setdefault(pool, []).append(sl)
    return out


def node_devices(slices_by_pool: SlicesByPool, node_name: str) -> List[Tuple[str, Obj]]:
    """[(pool, device dict)] the driver publishes for a node (pool named after the node, or nodeName)."""
    out = []
    for pool, sls in sorted(slices_by_pool.items()):
        for sl in sls:
            spec = sl.get("spec") or {}
            if spec.get("nodeName") != node_name and pool != node_name:
                continue
            for dev in spec.get("devices") or []:
                out.append((pool, dev))
    return out


def allocated_devices(claims: List[Obj]) -> Dict[Tuple[str, str, str], str]:
    """{(driver, pool, device): "namespace/claim"} from ResourceClaim status.allocation."""
    out: Dict[Tuple[str, str, str], str] = {}
    for claim in claims:
        alloc = (claim.get("status") or {}).get("allocation") or {}
        results = (alloc.get("devices") or {}).get("results") or []
        if results:
            ref = "%s/%s" % (meta(claim).get("namespace"), meta(claim).get("name"))
            for res in results:
                out.setdefault((res.get("driver"), res.get("pool"), res.get("device")), ref)
    return out


@dataclass(frozen=True, eq=False)
class Observed:
    """The objects one step listed (each list as the API returned it). `daemonsets` and `compute_domains` are None
    when the step did not read them: the report then skips the DRA driver's gates, or the ComputeDomains."""

    nodes: List[Obj] = field(default_factory=list)
    slices: List[Obj] = field(default_factory=list)
    claims: List[Obj] = field(default_factory=list)
    device_classes: List[Obj] = field(default_factory=list)
    pods: List[Obj] = field(default_factory=list)
    daemonsets: Optional[List[Obj]] = None
    compute_domains: Optional[List[Obj]] = None
    compute_domains_served: bool = True  # whether the cluster serves the ComputeDomain CRD at all
    # each node's GPU devices as read_gpu_devices reads them: the report and the capacity counts read them once
    _gpu_devices: Dict[str, List[GpuDevice]] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def slices_by_pool(self) -> SlicesByPool:
        """current_slices of the GPU driver: the newest generation of each pool."""
        return current_slices(self.slices)

    @cached_property
    def slices_by_node(self) -> Dict[str, SlicesByPool]:
        """slices_by_node of slices_by_pool: each node's slices, found without scanning every pool."""
        return slices_by_node(self.slices_by_pool)

    @cached_property
    def allocated(self) -> Dict[Tuple[str, str, str], str]:
        """allocated_devices of the claims."""
        return allocated_devices(self.claims)

    def node_slices(self, node_name: str) -> SlicesByPool:
        """The slices of one node, by pool (what node_devices and capacity.read_node_gpus read)."""
        return self.slices_by_node.get(node_name) or {}

    def devices_of(self, node_name: str) -> List[Tuple[str, Obj]]:
        """node_devices of one node: [(pool, device)]."""
        return node_devices(self.node_slices(node_name), node_name)

    def gpu_devices_of(self, node_name: str) -> List[GpuDevice]:
        """read_gpu_devices of one node's devices, read on first use."""
        found = self._gpu_devices.get(node_name)
        if found is None:
            found = self._gpu_devices[node_name] = read_gpu_devices(self.devices_of(node_name))
        return found
