# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA driver chart's CRDs (``helm show crds``), server-side applied before an install or upgrade: Helm installs
``crds/`` only on the first install and never upgrades them (docs/upgrade.md of the driver: "kubectl apply the CRDs
first")."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.model.names import FIELD_MANAGER


def apply_crds(client: Any, crds: Sequence[Dict[str, Any]], dry_run: bool = False) -> List[Dict[str, Any]]:
    """Server-side apply each CRD (field manager gpupool, force: the chart's CRDs win over whoever
    applied them before, as `kubectl apply` in the driver's upgrade docs would). `client` is a
    k8s client with request(method, path, query, body, content_type). Returns one entry per CRD:
    {"name", "changed"} (changed: the stored object's resourceVersion moved, or it is new)."""
    results = []
    for crd in crds:
        name = crd["metadata"]["name"]
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s" % name
        before = _get(client, path)
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        after = client.request("PATCH", path, query=query, body=crd, content_type="application/apply-patch+yaml")
        changed = before is None or (before.get("metadata") or {}).get("resourceVersion") != (
            after.get("metadata") or {}
        ).get("resourceVersion")
        if dry_run and before is not None:
            # A dry run does not bump resourceVersion: compare what would be stored instead.
            changed = _strip(before) != _strip(after)
        results.append({"name": name, "changed": bool(changed)})
    return results


def _get(client: Any, path: str) -> Optional[Dict[str, Any]]:
    try:
        return client.request("GET", path)
    except Exception as exc:  # the client's NotFound: no import of the client module here
        if getattr(exc, "status", None) == 404:
            return None
        raise


def _strip(obj: Dict[str, Any]) -> Dict[str, Any]:
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")
    }
    return {"metadata": meta, "spec": obj.get("spec")}
