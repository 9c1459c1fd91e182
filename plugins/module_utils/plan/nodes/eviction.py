# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain policy, pure: which pods use GPUs and must leave a node before it is reconfigured or removed,
the Eviction bodies, and the node patches that cordon and uncordon.

k8s/drain.py does the I/O (the one drain of the collection, used by nodegroup and mig_layout).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.label_selector import matches as selector_matches
from ansible_collections.gpupool.core.plugins.module_utils.model.label_selector import parse as parse_selector
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CORDON_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    CORDON_RUN_ANNOTATION,
    EXTENDED_RESOURCE_DOMAIN,
    FIELD_MANAGER,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_owner

# GPU resources a container can request: NVIDIA's device plugin (nvidia.com/gpu, nvidia.com/gpu.shared,
# nvidia.com/mig-<profile>) and the extended resource names of our DeviceClasses (gpupool.io/<class>).
GPU_RESOURCE = re.compile(r"^(nvidia\.com/(gpu|mig-).*|%s/.+)$" % re.escape(EXTENDED_RESOURCE_DOMAIN))

Pod = Dict[str, Any]


def _meta(obj: Pod) -> Dict[str, Any]:
    return obj.get("metadata") or {}


def gpu_use(pod: Pod) -> Optional[str]:
    """Why a pod uses GPUs (a short sentence), or None.

    A pod uses GPUs when one of its containers (init containers too) requests or limits a GPU resource, or
    when it has DRA resource claims (DRA devices are only reachable through a claim)."""
    spec = pod.get("spec") or {}
    names = set()
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            resources = container.get("resources") or {}
            for kind in ("limits", "requests"):
                names.update(k for k in (resources.get(kind) or {}) if GPU_RESOURCE.match(k))
    if names:
        return "requests %s" % ", ".join(sorted(names))
    claims = [c.get("name") for c in spec.get("resourceClaims") or []]
    if claims:
        return "has resource claim(s) %s" % ", ".join(str(c) for c in claims)
    return None


PodReasons = List[Tuple[Pod, str]]


def pods_to_evict(
    pods: Iterable[Pod], node_name: str, skip_pods: Optional[str] = None
) -> Tuple[PodReasons, PodReasons, PodReasons]:
    """Pods on `node_name` that must leave before the node's GPUs change or the node goes away.

    Returns (evict, wait_for, skipped): evict: [(pod, reason)]; wait_for: GPU pods already terminating;
    skipped: [(pod, why)] - GPU pods that eviction does not apply to (DaemonSet pods, which the MIG manager
    pauses itself and which leave with their node; static/mirror pods) and those the drain policy's
    `skip_pods` label selector names. Finished pods (Succeeded/Failed) hold no GPU and are ignored."""
    evict, wait_for, skipped = [], [], []
    skip = parse_selector(skip_pods) if skip_pods else None
    for pod in sorted(pods, key=lambda p: (_meta(p).get("namespace") or "", _meta(p).get("name"))):
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        why = gpu_use(pod)
        if why is None:
            continue
        meta = _meta(pod)
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            skipped.append((pod, "DaemonSet pod (the MIG manager pauses GPU operands itself)"))
        elif "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            skipped.append((pod, "static pod (cannot be evicted through the API)"))
        elif meta.get("deletionTimestamp"):
            wait_for.append((pod, why))
        elif skip is not None and selector_matches(skip, meta.get("labels") or {}):
            skipped.append((pod, "matches the drain policy's skip_pods (%s)" % skip_pods))
        else:
            evict.append((pod, why))
    return evict, wait_for, skipped


def pod_ref(pod: Pod) -> str:
    meta = _meta(pod)
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def eviction(pod: Pod, grace_period: Optional[int] = None) -> Dict[str, Any]:
    """The policy/v1 Eviction of a pod; the uid precondition keeps a re-created pod of the same name safe."""
    meta = _meta(pod)
    body: Dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
    }
    opts: Dict[str, Any] = {}
    if grace_period is not None:
        opts["gracePeriodSeconds"] = int(grace_period)
    if meta.get("uid"):
        opts["preconditions"] = {"uid": meta["uid"]}
    if opts:
        body["deleteOptions"] = opts
    return body


def eviction_refused(status: int, message: str) -> bool:
    """Whether an Eviction answer means "not now": a PodDisruptionBudget allows no disruption (429)."""
    return status == 429 or "disruption budget" in (message or "").lower()


def cordoned_by(node: Pod) -> Optional[str]:
    """Which gpupool module cordoned the node (the annotation's value), or None."""
    return (_meta(node).get("annotations") or {}).get(CORDON_ANNOTATION)


