# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods hold devices of some GPUs of a node, read from the slices and the claims. Pure.

The per-GPU MIG rollout (plan/mig/per_gpu.py) evicts only these pods; the report and the advisor count them as what
a change disrupts. It lives here, beside the readers of slices it uses (observed.py, devices.py, gpu_identity.py),
because plan/mig/ ranks below plan/report/ (tests/unit/plugins/test_layering.py); its types are plan/mig's.

Facts used (reference nvidia-dra-driver-published.md, dra-1.33-1.37-and-driver-0.5.md §2):

* a device's GPU: the real driver publishes ``gpu-<minor>`` and ``gpu-<minor>-mig-...`` with a MIG device's
  ``parentUUID`` and the parent's ``resource.kubernetes.io/pciBusID``, and no GPU index since v25.8 (``index`` /
  ``parentIndex`` before); the index comes from gpu_identity.place_gpus (the attribute, else the PCI bus order).
  A device whose index that rule only guesses, and that may sit on a changing GPU, is ``unplaced``;
* a claim holds the devices in ``status.allocation.devices.results[]`` (driver, pool, device); the pods using it
  are in ``status.reservedFor[]`` (resource ``pods``, name, uid), and a pod names its claims in
  ``status.resourceClaimStatuses[].resourceClaimName`` (claims made from templates), ``spec.resourceClaims[]
  .resourceClaimName`` and ``status.extendedResourceClaimStatus.resourceClaimName`` (KEP-5004).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.per_gpu import DeviceRef, GpuHolders, Holder
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import published_gpus, read_gpu_devices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import place_gpus
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import (
    current_slices,
    meta,
    node_devices,
)

Obj = Dict[str, Any]


def _placed(
    read: list, gpus_per_node: Optional[int], bus_ids: Optional[List[str]]
) -> Dict[int, Tuple[int, Optional[Set[int]]]]:
    """{minor: (index, the indices it may have, None: any)}; the second is {index} exactly when the index is known
    (the published attribute, or the PCI bus order of a node or pool whose GPUs all publish a bus ID)."""
    gpus = published_gpus(None, read=read)
    placed = place_gpus(gpus, None, gpus_per_node, bus_ids)
    by_attribute = bool(gpus) and all(g["index"] is not None for g in gpus)
    out: Dict[int, Tuple[int, Optional[Set[int]]]] = {}
    for index, gpu in placed:
        may: Optional[Set[int]] = None  # numbered by position without gpus_per_node: any index
        if by_attribute or (gpus_per_node and gpu["maybe"] is None):
            may = {index}
        elif gpu["maybe"] is not None:
            may = set(gpu["maybe"])
        out[gpu["minor"]] = (index, may)
    return out


def _claim_refs(pod: Obj) -> Set[str]:
    """The names of the ResourceClaims a pod uses (in its own namespace)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    names = {c.get("resourceClaimName") for c in status.get("resourceClaimStatuses") or []}
    names |= {c.get("resourceClaimName") for c in spec.get("resourceClaims") or []}
    names.add((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
    return {n for n in names if n}


def holders_of(
    gpu_indices: Iterable[int],
    node: str,
    slices: Sequence[Obj],
    claims: Sequence[Obj],
    pods: Sequence[Obj] = (),
    gpus_per_node: Optional[int] = None,
    bus_ids: Optional[List[str]] = None,
) -> GpuHolders:
    """The devices `node` publishes on the GPUs `gpu_indices` (NVML indices, as mig-parted and the inventory count),
    the pods whose claims hold any of them, and the devices whose GPU cannot be told.

    slices, claims, pods: as listed (any resource.k8s.io version; pods: those of the node, optional: they add the
    pods that name a holding claim but are not, or not yet, in its reservedFor, and drop finished ones);
    gpus_per_node, bus_ids: the pool's GPUs per node and PCI bus IDs (report/devices.pool_bus_ids), which place the
    GPUs of a node that does not publish all of them."""
    wanted = set(gpu_indices)
    read = read_gpu_devices(node_devices(current_slices(list(slices)), node))
    placed = _placed(read, gpus_per_node, bus_ids)
    devices: List[DeviceRef] = []
    unplaced: List[str] = []
    for owner, dev, _kind, minor, _profile, _index, _bus, _root in read:
        index, may = placed[minor]
        if may is not None and not may & wanted:
            continue
        if may == {index}:
            devices.append(DeviceRef(DRIVER, owner, dev.get("name") or "", index))
        else:
            unplaced.append(dev.get("name") or "")
    where = {(d.driver, d.pool, d.device): d for d in devices}
    held: Dict[str, List[DeviceRef]] = {}  # "namespace/claim" -> the devices it holds
    uses: Dict[Tuple[str, str], Obj] = {}  # (namespace, claim) -> the claim
    for claim in claims:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        mine = [where[k] for k in ((r.get("driver"), r.get("pool"), r.get("device")) for r in results) if k in where]
        if mine:
            ns, name = meta(claim).get("namespace") or "", meta(claim).get("name") or ""
            held["%s/%s" % (ns, name)] = mine
            uses[(ns, name)] = claim
    finished = {
        (meta(p).get("namespace"), meta(p).get("name"))
        for p in pods
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    }
    pods_of: Dict[Tuple[str, str], Dict[str, Any]] = {}

    def add(ns: str, name: str, uid: Optional[str], claim: str) -> None:
        if (ns, name) in finished:
            return
        entry = pods_of.setdefault((ns, name), {"uid": uid, "claims": set()})
        entry["uid"] = entry["uid"] or uid
        entry["claims"].add(claim)

    for (ns, name), claim in uses.items():
        for consumer in (claim.get("status") or {}).get("reservedFor") or []:
            if consumer.get("resource") == "pods" and not consumer.get("apiGroup"):
                add(ns, consumer.get("name") or "", consumer.get("uid"), "%s/%s" % (ns, name))
    for pod in pods:
        ns = meta(pod).get("namespace") or ""
        for claim_name in _claim_refs(pod):
            if (ns, claim_name) in uses:
                add(ns, meta(pod).get("name") or "", meta(pod).get("uid"), "%s/%s" % (ns, claim_name))
    holders = []
    for (ns, name), entry in pods_of.items():
        refs = sorted(entry["claims"])
        devs = sorted({d for ref in refs for d in held[ref]})
        holders.append(
            Holder(
                ns,
                name,
                entry["uid"],
                tuple(refs),
                tuple(d.device for d in devs),
                tuple(sorted({d.gpu for d in devs})),
            )
        )
    return GpuHolders(tuple(sorted(devices)), tuple(sorted(holders)), tuple(sorted(unplaced)))
