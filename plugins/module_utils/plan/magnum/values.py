# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Magnum nodegroup values in one comparable form (pure): labels as strings, taints sorted.

What the inventory or the options ask for, what Magnum answers and what a waiter expects are all compared in this
form, so a label given as ``true`` (YAML) equals the ``"true"`` Magnum stores."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

LABEL_FIELDS = ("labels", "node_labels")


def label_value(value: Any) -> str:
    """Magnum label values as strings, the way the CLI sends them ('true', not True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def normalize_labels(labels: Optional[Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    if labels is None:
        return None
    return {str(k): label_value(v) for k, v in labels.items()}


def normalize_taints(taints: Optional[Iterable[Mapping[str, Any]]]) -> Optional[List[Dict[str, str]]]:
    """Sorted list of {key, value, effect}; value '' when absent (what kubectl shows)."""
    if taints is None:
        return None
    out = [{"key": str(t["key"]), "value": label_value(t.get("value")), "effect": str(t["effect"])} for t in taints]
    return sorted(out, key=lambda t: (t["key"], t["value"], t["effect"]))


def normalize_field(field: str, value: Any) -> Any:
    """A nodegroup field's value in the comparable form (None stays None: not set)."""
    if field in LABEL_FIELDS:
        return normalize_labels(value)
    if field == "node_taints":
        return normalize_taints(value)
    return value
