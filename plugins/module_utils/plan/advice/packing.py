# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether items (the device counts of waiting claims) can be packed into bins (the free units of nodes). Pure.

``bins`` is ``{capacity: how many bins}``; an item is never split, and a bin's items may not exceed its capacity.

1. Greedy first: largest item first, into the tightest bin that takes it (best fit), equal items and equal bins
   handled in bulk so 500 nodes and 1,000 claims cost a few steps. A greedy success is a real packing, so it is
   the answer at once; greedy failure is not proof (bins {5, 4} take 3+2 and 2+2, greedy strands one 2).
2. Otherwise an exact search: depth first over the items in decreasing size, each placed into each *distinct*
   remaining capacity (bins of equal remaining capacity are interchangeable), with an explicit stack (no
   recursion limit) and memoized dead states (the multiset of remaining capacities plus the next item). A state
   is cut when the items left exceed the capacity left or the largest item left exceeds the largest bin.

Limit: the search stops after ``NODE_BUDGET`` states and then answers "fits". An answer of "does not fit" is
therefore always proven; an answer of "fits" past the budget may be wrong (the advisor then proposes too little
rather than a change nobody needs). Small cases (a few bins, a few claims) never come near the budget.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Dict, Iterator, List, Sequence, Set, Tuple

NODE_BUDGET = 5000  # search states per check; past it the answer is "fits" (never a false "does not fit")

State = Tuple[Tuple[Tuple[int, int], ...], int]  # ((remaining capacity, how many bins), ...), next item's index


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
    items = sorted((s for s in sizes if s > 0), reverse=True)
    if not items:
        return True
    if greedy_fits(bins, items):
        return True
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
        return False
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
            return True
        if child in dead:
            continue
        if hopeless(child):
            dead.add(child)
            continue
        visited += 1
        if visited > budget:
            return True  # cut short: "fits" rather than a "does not fit" nobody proved (module docstring)
        stack.append((child, children(child)))
    return False


def _key(counts: Dict[int, int], smallest: int) -> Tuple[Tuple[int, int], ...]:
    """The multiset of usable remaining capacities, as a sorted tuple of (capacity, bins)."""
    return tuple(sorted((c, n) for c, n in counts.items() if c >= smallest and n > 0))


@lru_cache(maxsize=4096)
def fits_remembered(bins: Tuple[Tuple[int, int], ...], sizes: Tuple[int, ...]) -> bool:
    """fits() for hashable arguments, remembered: the advisor's search asks the same question of many candidate
    layouts, and a question that runs into the budget costs the most."""
    return fits(Counter(dict(bins)), sizes)
