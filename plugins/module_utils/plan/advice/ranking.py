# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which change to advise: disruption first, then GPUs left idle. Pure.

The order (smaller is better, compared one after the other):

1. pods evicted - the GPU pods on the nodes a layout change re-partitions (mig_layout drains them first);
2. nodes re-partitioned - a pool-wide layout change re-partitions every node carrying the pool's layout, a MIG group
   only the nodes it names, so a group of the fewest nodes ranks above re-partitioning the whole pool;
3. GPUs left idle once the waiting claims are placed (in GPUs: a 3g.20gb of an 8-slice GPU is half of one), which
   is where added nodes cost: a node added for one claim leaves the rest of it idle;
4. nodes added, 5. GPUs whose layout changes, 6. instances the change takes away;
7. then a stable order, so the same cluster always gets the same advice.

Adding nodes disrupts nothing that runs, so when more nodes alone serve the claims they come before any
re-partitioning; when they do not, the layout change that re-partitions least comes first. The runner-up options
of another kind (nodes only, layout only) are listed beside the advice.
"""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate


def change_key(candidate: Candidate) -> Tuple:
    return (
        len(candidate.pods_evicted),
        len(candidate.nodes_repartitioned),
        candidate.idle_gpus,
        candidate.nodes_added,
        candidate.gpus_changed,
        candidate.lost_instances,
        not candidate.group_nodes,  # at equal cost, the named nodes rather than the pool
        sorted((i, repr(layout)) for i, layout in candidate.changed.items()),
        sorted((i, repr(layout)) for i, layout in (candidate.group_layout or {}).items()),
        list(candidate.group_nodes),
    )


def kind(candidate: Candidate) -> str:
    if candidate.group_nodes:
        return "group"
    if candidate.changed and candidate.nodes_added:
        return "layout and nodes"
    return "layout" if candidate.changed else "nodes"


def ranked(candidates: List[Candidate]) -> List[Candidate]:
    """Every candidate, best first."""
    return sorted(candidates, key=change_key)


def options(candidates: List[Candidate], limit: int = 3) -> List[Candidate]:
    """The best candidate, then the best of each other kind (nodes only, group, layout only, both), at most `limit`."""
    out: List[Candidate] = []
    seen = set()
    for candidate in ranked(candidates):
        if kind(candidate) in seen:
            continue
        seen.add(kind(candidate))
        out.append(candidate)
        if len(out) == limit:
            break
    return out
