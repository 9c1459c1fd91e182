# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPUs of one node a MIG layout change touches, and whether it can be done GPU by GPU. Pure.

MIG is per GPU: destroying and creating GPU and compute instances on a GPU already in MIG mode touches no other GPU,
and mig-parted leaves a GPU alone whose entry does not change (reference nvidia-dra-mig-imex.md §2). Only a MIG
*mode* toggle can need a GPU reset, and the MIG catalog says on which GPUs it does (``GpuModel.mig_mode_needs_reset``:
Ampere; Hopper and later toggle without one, reference §1.8 DynamicMIG, driver PR #1018). A reset needs the node's
other GPUs quiet, so such a change keeps the node-wide drain (plan/mig/per_gpu.py decides the step).

A layout per GPU index is None (MIG off: the full GPU) or {profile: count} (MIG on; {} = no instance), as
mig-parted's entries say it (``mig-enabled`` and ``mig-devices``). A GPU whose layout before is not known (no entry,
or a ``device-filter`` the node's GPU model cannot be matched against) counts as a change that may toggle its mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    BUILTIN_CONFIG,
    DONE_STATES,
    config_digest,
    node_state,
)

Layout = Optional[Dict[str, int]]  # None: MIG off (the full GPU); else {profile: count}
UNKNOWN = "unknown"  # a GPU's layout that cannot be told (GpuChange.before / after)


def _clean(layout: Layout) -> Layout:
    """The layout with zero counts dropped (mig-parted creates nothing for them)."""
    return None if layout is None else {p: int(c) for p, c in sorted(layout.items()) if c}


def describe_layout(layout: Any) -> str:
    """'MIG off', 'MIG on, no instance', '1g.10gb x2 + 3g.40gb x1', 'not known'."""
    if layout == UNKNOWN:
        return "not known"
    if layout is None:
        return "MIG off"
    parts = ["%s x%d" % (p, c) for p, c in sorted(layout.items()) if c]
    return " + ".join(parts) if parts else "MIG on, no instance"


def layouts_of_entries(
    entries: Optional[Sequence[Mapping[str, Any]]], gpu_count: int, pci_device_id: Optional[str] = None
) -> Dict[int, Any]:
    """{GPU index: layout, or UNKNOWN} a mig-parted config's entries give the node's `gpu_count` GPUs.

    entries None (the config is not known: a label naming a config missing from the ConfigMap): every GPU UNKNOWN.
    An entry with ``device-filter`` applies to GPUs of the listed PCI device IDs; without the node's
    `pci_device_id` it cannot be matched, and the GPUs it names are UNKNOWN. A GPU no entry names is UNKNOWN (we do
    not guess what mig-parted does with it), and so is one two entries give different layouts."""
    out: Dict[int, Any] = {}
    if entries is None:
        return dict.fromkeys(range(gpu_count), UNKNOWN)
    seen: Dict[int, List[Any]] = {}
    for entry in entries:
        devices = entry.get("devices")
        indices = list(range(gpu_count)) if devices == "all" else [i for i in devices or [] if 0 <= i < gpu_count]
        layout: Any = _clean(dict(entry.get("mig-devices") or {})) if entry.get("mig-enabled") else None
        filt = entry.get("device-filter")
        if filt is not None:
            wanted = [filt] if isinstance(filt, str) else list(filt)
            if pci_device_id is None:
                layout = UNKNOWN
            elif str(pci_device_id).lower() not in (str(w).lower() for w in wanted):
                continue
        for index in indices:
            seen.setdefault(index, []).append(layout)
    for index in range(gpu_count):
        found = seen.get(index) or [UNKNOWN]
        out[index] = found[0] if all(f == found[0] for f in found) else UNKNOWN
    return out


@dataclass(frozen=True)
class GpuChange:
    """One GPU whose layout changes: before and after (a layout or UNKNOWN), whether its MIG mode toggles (or may:
    a side not known) and whether that toggle needs a GPU reset."""

    index: int
    before: Any
    after: Any
    mode_toggles: bool
    needs_reset: bool

    def describe(self) -> str:
        """'GPU 3: 1g.10gb x7 -> 3g.40gb x2' (with the reset when one is needed)."""
        text = "GPU %d: %s -> %s" % (self.index, describe_layout(self.before), describe_layout(self.after))
        return text + (" (MIG mode change, needs a GPU reset)" if self.needs_reset else "")


