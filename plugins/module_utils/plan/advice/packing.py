# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether waiting claims can be placed on nodes, each claim whole on one node. Pure.

``check(nodes, claims)`` is the advisor's question: ``nodes`` is ``{node: how many}`` (identical nodes are one key
with a multiplicity, so 2,000 nodes cost their few shapes), a node is its GPUs, each with its free devices per unit
(FULL_GPU or a MIG profile) and the attribute values it publishes; a claim is a demand.ClaimNeed.

The rule (exact): a claim goes whole onto one node. Its needs without a constraint draw from anything free on the
node; the needs of one ``matchAttribute`` constraint draw from ONE group of GPUs sharing a value of that attribute
(a PCIe root, a GPU). Per unit, the devices placed in a group and in the groups inside it never exceed what the
group has free, and the node's total is the outermost group. Groups of the attributes in use nest (a GPU's PCI bus
ID lies under one PCIe root), so these are a tree, and on a tree the counts are enough (Hall's condition): the
devices can then be assigned to GPUs. Units are independent: a static MIG layout's instances are separate devices.

Two paths:

1. Every claim one request (the common case), and all claims of a unit under the same attribute (or none): a 1-D
   bin packing per unit (``fits``): bins are the nodes (or their groups), items the claims' counts. Best fit
   first, largest item first into the tightest bin, equal items and bins in bulk; a greedy success is a real
   packing. Otherwise an exact depth-first search over the items in decreasing size, each into each *distinct*
   remaining capacity, memoized dead states (the multiset of capacities plus the next item), cut when the items
   left exceed the capacity left.
2. Otherwise (several requests, a unit asked for with and without a constraint): ``pack``, an exact depth-first
   search over the claims, largest first, each placed on each *distinct* node state (identical states are
   interchangeable: symmetry broken) in each choice of groups for its constraints; the tightest node first, so
   the first path is best fit. Dead states - (claim index, multiset of node states) - are remembered; a state is
   cut when some unit's devices still needed exceed what is left free.

Limits: each search stops after ``NODE_BUDGET`` / ``STATE_BUDGET`` states and then answers "fits" with
``cut_short`` set. So "does not fit" is always proven, never said when a packing exists; a "fits" past the budget
may be wrong (the advisor then proposes too little, and says it was cut short). Small cases (a few nodes, a few
claims) never come near the budget. Groups of two attributes that cross (neither holds the other - no real GPU
publishes that) are modelled by their common refinement, each constraint drawing from one cell: there a "fits"
stays a real packing, and a "does not fit" may be wrong. Under dynamic MIG the free counts of one GPU's profiles
trade off against each other; they are counted apart (the caller's "free").
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Hashable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

NODE_BUDGET = 5000  # 1-D search states per check; past it the answer is "fits" (never a false "does not fit")
STATE_BUDGET = 5000  # whole-claim search states per check; the same rule

State = Tuple[Tuple[Tuple[int, int], ...], int]  # ((remaining capacity, how many bins), ...), next item's index


class Gpu(NamedTuple):
    """One GPU of a node as the packing sees it: its free devices per unit and the attribute values it publishes."""

    free: Tuple[Tuple[str, int], ...]  # ((unit, free devices), ...)
    values: Tuple[Tuple[str, Hashable], ...] = ()  # ((attribute, value), ...): what matchAttribute compares


Node = Tuple[Gpu, ...]


class Answer(NamedTuple):
    fits: bool
    cut_short: bool  # the search ran past its budget: "fits" was answered, not proven


def gpu(free: Mapping[str, int], values: Optional[Mapping[str, Hashable]] = None) -> Gpu:
    """A Gpu from a dict of free devices and a dict of attribute values (None values left out)."""
    pairs = ((a, v) for a, v in (values or {}).items() if v is not None)
    return Gpu(tuple(sorted((u, n) for u, n in free.items() if n > 0)), tuple(sorted(pairs, key=lambda p: p[0])))


def greedy_fits(bins: Counter, sizes: Sequence[int]) -> bool:
    """Largest first into the tightest bin (best fit), equal items in bulk; True is a real packing, False a guess."""
    free = Counter({c: n for c, n in bins.items() if c > 0 and n > 0})
    for size, n in sorted(Counter(sizes).items(), reverse=True):
        while n > 0:
            fitting = [c for c in free if c >= size and free[c] > 0]
            if not fitting:
                return False
            cap = min(fitting)
            per_bin = cap // size
            used = min(free[cap], -(-n // per_bin))
            hosted = min(n, used * per_bin)
            full, rest = divmod(hosted, per_bin)
            free[cap] -= full + (1 if rest else 0)
            if full and cap - per_bin * size:
                free[cap - per_bin * size] += full
            if rest and cap - rest * size:
                free[cap - rest * size] += 1
            n -= hosted
    return True


def fits(bins: Counter, sizes: Sequence[int], budget: int = NODE_BUDGET) -> bool:
    """True iff every item can be placed (exact up to ``budget`` search states; past it, True)."""
    return fits_checked(bins, sizes, budget).fits


def fits_checked(bins: Counter, sizes: Sequence[int], budget: int = NODE_BUDGET) -> Answer:
    """fits(), saying whether the budget cut the search short."""
    items = sorted((s for s in sizes if s > 0), reverse=True)
    if not items:
        return Answer(True, False)
    if greedy_fits(bins, items):
        return Answer(True, False)
    smallest = items[-1]
    # Capacity below the smallest item can never be used: dropping it keeps states few and the bound tight.
    start: State = (_key({c: n for c, n in bins.items() if c >= smallest and n > 0}, smallest), 0)
    left = [0] * (len(items) + 1)  # left[i]: total size of items[i:]
    for i in range(len(items) - 1, -1, -1):
        left[i] = left[i + 1] + items[i]

    def hopeless(state: State) -> bool:
        caps, i = state
        return not caps or caps[-1][0] < items[i] or sum(c * n for c, n in caps) < left[i]

    def children(state: State) -> Iterator[State]:
        caps, i = state
        size = items[i]
        # Tightest capacity first, like best fit, so a packing is usually found on the first path.
        for cap, _many in caps:
            if cap >= size:
                counts: Dict[int, int] = dict(caps)
                counts[cap] -= 1
                counts[cap - size] = counts.get(cap - size, 0) + 1
                yield _key(counts, smallest), i + 1

    if hopeless(start):
        return Answer(False, False)
    dead: Set[State] = set()
    stack: List[Tuple[State, Iterator[State]]] = [(start, children(start))]
    visited = 1
    while stack:
        state, pending = stack[-1]
        child = next(pending, None)
        if child is None:
            dead.add(state)  # every placement of this item failed: this state never packs
            stack.pop()
            continue
        if child[1] == len(items):
            return Answer(True, False)
        if child in dead:
            continue
        if hopeless(child):
            dead.add(child)
            continue
        visited += 1
        if visited > budget:
            return Answer(True, True)  # cut short: "fits" rather than a "does not fit" nobody proved
        stack.append((child, children(child)))
    return Answer(False, False)


def _key(counts: Dict[int, int], smallest: int) -> Tuple[Tuple[int, int], ...]:
    """The multiset of usable remaining capacities, as a sorted tuple of (capacity, bins)."""
    return tuple(sorted((c, n) for c, n in counts.items() if c >= smallest and n > 0))


@lru_cache(maxsize=4096)
def fits_remembered(bins: Tuple[Tuple[int, int], ...], sizes: Tuple[int, ...]) -> bool:
    """fits() for hashable arguments, remembered: the advisor's search asks the same question of many candidate
    layouts, and a question that runs into the budget costs the most."""
    return fits(Counter(dict(bins)), sizes)


@lru_cache(maxsize=4096)
def _fits_1d(bins: Tuple[Tuple[int, int], ...], sizes: Tuple[int, ...], budget: int) -> Answer:
    return fits_checked(Counter(dict(bins)), sizes, budget)


class _Shape(NamedTuple):
    """The group structure of a node for the attributes in use: a laminar family of GPU sets as a tree."""

    ancestors: Tuple[Tuple[int, ...], ...]  # per group: itself and every group above it, up to 0 (the node)
    levels: Tuple[Tuple[str, Tuple[int, ...]], ...]  # (attribute, the groups of its values)


def _blocks(node: Node, attribute: str) -> List[FrozenSet[int]]:
    """The node's GPUs grouped by the attribute's value; a GPU publishing none is a group alone."""
    out: Dict[Hashable, Set[int]] = {}
    for index, g in enumerate(node):
        value = dict(g.values).get(attribute)
        out.setdefault(("value", value) if value is not None else ("gpu", index), set()).add(index)
    return [frozenset(b) for b in out.values()]


def _laminar(blocks: Sequence[FrozenSet[int]]) -> bool:
    return all(a <= b or b <= a or not a & b for a in blocks for b in blocks)


@lru_cache(maxsize=1024)
def _structure(node: Node, attributes: Tuple[str, ...]) -> Tuple[_Shape, List[FrozenSet[int]]]:
    """(shape, the GPU set of each group) of a node. Groups of different attributes that cross (neither holds the
    other, which real hardware never publishes: a GPU has one PCI bus ID under one PCIe root) are modelled by their
    common refinement: each constraint then draws from one cell of it (a "fits" stays a real packing)."""
    every = frozenset(range(len(node)))
    per_attr = {a: _blocks(node, a) for a in attributes}
    if not _laminar([b for bs in per_attr.values() for b in bs]):
        cells: Dict[Tuple[FrozenSet[int], ...], Set[int]] = {}
        for index in range(len(node)):
            key = tuple(next(b for b in per_attr[a] if index in b) for a in attributes)
            cells.setdefault(key, set()).add(index)
        finest = [frozenset(c) for c in cells.values()]
        per_attr = dict.fromkeys(attributes, finest)
    sets: List[FrozenSet[int]] = [every]
    for a in attributes:
        for b in per_attr[a]:
            if b not in sets:
                sets.append(b)
    parent = []
    for k, s in enumerate(sets):
        above = [j for j, t in enumerate(sets) if j != k and s < t] if k else []
        parent.append(min(above, key=lambda j: len(sets[j])) if above else None)
    ancestors = []
    for k in range(len(sets)):
        chain, j = [], k
        while j is not None:
            chain.append(j)
            j = parent[j]
        ancestors.append(tuple(chain))
    levels = tuple((a, tuple(sorted(sets.index(b) for b in per_attr[a]))) for a in attributes)
    return _Shape(tuple(ancestors), levels), sets


def pack(nodes: Mapping[Node, int], claims: Sequence[Any], budget: int = STATE_BUDGET) -> Answer:
    """Whether every claim (demand.ClaimNeed) can be placed whole on one node of `nodes` ({node: how many}).

    A claim's needs without a constraint draw from the node; needs with constraint c draw from one group of the
    attribute match[c] (needs sharing c, the same group). Exact: per unit, the devices placed in a group and the
    groups under it never exceed what the group has free (for groups nested like PCIe root > GPU > node this is
    exactly when the devices can be assigned, by Hall's condition on a tree). See the module docstring for the
    search and its budget."""
    claims = [c for c in claims if any(n.count > 0 for n in c.needs)]
    if not claims:
        return Answer(True, False)
    units = sorted({n.unit for c in claims for n in c.needs if n.count > 0})
    attributes = sorted({c.match[n.constraint] for c in claims for n in c.needs if n.constraint is not None})
    uidx = {u: k for k, u in enumerate(units)}
    width = len(units)

    shapes: List[_Shape] = []
    start: Counter = Counter()
    for node, many in nodes.items():
        if many <= 0:
            continue
        shape, sets = _structure(tuple(Gpu((), g.values) for g in node), tuple(attributes))
        if shape not in shapes:
            shapes.append(shape)
        free = [dict(g.free) for g in node]
        slack = tuple(sum(free[i].get(u, 0) for i in s) for s in sets for u in units)
        if any(slack[:width]):
            start[(shapes.index(shape), slack)] += many

    # Claims largest first, equal claims side by side; each as (constraint choices, needs as (unit idx, count, c)).
    order = sorted(claims, key=lambda c: (-sum(n.count for n in c.needs), -len(c.needs), repr(c.needs), c.match))
    plans = []
    for c in order:
        used = sorted({n.constraint for n in c.needs if n.constraint is not None})
        plans.append(
            (
                tuple((k, c.match[k]) for k in used),
                tuple((uidx[n.unit], n.count, n.constraint) for n in c.needs if n.count > 0),
            )
        )
    left = [[0] * width for _i in range(len(plans) + 1)]  # left[i][u]: devices of unit u that claims[i:] need
    for i in range(len(plans) - 1, -1, -1):
        left[i] = list(left[i + 1])
        for k, count, _c in plans[i][1]:
            left[i][k] += count

    def placements(state: Tuple[int, Tuple[int, ...]], plan) -> List[Tuple[int, Tuple[int, ...]]]:
        shape = shapes[state[0]]
        level = dict(shape.levels)
        constraints, needs = plan
        out = []
        for choice in itertools.product(*(level[a] for _k, a in constraints)):
            where = dict(zip((k for k, _a in constraints), choice))
            slack = list(state[1])
            ok = True
            for k, count, c in needs:
                for group in shape.ancestors[where[c] if c is not None else 0]:
                    slack[group * width + k] -= count
                    if slack[group * width + k] < 0:
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                child = (state[0], tuple(slack))
                if child not in out:
                    out.append(child)
        return out

    search = _Search(width, left)
    for state, many in start.items():
        for _copy in range(many):
            search.move(None, state)
    if search.hopeless(0):
        return Answer(False, False)
    # needs per unit of each claim, to skip at once the nodes that lack them
    totals = [
        [(k, left[i][k] - left[i + 1][k]) for k in range(width) if left[i][k] > left[i + 1][k]]
        for i in range(len(plans))
    ]

    def options(i: int, state: Tuple[int, Tuple[int, ...]]) -> List[Tuple[int, Tuple[int, ...]]]:
        if any(state[1][k] < t for k, t in totals[i]):
            return []
        return placements(state, plans[i])

    # Depth first with the moves made in place and undone on the way back; a frame: [claim index, the node states
    # at entry (tightest first), the next of them to try, its placements left, the move made].
    need = [sum(count for _k, count, _c in plan[1]) for plan in plans]
    stack: List[List[Any]] = [[0, search.fitting(need[0]), 0, [], None]]
    visited = 1
    while stack:
        frame = stack[-1]
        i = frame[0]
        if frame[4] is not None:
            search.undo(*frame[4])
            frame[4] = None
        while not frame[3] and frame[2] < len(frame[1]):
            frame[3] = options(i, frame[1][frame[2]])
            frame[3].reverse()  # popped from the end: the first placement first
            frame[2] += 1
        if not frame[3]:
            search.bury(i)  # no node takes claim i from here: this multiset of node states never packs
            stack.pop()
            continue
        old, new = frame[1][frame[2] - 1], frame[3].pop()
        search.move(old, new)
        frame[4] = (old, new)
        if i + 1 == len(plans):
            return Answer(True, False)
        if search.buried(i + 1) or search.hopeless(i + 1):
            continue
        visited += 1
        if visited > budget:
            return Answer(True, True)  # cut short: "fits" rather than a "does not fit" nobody proved
        stack.append([i + 1, search.fitting(need[i + 1]), 0, [], None])
    return Answer(False, False)


class _Search:
    """The multiset of node states of pack()'s search, changed in place: counts, the distinct states tightest
    first (least free, like best fit), what is free per unit in all, a hash of the multiset, the dead ones."""

    def __init__(self, width: int, left: List[List[int]]) -> None:
        self.width = width
        self.left = left
        self.counts: Dict[Tuple, int] = {}
        self.keys: List[Tuple] = []  # sorted (tightness, state)
        self.states: List[Tuple] = []  # the states in the same order
        self.free = [0] * width
        self.hash = 0
        self.dead: Dict[Tuple[int, int], List[Tuple]] = {}

    def _add(self, state: Tuple, sign: int) -> None:
        if not any(state[1][: self.width]):
            return  # a node with nothing left of the units asked for: out of the search
        n = self.counts.get(state, 0) + sign
        key = (sum(state[1][: self.width]), state)
        if n == 0:
            del self.counts[state]
            at = bisect.bisect_left(self.keys, key)
            del self.keys[at]
            del self.states[at]
        else:
            if n == 1 and sign == 1:
                at = bisect.bisect_left(self.keys, key)
                self.keys.insert(at, key)
                self.states.insert(at, state)
            self.counts[state] = n
        for k in range(self.width):
            self.free[k] += sign * state[1][k]
        self.hash = (self.hash + sign * hash(state)) & 0xFFFFFFFFFFFFFFFF

    def move(self, old: Optional[Tuple], new: Tuple) -> None:
        if old is not None:
            self._add(old, -1)
        self._add(new, 1)

    def undo(self, old: Tuple, new: Tuple) -> None:
        self._add(new, -1)
        self._add(old, 1)

    def fitting(self, need: int) -> List[Tuple]:
        """The distinct states with at least `need` devices free in all, tightest first (the others cannot take a
        claim of `need` devices)."""
        return self.states[bisect.bisect_left(self.keys, (need,)) :]

    def hopeless(self, i: int) -> bool:
        return any(self.free[k] < self.left[i][k] for k in range(self.width))

    def _key(self) -> Tuple:
        return tuple(sorted(self.counts.items()))

    def bury(self, i: int) -> None:
        self.dead.setdefault((i, self.hash), []).append(self._key())

    def buried(self, i: int) -> bool:
        known = self.dead.get((i, self.hash))
        return bool(known) and self._key() in known


class Prepared(NamedTuple):
    """The claims of one check, grouped once (a caller asking about the same claims many times prepares them once)."""

    whole: Optional[Tuple[Any, ...]]  # claims for the whole-claim search (some claim has several requests)
    units: Tuple[Tuple[str, Any, Tuple[int, ...], Tuple[Any, ...]], ...]  # (unit, attribute or MIXED, sizes, claims)


MIXED = object()  # a unit asked for with and without a constraint (or under two attributes): the whole-claim search


def prepare(claims: Sequence[Any]) -> Prepared:
    """The claims asking for something, grouped for check(): by unit (with their shared attribute and counts,
    largest first) when every claim is one request, else all for the whole-claim search."""
    claims = [c for c in claims if any(n.count > 0 for n in c.needs)]
    if not all(len(c.needs) == 1 for c in claims):
        return Prepared(tuple(claims), ())
    by_unit: Dict[str, List[Any]] = {}
    for c in claims:
        by_unit.setdefault(c.needs[0].unit, []).append(c)
    units = []
    for unit, mine in sorted(by_unit.items()):
        kinds = {c.match[c.needs[0].constraint] if c.needs[0].constraint is not None else None for c in mine}
        attribute = kinds.pop() if len(kinds) == 1 else MIXED
        units.append((unit, attribute, tuple(sorted((c.needs[0].count for c in mine), reverse=True)), tuple(mine)))
    return Prepared(None, tuple(units))


def check(
    nodes: Mapping[Node, int], claims: Sequence[Any], budget: int = STATE_BUDGET, prepared: Optional[Prepared] = None
) -> Answer:
    """Whether every claim fits whole on one node (module docstring): the 1-D path per unit when every claim is one
    request and a unit's claims share one attribute (or none), else the whole-claim search. `prepared`: prepare()
    of `claims`, when the caller has it."""
    plan = prepared if prepared is not None else prepare(claims)
    if plan.whole is not None:
        return pack(nodes, plan.whole, budget)
    cut = False
    for unit, attribute, sizes, mine in plan.units:
        if attribute is MIXED:
            answer = pack(nodes, mine, budget)
        else:
            bins: Counter = Counter()
            for node, many in nodes.items():
                if many <= 0:
                    continue
                free = [dict(g.free).get(unit, 0) for g in node]
                parts = [range(len(node))] if attribute is None else _blocks(node, attribute)
                for part in parts:
                    cap = sum(free[i] for i in part)
                    if cap:
                        bins[cap] += many
            answer = _fits_1d(tuple(sorted(bins.items())), sizes, budget)
        if not answer.fits:
            return answer
        cut = cut or answer.cut_short
    return Answer(True, cut)
