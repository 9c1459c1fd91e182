# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a drain will do, as a `--diff` entry a person reads before anything happens: the nodes that go (or change)
and, per node, the GPU pods evicted first and those the drain policy skips.

Pure: the modules collect the nodes and pods (read only, also in check mode) and show this next to their own
diff, so `--check --diff` lists the nodes to be removed and the pods to be evicted.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence


def pod_lines(pods: Iterable[Mapping[str, Any]]) -> List[str]:
    """'namespace/name' of each pod ({namespace, name} dicts or Pod objects), sorted."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or pod
        out.append("%s/%s" % (meta.get("namespace"), meta.get("name")))
    return sorted(out)


def drained_nodes(
    victims: Sequence[str],
    evict: Mapping[str, Iterable[Mapping[str, Any]]],
    skip: Optional[Mapping[str, Iterable[Mapping[str, Any]]]] = None,
) -> Dict[str, Dict[str, List[str]]]:
    """{node: {"evict": [...], "skip": [...]}} for the nodes a drain handles, in the drain's order."""
    skip = skip or {}
    out = {}
    for node in victims:
        entry = {"evict": pod_lines(evict.get(node) or [])}
        skipped = pod_lines(skip.get(node) or [])
        if skipped:
            entry["skip"] = skipped
        out[node] = entry
    return out


def removal_diff(
    where: str,
    nodes: Sequence[str],
    victims: Sequence[str],
    evict: Mapping[str, Iterable[Mapping[str, Any]]],
    skip: Optional[Mapping[str, Iterable[Mapping[str, Any]]]] = None,
    drain: bool = True,
) -> Dict[str, Any]:
    """The diff entry of a shrink or a delete: the Kubernetes nodes before and after, and what leaves each
    removed node first (nothing is evicted when the drain policy is off: then it says so)."""
    gone = set(victims)
    after: Dict[str, Any] = {"nodes": sorted(n for n in nodes if n not in gone)}
    if drain:
        after["drained before removal"] = drained_nodes(victims, evict, skip)
    else:
        after["removed without a drain (drain.enabled is false)"] = {
            node: pod_lines(evict.get(node) or []) for node in victims
        }
    header = "%s: Kubernetes nodes" % where
    return {"before": {"nodes": sorted(nodes)}, "after": after, "before_header": header, "after_header": header}
