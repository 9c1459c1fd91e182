# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The changes that would serve a pool's waiting claims, and which claims can be served at all. Pure.

Three kinds of change (demand.Change), each checked by the packing evaluator (plan/advice/evaluate.py):

- **pool-wide**: some GPU *indices* take a new layout on every node carrying the pool's layout (those indices hold no
  allocated device on any such node), possibly with more nodes (``node_count + N``, never beyond ``max_node_count``);
- **more nodes** alone;
- **a group**: N named nodes take a per-index layout L (they join a MIG group, ``mig.groups``). Only nodes whose
  changed GPUs hold no allocated device may join: idle nodes first, then those whose drain evicts fewest pods, then
  by name; the fewest such nodes that serve the claims are chosen.

The layouts are searched exactly per GPU index by the dynamic programme of plan/advice/frontier.py; its states,
fewest changed indices first, are checked by the evaluator here.

Which claims to serve is decided together, oldest first (the scheduler's order): a claim no change serves on its
own is set aside; then, shape by shape (the same needs), the most claims of that shape that can be served together
with those already taken (a binary search: serving fewer never needs more). The rest are unserved, each with why.
A change must keep offering every unit the tenants' templates ask for.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import NO_CHANGE, Change, ClaimNeed
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.evaluate import Evaluator, current_layouts
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.frontier import (
    Space,
    State,
    frontier,
    space_of,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import Layout, layouts_over, units_of
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

__all__ = ["Candidate", "current_layouts", "search", "NO_MAX_EXTRA"]

NO_MAX_EXTRA = 100  # nodes the advisor may add to a nodegroup that declares no max_node_count
SHALLOW = 2  # levels of changed indices walked on their own (most searches stop there)
GROUP_BUDGET = 4000  # evaluations the group search may spend per pool (past it: cut short)


class Candidate(NamedTuple):
    pool: str
    changed: Dict[int, Layout]  # GPU index -> its new layout on every node carrying the pool's layout
    nodes_added: int
    nodes_repartitioned: List[str]
    pods_evicted: List[str]
    gpus_changed: int
    idle_gpus: float
    lost_instances: int
    group_nodes: Tuple[str, ...] = ()  # nodes that join a new MIG group (by name, in the order chosen)
    group_layout: Optional[Dict[int, Layout]] = None  # that group's layout per GPU index

    @property
    def change(self) -> Change:
        nodes = {n: dict(self.group_layout or {}) for n in self.group_nodes}
        return Change(dict(self.changed), nodes, self.nodes_added)


def keeps(needed: Sequence[str], layouts: Dict[int, Layout]) -> bool:
    """Whether every unit the tenants' templates ask for is still offered by some GPU index."""
    offered = set()
    for layout in layouts.values():
        offered.update(units_of(layout))
    return all(u in offered for u in needed)


def layout_options(pool, claims: Sequence[ClaimNeed], needed: Sequence[str]) -> List[Layout]:
    """The layouts a changed index may take: whole GPU when whole GPUs are wanted, and the maximal layouts over the
    profiles that matter (waited for, in the layout now, asked for by templates) that hold a waited-for profile."""
    model = pool.catalog_gpu
    wanted = {n.unit for c in claims for n in c.needs}
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


# ---- the claims that can be served ----------------------------------------------------------------------------


def _shape(claim: ClaimNeed) -> Tuple:
    return (tuple(sorted(claim.needs)), claim.match)


def _words(claim: ClaimNeed) -> str:
    parts = ["%d %s" % (n.count, "whole GPU(s)" if n.unit == FULL_GPU else "x " + n.unit) for n in claim.needs]
    where = " under one %s value" % "/".join(claim.match) if claim.match else ""
    return "%s on one node%s" % (" + ".join(parts), where)


class Search:
    """One pool's search: its supply, the claims, the layouts an index may take and the nodes it may add."""

    def __init__(self, pool, supply: dict, claims: Sequence[ClaimNeed], needed: Sequence[str], evicted_on) -> None:
        self.pool = pool
        self.supply = supply
        self.claims = list(claims)
        self.needed = list(needed)
        self.evicted_on = evicted_on
        group = pool.nodegroup
        self.most = 0
        if group is not None:
            self.most = (group.max_node_count - group.node_count) if group.max_node_count is not None else NO_MAX_EXTRA
        self.current = current_layouts(pool)
        self.options = layout_options(pool, self.claims, self.needed)
        rows = [r for r in supply["nodes"] if r.get("group") is None]
        self.pool_rows = rows
        # an index is frozen when a GPU at it holds an allocated device on a node carrying the pool's layout
        frozen = {i for r in rows for i, g in r["gpus"].items() if g["held"]}
        # and wherever supply.py says an allocated device may be (a GPU it could not place by identity)
        names = {r["name"] for r in rows}
        for index, where in (supply.get("frozen") or {}).items():
            if any(str(w).split(" ", 1)[0] in names for w in where):
                frozen.add(index)
        self.changeable = [i for i in reversed(range(pool.gpu.per_node)) if i not in frozen] if self.options else []
        self.frozen_units = set()
        for i in frozen:
            self.frozen_units.update(units_of(self.current[i]))
        self._parts: Dict[str, list] = {}  # attribute -> attribute_parts, read once
        self.space = space_of(
            pool, supply, self.claims, [u for u in self.needed if u not in self.frozen_units], self._parts
        )
        self.cut_short = False
        self.evaluations = 0
        self.every = list(reversed(range(pool.gpu.per_node))) if self.options else []
        self.group_space = space_of(pool, supply, self.claims, self.needed, self._parts)
        self._eligible: Dict[frozenset, List[str]] = {}
        self._cache: Dict[Tuple[bool, Optional[int], Space], Dict[int, List[State]]] = {}
        self._order: Optional[List[Tuple[bool, int, str, frozenset]]] = None
        self.ev = Evaluator(pool, supply, self.claims)  # asked about subsets of the claims too
        self._others: List[Evaluator] = []

    # A frontier is computed once per space: the search's with the caps of all claims (larger caps only keep more
    # states), a servability check's with only its claims' units (a lone claim's frontier is a handful of states).
    def _space(self, group: bool, claims: Optional[Sequence[ClaimNeed]]) -> Space:
        if claims is None:
            return self.group_space if group else self.space
        needed = self.needed if group else [u for u in self.needed if u not in self.frozen_units]
        return space_of(self.pool, self.supply, claims, needed, self._parts)

    def _frontier(
        self, group: bool, most: Optional[int], claims: Optional[Sequence[ClaimNeed]] = None
    ) -> Dict[int, List[State]]:
        space = self._space(group, claims)
        key = (group, most, space)
        if key not in self._cache:
            indices = self.every if group else self.changeable
            levels, cut = frontier(
                space, self.current, indices, self.options, self.pool.catalog_gpu, most=most, costed=most is not None
            )
            self.cut_short = self.cut_short or cut
            self._cache[key] = levels
        return self._cache[key]

    def level(self, k: int, group: bool = False) -> List[State]:
        """The undominated states changing exactly k indices (pool-wide, or of a group's nodes). Levels 1 and 2 are
        walked with at most that many changes, so a search that stops there never builds the deeper levels; a
        deeper one walks every level once."""
        return self._frontier(group, k if k <= SHALLOW else self.pool.gpu.per_node).get(k, [])

    def maximal(self, group: bool = False, claims: Optional[Sequence[ClaimNeed]] = None) -> List[State]:
        """The states offering most of what `claims` (None: all) ask for, whatever they change (is there any change
        that serves them?)."""
        return self._frontier(group, None, claims).get(0, [])

    def _keeps(self, changes: Dict[int, Layout]) -> bool:
        return keeps(self.needed, {**self.current, **changes})

    def eligible(self, changes: Dict[int, Layout]) -> List[str]:
        """Usable nodes carrying the pool's layout whose GPUs at the changed indices hold no allocated device: idle
        nodes first, then fewest pods a drain evicts, then by name."""
        if self._order is None:
            order = []
            for row in self.pool_rows:
                if row["usable"] and row["gpus"]:
                    # a GPU placed by position only (supply.py: "maybe") may be at any index it could have
                    held = frozenset(
                        at for i, g in row["gpus"].items() if g["held"] for at in (g["device"].get("maybe") or [i])
                    )
                    order.append((bool(held), len(self.evicted_on.get(row["name"], [])), row["name"], held))
            self._order = sorted(order)
        key = frozenset(changes)
        if key not in self._eligible:
            self._eligible[key] = [name for _b, _p, name, held in self._order if not held.intersection(key)]
        return self._eligible[key]

    def _evaluator(self, claims: Sequence[ClaimNeed]) -> Evaluator:
        if list(claims) == self.claims:
            return self.ev
        ev = Evaluator(self.pool, self.supply, claims)
        self._others.append(ev)
        return ev

    def _done(self, ev: Evaluator) -> None:
        every = [self.ev] + self._others
        self.cut_short = self.cut_short or any(e.cut_short for e in every)
        self.evaluations = sum(e.evaluations for e in every)

    def servable(self, claims: Sequence[ClaimNeed]) -> bool:
        """Whether some change (pool-wide layout and nodes, or a group of all eligible nodes) serves `claims`."""
        if not claims:
            return True
        ev, wanted = self.ev, list(claims)
        if ev.serves(NO_CHANGE._replace(added=self.most), wanted):
            return True
        for state in self.maximal(claims=wanted):
            changes = dict(state.changes)
            if changes and self._keeps(changes) and ev.serves(Change(changes, {}, self.most), wanted):
                return True
        for state in self.maximal(group=True, claims=wanted):
            changes = dict(state.changes)
            layout = {**self.current, **changes}
            if not changes or not keeps(self.needed, layout):
                continue
            nodes = self.eligible(changes)
            if nodes and ev.serves(Change({}, dict.fromkeys(nodes, layout), 0), wanted):
                return True
        return False

    def alone(self) -> Tuple[List[ClaimNeed], List[Tuple[ClaimNeed, str]]]:
        """(the claims some change serves on its own, [(claim, why) for the others]), oldest first."""
        unserved: List[Tuple[ClaimNeed, str]] = []
        alone: Dict[Tuple, bool] = {}
        keep: List[ClaimNeed] = []
        for claim in self.claims:
            shape = _shape(claim)
            if shape not in alone:
                alone[shape] = self.servable([claim])
            if alone[shape]:
                keep.append(claim)
            else:
                unserved.append(
                    (
                        claim,
                        "no layout of pool %s's unallocated GPUs and no node count%s gives %s"
                        % (self.pool.name, " up to %d more" % self.most if self.most else "", _words(claim)),
                    )
                )
        return keep, unserved

    def most_served(self, keep: List[ClaimNeed]) -> Tuple[List[ClaimNeed], List[Tuple[ClaimNeed, str]]]:
        """(the claims of `keep` to serve together, [(claim, why) for the rest]): shape by shape, oldest first, the
        most claims of a shape that some change serves beside those already taken."""
        if self.servable(keep):
            return keep, []
        unserved: List[Tuple[ClaimNeed, str]] = []
        shapes: List[Tuple] = []
        for claim in keep:
            if _shape(claim) not in shapes:
                shapes.append(_shape(claim))
        taken: List[ClaimNeed] = []
        for shape in shapes:
            mine = [c for c in keep if _shape(c) == shape]
            low, high = 0, len(mine)  # taken + mine[:low] is servable; the most that are lies in low..high
            while low < high:
                mid = (low + high + 1) // 2
                if self.servable(taken + mine[:mid]):
                    low = mid
                else:
                    high = mid - 1
            taken += mine[:low]
            for claim in mine[low:]:
                unserved.append(
                    (
                        claim,
                        "pool %s serves at most %d claim(s) of %s%s; no other layout, MIG group or node count%s "
                        "serves more%s"
                        % (
                            self.pool.name,
                            low,
                            _words(claim),
                            " beside %d older claim(s) of other shapes" % (len(taken) - low)
                            if len(taken) > low
                            else "",
                            " (up to %d more)" % self.most if self.most else "",
                            " and keeps the units the templates ask for (%s)" % ", ".join(self.needed)
                            if self.needed
                            else "",
                        ),
                    )
                )
        order = {id(c): k for k, c in enumerate(self.claims)}
        taken.sort(key=lambda c: order[id(c)])
        return taken, unserved


# ---- the candidates -------------------------------------------------------------------------------------------


def search(
    pool,
    supply: dict,
    claims: Sequence[ClaimNeed],
    needed: Sequence[str],
    evicted_on: Dict[str, List[str]],
) -> Dict[str, Any]:
    """{"serves_now", "candidates" (serving changes, unranked), "claims" (those served), "unserved"
    [(claim, why)], "cut_short", "evaluations"} for one pool.

    The claims some change serves on their own are searched for together first; only when no candidate serves them
    all is the largest servable set decided (Search.most_served) and searched for. Claims no candidate found serves
    are unserved, whatever the servability check said: a served claim always has its change."""
    s = Search(pool, supply, claims, needed, evicted_on)
    served, unserved = s.alone()
    ev = s._evaluator(served)
    now = bool(served) and ev.serves(NO_CHANGE)  # nothing left to serve is not "served now"
    found: List[Candidate] = []
    if served and not now:
        found = _candidates(s, ev)
        if not found:
            served, more = s.most_served(served)
            unserved += more
            ev = s._evaluator(served)
            now = bool(served) and ev.serves(NO_CHANGE)
            found = _candidates(s, ev) if served and not now else []
            if served and not now and not found:
                why = "no change found serves pool %s's claims%s" % (
                    pool.name,
                    " (the search was cut short)" if s.cut_short or ev.cut_short else "",
                )
                unserved += [(c, why) for c in served]
                served = []
    result: Dict[str, Any] = {"serves_now": now, "candidates": found, "claims": served, "unserved": unserved}
    s._done(ev)
    result["cut_short"], result["evaluations"] = s.cut_short, s.evaluations
    return result


def _candidates(s: Search, ev: Evaluator) -> List[Candidate]:
    """The changes serving the evaluator's claims: more nodes alone, pool-wide layouts (fewest changed indices first,
    up to the first count that serves without a node) and groups."""
    pool = s.pool
    found: List[Candidate] = []
    pool_names = [r["name"] for r in s.pool_rows]

    def pods(names: Sequence[str]) -> List[str]:
        return sorted({p for n in names for p in s.evicted_on.get(n, [])})

    added = ev.fewest_nodes(NO_CHANGE, s.most)
    if added is not None:
        found.append(Candidate(pool.name, {}, added, [], [], 0, ev.idle(added), 0))
    for k in range(1, len(s.changeable) + 1):
        free_of_nodes = False
        for state in s.level(k):
            changes = dict(state.changes)
            if not s._keeps(changes):
                continue
            added = ev.fewest_nodes(Change(changes, {}, 0), s.most)
            if added is None:
                continue
            found.append(
                Candidate(
                    pool.name,
                    changes,
                    added,
                    list(pool_names),
                    pods(pool_names),
                    k * len(pool_names),
                    ev.idle(added),
                    state.lost[0] * max(1, len(pool_names)),
                )
            )
            free_of_nodes = free_of_nodes or added == 0
        if free_of_nodes:
            break
    _groups(s, ev, found, pods)
    return found


def _groups(s: Search, ev: Evaluator, found: List[Candidate], pods) -> None:
    """Group candidates: per layout (fewest changed indices first), the fewest eligible nodes that serve."""
    if not s.pool.catalog_gpu or s.pool.mig.mode != "static":
        return
    start = ev.evaluations
    everyone = len([r for r in s.pool_rows if r["usable"] and r["gpus"]])
    best: Optional[Tuple[int, int]] = None  # (nodes, pods evicted) of the best group found
    for k in range(1, len(s.every) + 1):
        for state in s.level(k, group=True):
            if ev.evaluations - start > GROUP_BUDGET:
                s.cut_short = True
                return
            changes = dict(state.changes)
            layout = {**s.current, **changes}
            if not keeps(s.needed, layout):
                continue
            nodes = s.eligible(changes)
            if not nodes:
                continue

            def serves(n: int) -> bool:
                return ev.serves(Change({}, dict.fromkeys(nodes[:n], layout), 0))

            # Once a group evicting no pod is found, a group of more nodes ranks below it (ranking.change_key):
            # only as many nodes as it has are worth trying.
            limit = len(nodes) if best is None or best[1] else min(len(nodes), best[0])
            if not serves(limit):
                continue
            low, high = 0, limit  # more nodes of the layout serve at least as much for the claims it is for
            while high - low > 1:
                mid = (low + high) // 2
                if serves(mid):
                    high = mid
                else:
                    low = mid
            chosen = nodes[:high]
            if len(chosen) >= everyone and all(i in s.changeable for i in changes):
                continue  # every node: that is the pool-wide change
            found.append(
                Candidate(
                    s.pool.name,
                    {},
                    0,
                    list(chosen),
                    pods(chosen),
                    k * len(chosen),
                    ev.idle(0),
                    state.lost[0] * len(chosen),
                    tuple(chosen),
                    layout,
                )
            )
            mine = (len(chosen), len(pods(chosen)))
            best = mine if best is None or (mine[1], mine[0]) < (best[1], best[0]) else best
        if best is not None:
            return  # fewest changed GPUs per node found
