# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's dynamic programme over a pool's GPU indices: which per-index layouts are worth checking. Pure.

Each index keeps its layout or takes one of the catalog's maximal layouts over the profiles that matter
(plan/advice/layouts.py). A state is what the indices offer (Space: per unit over the node, and per group of GPUs
where a claim's ``matchAttribute`` needs the unit there), capped at what the claims ask for; a state offering at
least as much with no more changed indices and instances taken away makes another useless, so only the undominated
states are kept. Capacity beyond the demand is worth nothing, so the states are few. The caller (candidates.py)
checks the states, fewest changed indices first, with the packing evaluator. When a state count limit is reached
(many attribute groups), the cheapest states are kept and the result says the search was cut short.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import ClaimNeed
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import Layout, lost, units_of
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import index_partition
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

__all__ = ["MAX_STATES", "WORK", "Space", "State", "attribute_parts", "frontier", "space_of"]

MAX_STATES = 500  # undominated states kept per number of changed indices (past it: cut short)
WORK = 150000  # states a frontier may build (past it: the indices not yet walked keep their layout; cut short)


class Space(NamedTuple):
    """What a state counts: coordinates (a group of GPU indices, a unit), each capped at what the claims ask for.

    Every unit the claims or templates ask for is counted over the whole node; a unit is counted per group of GPUs
    (a PCIe root, a GPU) only where a claim needs it under that group's attribute (``matchAttribute``). Other claims
    draw a unit from anywhere on the node, so its per-group counts would tell states apart for nothing."""

    coords: Tuple[Tuple[Tuple[int, ...], str], ...]
    caps: Tuple[int, ...]  # per coordinate


def attribute_parts(supply: dict, per_node: int, attribute: str) -> List[Tuple[int, ...]]:
    """The distinct groups of GPU indices sharing a value of `attribute` on the pool's usable nodes."""
    parts = set()
    for row in supply["nodes"]:
        if row["usable"]:
            parts.update(tuple(p) for p in index_partition(row, per_node, attribute))
    return sorted(parts)


def space_of(
    pool, supply: dict, claims: Sequence[ClaimNeed], needed: Sequence[str], parts: Optional[Dict[str, list]] = None
) -> Space:
    """The space of `claims` and the templates' `needed` units; `parts`: attribute_parts per attribute, where the
    caller keeps them (else they are read from `supply`)."""
    per_node = pool.gpu.per_node
    totals: Dict[str, int] = {}
    for claim in claims:
        for unit, count in claim.units.items():
            totals[unit] = totals.get(unit, 0) + count
    for unit in needed:
        totals.setdefault(unit, 1)  # a template's unit only has to be offered
    whole = tuple(range(per_node))
    coords = [(whole, u) for u in sorted(totals)]
    constrained: Dict[str, set] = {}  # attribute -> the units claims need under one of its values
    for claim in claims:
        for need in claim.needs:
            if need.constraint is not None:
                constrained.setdefault(claim.match[need.constraint], set()).add(need.unit)
    parts = {} if parts is None else parts
    grouped = set()
    for attribute, units in constrained.items():
        if attribute not in parts:
            parts[attribute] = attribute_parts(supply, per_node, attribute)
        grouped.update((part, u) for part in parts[attribute] for u in units)
    coords += sorted(grouped - set(coords))
    return Space(tuple(coords), tuple(totals[u] for _g, u in coords))


Offer = Tuple[Tuple[int, int], ...]  # (coordinate, count) for the coordinates an index's layout adds to


class State(NamedTuple):
    vector: Tuple[int, ...]
    lost: Tuple[int, int]  # instances taken away, then their memory slices (a 3g.20gb weighs more than a 1g.10gb)
    changes: Tuple[Tuple[int, Layout], ...]  # (index, new layout), in the order decided


def _offer(space: Space, index: int, layout: Layout) -> Offer:
    have = units_of(layout)
    return tuple((k, have[u]) for k, (group, u) in enumerate(space.coords) if index in group and have.get(u))


def _add(caps: Tuple[int, ...], vector: Tuple[int, ...], offer: Offer) -> Tuple[int, ...]:
    if not offer:
        return vector
    out = list(vector)
    for k, count in offer:
        total = out[k] + count
        out[k] = total if total < caps[k] else caps[k]
    return tuple(out)


def _covers(more: Dict[int, int], less: Dict[int, int]) -> bool:
    return all(more.get(k, 0) >= n for k, n in less.items())


def _taken(model, before: Layout, after: Layout) -> Tuple[int, int]:
    """(instances, memory slices) of `before` that `after` no longer has."""
    was, now = units_of(before), units_of(after)
    slices = 0
    for unit, count in was.items():
        prof = profile_by_name(model, unit) if model is not None and model.mig and unit != FULL_GPU else None
        slices += max(0, count - now.get(unit, 0)) * (prof.memory_slices if prof else 8)
    return lost(before, after), slices


def _moves(
    space: Space, model, index: int, before: Layout, options: Sequence[Layout], costed: bool
) -> List[Tuple[Layout, Offer, Tuple[int, int]]]:
    """[(layout, offer, cost)] the index holding `before` may take. An option is left out when keeping `before`
    offers at least as much, or when an option kept offers at least as much for no more cost: it could only make
    dominated states (a layout's other profiles matter to no claim)."""
    keep = dict(_offer(space, index, before))
    ranked = []
    for position, lay in enumerate(options):
        if lay != before:
            ranked.append((_taken(model, before, lay) if costed else (0, 0), position, lay))
    ranked.sort(key=lambda r: (r[0], r[1]))
    kept: List[Tuple[Layout, Offer, Tuple[int, int]]] = []
    offers: List[Dict[int, int]] = []
    for cost, _position, lay in ranked:
        offer = _offer(space, index, lay)
        mine = dict(offer)
        if _covers(keep, mine) or any(_covers(other, mine) for other in offers):
            continue
        kept.append((lay, offer, cost))
        offers.append(mine)
    return kept


def _undominated(space: Space, states: List[State]) -> Tuple[List[State], bool]:
    """(states no other offers at least as much of everything with no more instances taken away, cut short).

    Vectors are packed into one integer with a guard bit per field, so "a offers at least b" is one subtraction:
    ((a | guards) - b) & guards == guards. Past MAX_STATES the cheapest states are kept (cut short)."""
    best: Dict[Tuple[int, ...], State] = {}
    for state in states:
        have = best.get(state.vector)
        if have is None or state.lost < have.lost:
            best[state.vector] = state
    ordered = sorted(best.values(), key=lambda s: (s.lost, -sum(s.vector), tuple(-v for v in s.vector)))
    cut = False
    if len(ordered) > 3 * MAX_STATES:
        ordered, cut = ordered[: 3 * MAX_STATES], True
    shifts, guards, at = [], 0, 0
    for cap in space.caps:
        bits = cap.bit_length() + 1
        shifts.append(at)
        guards |= 1 << (at + bits - 1)
        at += bits
    kept: List[State] = []
    packed: List[int] = []
    for state in ordered:
        mine = 0
        for shift, value in zip(shifts, state.vector):
            mine |= value << shift
        if any(((other | guards) - mine) & guards == guards for other in packed):
            continue  # ordered by cost: every state kept before costs no more
        kept.append(state)
        packed.append(mine)
        if len(kept) == MAX_STATES:
            cut = cut or len(ordered) > len(kept)
            break
    return kept, cut


def frontier(
    space: Space,
    current: Dict[int, Layout],
    indices: Sequence[int],
    options: Sequence[Layout],
    model=None,
    most: Optional[int] = None,
    costed: bool = True,
) -> Tuple[Dict[int, List[State]], bool]:
    """({number of changed indices: undominated states}, cut short): each of `indices` keeps its layout or takes one of
    `options`, at most `most` of them changed. States count only what `indices` offer (the other indices are the same
    in every state). Not `costed`: one level of the states offering most, whatever they change (is there any?)."""
    zero = (0,) * len(space.coords)
    levels: Dict[int, List[State]] = {0: [State(zero, (0, 0), ())]}
    cut = False
    work = 0
    caps = space.caps
    for index in indices:
        if work > WORK:
            return levels, True  # the indices not walked keep their layout in every state
        keep = _offer(space, index, current[index])
        moves = _moves(space, model, index, current[index], options, costed)
        nxt: Dict[int, List[State]] = {}
        for k in sorted(levels, reverse=True):  # at a tie the index decided first (the highest) changes
            for state in levels[k]:
                nxt.setdefault(k, []).append(state._replace(vector=_add(caps, state.vector, keep)))
                if most is not None and k >= most:
                    continue
                work += len(moves)
                into = nxt.setdefault(k + 1 if costed else 0, [])
                for lay, offer, gone in moves:
                    into.append(
                        State(
                            _add(caps, state.vector, offer),
                            (state.lost[0] + gone[0], state.lost[1] + gone[1]),
                            state.changes + ((index, lay),),
                        )
                    )
        levels = {}
        for k, states in nxt.items():
            kept, short = _undominated(space, states)
            cut = cut or short
            levels[k] = kept
    return levels, cut
