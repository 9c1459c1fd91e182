"""An independent judge for the advisor's invariants (issue #26): its own MIG placement table and its own
brute-force packer. It imports nothing of the advisor, the MIG catalog or the placement code under test.

Placements are written from NVIDIA's MIG user guide ("Supported MIG Profiles", A100-40GB and H100-80GB tables, the
``nvidia-smi mig -lgipp`` placements): a GPU has 8 memory slices and 7 compute slices; a GPU instance of a profile
covers `size` consecutive memory slices starting at one of the listed starts; two instances never share a memory
slice, and their compute slices add up to at most 7.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

# profile -> (GI profile id, compute slices, memory slices, legal starts)
_SMALL = (0, 1, 2, 3, 4, 5, 6)
_EVEN = (0, 2, 4, 6)
A100_40GB = {
    "1g.5gb": (19, 1, 1, _SMALL),
    "1g.5gb+me": (20, 1, 1, _SMALL),
    "1g.10gb": (15, 1, 2, _EVEN),
    "2g.10gb": (14, 2, 2, (0, 2, 4)),
    "3g.20gb": (9, 3, 4, (0, 4)),
    "4g.20gb": (5, 4, 4, (0,)),
    "7g.40gb": (0, 7, 8, (0,)),
}
H100_80GB = {
    "1g.10gb": (19, 1, 1, _SMALL),
    "1g.10gb+me": (20, 1, 1, _SMALL),
    "1g.20gb": (15, 1, 2, _EVEN),
    "2g.20gb": (14, 2, 2, (0, 2, 4)),
    "3g.40gb": (9, 3, 4, (0, 4)),
    "4g.40gb": (5, 4, 4, (0,)),
    "7g.80gb": (0, 7, 8, (0,)),
}
TABLES = {"A100-40GB": A100_40GB, "H100-80GB": H100_80GB}
FULL = "gpu"  # the judge's unit for a whole GPU (MIG off)


def place(model: str, layout: Dict[str, int]) -> Optional[List[Tuple[str, int]]]:
    """One placement of the layout as [(profile, start)], biggest instances first, or None when it cannot be
    placed (unknown profile, overlapping memory slices, more than 7 compute slices)."""
    table = TABLES[model]
    wanted: List[str] = []
    for profile, count in layout.items():
        if count < 0 or (count and profile not in table):
            return None
        wanted += [profile] * count
    if sum(table[p][1] for p in wanted) > 7:
        return None
    wanted.sort(key=lambda p: (-table[p][2], -table[p][1], p))

    def search(k: int, used: frozenset) -> Optional[List[Tuple[str, int]]]:
        if k == len(wanted):
            return []
        _gi, _compute, size, starts = table[wanted[k]]
        for start in starts:
            cover = frozenset(range(start, start + size))
            if cover & used:
                continue
            rest = search(k + 1, used | cover)
            if rest is not None:
                return [(wanted[k], start)] + rest
        return None

    return search(0, frozenset())


def feasible(model: str, layout: Optional[Dict[str, int]]) -> bool:
    return layout is None or place(model, layout) is not None


# --- packing ---------------------------------------------------------------------------------------------------
# A node's free devices: Counter {(unit, root): n}. A claim: [(unit, count, constrained)]; the constrained requests
# all take devices with one and the same root (matchAttribute pcieRoot); the whole claim lands on one node.

Request = Tuple[str, int, bool]


def _spread(free: Counter, unit: str, count: int) -> Iterator[Counter]:
    """Every way to take `count` devices of `unit` from `free` (which roots), as the devices taken."""
    roots = sorted(r for (u, r), n in free.items() if u == unit and n)

    def go(k: int, left: int) -> Iterator[Counter]:
        if left == 0:
            yield Counter()
            return
        if k == len(roots):
            return
        for take in range(min(left, free[(unit, roots[k])]), -1, -1):
            for rest in go(k + 1, left - take):
                if take:
                    rest = rest + Counter({(unit, roots[k]): take})
                yield rest

    yield from go(0, count)


def _placements(free: Counter, claim: Sequence[Request]) -> Iterator[Counter]:
    """Every distinct way the claim can take devices from one node's `free` (what is left)."""
    roots = sorted({r for (_u, r) in free}) if any(c for _u, _n, c in claim) else [None]
    seen = set()
    for root in roots:

        def go(k: int, left: Counter) -> Iterator[Counter]:
            if k == len(claim):
                yield left
                return
            unit, count, constrained = claim[k]
            if constrained:
                if left[(unit, root)] >= count:
                    yield from go(k + 1, left - Counter({(unit, root): count}))
                return
            for taken in _spread(left, unit, count):
                yield from go(k + 1, left - taken)

        for left in go(0, +free):
            key = frozenset(left.items())
            if key not in seen:
                seen.add(key)
                yield left


def packs(nodes: Sequence[Counter], claims: Sequence[Sequence[Request]]) -> bool:
    """Whether every claim can be allocated at once, each whole on one node (exhaustive search)."""
    order = sorted(claims, key=lambda c: -sum(n for _u, n, _c in c))
    memo = set()

    def go(k: int, state: Tuple[Counter, ...]) -> bool:
        if k == len(order):
            return True
        key = (k, tuple(sorted(frozenset(s.items()) for s in state)))
        if key in memo:
            return False
        for i, free in enumerate(state):
            for left in _placements(free, order[k]):
                if go(k + 1, state[:i] + (left,) + state[i + 1 :]):
                    return True
        memo.add(key)
        return False

    return go(0, tuple(+Counter(n) for n in nodes))