def cordon_patch(by: str, reason: Optional[str] = None, run: Optional[str] = None) -> Dict[str, Any]:
    """Merge patch that cordons a node and records which module did it (so only that module uncordons it), why
    (the ledger's reason, plan/nodes/cordon_ledger.py, re-checked by every later run) and by which run (the run
    lease's holder; None: a step run without a lease)."""
    annotations: Dict[str, Any] = {CORDON_ANNOTATION: by}
    if reason:
        annotations[CORDON_REASON_ANNOTATION] = reason
    if run:
        annotations[CORDON_RUN_ANNOTATION] = run
    return {"metadata": {"annotations": annotations}, "spec": {"unschedulable": True}}


def cordon_decision(
    node: Pod, by: str, reason: Optional[str] = None, run: Optional[str] = None
) -> Tuple[Optional[Dict[str, Any]], str]:
    """(patch or None, state) for a node as last read, for the module `by`: "cordoned" (the patch cordons it),
    "ours" (already cordoned by `by`, e.g. by an interrupted earlier run: ours to uncordon; the patch, if any,
    records this run's reason and identity on it, so the ledger sees who holds it now), "theirs" (cordoned by
    someone else: left cordoned, never uncordoned by us)."""
    if not (node.get("spec") or {}).get("unschedulable"):
        return cordon_patch(by, reason, run), "cordoned"
    if cordoned_by(node) != by:
        return None, "theirs"
    annotations = _meta(node).get("annotations") or {}
    stale = {
        key: value
        for key, value in ((CORDON_REASON_ANNOTATION, reason), (CORDON_RUN_ANNOTATION, run))
        if value and annotations.get(key) != value
    }
    return ({"metadata": {"annotations": stale}} if stale else None), "ours"


def merge_patches(*patches: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """JSON merge patches combined into one (later ones win on the same key), to send them in one write."""
    out: Dict[str, Any] = {}
    for patch in patches:
        for key, value in (patch or {}).items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge_patches(out[key], value)
            else:
                out[key] = value
    return out


def uncordon_patch() -> Dict[str, Any]:
    """Merge patch that uncordons a node and removes the cordon's whole record (who, why, which run)."""
    return merge_patches(record_patch(), {"spec": {"unschedulable": None}})


def record_patch() -> Dict[str, Any]:
    """Merge patch that removes gpupool's cordon record (who, why, which run) and leaves the cordon: for a cordon
    someone else set after gpupool's (plan/nodes/cordon_owner.py), which stays theirs."""
    annotations = {CORDON_ANNOTATION: None, CORDON_REASON_ANNOTATION: None, CORDON_RUN_ANNOTATION: None}
    return {"metadata": {"annotations": annotations}}


def at_version(patch: Optional[Dict[str, Any]], node: Pod) -> Optional[Dict[str, Any]]:
    """The patch with the node's resourceVersion as precondition (a node changed since is refused with 409)."""
    version = _meta(node).get("resourceVersion")
    if patch is None or not version:
        return patch
    return merge_patches(patch, {"metadata": {"resourceVersion": version}})


def uncordon_decision(node: Pod, field_manager: str = FIELD_MANAGER) -> Tuple[Optional[Dict[str, Any]], str]:
    """(patch or None, state) to lift a cordon gpupool made, decided from the node as read (with its managedFields);
    the patch carries that read's resourceVersion. "uncordoned": gpupool set the cordon last, the patch lifts it;
    "theirs": someone set it after gpupool (a person's kubectl cordon): the patch only removes gpupool's record and
    the node stays cordoned; "free": not cordoned (any record of gpupool's left on it is removed)."""
    annotations = _meta(node).get("annotations") or {}
    recorded = any(annotations.get(key) for key in (CORDON_ANNOTATION, CORDON_REASON_ANNOTATION, CORDON_RUN_ANNOTATION))
    if not (node.get("spec") or {}).get("unschedulable"):
        return at_version(record_patch() if recorded else None, node), "free"
    if not cordon_owner.set_by_gpupool(node, field_manager):
        return at_version(record_patch() if recorded else None, node), "theirs"
    return at_version(uncordon_patch(), node), "uncordoned"


class DrainSettings(NamedTuple):
    """What one drain does: the inventory's drain policy (model/drain_policy.py) with a module's options on top."""

    enabled: bool
    timeout: int
    grace_period: Optional[int]
    skip_pods: Optional[str]
    when_budget_blocks: str  # wait | fail


# A module called without the inventory (standalone) and without drain options does not drain.
STANDALONE = DrainSettings(False, 600, None, None, "wait")


def drain_settings(
    policy=None, enabled: Optional[bool] = None, timeout: Optional[int] = None, grace_period: Optional[int] = None
) -> DrainSettings:
    """The inventory's policy for a pool (None: standalone use, STANDALONE) overridden by the module options
    that were given (None: not given). The policy's defaults stay in the model: nothing is re-derived here."""
    base = (
        STANDALONE
        if policy is None
        else DrainSettings(
            policy.enabled, policy.timeout, policy.grace_period, policy.skip_pods, policy.when_budget_blocks
        )
    )
    changes = {
        key: value
        for key, value in (("enabled", enabled), ("timeout", timeout), ("grace_period", grace_period))
        if value is not None
    }
    return base._replace(**changes)
