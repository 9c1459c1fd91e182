# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods use GPUs and must be evicted before a node is reconfigured or removed, and the eviction bodies.
"""
from __future__ import annotations

import re

from ansible_collections.gpupool.core.plugins.module_utils.plan.mig_rollout import _meta


def pod_uses_gpu(pod_spec, resource_prefixes=("nvidia.com/",)):
    """True if a pod spec (dict, API field names) requests a GPU resource or a DRA resource claim."""
    if pod_spec.get("resourceClaims"):
        return True
    for container in (pod_spec.get("containers") or []) + (pod_spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            for key in (resources.get(section) or {}):
                if any(key.startswith(p) for p in resource_prefixes):
                    return True
    return False


GPU_RESOURCE = re.compile(r"^(nvidia\.com/(gpu|mig-).*|gpupool\.io/.+)$")


def gpu_use(pod):
    """Why a pod uses GPUs (a short sentence), or None."""
    spec = pod.get("spec") or {}
    names = set()
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or []:
            res = c.get("resources") or {}
            for kind in ("limits", "requests"):
                names.update(k for k in (res.get(kind) or {}) if GPU_RESOURCE.match(k))
    if names:
        return "requests %s" % ", ".join(sorted(names))
    claims = [c.get("name") for c in spec.get("resourceClaims") or []]
    if claims:
        return "has resource claim(s) %s" % ", ".join(str(c) for c in claims)
    return None


def pods_to_evict(pods, node_name):
    """Pods on `node_name` that must leave before its MIG layout changes.

    Returns (evict, wait_for, skipped): evict: [(pod, reason)]; wait_for: GPU pods already terminating;
    skipped: [(pod, why)] - GPU pods that eviction does not apply to (DaemonSet pods, which the MIG manager
    pauses itself; static/mirror pods). Finished pods (Succeeded/Failed) hold no GPU and are ignored."""
    evict, wait_for, skipped = [], [], []
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
        else:
            evict.append((pod, why))
    return evict, wait_for, skipped


def pod_ref(pod):
    meta = _meta(pod)
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def eviction(pod, grace_period=None):
    meta = _meta(pod)
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}}
    opts = {}
    if grace_period is not None:
        opts["gracePeriodSeconds"] = int(grace_period)
    if meta.get("uid"):
        opts["preconditions"] = {"uid": meta["uid"]}
    if opts:
        body["deleteOptions"] = opts
    return body
