# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG placement planner: pure functions over the catalog geometry.

`plan(gpu, layout)` returns a concrete placement (memory-slice start) for every
GPU instance, or raises `InfeasibleLayout` with a sentence a person can act on.
It searches (backtracking over allowed starts), because greedy first-fit is
wrong: on A100-40GB `3g.20gb + 2 x 2g.10gb` fits only with the 3g at start 4.
Besides slices it enforces the GPU's engines: instances never get more media
engines than the GPU has (A30: one JPEG/OFA unit, so one +me instance; RTX PRO
6000: +me.all takes every decoder, so only -me profiles fit beside it).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import namedtuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import (
    UnknownGpu,
    engine_shortfall,
    find_gpu,
    gpu_keys,
    mig_capable_keys,
    profile_by_name,
    resolve_gpu,
)
from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline

Instance = namedtuple("Instance", "profile start size profile_id compute_slices")


class InfeasibleLayout(ValueError):
    """A MIG layout that no placement satisfies; `reason` is human text."""

    def __init__(self, reason, gpu=None, layout=None):
        super().__init__(reason)
        self.reason = reason
        self._for = (gpu, layout)

    @property
    def suggestions(self):
        """Nearest valid layouts, computed only when someone asks (it searches)."""
        gpu, layout = self._for
        return suggest(gpu, layout) if gpu is not None else []


def _resolve(gpu):
    try:
        model = resolve_gpu(gpu) if isinstance(gpu, str) else gpu
    except UnknownGpu as exc:
        if exc.candidates:
            raise InfeasibleLayout(
                "GPU model %r is not in the MIG catalog (did you mean %s?)" % (gpu, " or ".join(exc.candidates))
            )
        raise InfeasibleLayout(
            "GPU model %r is not in the MIG catalog; MIG-capable catalog keys: %s%s"
            % (gpu, inline(gpu, mig_capable_keys()), below("MIG-capable catalog keys", gpu, mig_capable_keys()))
        )
    if not model.mig:
        raise InfeasibleLayout(
            "%s does not support MIG; MIG-capable GPUs: %s%s"
            % (
                model.key,
                inline(model.key, mig_capable_keys()),
                below("MIG-capable GPUs", model.key, mig_capable_keys()),
            )
        )
    return model


PROFILES_INLINE = 8  # every profile of most GPUs (7); the RTX PRO 6000's 11 end the message on lines of their own


def unknown_profile_message(model, name) -> str:
    """'H100-80GB has no MIG profile '3g.20gb' (that name belongs to ...); it has 3g.40gb, ...': what the GPU
    has, closest to what was written first. `model` is a catalog entry with MIG."""
    names = [p.name for p in model.mig.profiles]
    return "%s has no MIG profile %r%s; it has %s%s" % (
        model.key,
        name,
        _hint(model, name),
        inline(name, names, PROFILES_INLINE),
        below("its profiles", name, names, PROFILES_INLINE),
    )


def _check_counts(model, layout):
    geo = model.mig
    for name, count in layout.items():
        prof = profile_by_name(model, name)
        if prof is None:
            raise InfeasibleLayout(unknown_profile_message(model, name))
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InfeasibleLayout("count for %s must be a whole number >= 0, got %r" % (name, count))
        if count > prof.max_instances:
            raise InfeasibleLayout(
                "%s allows at most %d x %s, the layout asks for %d" % (model.key, prof.max_instances, name, count)
            )
    compute = sum(profile_by_name(model, n).compute_slices * c for n, c in layout.items())
    memory = sum(profile_by_name(model, n).memory_slices * c for n, c in layout.items())
    if compute > geo.compute_slices:
        raise InfeasibleLayout(
            "%s needs %d compute slices but %s has %d (%s)"
            % (_fmt(layout), compute, model.key, geo.compute_slices, _cost(model, layout, "compute_slices")),
            model,
            layout,
        )
    if memory > geo.memory_slices:
        raise InfeasibleLayout(
            "%s needs %d memory slices but %s has %d (%s)"
            % (_fmt(layout), memory, model.key, geo.memory_slices, _cost(model, layout, "memory_slices")),
            model,
            layout,
        )
    short = engine_shortfall(model, layout)
    if short:
        raise InfeasibleLayout(_engine_reason(model, layout, *short), model, layout)


_ENGINE_WORDS = {
    "copy": "copy engines",
    "decoders": "video decoders (NVDEC)",
    "encoders": "video encoders (NVENC)",
    "jpeg": "JPEG decoders (NVJPG)",
    "ofa": "optical-flow accelerators (OFA)",
}


