# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The step of one node in a per-GPU MIG rollout: how new allocations are stopped on the changing GPUs, which pods
move, and why. Pure; planned only (k8s/mig_rollout.py still takes the node-wide path: docs/operations.md).

Three ways, in order of preference (issue #35):

  taint   the server serves DeviceTaintRule (KEP-5055): one rule per published device of the changing GPUs, effect
          NoSchedule, keeps the scheduler from allocating them; the pods whose claims hold them are evicted (the
          Eviction API, PodDisruptionBudgets honoured, as the drain does); the node stays schedulable, so a pod that
          asks a device of an unchanged GPU still lands there during the change;
  cordon  the server does not serve DeviceTaintRule: the node is cordoned, and still only those holders are evicted;
  drain   the change needs the node's other GPUs quiet (a MIG mode toggle that needs a GPU reset: plan/mig/
          gpu_changes.py), or the slices do not tell which GPU a device sits on: cordon and drain, as today.

DeviceTaintRule is ``resource.k8s.io/v1alpha3`` on 1.33-1.35 (alpha: gate DRADeviceTaints and the API version off by
default), ``v1beta2`` on 1.36 (beta), stable on 1.37 (reference dra-1.33-1.37-and-driver-0.5.md §2 and §5.4); the
rule written here uses only ``spec.deviceSelector.{driver,pool,device}`` and ``spec.taint.{key,value,effect}``, which
every one of those versions has. The caller says which version the server serves (API discovery), or None.

The properties (tests/unit/plugins/module_utils/plan/mig/test_per_gpu.py): a per-GPU step never evicts a pod that
holds no device of a changing GPU, and evicts every pod that holds one; a mode toggle that needs a reset is always
node-wide; no change, no step.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CORDON_REASON_ANNOTATION,
    MANAGED_BY,
    MIG_TAINT_KEY,
    MIG_TAINT_NODE_LABEL,
    OWNER_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import is_dns_subdomain, is_label_value
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.gpu_changes import GpuChanges

NONE, TAINT, CORDON, DRAIN = "none", "taint", "cordon", "drain"
# The resource.k8s.io versions that serve DeviceTaintRule with the fields written here (module docstring).
TAINT_RULE_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3")
TAINT_VALUE = "layout-change"
NOT_SERVED = (
    "the server does not serve DeviceTaintRule (Kubernetes before 1.33, or gate DRADeviceTaints and its "
    "resource.k8s.io version off: alpha on 1.33-1.35, beta on 1.36)"
)


@dataclass(frozen=True, order=True)
class DeviceRef:
    """A device the driver publishes, by what a claim's allocation result and a DeviceTaintRule name it, with the
    index of the GPU it sits on."""

    driver: str
    pool: str
    device: str
    gpu: int


@dataclass(frozen=True, order=True)
class Holder:
    """A pod whose ResourceClaims hold devices of the changing GPUs: which claims ("namespace/name"), which devices
    and GPUs."""

    namespace: str
    name: str
    uid: Optional[str] = None
    claims: Tuple[str, ...] = ()
    devices: Tuple[str, ...] = ()
    gpus: Tuple[int, ...] = ()

    @property
    def ref(self) -> str:
        return "%s/%s" % (self.namespace, self.name)

    def as_pod(self) -> Dict[str, Any]:
        """The pod as plan/nodes/eviction.eviction reads it (name, namespace, uid precondition)."""
        meta: Dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.uid:
            meta["uid"] = self.uid
        return {"metadata": meta}


@dataclass(frozen=True)
class GpuHolders:
    """What the slices and claims say about the changing GPUs of a node (plan/report/gpu_holders.holders_of):
    every device they publish, the pods holding any, and the devices that may sit on one of them but whose GPU the
    slices do not tell (then the step cannot be per GPU)."""

    devices: Tuple[DeviceRef, ...] = ()
    holders: Tuple[Holder, ...] = ()
    unplaced: Tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeStep:
    """One node's step: `mode` (none | taint | cordon | drain) and `why`; the DeviceTaintRules to create (taint);
    the holders to evict (taint, cordon; None for drain: the drain policy's GPU pods, as today)."""

    node: str
    mode: str
    why: str
    changes: GpuChanges
    taint_rules: Tuple[Dict[str, Any], ...] = ()
    evict: Optional[Tuple[Holder, ...]] = None
    kept_gpus: Tuple[int, ...] = field(default=())  # GPUs of the node whose jobs stay (per-GPU modes)

    @property
    def cordons(self) -> bool:
        return self.mode in (CORDON, DRAIN)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "node": self.node,
            "mode": self.mode,
            "why": self.why,
            "gpus": [c.describe() for c in self.changes.changed],
            "taint_rules": [r["metadata"]["name"] for r in self.taint_rules],
            "evict": None if self.evict is None else [h.ref for h in self.evict],
        }

    def describe(self) -> List[str]:
        """The node's lines in --diff: which GPUs change, how allocations stop, which pods move."""
        if self.mode == NONE:
            return ["%s: no GPU changes" % self.node]
        how = {
            TAINT: "per GPU, DeviceTaintRule (NoSchedule) on the changing GPUs' devices; the node stays schedulable",
            CORDON: "per GPU with a cordon, because %s" % self.why,
            DRAIN: "node-wide cordon and drain, because %s" % self.why,
        }[self.mode]
        lines = ["%s: %s" % (self.node, how)]
        lines += ["  %s" % c.describe() for c in self.changes.changed]
        if self.mode == TAINT:
            devices = [r["spec"]["deviceSelector"]["device"] for r in self.taint_rules]
            lines.append("  taint: %s" % (", ".join(devices) if devices else "no device published (nothing to stop)"))
        if self.evict is None:
            lines.append("  evict: every GPU pod of the node (the drain policy)")
        else:
            lines.append("  evict: %s" % (", ".join(_holder_text(h) for h in self.evict) if self.evict else "no pod"))
            if self.kept_gpus:
                lines.append("  untouched: the pods on GPU %s" % ", ".join(str(i) for i in self.kept_gpus))
        return lines


