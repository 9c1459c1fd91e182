# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A MIG rollout plan as text for ``--diff``: each wave, its nodes with their layout before and after, the pods
to evict and the steps around them.

The node diffs alone show a label and a digest annotation changing; a person deciding whether to run the
rollout needs what the GPUs become, in which order, and which workloads are evicted. Pure: it reads the
plans and waves of plan/mig/rollout.py and the mig-parted configs (entries) before and after.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Union

from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import BUILTIN_CONFIG
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import PoolPlan, Wave


def describe_entries(entries: Optional[List[dict]]) -> str:
    """'all GPUs: 3g.20gb x1 + 2g.10gb x2', 'GPU 0: 7g.40gb x1; GPU 1: MIG off', from mig-parted entries."""
    if entries is None:
        return "content unknown"
    parts = []
    for entry in entries:
        devices = entry.get("devices")
        where = "all GPUs" if devices == "all" else "GPU %s" % ", ".join(str(d) for d in devices or [])
        if not entry.get("mig-enabled"):
            parts.append("%s: MIG off" % where)
            continue
        layout = entry.get("mig-devices") or {}
        parts.append("%s: %s" % (where, " + ".join("%s x%d" % (p, c) for p, c in layout.items() if c) or "no instance"))
    return "; ".join(parts) or "no entry"


def describe_config(name: Optional[str], configs: Dict[str, List[dict]]) -> str:
    """A node's config label as a layout: 'gpupool-a100 (all GPUs: ...)', 'not set', 'all-disabled (MIG off)'."""
    if not name:
        return "not set"
    if name == BUILTIN_CONFIG:
        return "%s (MIG off)" % name
    if name not in configs:
        return "%s (not in the ConfigMap)" % name
    return "%s (%s)" % (name, describe_entries(configs[name]))


def rollout_text(
    plans: List[PoolPlan],
    waves: List[Wave],
    configs_after: Dict[str, List[dict]],
    configs_before: Dict[str, List[dict]],
    cordon: Union[bool, Callable[[str], bool]],
    drain: Union[bool, Callable[[str], bool]],
    max_unavailable: int,
) -> str:
    """The rollout of every pool with nodes to change; '' when there is none.

    plans: plan_pool() results; waves: RolloutPlan.add_wave's (pool, index, nodes, actions, evict);
    configs_*: {config name: mig-parted entries} in the ConfigMap before the run and as this run writes it;
    cordon, drain: for every pool, or per pool name (each pool has its own drain policy)."""
    lines: List[str] = []
    by_plan: Dict[tuple, List[Wave]] = {}
    for wave in waves:
        by_plan.setdefault((wave.pool, wave.group), []).append(wave)
    shown = set()
    for plan in plans:
        pool_waves = by_plan.get((plan.pool, plan.group)) or []
        if not pool_waves:
            continue
        if plan.pool not in shown and any(p.pool == plan.pool and p.group for p in plans):
            shown.add(plan.pool)
            lines += group_lines([p for p in plans if p.pool == plan.pool])
        cordons = cordon(plan.pool) if callable(cordon) else cordon
        drains = drain(plan.pool) if callable(drain) else drain
        steps = (["cordon"] if cordons else []) + (["evict the GPU pods"] if drains else [])
        steps += ["set nvidia.com/mig.config", "wait for the MIG manager"] + (["uncordon"] if cordons else [])
        rows = {row.name: row for row in plan.nodes}
        who = plan.pool if plan.group is None else "%s, group %s," % (plan.pool, plan.group)
        lines.append(
            "MIG rollout of pool %s to %s, %d wave(s) of at most %d node(s):"
            % (who, describe_config(plan.config_name, configs_after), len(pool_waves), max_unavailable)
        )
        for wave in pool_waves:
            lines.append("  wave %d/%d: %s" % (wave.index + 1, len(pool_waves), ", ".join(steps)))
            for name in wave.nodes:
                row = rows.get(name)
                before = row.before.config if row is not None else None
                action = wave.actions.get(name, row.action if row is not None else None)
                lines.append("    %s: %s; now %s" % (name, action, describe_config(before, configs_before)))
            if drains:
                evict = wave.evict or []
                lines.append("    evict: %s" % (", ".join(_pod(p) for p in evict) if evict else "no GPU pod"))
        if not cordons:
            lines.append("  (cordon: false - pods may land on a node while its MIG layout changes)")
        elif not drains:
            lines.append(
                "  (drain: false - GPU pods already on a node are not evicted; the MIG manager pauses only "
                "the GPU Operator's own pods, so a workload still on a GPU can make the change fail)"
            )
    return "\n".join(lines) + ("\n" if lines else "")


def group_lines(plans: List[PoolPlan]) -> List[str]:
    """Which node carries which layout in a pool with MIG groups (plan/mig/node_groups decided it), and the nodes
    that move: from which config to which. `plans`: the pool's plans, its own layout's first."""
    lines = ["MIG groups of pool %s (nodes that keep their config are not touched):" % plans[0].pool]
    for plan in plans:
        what = "the pool's layout" if plan.group is None else "group %s" % plan.group
        names = [row.name for row in plan.nodes]
        if plan.group is None:  # the pool's many nodes are counted; a group's few are named
            lines.append("  %s (%s): %d node(s)" % (what, plan.config_name, len(names)))
        else:
            lines.append("  %s (%s): %s" % (what, plan.config_name, ", ".join(names) if names else "no node"))
        for row in plan.nodes:
            before = row.before.config
            if before != plan.config_name:
                lines.append("    %s moves: %s -> %s" % (row.name, before or "not set", plan.config_name))
    return lines


def _pod(ref: object) -> str:
    if isinstance(ref, dict):
        return "%s/%s" % (ref.get("namespace"), ref.get("name"))
    return str(ref)
