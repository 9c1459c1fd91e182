# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA DRA driver's chart values, derived from a validated cluster (pure).

What each value is for (facts: ../shared/reference/nvidia-dra-driver-published.md, "Chart facts"):

* ``gpuResourcesEnabledOverride: true`` with ``resources.gpus.enabled: true``: the chart refuses GPU
  resources without the override (KEP 5004 guard).
* ``resources.computeDomains.enabled`` only when a pool uses multi-node NVLink: the compute-domain
  plugin otherwise runs on every GPU node and crashes on old host drivers, and ``helm --wait`` fails.
* ``featureGates``: the gates the pools need (time-slicing, MPS, dynamic MIG, passthrough,
  host-managed IMEX) plus the inventory's explicit ``feature_gates``.
* ``resources.computeDomains.imex`` (0.5 only): ``mode: hostManaged`` and the command socket when a
  pool uses host-managed IMEX; the gate alone changes nothing.
* ``kubeletPlugin.tolerations``: the chart's default tolerates only ``nvidia.com/gpu`` and a list
  value replaces the whole list, so it is that entry plus one per taint of our pools.
* ``kubeletPlugin.affinity``: the plugin runs on the nodes that carry our pool label
  (``gpupool.io/pool``, set on every pool node by node_pool), not on every node with NFD labels -
  so a GPU node someone else runs (e.g. with the GPU Operator's device plugin) is left alone.
* ``nvidiaDriverRoot``: ``/`` for a host driver, ``/run/nvidia/driver`` for the GPU Operator's driver
  container (the caller passes what it detected).
* ``nameOverride`` for a release still named ``nvidia-dra-driver-gpu`` (pre-0.4 installs), so the
  objects keep their names across the upgrade.

The user's ``dra_driver.values`` are merged last as helm merges a values file (maps merge, anything
else replaces), except at the keys gpupool derives, where model/driver_values_rules.py's table rules:
a merged list (tolerations) is extended - gpupool's (or the chart's) entries, then the user's, each once -
and a refused key never gets here (the model refused the inventory). `featureGates` is already the union
(model/gates.py effective_gates). `values_diff` lists what an upgrade would change; `merge_notes` says
what was extended, for --diff.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model import driver_values_rules as rules
from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import (
    DEFAULT_IMEX_SOCKET,
    HOST_MANAGED,
    LEGACY_NAME,
    DriverLine,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import effective_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.names import POOL_LABEL

CHART_GPU_TOLERATION = {
    "key": "nvidia.com/gpu",
    "operator": "Exists",
    "effect": "NoSchedule",
}
NVLINK_MODES_WITH_COMPUTE_DOMAINS = ("compute_domain", "host_imex")


def uses_compute_domains(cluster) -> bool:
    return any(p.nvlink.mode in NVLINK_MODES_WITH_COMPUTE_DOMAINS for p in cluster.present_pools)


def imex_mode(cluster) -> Optional[str]:
    """hostManaged when a present pool uses host-managed IMEX, None otherwise (the chart default)."""
    return HOST_MANAGED if any(p.nvlink.mode == "host_imex" for p in cluster.present_pools) else None


def plugin_tolerations(cluster) -> List[Dict[str, str]]:
    """The chart's nvidia.com/gpu toleration, then one per (key, effect) of the present pools' taints.

    Exists (not Equal) on purpose: a changed taint value of our own key does not need a new plugin
    rollout on every node. Sorted, so the list (and so the values) only changes when taints do."""
    seen = {(CHART_GPU_TOLERATION["key"], CHART_GPU_TOLERATION["effect"])}
    extra = []
    for pool in cluster.present_pools:
        for taint in pool.all_taints:
            ident = (taint["key"], taint.get("effect") or "NoSchedule")
            if ident not in seen:
                seen.add(ident)
                extra.append({"key": ident[0], "operator": "Exists", "effect": ident[1]})
    return [dict(CHART_GPU_TOLERATION)] + sorted(extra, key=lambda t: (t["key"], t["effect"]))


def plugin_affinity() -> Dict[str, Any]:
    """Required node affinity: nodes of any gpupool pool (Exists, so adding a pool changes nothing)."""
    term = {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def derived_values(cluster, line: DriverLine, driver_root: Optional[str] = None) -> Dict[str, Any]:
    """The values gpupool sets, before the user's `values` (see the module docstring)."""
    settings = cluster.dra_driver
    gates = {name: bool(on) for name, on in sorted(effective_gates(cluster).items())}
    compute_domains = uses_compute_domains(cluster)
    resources: Dict[str, Any] = {
        "gpus": {"enabled": True},
        "computeDomains": {"enabled": compute_domains},
    }
    mode = imex_mode(cluster)
    if compute_domains and mode == HOST_MANAGED and line.has_host_managed_imex:
        resources["computeDomains"]["imex"] = {
            "mode": HOST_MANAGED,
            "hostSocketPath": DEFAULT_IMEX_SOCKET,
        }
    values: Dict[str, Any] = {
        "gpuResourcesEnabledOverride": True,
        "resources": resources,
        "featureGates": gates,
        "nvidiaDriverRoot": driver_root or settings.nvidia_driver_root,
        "kubeletPlugin": {
            "tolerations": plugin_tolerations(cluster),
            "affinity": plugin_affinity(),
        },
    }
    if settings.release_name == LEGACY_NAME:
        values["nameOverride"] = LEGACY_NAME
    return values


def merge_values(base: Mapping, override: Mapping) -> Dict[str, Any]:
    """`override` over `base`: maps merge key by key, every other value (lists too) replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_user_values(derived: Mapping, user: Mapping) -> Dict[str, Any]:
    """`user` (raw chart values the model accepted) over `derived` by the table's rules: helm's merge, then
    every merged list extended instead of replaced, and featureGates kept as derived (already the union)."""
    out = merge_values(derived, user)
    for rule in rules.VALUE_RULES:
        if rule.rule != rules.MERGED:
            continue
        theirs = rules.get_path(user, rule.path)
        if rule.path == "featureGates":
            if theirs is not None:
                _set_path(out, rule.path, copy.deepcopy(dict(derived.get("featureGates") or {})))
            continue
        if not isinstance(theirs, list):
            continue
        ours = rules.get_path(derived, rule.path)
        if ours is None:
            ours = [dict(e) for e in rule.chart_default or ()]
        _set_path(out, rule.path, copy.deepcopy(rules.merged_list(ours, theirs)))
    return out


def _set_path(values: Dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = values
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def desired_values(cluster, line: DriverLine, driver_root: Optional[str] = None) -> Dict[str, Any]:
    """Derived values with the inventory's `dra_driver.values` merged last (merge_user_values)."""
    return merge_user_values(derived_values(cluster, line, driver_root), cluster.dra_driver.values or {})


def merge_notes(user: Optional[Mapping]) -> List[str]:
    """One phrase per merged list the user's values extend (for the --diff header), e.g.
    "kubeletPlugin.tolerations extended by dra_driver.values (2 entries, duplicates dropped)"."""
    out = []
    for rule in rules.VALUE_RULES:
        theirs = rules.get_path(user or {}, rule.path)
        if rule.rule == rules.MERGED and isinstance(theirs, list):
            out.append(
                "%s extended by dra_driver.values (%d entr%s, duplicates dropped)"
                % (rule.path, len(theirs), "y" if len(theirs) == 1 else "ies")
            )
        elif rule.path == "featureGates" and isinstance(theirs, Mapping) and theirs:
            out.append("featureGates: dra_driver.values' gates joined to gpupool's")
    return out


def user_overrides(cluster, line: DriverLine, driver_root: Optional[str] = None) -> List[Dict[str, Any]]:
    """Where the user's values change a derived one (shown, so nobody is surprised), each with its rule:
    "merged" (a list extended) or "yours" (the user's value replaces gpupool's default)."""
    merged = {r.path for r in rules.VALUE_RULES if r.rule == rules.MERGED}
    return [
        dict(d, rule=rules.MERGED if d["path"] in merged else rules.YOURS)
        for d in values_diff(
            derived_values(cluster, line, driver_root),
            desired_values(cluster, line, driver_root),
        )
        if d["before"] is not None
    ]


_MISSING = object()


def values_diff(current: Optional[Mapping], desired: Mapping) -> List[Dict[str, Any]]:
    """Every leaf that differs, as {"path", "before", "after"} (None for absent), sorted by path.
    Maps are walked; lists and scalars compare whole (helm replaces lists)."""
    out: List[Dict[str, Any]] = []
    _diff(current or {}, desired, "", out)
    return sorted(out, key=lambda d: d["path"])


def _diff(before: Any, after: Any, path: str, out: List[Dict[str, Any]]) -> None:
    # A map added or removed whole is walked too: one line per leaf reads better than one blob.
    if before is _MISSING and isinstance(after, Mapping) and after:
        before = {}
    if after is _MISSING and isinstance(before, Mapping) and before:
        after = {}
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in set(before) | set(after):
            sub = "%s.%s" % (path, key) if path else str(key)
            _diff(before.get(key, _MISSING), after.get(key, _MISSING), sub, out)
        return
    if before is _MISSING and after is _MISSING:
        return
    if before is _MISSING or after is _MISSING or _normal(before) != _normal(after):
        out.append(
            {
                "path": path,
                "before": None if before is _MISSING else before,
                "after": None if after is _MISSING else after,
            }
        )


def _normal(value: Any) -> Any:
    # helm returns what it was given through JSON: 1 and 1.0 are the same number; keep bools apart.
    if isinstance(value, bool):
        return ("bool", value)  # True == 1 in Python; not in a chart value
    if isinstance(value, (int, float)):
        return ("number", float(value))
    return value


def values_equal(current: Optional[Mapping], desired: Mapping) -> bool:
    return not values_diff(current, desired)


def summarize_diff(diff: List[Dict[str, Any]], limit: int = 12) -> List[str]:
    """One line per changed path, for the module's result and progress messages."""
    lines = ["%s: %s -> %s" % (d["path"], _short(d["before"]), _short(d["after"])) for d in diff[:limit]]
    if len(diff) > limit:
        lines.append("... and %d more" % (len(diff) - limit))
    return lines


def _short(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
