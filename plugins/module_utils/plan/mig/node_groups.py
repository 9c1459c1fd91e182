# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a pool's nodes carry which MIG group's layout (``mig.groups``), decided without I/O.

The choice is stable, because moving a node between groups re-partitions its GPUs and drains it:

1. A node already labelled with a group's mig-parted config (``nvidia.com/mig.config``) stays in that group while
   the group keeps room for it (the lowest names first when the group shrank).
2. A group that needs more nodes takes those its ``prefer`` list names (the advisor names the idle nodes it chose),
   then the other nodes by name (those a shrunk group left last).
3. Every other node carries the pool's own layout (group None).

Groups are filled in inventory order; a pool with fewer nodes than its groups ask for leaves the last groups short
(validate refuses groups that ask for more nodes than the nodegroup's node_count).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.names import CONFIG_LABEL, mig_config_name

Obj = Dict[str, Any]


def _name(node: Obj) -> str:
    return (node.get("metadata") or {}).get("name") or ""


def _label(node: Obj) -> Optional[str]:
    return ((node.get("metadata") or {}).get("labels") or {}).get(CONFIG_LABEL)


def assign_groups(pool, nodes: List[Obj]) -> Dict[str, Optional[str]]:
    """{node name: the name of the MIG group whose layout it carries, or None for the pool's own layout}."""
    names = sorted(_name(n) for n in nodes)
    labels = {_name(n): _label(n) for n in nodes}
    out: Dict[str, Optional[str]] = dict.fromkeys(names)
    if pool.mig.mode != "static" or not pool.mig.groups:
        return out
    groups = pool.group_names()
    room = {g: pool.mig.groups[k].nodes for k, g in enumerate(groups)}
    for group in groups:
        config = mig_config_name(pool, group)
        for name in names:
            if room[group] and labels[name] == config and out[name] is None:
                out[name] = group
                room[group] -= 1
    configs = {mig_config_name(pool, g) for g in groups}
    # nodes left by a group that shrank come last: they carry another layout than any group wants now
    order = [n for n in names if labels[n] not in configs] + [n for n in names if labels[n] in configs]
    for k, group in enumerate(groups):
        for name in [n for n in pool.mig.groups[k].prefer or [] if n in out] + order:
            if not room[group]:
                break
            if out[name] is None:
                out[name] = group
                room[group] -= 1
    return out


def members(assignment: Dict[str, Optional[str]], group: Optional[str]) -> List[str]:
    """The nodes of `group` (None: those carrying the pool's own layout), by name."""
    return sorted(n for n, g in assignment.items() if g == group)
