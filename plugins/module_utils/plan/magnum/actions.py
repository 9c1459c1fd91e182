# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A nodegroup plan's data (pure): the actions in their order, what the runner sends for each and what it waits
for after it (runners/nodegroups.py, openstack/magnum_wait.evaluate_wait), and the count rules they are ordered
by. plan/magnum/nodegroups.py makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

NODE_FIELDS = ("node_labels", "node_taints")  # patchable from 1.14


@dataclass
class Action:
    """One API call of a plan and what to wait for after it.

    kind: create | resize | patch | delete. payload: the JSON body (JSON-patch list for patch; the runner adds
    nodes_to_remove to a resize's). expect: {"gone": True} or {"status": [...], "fields": {...}} for the waiter
    (openstack/magnum_wait.evaluate_wait). shrink_by: how many nodes a resize removes (for the drain hook).
    """

    kind: str
    payload: Any
    expect: Dict[str, Any]
    summary: str
    shrink_by: int = 0

    def to_dict(self) -> Dict[str, Any]:
        out = {"action": self.kind, "summary": self.summary}
        if self.payload is not None:
            out["request"] = self.payload
        return out


@dataclass
class Plan:
    """The ordered actions, the comparable view before and after, notes (warnings for the person) and the
    cluster-wide label drift of an existing nodegroup ({key: {nodegroup, inventory}})."""

    actions: List[Action]
    before: Dict[str, Any]
    after: Dict[str, Any]
    notes: List[str] = field(default_factory=list)
    wait_gone: bool = False
    drift: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.actions)


def within(count: int, low: int, high: Optional[int]) -> bool:
    """Whether min <= count <= max (high None: unbounded), the check Magnum makes on a patch or resize."""
    return low <= count and (high is None or count <= high)


def bounds_text(low: int, high: Optional[int]) -> str:
    return "[%s, %s]" % (low, "unbounded" if high is None else high)


def _patch_value(name, value):
    # Magnum's JsonPatchType.value is MultiType(text, int): dicts and lists travel as their Python
    # literal and the API literal_eval()s them (magnum api_utils.apply_jsonpatch).
    if name in NODE_FIELDS:
        return repr(value)
    return value


def patch_ops(changes: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The JSON-patch of min/max_node_count and node labels/taints (None: remove the field)."""
    ops = []
    for name in ("min_node_count", "max_node_count") + NODE_FIELDS:
        if name in changes:
            value = changes[name]
            if value is None:
                ops.append({"op": "remove", "path": "/" + name})
            else:
                ops.append({"op": "replace", "path": "/" + name, "value": _patch_value(name, value)})
    return ops
