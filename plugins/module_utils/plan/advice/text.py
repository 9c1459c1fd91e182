# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's words: one line per option, the demand of a pool, the summary a person reads. Pure."""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import ClaimNeed
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.evaluate import current_layouts
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import describe
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU


def demand_counts(claims: List[ClaimNeed]) -> Dict[str, int]:
    """{unit: devices the waiting claims ask for}."""
    out: Dict[str, int] = {}
    for claim in claims:
        for unit, count in claim.units.items():
            out[unit] = out.get(unit, 0) + count
    return out


def _layouts(layouts) -> str:
    return "; ".join("GPU %d -> %s" % (i, describe(lay)) for i, lay in sorted(layouts.items()))


def _names(items: List[str], most: int = 4) -> str:
    shown = ", ".join(items[:most])
    return shown + (" and %d more" % (len(items) - most) if len(items) > most else "")


def describe_candidate(pool, candidate: Candidate) -> str:
    """One line: what changes, and what it costs."""
    parts = []
    if candidate.group_nodes:
        now = current_layouts(pool)
        changed = {i: lay for i, lay in (candidate.group_layout or {}).items() if lay != now.get(i)}
        parts.append(
            "%d node(s) (%s) join a MIG group with layout %s"
            % (len(candidate.group_nodes), _names(list(candidate.group_nodes)), _layouts(changed))
        )
    if candidate.changed:
        where = "on every node carrying the pool's layout" if pool.mig.groups else "on every node"
        parts.append("layout %s %s" % (_layouts(candidate.changed), where))
    if candidate.nodes_added:
        group = pool.nodegroup
        ceiling = (
            "max_node_count %d" % group.max_node_count if group.max_node_count is not None else "no max_node_count"
        )
        parts.append("node_count %d -> %d (%s)" % (group.node_count, group.node_count + candidate.nodes_added, ceiling))
    cost = [
        "re-partitions %s"
        % ("%d node(s): %s" % (len(candidate.nodes_repartitioned), _names(candidate.nodes_repartitioned)))
        if candidate.nodes_repartitioned
        else "re-partitions no node",
        "evicts %s" % ("%d pod(s): %s" % (len(candidate.pods_evicted), _names(candidate.pods_evicted)))
        if candidate.pods_evicted
        else "evicts no pod",
        "%s GPU(s) left idle" % ("%.2f" % candidate.idle_gpus).rstrip("0").rstrip("."),
    ]
    return "%s: %s (%s)" % (candidate.pool, " and ".join(parts) or "no change", "; ".join(cost))


def _unit(unit: str) -> str:
    return "whole GPU" if unit == FULL_GPU else unit


def summary(cluster_name: str, result: Dict[str, Any]) -> str:
    """The lines a person reads: each waiting claim and why, then the advice per pool (or nothing to change)."""
    waiting = result["waiting"]
    lines = ["%s: %d claim(s) wait" % (cluster_name, len(waiting)) if waiting else "%s: no claim waits" % cluster_name]
    for row in waiting:
        pods = " (pods %s)" % _names(row["pods"]) if row["pods"] else ""
        lines.append("  - %s/%s%s: [%s] %s" % (row["namespace"], row["name"], pods, row["reason"], row["message"]))
    if result["nothing_to_change"]:
        stuck = [n for n, p in result["pools"].items() if p["demand"] and not p["serves_now"] and not p["advice"]]
        if stuck:
            lines.append("no change found that serves the waiting claims of pool(s) %s" % ", ".join(stuck))
        else:
            lines.append("nothing to change")
    for name, pool in result["pools"].items():
        for item in pool["unserved"]:
            lines.append("%s: %s cannot be served by a change: %s" % (name, item["claim"], item["why"]))
        if not pool["demand"]:
            continue
        if pool["serves_now"]:
            lines.append("%s: nothing to change (the free devices serve its waiting claims)" % name)
            continue
        demand = ", ".join("%d x %s" % (n, _unit(u)) for u, n in sorted(pool["demand"].items()))
        if not pool["advice"]:
            why = "; ".join(r["problems"][0] for r in pool["rejected"][:1]) or (
                "no layout of its GPUs and no node count within max_node_count serves %s" % demand
            )
            lines.append("%s: no change found: %s" % (name, why))
            continue
        lines.append("advice for %s (waiting: %s): %s" % (name, demand, pool["advice"]["text"].split(": ", 1)[1]))
        for other in pool["options"][1:]:
            lines.append("  or: %s" % other["text"].split(": ", 1)[1])
    cut = [n for n, p in result["pools"].items() if p.get("cut_short")]
    if cut:
        lines.append(
            "the search was cut short for pool(s) %s: a change serving more, or disrupting less, may exist"
            % ", ".join(cut)
        )
    for problem in result["problems"]:
        lines.append("  ! %s: %s" % (problem["path"], problem["message"]))
    return "\n".join(lines)
