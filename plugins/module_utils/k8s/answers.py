# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an API server's answer means, in a sentence a person can act on: a request that could not be sent, an
answer about the server's schema (a field newer than the cluster's release), 401, 403, a server in trouble.
k8s/client.py raises the matching K8sError from `read_answer`; nothing here sends a request."""

from __future__ import annotations

import json
import re
from typing import Any, List, NamedTuple

RBAC_HINT = (
    "the identity running gpupool needs the ClusterRole in docs/rbac/gpupool-clusterrole.yaml "
    "bound to it (see docs/rbac.md)"
)


def connection_reason(exc: BaseException) -> str:
    """The cause of a request that could not be sent, in a few words."""
    text = str(exc)
    for marker in (
        "Connection refused",
        "Connection reset",
        "timed out",
        "Name or service not known",
        "certificate verify failed",
        "No route to host",
    ):
        if marker.lower() in text.lower():
            return marker.lower()
    return text[:300]


# What an API server says about a field its schema lacks: server-side apply builds a typed object from the schema
# (".spec.extendedResourceName: field not declared in schema", HTTP 500 - kubernetes-dra-versions.md, seen on 1.32),
# strict field validation answers 400 'unknown field "spec.x"'.
_NOT_DECLARED = re.compile(r"(\.[\w.\[\]=\-/\\\"]*\w\]?):\s*field not declared in schema")
_UNKNOWN_FIELD = re.compile(r'unknown field \\?"([^"\\]+)\\?"')


def schema_fields(raw: Any) -> List[str]:
    """The field paths an error answer says the server's schema lacks ([] for any other answer)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    fields = _NOT_DECLARED.findall(text)
    if not fields and "strict decoding error" in text:
        fields = ["." + f.lstrip(".") for f in _UNKNOWN_FIELD.findall(text)]
    return list(dict.fromkeys(fields))


class Answer(NamedTuple):
    """An error answer read: `kind` is "schema", "not_found", "conflict" or "" (any other), for the error class."""

    kind: str
    message: str
    hint: str
    reason: str
    body: dict
    fields: List[str]


def read_answer(
    method: str, path: str, status: int, reason: str, raw: bytes, host: str, source: str, retried: bool
) -> Answer:
    """An error answer of the API server at `host` (credentials from `source`); `retried`: the status was retried."""
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        body = {"message": raw.decode("utf-8", "replace")[:500]}
    message = body.get("message") or ("%s %s" % (status, reason))
    reason = body.get("reason") or reason
    fields = schema_fields(raw) if status in (400, 422, 500) else []
    if fields:
        return Answer(
            "schema",
            "the API server at %s does not know %s (%s %s, HTTP %d: %s): %s newer than this cluster's Kubernetes "
            "release"
            % (
                host,
                ", ".join(fields),
                method,
                path,
                status,
                message,
                "the field is" if len(fields) == 1 else "the fields are",
            ),
            "an answer about the server's schema, not a server in trouble: leave out the inventory setting "
            "that needs the field, or upgrade the cluster (docs/compatibility.md lists what each release lacks)",
            reason,
            body,
            fields,
        )
    kind, hint = {404: "not_found", 409: "conflict"}.get(status, ""), ""
    if status == 401:
        message = "the API server at %s rejected the credentials (401 Unauthorized) for %s %s" % (host, method, path)
        hint = "check the user/token in %s" % (source or "the kubeconfig")
    elif status == 403:
        hint = RBAC_HINT
    elif retried:
        message = "%s (HTTP %d, still failing after retries)" % (message, status)
        hint = (
            "the API server at %s is overloaded or failing; wait until it recovers (or raise request_retries "
            "and request_timeout), then rerun: the run stopped there and a rerun continues from what is in the "
            "cluster" % host
        )
    return Answer(kind, message, hint, reason, body, [])


def missing_api_hint(kind: Any) -> str:
    """What to do about a kind (plan/kinds.py) the API server does not serve."""
    if kind.group == "resource.k8s.io":
        return (
            "Dynamic Resource Allocation needs Kubernetes >= 1.34 (resource.k8s.io/v1), or 1.32/1.33 with the "
            "DynamicResourceAllocation feature gate and the resource.k8s.io beta APIs enabled"
        )
    if kind.group == "resource.nvidia.com":
        return (
            "install the ComputeDomain CRD (the NVIDIA DRA driver chart with resources.computeDomains.enabled=true "
            "installs it; with gpupool_cluster.dra_driver enabled, site.yml's driver step does, before this step) "
            "before converging ComputeDomains"
        )
    return "check the cluster's Kubernetes version"