def _engine_reason(model, layout, field, need, have):
    users = ", ".join(
        "%s takes %d" % (n, getattr(profile_by_name(model, n).engines, field))
        for n, c in sorted(layout.items())
        if c and getattr(profile_by_name(model, n).engines, field)
    )
    return (
        "%s needs %d %s but %s has %d (%s); media engines are not shared between instances, so choose at "
        "most one profile that claims them (e.g. one +me, or +me.all with only -me profiles)"
        % (_fmt(layout), need, _ENGINE_WORDS[field], model.key, have, users)
    )


def _hint(model, name):
    """Why a profile name is unknown: usually another GPU's name for the same slice count."""
    names = [p.name for p in model.mig.profiles]
    # Names copied from a node's resources or a ResourceSlice ('nvidia.com/mig-3g.20gb', 'mig-1g.5gb', the
    # MIG_CONFIG_DEVICE style 'MIG 3g.20gb'): the profile is what follows the prefix.
    bare = re.sub(r"\A(?:nvidia\.com/)?(?:mig[-_ ]|MIG[-_ ])", "", name.strip())
    if bare != name and bare in names:
        return " (did you mean %r? write the profile name without the %r prefix)" % (
            bare,
            name[: len(name) - len(bare)],
        )
    same_size = [n for n in names if n.split(".")[0] == name.split(".")[0] and "+" not in n]
    owners = sorted(k for k in gpu_keys() if find_gpu(k).mig and profile_by_name(find_gpu(k), name))
    if owners and same_size:
        return " (that name belongs to %s; here the same slice count is %s)" % (", ".join(owners), same_size[0])
    close = difflib.get_close_matches(name, names, n=1)
    return " (did you mean %r?)" % close[0] if close else ""


def _fmt(layout):
    parts = ["%s x%d" % (n, c) if c != 1 else n for n, c in sorted(layout.items()) if c]
    return " + ".join(parts) or "an empty layout"


def _cost(model, layout, field):
    return ", ".join(
        "%s uses %d each" % (n, getattr(profile_by_name(model, n), field)) for n, c in sorted(layout.items()) if c
    )


def _expand(model, layout):
    profs = [profile_by_name(model, n) for n, c in layout.items() for dummy in range(c)]
    # Most constrained first: big instances, then few allowed starts.
    profs.sort(key=lambda p: (-p.memory_slices, len(p.starts), p.name))
    return profs


def _search(profs, nslices, occupied=0):
    """Backtracking with a memo of dead (index, occupied-mask) states.

    `occupied` is a bit mask of memory slices already taken (instances kept in place).
    """
    dead = set()
    chosen = []
    deepest = [0, None]  # most instances placed, and with which free mask

    def place(i, occupied):
        if i == len(profs):
            return True
        prof = profs[i]
        # Identical instances go in increasing start order: no symmetric retries.
        floor = chosen[-1][1] + 1 if i and profs[i - 1] == prof else 0
        if (i, occupied, floor) in dead:
            return False
        if i > deepest[0] or deepest[1] is None:
            deepest[0], deepest[1] = i, occupied
        for start in prof.starts:
            if start < floor or start + prof.memory_slices > nslices:
                continue
            mask = ((1 << prof.memory_slices) - 1) << start
            if occupied & mask:
                continue
            chosen.append((prof, start))
            if place(i + 1, occupied | mask):
                return True
            chosen.pop()
        dead.add((i, occupied, floor))
        return False

    return (list(chosen) if place(0, occupied) else None), deepest


def plan(gpu, layout):
    """Concrete placement for every instance of `layout` ({profile: count}).

    Returns a list of Instance sorted by start. Raises InfeasibleLayout.
    """
    model = _resolve(gpu)
    layout = dict(layout)
    _check_counts(model, layout)
    layout = {n: c for n, c in layout.items() if c}
    profs = _expand(model, layout)
    found, deepest = _search(profs, model.mig.memory_slices)
    if found is None:
        raise InfeasibleLayout(_explain(model, layout, profs, deepest), model, layout)
    return sorted(
        (Instance(p.name, s, p.memory_slices, p.profile_id, p.compute_slices) for p, s in found),
        key=lambda inst: inst.start,
    )


def place_around(gpu, layout, occupied):
    """Placements for `layout` in the memory slices that `occupied` (a bit mask) leaves free, or None.

    For keeping existing instances in place: the caller has checked counts and
    feasibility with plan(); this only searches starts around what is kept.
    """
    model = _resolve(gpu)
    profs = _expand(model, {n: c for n, c in layout.items() if c})
    found = _search(profs, model.mig.memory_slices, occupied)[0]
    if found is None:
        return None
    return [Instance(p.name, s, p.memory_slices, p.profile_id, p.compute_slices) for p, s in found]


