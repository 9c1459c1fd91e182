# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG apply plan: observed MIG state of one GPU + desired layout => NVML actions.

Pure functions, no I/O: `nvml/mig_apply.py` executes the actions through
pynvml, `gpupool.core.mig_config` shows them in check mode (`plan/mig/node_gpus.py`
makes a plan per GPU of a run, `nvml/mig_node.py` runs them).

Geometry comes from the collection's one source of truth, the MIG catalog and
planner (`mig/catalog.py`, `mig/placement.py`), corrected by what the GPU itself
reports through NVML (`effective_model`): profile names change across drivers
(mig-parted issue #31), so where the GPU and the catalog disagree the GPU wins
and a warning says so.

Plans keep what is already right: when existing GPU instances sit where some
valid placement of the desired layout would put them, they are kept and only
the rest is destroyed and created. Among all valid placements the one that
keeps the most existing instances is chosen (exhaustive over subsets of the
existing instances, at most 7 on an 8-slice GPU).
"""

from __future__ import annotations

import itertools

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import (
    Engines,
    GpuModel,
    MigGeometry,
    MigProfile,
    by_pci_device_id,
    find_gpu,
)
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout, place_around, plan

__all__ = [
    "InfeasibleLayout",
    "GpuPlan",
    "catalog_model_for",
    "effective_model",
    "translate_layout",
    "plan_gpu",
    "current_layout",
    "layout_summary",
    "keep_and_place",
]


def destroy_actions(instance, compute_instances) -> list:
    """Destroy a GPU instance: its compute instances first (NVML refuses to destroy a GPU instance that has any)."""
    actions = [
        {
            "action": "destroy_compute_instance",
            "gpu_instance_id": instance["gpu_instance_id"],
            "compute_instance_id": ci["compute_instance_id"],
        }
        for ci in compute_instances
    ]
    actions.append(
        {
            "action": "destroy_gpu_instance",
            "gpu_instance_id": instance["gpu_instance_id"],
            "profile": instance["profile"],
            "start": instance["start"],
        }
    )
    return actions


def catalog_model_for(product_name, pci_device_id=None):
    """Catalog entry for an NVML product name or PCI device id (0xDDDDVVVV), else None."""
    model = find_gpu(product_name) if product_name else None
    if model is None and pci_device_id:
        return by_pci_device_id(pci_device_id)
    return model


def effective_model(product_name, reported, pci_device_id=None, label=None):
    """The GPU model to plan with, and what differs from the catalog.

    reported: GPU-instance profiles as NVML gives them (nvml_facts.read_profiles):
    dicts with index, id, name, compute_slices, memory_slices, max_instances,
    starts, memory_mib, multiprocessors. Empty when NVML gave none.

    Returns (model, aliases, warnings): model is a mig.catalog.GpuModel whose
    MIG geometry is the GPU's own; aliases maps catalog profile names to the
    GPU's names where they differ; warnings are sentences for the user.
    """
    label = label or product_name
    catalog = catalog_model_for(product_name, pci_device_id)
    warnings = []
    if not reported:
        return catalog, {}, warnings
    cat_by_index = {p.nvml_index: p for p in catalog.mig.profiles} if catalog and catalog.mig else {}
    aliases = {}
    profiles = []
    for rep in sorted(reported, key=lambda r: (-r["memory_slices"], -r["compute_slices"], r["index"])):
        cat = cat_by_index.pop(rep["index"], None)
        name = rep.get("name") or (cat.name if cat else None)
        if not name:
            continue
        if cat is not None:
            diffs = []
            if cat.name != name:
                diffs.append("name %s (catalog: %s)" % (name, cat.name))
                aliases[cat.name] = name
            for field, cat_value, rep_value in (
                ("profile ID", cat.profile_id, rep["id"]),
                ("compute slices", cat.compute_slices, rep["compute_slices"]),
                ("memory slices", cat.memory_slices, rep["memory_slices"]),
                ("max instances", cat.max_instances, rep["max_instances"]),
                ("placement starts", list(cat.starts), list(rep["starts"])),
            ):
                if cat_value != rep_value:
                    diffs.append("%s %s (catalog: %s)" % (field, rep_value, cat_value))
            if diffs:
                warnings.append(
                    "%s reports MIG profile %s with %s; using what the GPU reports" % (label, name, ", ".join(diffs))
                )
        elif catalog is not None:
            warnings.append(
                "%s offers MIG profile %s (profile ID %d) that the catalog does not list for %s; "
                "using it as the GPU reports it" % (label, name, rep["id"], catalog.key)
            )
        profiles.append(
            MigProfile(
                name=name,
                profile_id=rep["id"],
                nvml_index=rep["index"],
                compute_slices=rep["compute_slices"],
                memory_slices=rep["memory_slices"],
                max_instances=rep["max_instances"],
                starts=tuple(rep["starts"]),
                memory_mib=rep.get("memory_mib") or (cat.memory_mib if cat else 0),
                multiprocessors=rep.get("multiprocessors") or (cat.multiprocessors if cat else 0),
                engines=_reported_engines(rep) or (cat.engines if cat else None),
                measured=True,
            )
        )
    for cat in sorted(cat_by_index.values(), key=lambda p: p.nvml_index):
        warnings.append(
            "%s does not offer MIG profile %s (profile ID %d) that the catalog lists for %s "
            "(older driver?)" % (label, cat.name, cat.profile_id, catalog.key)
        )
    if catalog is not None and catalog.mig:
        memory_slices, compute_slices = catalog.mig.memory_slices, catalog.mig.compute_slices
    else:
        memory_slices = max(s + p.memory_slices for p in profiles for s in p.starts)
        compute_slices = max(p.compute_slices for p in profiles)
    if catalog is None:
        warnings.append(
            "%s is not in the MIG catalog; planning with the %d MIG profiles it reports" % (label, len(profiles))
        )
        catalog = GpuModel(product_name, (product_name,), (), "unknown", "", 0, None, False, False, None, "")
    # The whole GPU's engines: what its largest (full-GPU) profile gets, as NVML reports it.
    full = max(profiles, key=lambda p: (p.compute_slices, p.memory_slices), default=None)
    engines = (
        full.engines
        if full is not None and full.engines is not None
        else (catalog.mig.engines if catalog.mig else None)
    )
    geometry = MigGeometry(memory_slices, compute_slices, tuple(profiles), "reported by NVML", engines)
    return catalog._replace(mig=geometry), aliases, warnings


def _reported_engines(rep):
    """Engines of a profile as nvml_facts.read_profiles reports them, or None when it did not."""
    keys = ("copy_engines", "decoders", "encoders", "jpeg_engines", "ofa_engines")
    if not all(k in rep for k in keys):
        return None
    return Engines(*(int(rep[k] or 0) for k in keys))


def translate_layout(model, layout, aliases, label):
    """Layout with catalog names replaced by the GPU's names where they differ; (layout, warnings)."""
    names = {p.name for p in model.mig.profiles} if model and model.mig else set()
    out, warnings = {}, []
    for name, count in layout.items():
        if name not in names and name in aliases:
            warnings.append(
                "%s calls MIG profile %s %s; the layout's %s is applied as %s"
                % (label, name, aliases[name], name, aliases[name])
            )
            name = aliases[name]
        out[name] = out.get(name, 0) + count
    return out, warnings


def _profile(model, name):
    for p in model.mig.profiles:
        if p.name == name:
            return p
    return None


def _mask(start, size):
    return ((1 << size) - 1) << start


def keep_and_place(model, layout, existing):
    """Choose which existing GPU instances to keep and where to create the rest.

    existing: list of dicts with gpu_instance_id, profile, start. Returns
    (kept, create): kept is the list of existing dicts kept, create a list of
    mig.placement.Instance for the new ones. The layout must be feasible
    (checked with mig.placement.plan, whose placement is used when nothing can
    be kept). Raises InfeasibleLayout.
    """
    layout = {n: c for n, c in layout.items() if c}
    target = plan(model, layout)  # feasibility, counts and the planner's message
    candidates = []
    for inst in sorted(existing, key=lambda e: (e["start"], e["gpu_instance_id"])):
        prof = _profile(model, inst["profile"])
        if prof is None or inst["profile"] not in layout or inst["start"] not in prof.starts:
            continue
        candidates.append((inst, prof))
    if not candidates:
        return [], target
    # Largest subsets first; the first that leaves room for the rest wins.
    for size in range(len(candidates), 0, -1):
        for subset in itertools.combinations(candidates, size):
            counts, occ, ok = {}, 0, True
            for inst, prof in subset:
                counts[prof.name] = counts.get(prof.name, 0) + 1
                m = _mask(inst["start"], prof.memory_slices)
                if counts[prof.name] > layout[prof.name] or occ & m:
                    ok = False
                    break
                occ |= m
            if not ok:
                continue
            rest = {n: c - counts.get(n, 0) for n, c in layout.items() if c - counts.get(n, 0) > 0}
            placed = place_around(model, rest, occ)
            if placed is not None:
                return [pair[0] for pair in subset], sorted(placed, key=lambda i: i.start)
    return [], target


def current_layout(instances):
    """{profile: count} of the GPU instances (list of dicts with profile)."""
    out = {}
    for inst in instances:
        out[inst["profile"]] = out.get(inst["profile"], 0) + 1
    return out


def layout_summary(mig_enabled, instances, pending=None):
    """The before/after shape used in diffs: mode and `profile@start` per GPU instance."""
    out = {
        "mig_enabled": bool(mig_enabled),
        "instances": ["%s@%d" % (i["profile"], i["start"]) for i in sorted(instances, key=lambda i: i["start"])],
    }
    if pending is not None and bool(pending) != bool(mig_enabled):
        out["mig_pending"] = bool(pending)
    return out


class GpuPlan:
    """What to do on one GPU: `actions` in execution order (dicts), plus the outcome."""

    def __init__(self, index):
        self.index = index
        self.actions = []
        self.kept = []
        self.reset_required = False
        self.after = None

    @property
    def changed(self):
        return bool(self.actions)

    def as_dict(self):
        return {
            "index": self.index,
            "actions": list(self.actions),
            "kept_gpu_instances": [k["gpu_instance_id"] for k in self.kept],
            "reset_required": self.reset_required,
            "after": self.after,
        }


def plan_gpu(index, model, observed, mig_enabled, layout, needs_reset=None):
    """Actions that take one GPU from `observed` to the desired state.

    observed: dict with mig_capable, mig_current, mig_pending (bools) and
      instances: [{gpu_instance_id, profile, start, size,
                   compute_instances: [{compute_instance_id, full}]}].
    mig_enabled: desired MIG mode (True/False).
    layout: {profile: count} to converge to, or None to leave instances alone.
    needs_reset: whether a mode change waits for a GPU reset (Ampere); defaults
      to the model's mig_mode_needs_reset. Only used to predict the outcome;
      the executor reads the real mode back.

    Raises InfeasibleLayout (nothing to execute) when the layout cannot be
    applied on this GPU.
    """
    gp = GpuPlan(index)
    label = "GPU %d (%s)" % (index, model.key if model else "unknown model")
    if needs_reset is None:
        needs_reset = bool(model and model.mig_mode_needs_reset)
    current, pending = bool(observed["mig_current"]), bool(observed["mig_pending"])
    instances = observed.get("instances") or []
    if not observed.get("mig_capable"):
        if mig_enabled:
            raise InfeasibleLayout("%s does not support MIG; leave it out of `devices`/`layouts`" % label)
        gp.after = layout_summary(False, [])
        return gp
    if layout is not None and not mig_enabled:
        raise InfeasibleLayout("a MIG layout needs MIG enabled (mig_enabled: false was asked for %s)" % label)

    if not mig_enabled:
        for inst in instances:
            gp.actions += destroy_actions(inst, inst.get("compute_instances") or [])
        if current or pending:
            gp.actions.append({"action": "set_mig_mode", "enabled": False})
            gp.reset_required = bool(current and needs_reset)
        gp.after = layout_summary(current and gp.reset_required, [], pending=False)
        return gp

    # MIG wanted.
    if layout is not None:
        # Feasibility first, whatever the mode: an infeasible layout fails before any write.
        target_check = plan(model, layout)
    else:
        target_check = None
    if not current:
        if not pending:
            gp.actions.append({"action": "set_mig_mode", "enabled": True})
        if needs_reset or pending:
            # The mode waits for a GPU reset; instances can only be created after it.
            gp.reset_required = True
            gp.after = layout_summary(False, [], pending=True)
            if target_check is not None:
                gp.after["planned_instances"] = ["%s@%d" % (i.profile, i.start) for i in target_check]
            return gp
        instances = []  # MIG was off: no instances to keep
    elif not pending:
        gp.actions.append({"action": "set_mig_mode", "enabled": True})  # cancels a pending disable
    if layout is None:
        gp.after = layout_summary(True, instances)
        return gp

    kept, create = keep_and_place(model, layout, instances)
    kept_ids = {k["gpu_instance_id"] for k in kept}
    gp.kept = kept
    for inst in instances:
        cis = inst.get("compute_instances") or []
        if inst["gpu_instance_id"] in kept_ids:
            if len(cis) == 1 and cis[0].get("full"):
                continue
            for ci in cis:
                gp.actions.append(
                    {
                        "action": "destroy_compute_instance",
                        "gpu_instance_id": inst["gpu_instance_id"],
                        "compute_instance_id": ci["compute_instance_id"],
                    }
                )
            gp.actions.append(
                {
                    "action": "create_compute_instance",
                    "gpu_instance_id": inst["gpu_instance_id"],
                    "profile": inst["profile"],
                }
            )
            continue
        gp.actions += destroy_actions(inst, cis)
    # Destroy before create, so freed slices are available.
    gp.actions.sort(
        key=lambda a: {
            "destroy_compute_instance": 0,
            "destroy_gpu_instance": 1,
            "set_mig_mode": 2,
            "create_compute_instance": 4,
        }.get(a["action"], 3)
    )
    for inst in create:
        gp.actions.append(
            {
                "action": "create_gpu_instance",
                "profile": inst.profile,
                "profile_id": inst.profile_id,
                "start": inst.start,
                "size": inst.size,
                "compute_instance": "full",
            }
        )
    after = [{"profile": k["profile"], "start": k["start"]} for k in kept]
    after += [{"profile": i.profile, "start": i.start} for i in create]
    gp.after = layout_summary(True, after)
    return gp
