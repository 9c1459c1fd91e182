# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ResourceClaims as demand: what each claim asks for, which claims wait, and the pods that wait on them. Pure.

Shapes read (reference kubernetes-dra-versions.md, "Shapes that differ"): resource.k8s.io v1 and v1beta2 wrap a
request's ``deviceClassName``, ``selectors``, ``allocationMode`` and ``count`` in ``exactly:`` (alternatives in
``firstAvailable:``); v1beta1 puts them on the request itself. ``spec.devices.constraints[]`` holds
``matchAttribute`` over some requests (none listed: all of them). A claim is allocated when ``status.allocation``
is set; until then it waits.

Pods of a claim: those naming it in ``spec.resourceClaims[].resourceClaimName`` or, for a claim made from a
template, in ``status.resourceClaimStatuses[].resourceClaimName``; a pod that owns the claim (ownerReferences,
what the resource claim controller sets on a template's claim); and the ``status.reservedFor`` entries.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

Obj = Dict[str, Any]


class Request(NamedTuple):
    """One request of a claim, as the advisor reads it (of firstAvailable, the first alternative)."""

    name: str
    device_class: Optional[str]
    count: int
    mode: str  # ExactCount | All
    selectors: List[str]  # the request's own CEL expressions
    match_attribute: Optional[str]  # the first constraint over this request
    alternatives: int  # how many firstAvailable alternatives there were (0: an exact request)


class Claim(NamedTuple):
    namespace: str
    name: str
    created: str
    requests: List[Request]
    pods: List[str]  # "namespace/name" of the pods that use it
    allocated: bool

    @property
    def ref(self) -> str:
        return "%s/%s" % (self.namespace, self.name)


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _exact(raw: Obj) -> Obj:
    """The fields of one request: v1/v1beta2 `exactly`, v1beta1 flat, or the first firstAvailable alternative."""
    if raw.get("exactly"):
        return raw["exactly"]
    alternatives = raw.get("firstAvailable") or []
    if alternatives:
        return alternatives[0]
    return raw


def claim_requests(claim: Obj) -> List[Request]:
    """The claim's requests, with the matchAttribute constraint that applies to each."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    constraints = devices.get("constraints") or []
    out = []
    for raw in devices.get("requests") or []:
        name = raw.get("name") or ""
        fields = _exact(raw)
        attribute = None
        for constraint in constraints:
            covered = constraint.get("requests") or []
            if constraint.get("matchAttribute") and (not covered or name in covered):
                attribute = constraint["matchAttribute"]
                break
        mode = fields.get("allocationMode") or "ExactCount"
        out.append(
            Request(
                name=name,
                device_class=fields.get("deviceClassName"),
                count=int(fields.get("count") or 1) if mode == "ExactCount" else 1,
                mode=mode,
                selectors=[
                    (s.get("cel") or {}).get("expression") or "" for s in fields.get("selectors") or [] if s.get("cel")
                ],
                match_attribute=attribute,
                alternatives=len(raw.get("firstAvailable") or []),
            )
        )
    return out


def is_allocated(claim: Obj) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def pods_by_claim(pods: List[Obj]) -> Dict[str, List[str]]:
    """{"namespace/claim": ["namespace/pod", ...]} from the pods' own references (spec and status)."""
    out: Dict[str, List[str]] = {}
    for pod in pods:
        meta = _meta(pod)
        namespace, ref = meta.get("namespace"), "%s/%s" % (meta.get("namespace"), meta.get("name"))
        names = [c.get("resourceClaimName") for c in (pod.get("spec") or {}).get("resourceClaims") or []]
        names += [c.get("resourceClaimName") for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []]
        for name in names:
            if name:
                users = out.setdefault("%s/%s" % (namespace, name), [])
                if ref not in users:
                    users.append(ref)
    return out


def claim_pods(claim: Obj, by_claim: Dict[str, List[str]]) -> List[str]:
    """The pods that use `claim`: those referring to it, its owner pod, and its reservedFor pods."""
    meta = _meta(claim)
    namespace = meta.get("namespace")
    out = list(by_claim.get("%s/%s" % (namespace, meta.get("name")), []))
    owners = [o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"]
    reserved = [
        r.get("name") for r in (claim.get("status") or {}).get("reservedFor") or [] if r.get("resource") == "pods"
    ]
    for name in owners + reserved:
        ref = "%s/%s" % (namespace, name)
        if name and ref not in out:
            out.append(ref)
    return sorted(out)


def read_claims(claims: List[Obj], pods: List[Obj]) -> List[Claim]:
    """Every claim as demand, oldest first (the order a scheduler meets them in, roughly)."""
    by_claim = pods_by_claim(pods)
    out = [
        Claim(
            namespace=_meta(c).get("namespace") or "",
            name=_meta(c).get("name") or "",
            created=str(_meta(c).get("creationTimestamp") or ""),
            requests=claim_requests(c),
            pods=claim_pods(c, by_claim),
            allocated=is_allocated(c),
        )
        for c in claims
    ]
    return sorted(out, key=lambda c: (c.created, c.namespace, c.name))
