"""Which MIG layouts a simulated GPU accepts, decided from the test bed's tables (SIMULATOR logic).

Deliberately not the collection's planner: this enumerates every combination of allowed starts per
profile (itertools.combinations, so identical instances are not permuted) and keeps the first one whose
instances do not overlap. NVML's rules as modelled here: per-profile instance limit, compute slices,
placement units [start, start + size) never shared, and the GPU's engines (decoders, encoders, JPEG,
OFA, copy engines) never handed out twice (go-nvml nvml.h on the *_ALL_ME profiles; MIG guide tables).
"""

from __future__ import annotations

import itertools


class LayoutRefused(ValueError):
    """A simulated GPU refuses a MIG layout (what NVML's create calls would fail with)."""


def _rows(gpu, layout):
    out = []
    for name, count in sorted(layout.items()):
        if not count:
            continue
        row = next((p for p in gpu.mig.profiles if p.name == name), None) if gpu.mig else None
        out.append((name, row, count))
    return out


def refusal(gpu, layout: dict):
    """Why the GPU refuses the layout ({profile: count}), as NVML would fail, or None when it fits."""
    if not gpu.mig:
        return "%s has no MIG" % gpu.key
    rows = _rows(gpu, layout)
    for name, row, count in rows:
        if row is None:
            return "%s has no MIG profile %s" % (gpu.key, name)
        if count > row.max_instances:
            return "%s allows %d x %s" % (gpu.key, row.max_instances, name)
    if sum(row.compute_slices * count for _n, row, count in rows) > gpu.mig.compute_slices:
        return "not enough compute slices"
    if sum(row.memory_slices * count for _n, row, count in rows) > gpu.mig.memory_slices:
        return "not enough memory"
    for field in gpu.mig.engines._fields:
        used = sum(getattr(row.engines, field) * count for _n, row, count in rows)
        if used > getattr(gpu.mig.engines, field):
            return "the GPU has %d %s engine(s), the layout needs %d" % (getattr(gpu.mig.engines, field), field, used)
    if place(gpu, layout) is None:
        return "no placement: the instances overlap wherever they go"
    return None


def feasible(gpu, layout: dict) -> bool:
    return refusal(gpu, layout) is None


def place(gpu, layout: dict):
    """[(profile row, start)] for every instance, largest first, or None when no placement exists.

    Does not check counts or engines (refusal() does); only where the instances can go."""
    rows = _rows(gpu, layout)
    if any(row is None for _n, row, _c in rows):
        return None
    rows.sort(key=lambda item: (-item[1].memory_slices, item[0]))
    choices = [itertools.combinations(row.starts, count) for _n, row, count in rows]
    for starts_per_row in itertools.product(*choices):
        taken = 0
        ok = True
        for (_n, row, _c), starts in zip(rows, starts_per_row):
            for start in starts:
                if start + row.memory_slices > gpu.mig.memory_slices:
                    ok = False
                    break
                mask = ((1 << row.memory_slices) - 1) << start
                if taken & mask:
                    ok = False
                    break
                taken |= mask
            if not ok:
                break
        if ok:
            return [(row, start) for (_n, row, _c), starts in zip(rows, starts_per_row) for start in starts]
    return None


def placed(gpu, layout: dict):
    """[(profile row, start)] for a layout the GPU accepts; raises LayoutRefused with the reason otherwise."""
    reason = refusal(gpu, layout)
    if reason is not None:
        raise LayoutRefused("%s refuses MIG layout %s: %s" % (gpu.key, dict(sorted(layout.items())), reason))
    return place(gpu, layout)