def _holder_text(holder: Holder) -> str:
    return "%s (GPU %s)" % (holder.ref, ", ".join(str(g) for g in holder.gpus))


def rule_name(node: str, device: str) -> str:
    """gpupool-mig-<node>-<device>, or with a digest in place of both when that is no DNS subdomain (too long)."""
    name = "gpupool-mig-%s-%s" % (node, device)
    if is_dns_subdomain(name):
        return name
    return "gpupool-mig-" + hashlib.sha256(("%s/%s" % (node, device)).encode("utf-8")).hexdigest()[:40]


def node_label_value(node: str) -> str:
    """The node's name as a label value, or a digest of it when it is no label value (longer than 63)."""
    if is_label_value(node):
        return node
    return "h-" + hashlib.sha256(node.encode("utf-8")).hexdigest()[:40]


def taint_rule(
    api_version: str, node: str, device: DeviceRef, reason: Optional[str] = None, owner: Optional[str] = None
) -> Dict[str, Any]:
    """The DeviceTaintRule that keeps the scheduler from allocating one device (effect NoSchedule: pods already
    holding it are evicted by gpupool, through the Eviction API, not by the taint)."""
    labels = dict(MANAGED_BY)
    labels[MIG_TAINT_NODE_LABEL] = node_label_value(node)
    if owner:
        labels[OWNER_LABEL] = owner
    meta: Dict[str, Any] = {"name": rule_name(node, device.device), "labels": labels}
    if reason:
        meta["annotations"] = {CORDON_REASON_ANNOTATION: reason}
    return {
        "apiVersion": api_version,
        "kind": "DeviceTaintRule",
        "metadata": meta,
        "spec": {
            "deviceSelector": {"driver": device.driver, "pool": device.pool, "device": device.device},
            "taint": {"key": MIG_TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"},
        },
    }


def per_gpu_step(
    node: str,
    changes: GpuChanges,
    holders: GpuHolders,
    server_serves_device_taints: Optional[str],
    gpu_count: Optional[int] = None,
    reason: Optional[str] = None,
    owner: Optional[str] = None,
) -> NodeStep:
    """The step of `node` for `changes` (gpu_changes), the changing GPUs' `holders` (holders_of) and the
    resource.k8s.io version in which the server serves DeviceTaintRule (None: not served).

    gpu_count: the node's GPUs, for the list of GPUs whose jobs stay (None: not listed); reason,
    owner: the cordon ledger's reason and the inventory's owner, recorded on each rule."""
    if not changes.changed:
        return NodeStep(node, NONE, "no GPU of the node changes", changes)
    if changes.node_wide is not None:
        return NodeStep(node, DRAIN, changes.node_wide, changes)
    if holders.unplaced:
        why = (
            "the slices do not tell which GPU %s sit(s) on (the driver publishes no GPU index, and the pool's PCI bus "
            "IDs do not place it): only a node-wide drain is sure to free the changing GPUs"
            % ", ".join(sorted(holders.unplaced))
        )
        return NodeStep(node, DRAIN, why, changes)
    changing = set(changes.indices)
    evict = tuple(sorted(h for h in holders.holders if changing & set(h.gpus)))
    kept = tuple(i for i in range(gpu_count or 0) if i not in changing)
    gpus = ", ".join(str(i) for i in sorted(changing))
    if server_serves_device_taints not in TAINT_RULE_VERSIONS:
        why = NOT_SERVED
        if server_serves_device_taints:
            why = "the server serves DeviceTaintRule only as %s, which gpupool does not write" % (
                server_serves_device_taints
            )
        return NodeStep(node, CORDON, why, changes, evict=evict, kept_gpus=kept)
    devices = sorted(d for d in holders.devices if d.gpu in changing)
    rules = tuple(taint_rule(server_serves_device_taints, node, d, reason, owner) for d in devices)
    why = "only GPU %s change(s), each staying in MIG mode or toggling it without a reset" % gpus
    return NodeStep(node, TAINT, why, changes, taint_rules=rules, evict=evict, kept_gpus=kept)


def diff_text(steps: List[NodeStep]) -> str:
    """The per-node lines of --diff for the nodes that change ('' when none does)."""
    lines: List[str] = []
    for step in steps:
        if step.mode != NONE:
            lines += step.describe()
    return "\n".join(lines) + ("\n" if lines else "")