@dataclass(frozen=True)
class GpuChanges:
    """A node's change: the GPUs that change (by index), whether each stays in MIG mode, and, when the change needs
    the whole node quiet, why (in words). `model` is the catalog key the reset rule was read from (None: unknown)."""

    changed: Tuple[GpuChange, ...]
    model: Optional[str]
    node_wide: Optional[str] = None  # why the node's other GPUs must be quiet too; None: GPU by GPU

    @property
    def indices(self) -> Tuple[int, ...]:
        return tuple(c.index for c in self.changed)

    @property
    def per_gpu(self) -> bool:
        """Whether the change can be done GPU by GPU (something changes, and no reset needs the node quiet)."""
        return bool(self.changed) and self.node_wide is None


def _needs_reset(gpu_model: Any) -> Tuple[bool, str]:
    """(whether a MIG mode toggle needs a GPU reset on this model, its name for the sentence). An unknown model is
    taken to need one: a per-GPU change that resets a GPU under the node's running jobs is the harm to avoid."""
    if gpu_model is None:
        return True, "an unknown GPU model"
    return bool(gpu_model.mig_mode_needs_reset), gpu_model.key


def gpu_changes(
    old_layout_per_index: Mapping[int, Any], new_layout_per_index: Mapping[int, Any], gpu_model: Any
) -> GpuChanges:
    """The GPUs whose layout differs between `old_layout_per_index` and `new_layout_per_index` ({index: layout or
    UNKNOWN}; an index missing on one side is UNKNOWN there), and whether the change is per GPU.

    gpu_model: the node's catalog GpuModel (mig/catalog.py), or None when not in the catalog. A GPU changes when its
    layouts differ or either is UNKNOWN; its mode toggles when MIG is on on one side and off on the other, or either
    side is UNKNOWN. The change is node-wide when a GPU's mode toggles on a model whose toggle needs a GPU reset."""
    needs_reset, model_name = _needs_reset(gpu_model)
    changed: List[GpuChange] = []
    for index in sorted(set(old_layout_per_index) | set(new_layout_per_index)):
        before = old_layout_per_index.get(index, UNKNOWN)
        after = new_layout_per_index.get(index, UNKNOWN)
        before = before if before == UNKNOWN else _clean(before)
        after = after if after == UNKNOWN else _clean(after)
        if before != UNKNOWN and after != UNKNOWN and before == after:
            continue
        toggles = UNKNOWN in (before, after) or (before is None) != (after is None)
        changed.append(GpuChange(index, before, after, toggles, toggles and needs_reset))
    resets = [c for c in changed if c.needs_reset]
    why = None
    if resets:
        gpus = ", ".join(str(c.index) for c in resets)
        unknown = any(UNKNOWN in (c.before, c.after) for c in resets)
        whose = ("GPU %s's MIG mode" if len(resets) == 1 else "the MIG mode of GPUs %s") % gpus
        what = "may change (its layout now or after is not known)" if unknown else "changes"
        why = "%s %s, which needs a GPU reset on %s: the node's other GPUs must be quiet" % (whose, what, model_name)
    return GpuChanges(tuple(changed), gpu_model.key if gpu_model is not None else None, why)


def applied_layouts(
    node: Mapping[str, Any],
    configs_before: Mapping[str, Sequence[Mapping[str, Any]]],
    gpu_count: int,
    pci_device_id: Optional[str] = None,
) -> Dict[int, Any]:
    """{GPU index: layout or UNKNOWN} the MIG manager applied on `node` (a Node object), as the rollout read it.

    Known only when the node's ``nvidia.com/mig.config`` names a config in `configs_before` (the ConfigMap as read,
    {name: entries}; the manager's built-in all-disabled when absent there), its state is success, and the digest
    gpupool recorded on the node, if any, is that config's digest now (else the config changed since the node was
    switched to it). Otherwise every GPU is UNKNOWN: its mode may toggle, which is node-wide on Ampere."""
    state = node_state(dict(node))
    entries: Optional[Sequence[Mapping[str, Any]]] = configs_before.get(state["config"] or "")
    if entries is None and state["config"] == BUILTIN_CONFIG:
        entries = [{"devices": "all", "mig-enabled": False}]
    if entries is None or state["state"] not in DONE_STATES:
        return layouts_of_entries(None, gpu_count)
    if state["digest"] is not None and state["digest"] != config_digest(list(entries)):
        return layouts_of_entries(None, gpu_count)
    return layouts_of_entries(entries, gpu_count, pci_device_id)
