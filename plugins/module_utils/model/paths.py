# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory paths in messages: ``gpupool_cluster.pools[1] (gpu-a100).mig.layout``.

A pool is named by its index (where it is in the list) and its name (how people know it), so a message
points at the right entry even in a long list.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional, Sequence, Union


def shown_name(name: str) -> str:
    """A name as a path shows it: as written, or quoted with its escapes when it holds a control character (a
    trailing newline would break the path over two lines and hide what is wrong)."""
    return repr(name) if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name) else name


def pool_label(index: Optional[int], name: object) -> str:
    """'pools[1] (gpu-a100)'; 'pools[1]' when the pool has no usable name."""
    at = "pools[%s]" % ("?" if index is None else index)
    if isinstance(name, str) and name:
        at += " (%s)" % shown_name(name)
    return at


def pool_path(root: str, pool) -> str:
    """Path of a validated pool (its index is set when the cluster is validated)."""
    return "%s.%s" % (root, pool_label(getattr(pool, "_index", None), pool.name))


def tenant_path(root: str, index: int, namespace: object) -> str:
    """'gpupool_cluster.tenants[0] (team-a)': a tenant is known by its namespace."""
    named = isinstance(namespace, str) and namespace
    return "%s.tenants[%d]%s" % (root, index, " (%s)" % shown_name(namespace) if named else "")


def template_path(at: str, index: int, name: object) -> str:
    """'<tenant>.templates[1] (two-h100)'."""
    return "%s.templates[%d]%s" % (at, index, " (%s)" % shown_name(name) if isinstance(name, str) and name else "")


# The key that names the entries of a list, for the lists whose entries people know by name.
ENTRY_NAME = {"pools": "name", "tenants": "namespace", "templates": "name"}


def inventory_path(root: str, loc: Sequence[Union[str, int]], data: object = None) -> str:
    """Render a key path; with the raw inventory `data`, a pool, tenant or template entry gets its name next to its
    index."""
    out = root
    node = data
    parent = None
    for part in loc:
        if isinstance(part, int):
            key = ENTRY_NAME.get(parent)
            name = node[part].get(key) if key and _has(node, part) and isinstance(node[part], dict) else None
            out += "[%d]" % part
            if isinstance(name, str) and name:
                out += " (%s)" % shown_name(name)
        elif re.fullmatch(r"\w+", str(part)):
            out += "." + str(part)
        else:
            out += "[%r]" % part
        node = _child(node, part)
        parent = part
    return out


def _has(node, part):
    return isinstance(node, list) and 0 <= part < len(node)


def _child(node, part):
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None
