# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A mismatch between the inventory and the cluster: its kinds in report order, its shape, and its lines. Pure.

Each mismatch is {"pool", "node" (or None), "kind", "message"} plus facts of its kind (expected, found, gate, ...);
the message is a sentence a person can act on.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

Mismatch = Dict[str, Any]

# Mismatch kinds, in the order they are reported.
KINDS = (
    "no_node_selector",
    "node_in_two_pools",
    "missing_nodes",
    "extra_nodes",
    "gate_missing",
    "compute_domain_missing",
    "compute_domain_not_ready",
    "node_not_ready",
    "taint_missing",
    "mig_failed",
    "mig_config_label",
    "not_published",
    "wrong_layout",
    "orphaned_node",
)
_ORDER = {k: i for i, k in enumerate(KINDS)}


def mismatch(pool: Optional[str], node: Optional[str], kind: str, message: str, **extra: Any) -> Mismatch:
    """One mismatch of `pool` (and `node`, None for the pool as a whole)."""
    out = {"pool": pool, "node": node, "kind": kind, "message": message}
    out.update(extra)
    return out


def sort_mismatches(mismatches: List[Mismatch], pool_names: List[str]) -> None:
    """Sorts in place: by pool (in `pool_names`' order, others last), then kind (KINDS' order), then node."""
    pool_order = {name: i for i, name in enumerate(pool_names)}
    last = len(pool_names)
    mismatches.sort(key=lambda m: (pool_order.get(m["pool"], last), _ORDER.get(m["kind"], 99), m["node"] or ""))


MISMATCHES_SHOWN = 3  # of each kind; a cluster of 2,000 unpublished nodes is three lines and a count, not 2,000


def mismatch_lines(mismatches: List[Mismatch], indent: str = "  ") -> List[str]:
    """The mismatches as lines a person reads, at most MISMATCHES_SHOWN of each kind (the report holds them all)."""
    lines, shown = [], {}
    for m in mismatches:
        shown[m["kind"]] = shown.get(m["kind"], 0) + 1
        if shown[m["kind"]] <= MISMATCHES_SHOWN:
            lines.append("%s- [%s] %s" % (indent, m["kind"], m["message"]))
    for kind, count in shown.items():
        if count > MISMATCHES_SHOWN:
            lines.append(
                "%s- [%s] and %d more like these (all in the report)" % (indent, kind, count - MISMATCHES_SHOWN)
            )
    return lines