def more_instances(gpu, profile, occupied=0, kept=None):
    """How many more instances of `profile` fit beside what a GPU already holds, placed where they can go.

    `occupied`: bit mask of the memory slices taken (by allocated instances); `kept`: those instances as
    {profile: count}, for the compute slices, per-profile maximum and media engines they use. Free slices the
    profile cannot start on (or that are too few in a row) count for nothing: this is what can be allocated
    now, not the free memory. 0 for an unknown profile.
    """
    model = _resolve(gpu)
    prof = profile_by_name(model, profile)
    if prof is None:
        return 0
    kept = {n: c for n, c in (kept or {}).items() if c}
    used = sum(profile_by_name(model, n).compute_slices * c for n, c in kept.items() if profile_by_name(model, n))
    fitted = 0
    # More instances never fit where fewer did not, so the first count that fails ends the search.
    for count in range(1, prof.max_instances - kept.get(profile, 0) + 1):
        if used + prof.compute_slices * count > model.mig.compute_slices:
            break
        if engine_shortfall(model, dict(kept, **{profile: kept.get(profile, 0) + count})):
            break
        if _search([prof] * count, model.mig.memory_slices, occupied)[0] is None:
            break
        fitted = count
    return fitted


def _explain(model, layout, profs, deepest):
    placed, occupied = deepest
    blocked = profs[placed]
    free = [i for i in range(model.mig.memory_slices) if not occupied & (1 << i)] if occupied is not None else []
    rules = "; ".join(
        "%s occupies %d memory slice(s) starting at %s"
        % (n, profile_by_name(model, n).memory_slices, "/".join(str(s) for s in profile_by_name(model, n).starts))
        for n in sorted(layout)
    )
    return (
        "%s does not fit on %s: the instances compete for memory slices and no arrangement "
        "leaves room for %s (best arrangement found leaves slices %s free). Placement rules: %s"
        % (_fmt(layout), model.key, blocked.name, free or "none", rules)
    )


def fits(gpu, layout):
    try:
        plan(gpu, layout)
        return True
    except InfeasibleLayout:
        return False


def _feasible_quick(model, layout):
    geo = model.mig
    for n, c in layout.items():
        if c > profile_by_name(model, n).max_instances:
            return False
    if sum(profile_by_name(model, n).compute_slices * c for n, c in layout.items()) > geo.compute_slices:
        return False
    if sum(profile_by_name(model, n).memory_slices * c for n, c in layout.items()) > geo.memory_slices:
        return False
    if engine_shortfall(model, layout):
        return False
    return _search(_expand(model, {n: c for n, c in layout.items() if c}), geo.memory_slices)[0] is not None


def suggest(gpu, layout, limit=3):
    """Nearest valid layouts: largest feasible sub-layouts of the request."""
    model = _resolve(gpu)
    items = [(n, c) for n, c in sorted(layout.items()) if c and profile_by_name(model, n)]
    if not items:
        return []
    ranges = [range(min(c, profile_by_name(model, n).max_instances), -1, -1) for n, c in items]
    best, best_score = [], None
    for counts in itertools.product(*ranges):
        cand = {item[0]: k for item, k in zip(items, counts) if k}
        if not cand:
            continue
        score = (sum(profile_by_name(model, n).compute_slices * k for n, k in cand.items()), sum(cand.values()))
        if best_score is not None and score < best_score:
            continue
        if not _feasible_quick(model, cand):
            continue
        if best_score is None or score > best_score:
            best, best_score = [cand], score
        elif score == best_score:
            best.append(cand)
    return best[:limit]


def maximal_layouts(gpu):
    """Every maximal feasible layout: adding any further instance breaks it."""
    model = _resolve(gpu)
    profs = model.mig.profiles
    feasible = [
        layout
        for layout in _within_compute(profs, model.mig.compute_slices)
        if layout and _feasible_quick(model, layout)
    ]
    result = []
    for layout in feasible:
        grown = False
        for p in profs:
            bigger = dict(layout)
            bigger[p.name] = bigger.get(p.name, 0) + 1
            if _feasible_quick(model, bigger):
                grown = True
                break
        if not grown:
            result.append(layout)
    result.sort(key=lambda lay: (-sum(lay.values()), sorted(lay.items())))
    return result


def _within_compute(profs, compute_slices):
    """Every layout (counts up to each max) whose compute slices fit: a layout over the compute budget never
    fits, so those are not even built (RTX PRO 6000's 11 profiles would make 108,000 otherwise)."""

    def walk(i, left):
        if i == len(profs):
            yield {}
            return
        prof = profs[i]
        for count in range(min(prof.max_instances, left // prof.compute_slices) + 1):
            for rest in walk(i + 1, left - count * prof.compute_slices):
                yield dict(rest, **{prof.name: count}) if count else rest

    return walk(0, compute_slices)
