# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The changes that would serve a pool's waiting claims: new layouts for some GPU indices, more nodes, or both. Pure.

A pool's MIG layout is the same on every node (``mig.layout``, or ``mig.layouts`` per GPU index), so a change gives
some GPU *indices* a new layout on every node; indices holding an allocated device on any node are frozen
(plan/advice/supply.py). More nodes (``nodegroup.node_count + N``, never beyond ``max_node_count``) come with the
pool's layout, the new one if it changes too.

Whether a change serves the claims is a packing check per unit, not a scheduler run: every node (and every
``matchAttribute`` group of it) is a bin holding the free units it would have after the change, and the claims'
device counts are packed into them exactly (plan/advice/packing.py: best fit, then a bounded search). Nodes that
look the same are one bin class with a multiplicity, so 2,000 nodes cost what their few shapes cost. Units are
packed one at a time: claims with several requests, and the whole-GPU versus MIG trade of one GPU under dynamic
MIG, are not modelled (docs/advisor.md).

The search tries the fewest changed indices first, each index taking one of the layouts plan/advice/layouts.py
lists, and for each the fewest added nodes (a binary search: more nodes never serve less); it stops at the first
number of indices that serves without a node, and within a budget of evaluations.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import packing
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import (
    Layout,
    layouts_over,
    lost,
    units_of,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import index_partition, unit_slices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

NO_MAX_EXTRA = 100  # nodes the advisor may add to a nodegroup that declares no max_node_count
BUDGET = 3000  # candidate evaluations per pool


class Demand(NamedTuple):
    """One request of a waiting claim the advisor plans for."""

    claim: str
    unit: str
    count: int
    attribute: Optional[str]


class Candidate(NamedTuple):
    pool: str
    changed: Dict[int, Layout]  # GPU index -> its new layout (None: whole GPU)
    nodes_added: int
    nodes_repartitioned: List[str]
    pods_evicted: List[str]
    gpus_changed: int
    idle_gpus: float
    lost_instances: int


def current_layouts(pool) -> Dict[int, Layout]:
    """{GPU index: layout now} as the inventory declares it (None: whole GPU)."""
    return {i: pool.layout_for(i) if pool.mig.mode == "static" else None for i in range(pool.gpu.per_node)}


def fits_all(bins: Counter, sizes: Sequence[int]) -> bool:
    """Whether the claims' sizes can all be packed into bins {capacity: how many bins} (plan/advice/packing.py)."""
    key = tuple(sorted((c, n) for c, n in bins.items() if c > 0 and n > 0))
    return packing.fits_remembered(key, tuple(sorted(sizes, reverse=True)))


class Evaluator:
    """Whether a change serves a pool's demand, with the pool's usable nodes folded into bin classes."""

    def __init__(self, pool, supply: dict, demand: List[Demand]) -> None:
        self.pool = pool
        self.per_node = pool.gpu.per_node
        self.units = sorted({d.unit for d in demand})
        self.attribute = {
            u: next((d.attribute for d in demand if d.unit == u and d.attribute), None) for u in self.units
        }
        self.sizes = {u: sorted((d.count for d in demand if d.unit == u), reverse=True) for u in self.units}
        self.current = current_layouts(pool)
        self.classes: Counter = Counter()
        template = None
        for row in supply["nodes"]:
            if not row["usable"] or not row["gpus"]:
                continue  # a node that publishes nothing gains nothing from a layout
            free = tuple(
                tuple(sorted(row["gpus"][i]["free"].items())) if i in row["gpus"] else () for i in range(self.per_node)
            )
            parts = tuple(tuple(map(tuple, index_partition(row, self.per_node, self.attribute[u]))) for u in self.units)
            self.classes[(free, parts)] += 1
            if template is None or len(row["gpus"]) == self.per_node:
                template = template if template is not None and len(template["gpus"]) == self.per_node else row
        # New nodes are grouped like an existing node (the same hardware), or each GPU alone when there is none.
        self.new_parts = tuple(
            tuple(map(tuple, index_partition(template or {"gpus": {}}, self.per_node, self.attribute[u])))
            for u in self.units
        )
        whole = float(unit_slices(pool, FULL_GPU))
        self.demand_gpus = sum(d.count * unit_slices(pool, d.unit) / whole for d in demand)
        self.free_gpus = sum(g["free_fraction"] for r in supply["nodes"] if r["usable"] for g in r["gpus"].values())
        self.evaluations = 0

    def serves(self, changed: Dict[int, Layout], added: int) -> bool:
        self.evaluations += 1
        new_units = [units_of(changed[i] if i in changed else self.current[i]) for i in range(self.per_node)]
        changed_units = {i: units_of(layout) for i, layout in changed.items()}
        for k, unit in enumerate(self.units):
            bins: Counter = Counter()
            for (free, parts), many in self.classes.items():
                for group in parts[k]:
                    cap = 0
                    for i in group:
                        cap += changed_units[i].get(unit, 0) if i in changed_units else dict(free[i]).get(unit, 0)
                    if cap:
                        bins[cap] += many
            if added:
                for group in self.new_parts[k]:
                    cap = sum(new_units[i].get(unit, 0) for i in group)
                    if cap:
                        bins[cap] += added
            if not fits_all(bins, self.sizes[unit]):
                return False
        return True

    def fewest_nodes(self, changed: Dict[int, Layout], most: int) -> Optional[int]:
        """The fewest nodes to add (0..most) for the change to serve the demand, or None."""
        if self.serves(changed, 0):
            return 0
        if most <= 0 or not self.serves(changed, most):
            return None
        low, high = 0, most  # serves(high), not serves(low)
        while high - low > 1:
            mid = (low + high) // 2
            if self.serves(changed, mid):
                high = mid
            else:
                low = mid
        return high

    def idle(self, added: int) -> float:
        """GPUs (in GPU fractions) left free once the waiting claims are placed."""
        return round(max(0.0, self.free_gpus + added * self.per_node - self.demand_gpus), 2)


def keeps(needed: Sequence[str], layouts: Dict[int, Layout]) -> bool:
    """Whether every unit the tenants' templates ask for is still offered by some GPU index."""
    offered = set()
    for layout in layouts.values():
        offered.update(units_of(layout))
    return all(u in offered for u in needed)


def layout_options(pool, demand: List[Demand], needed: Sequence[str]) -> List[Layout]:
    """The layouts a changed index may take: whole GPU when whole GPUs are wanted, and the maximal layouts over the
    profiles that matter (waited for, in the layout now, asked for by templates) that hold a waited-for profile."""
    model = pool.catalog_gpu
    wanted = {d.unit for d in demand}
    out: List[Layout] = [None] if FULL_GPU in wanted else []
    if model is None or not model.mig or pool.mig.mode == "dynamic":
        return out
    profiles = {u for u in wanted if u != FULL_GPU}
    if not profiles:
        return out
    for layout in current_layouts(pool).values():
        profiles.update(layout or {})
    profiles.update(u for u in needed if u != FULL_GPU)
    out += [lay for lay in layouts_over(model, sorted(profiles)) if wanted & set(lay)]
    return out


def split_servable(pool, supply: dict, demand: List[Demand], options: List[Layout], changeable: List[int], most: int):
    """(demand some change could serve, [(demand, why) that none can]): a claim shape is tried alone with every
    changeable index given the layout with the most of its unit and every node the nodegroup may add."""
    keep: List[Demand] = []
    dropped: List[tuple] = []
    verdict: Dict[tuple, bool] = {}
    for d in demand:
        shape = (d.unit, d.count, d.attribute)
        if shape not in verdict:
            ev = Evaluator(pool, supply, [d])
            ok = ev.serves({}, most)
            if not ok and changeable:
                choice = [lay for lay in options if units_of(lay).get(d.unit)]
                if choice:
                    best = max(choice, key=lambda lay: units_of(lay).get(d.unit, 0))
                    ok = ev.serves(dict.fromkeys(changeable, best), most)
            verdict[shape] = ok
        if verdict[shape]:
            keep.append(d)
        else:
            where = " under one %s value" % d.attribute if d.attribute else " on one node"
            dropped.append(
                (
                    d,
                    "no layout of pool %s's unallocated GPUs and no node count%s gives %d %s%s"
                    % (
                        pool.name,
                        " up to %d more" % most if most else "",
                        d.count,
                        "whole GPU(s)" if d.unit == FULL_GPU else "x " + d.unit,
                        where,
                    ),
                )
            )
    return keep, dropped


def search(
    pool,
    supply: dict,
    demand: List[Demand],
    needed: Sequence[str],
    evicted_on: Dict[str, List[str]],
    budget: int = BUDGET,
) -> Dict[str, Any]:
    """{"serves_now", "candidates" (serving changes, unranked), "unserved" [(demand, why)], "cut_short"} for one
    pool. Claims no change could serve are set aside first (unserved), so they do not block the others."""
    group = pool.nodegroup
    most = 0
    if group is not None:
        most = (group.max_node_count - group.node_count) if group.max_node_count is not None else NO_MAX_EXTRA
    options = layout_options(pool, demand, needed)
    changeable = [i for i in reversed(range(pool.gpu.per_node)) if i not in supply["frozen"]]
    if not options:
        changeable = []
    demand, unserved = split_servable(pool, supply, demand, options, changeable, most)
    ev = Evaluator(pool, supply, demand)
    result: Dict[str, Any] = {
        "serves_now": False,
        "candidates": [],
        "demand": demand,
        "unserved": unserved,
        "cut_short": False,
    }
    if not demand or ev.serves({}, 0):
        result["serves_now"] = bool(demand)  # nothing left to serve is not "served now"
        return result
    names = [r["name"] for r in supply["nodes"]]
    current = ev.current
    found: List[Candidate] = result["candidates"]

    def record(changed: Dict[int, Layout], added: int) -> None:
        touched = names if changed else []
        pods = sorted({p for n in touched for p in evicted_on.get(n, [])})
        found.append(
            Candidate(
                pool=pool.name,
                changed=dict(changed),
                nodes_added=added,
                nodes_repartitioned=list(touched),
                pods_evicted=pods,
                gpus_changed=len(changed) * len(names),
                idle_gpus=ev.idle(added),
                lost_instances=sum(lost(current[i], lay) for i, lay in changed.items()) * max(1, len(names)),
            )
        )

    added = ev.fewest_nodes({}, most)
    if added is not None:
        record({}, added)
    # Indices with one current layout, and no claim matching devices by attribute: which of them change does not
    # matter, so one combination of k indices stands for all.
    interchangeable = len({repr(current[i]) for i in changeable}) == 1 and not any(d.attribute for d in demand)
    for k in range(1, len(changeable) + 1):
        free_of_nodes = False
        for indices in itertools.combinations(changeable, k):
            alike = len({repr(current[i]) for i in indices}) == 1
            assignments = (
                itertools.combinations_with_replacement(options, k) if alike else itertools.product(options, repeat=k)
            )
            for chosen in assignments:
                changed = dict(zip(indices, chosen))
                if any(current[i] == lay for i, lay in changed.items()):
                    continue  # not a change of that index
                if not keeps(needed, {**current, **changed}):
                    continue
                if ev.evaluations >= budget:
                    result["cut_short"] = True
                    break
                added = ev.fewest_nodes(changed, most)
                if added is not None:
                    record(changed, added)
                    free_of_nodes = free_of_nodes or added == 0
            if result["cut_short"] or interchangeable:
                break
        if free_of_nodes or result["cut_short"]:
            break
    result["evaluations"] = ev.evaluations
    return result
