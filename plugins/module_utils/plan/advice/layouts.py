# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layouts the advisor may give one GPU: feasible by the GPU's placement rules, made of the profiles that matter.

Feasibility is the ONE placement search (mig/placement.fits over mig/catalog.py): no placement rule lives here.
The profiles that matter are a short list - those claims wait for, those the pool's layout has now, those the
tenants' templates ask for - so a proposal reads like the pool it changes, not like a catalog dump. Of the layouts
over those profiles only the maximal ones are kept (no instance of a listed profile fits beside them): a smaller
layout would leave memory slices in no instance.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import fits
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

Layout = Optional[Dict[str, int]]  # None: the whole GPU (no MIG)

_CACHE: Dict[Tuple[str, Tuple[str, ...]], List[Dict[str, int]]] = {}


def layouts_over(model, profiles: Sequence[str]) -> List[Dict[str, int]]:
    """Every feasible layout over `profiles` (each with at least one instance) that no further instance of them fits
    beside, most instances first. Cached per GPU model and profile list."""
    names = tuple(sorted(p for p in set(profiles) if profile_by_name(model, p) is not None))
    key = (model.key, names)
    if key in _CACHE:
        return _CACHE[key]
    found: List[Dict[str, int]] = []
    compute = model.mig.compute_slices
    memory = model.mig.memory_slices
    infos = [profile_by_name(model, n) for n in names]

    def walk(i: int, layout: Dict[str, int], used_c: int, used_m: int) -> None:
        if i == len(infos):
            if layout and fits(model, layout):
                found.append(dict(layout))
            return
        prof = infos[i]
        most = min(
            prof.max_instances, (compute - used_c) // prof.compute_slices, (memory - used_m) // prof.memory_slices
        )
        for count in range(most, -1, -1):
            if count:
                layout[prof.name] = count
            else:
                layout.pop(prof.name, None)
            walk(i + 1, layout, used_c + count * prof.compute_slices, used_m + count * prof.memory_slices)
        layout.pop(prof.name, None)

    walk(0, {}, 0, 0)
    maximal = []
    for layout in found:
        grows = any(fits(model, dict(layout, **{n: layout.get(n, 0) + 1})) for n in names)
        if not grows:
            maximal.append(layout)
    maximal.sort(key=lambda lay: (-sum(lay.values()), sorted(lay.items())))
    _CACHE[key] = maximal
    return maximal


def units_of(layout: Layout) -> Dict[str, int]:
    """What a GPU with this layout publishes, per unit (FULL_GPU for a whole GPU)."""
    if layout is None:
        return {FULL_GPU: 1}
    return {p: c for p, c in layout.items() if c}


def describe(layout: Layout) -> str:
    if layout is None:
        return "whole GPU"
    parts = ["%d x %s" % (c, p) if c > 1 else p for p, c in sorted(layout.items(), reverse=True) if c]
    return " + ".join(parts) or "MIG, no instance"


def lost(before: Layout, after: Layout) -> int:
    """Instances (or the whole GPU) of `before` that `after` no longer has."""
    was, now = units_of(before), units_of(after)
    return sum(max(0, n - now.get(u, 0)) for u, n in was.items())
