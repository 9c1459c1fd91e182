# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API paths, both ways: `api_path` makes the path of a kind, an object or a subresource (K8sClient.path
is this function), `object_of` reads one back (the run's view and the API simulators of the tests use it). Pure:
the one source of the path logic, imported instead of copied."""

from __future__ import annotations

from typing import Optional, Tuple
from urllib.parse import quote

from ansible_collections.gpupool.core.plugins.module_utils.k8s.run_view import kind_key


def api_path(
    group: str,
    version: str,
    plural: str,
    namespace: Optional[str] = None,
    name: Optional[str] = None,
    subresource: Optional[str] = None,
) -> str:
    """The REST path of a kind (a collection, in a namespace or not), of one object, or of its subresource."""
    base = "/api/%s" % version if group in ("", "core") else "/apis/%s/%s" % (group, version)
    if namespace:
        base += "/namespaces/%s" % quote(namespace, safe="")
    base += "/" + plural
    if name:
        base += "/" + quote(name, safe="")
    if subresource:
        base += "/" + subresource
    return base


def object_of(path: str) -> Optional[Tuple[str, Optional[str], Optional[str], Optional[str]]]:
    """(view key, namespace, name, subresource) of an API path, None for what is not a resource path."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    plural, name = rest[0], rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    return kind_key(group, plural), namespace, name, subresource
