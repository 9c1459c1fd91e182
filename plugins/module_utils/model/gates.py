# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA driver feature gates: which gates the pools need, and the combinations the driver refuses.

The driver's gates are cluster-wide, so these checks span pools. The rules (ValidateFeatureGates())
and which gates each driver version knows live in the one per-version table, dra_driver_versions.py;
with a supported `dra_driver.version` the checks also use that version's gate defaults and names.
"""

from __future__ import annotations

import difflib

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model.driver_values_rules import get_path

GATE_CONFLICTS = list(versions.MUTUALLY_EXCLUSIVE)
GATE_REQUIRES = list(versions.REQUIRES)


def pool_gates(pool):
    """{gate: the pool's key that needs it} for one pool (present or not)."""
    need = {}
    if pool.sharing.time_slicing:
        need["TimeSlicingSettings"] = "sharing.time_slicing"
    if pool.sharing.mps:
        need["MPSSupport"] = "sharing.mps"
    if pool.mig.mode == "dynamic":
        need["DynamicMIG"] = "mig.mode"
    if pool.passthrough:
        need["PassthroughSupport"] = "passthrough"
    if pool.nvlink.mode == "host_imex":
        need["HostManagedIMEXDaemon"] = "nvlink.mode"
    return need


def derived_gates(cluster):
    """DRA driver feature gates that follow from the pools, each with the pool paths that need it."""
    need = {}
    for i, pool in enumerate(cluster.pools):
        if pool.state != "present":
            continue
        for gate, key in pool_gates(pool).items():
            need.setdefault(gate, []).append("pools[%d] (%s).%s" % (i, pool.name, key))
    # A claim template's sharing config is applied by the driver like a DeviceClass's: it needs the same gates.
    for i, tenant in enumerate(cluster.tenants or []):
        for k, template in enumerate(tenant.templates or []):
            where = "tenants[%d] (%s).templates[%d] (%s).sharing" % (i, tenant.namespace, k, template.name)
            if template.sharing is not None and template.sharing.time_slicing:
                need.setdefault("TimeSlicingSettings", []).append(where + ".time_slicing")
            if template.sharing is not None and template.sharing.mps:
                need.setdefault("MPSSupport", []).append(where + ".mps")
    return need


VALUES_GATES = "dra_driver.values.featureGates"


def explicit_gates(cluster):
    """{gate: (value, key path below the root)} of the gates the inventory sets: `dra_driver.feature_gates` and
    the raw chart values' `featureGates` (one rule set for both: they end up in the same chart value). A
    gate set in both places with different values is a problem of its own (below); feature_gates wins here.
    A non-boolean raw value is left out (refused by dra_driver_checks)."""
    raw = (cluster.dra_driver.values or {}).get("featureGates")
    out = {}
    if isinstance(raw, dict):
        for gate, value in raw.items():
            if isinstance(value, bool):
                out[str(gate)] = (value, "%s.%s" % (VALUES_GATES, gate))
    for gate, value in cluster.dra_driver.feature_gates.items():
        out[gate] = (bool(value), "dra_driver.feature_gates.%s" % gate)
    return out


def effective_gates(cluster):
    gates = dict.fromkeys(derived_gates(cluster), True)
    gates.update({gate: value for gate, (value, _path) in explicit_gates(cluster).items()})
    return gates


def _gate_source(need, explicit, root, gate):
    if need.get(gate):
        return ", ".join(need[gate])
    return "%s.%s" % (root, explicit[gate][1]) if gate in explicit else "its default"


def driver_line(cluster):
    """The version table row of the cluster's chart version, or None when it is not a supported version
    (that is reported as a problem of dra_driver.version)."""
    try:
        return versions.line_for(cluster.dra_driver.version)
    except ValueError:
        return None


def imex_mode(cluster):
    """hostManaged when a present pool uses host-managed IMEX or the user's values ask for it."""
    raw = get_path(cluster.dra_driver.values or {}, "resources.computeDomains.imex.mode")
    if any(p.nvlink.mode == "host_imex" for p in cluster.present_pools) or raw == versions.HOST_MANAGED:
        return versions.HOST_MANAGED
    return versions.DRIVER_MANAGED


def _gate_problems(cluster, root):
    out = []
    need = derived_gates(cluster)
    gates = effective_gates(cluster)
    explicit = explicit_gates(cluster)
    at = root + ".dra_driver.feature_gates"
    raw = (cluster.dra_driver.values or {}).get("featureGates")
    for gate, value in sorted((raw if isinstance(raw, dict) else {}).items(), key=lambda kv: str(kv[0])):
        other = cluster.dra_driver.feature_gates.get(gate)
        if isinstance(value, bool) and other is not None and bool(other) != value:
            out.append(
                (
                    "%s.%s.%s" % (root, VALUES_GATES, gate),
                    "%s here but %s in %s.%s: set a gate in one place; keep feature_gates"
                    % (str(value).lower(), str(bool(other)).lower(), at, gate),
                )
            )
    for gate, (value, path) in sorted(explicit.items()):
        if value is False and gate in need:
            out.append(
                (
                    "%s.%s" % (root, path),
                    "set to false but %s need(s) it; remove it (gpupool turns it on for them)" % ", ".join(need[gate]),
                )
            )
    line = driver_line(cluster)
    if line is not None:
        # Explicit gates only: the one derived gate a line can lack (HostManagedIMEXDaemon from a host_imex
        # pool) is reported at the pool by dra_driver_checks.
        for gate in versions.unknown_gates(line, {g: v for g, (v, _p) in explicit.items()}):
            others = sorted(k + ".x" for k, other in versions.LINES.items() if gate in other.gate_names)
            close = difflib.get_close_matches(gate, line.gate_names, n=1, cutoff=0.6)
            fix = (
                "set gpupool_cluster.dra_driver.version to a %s release" % " or ".join(others)
                if others
                else "%sremove it; the %s.x gates: %s%s"
                % (
                    "did you mean %s? Otherwise " % close[0] if close else "a typo? ",
                    line.line,
                    inline(gate, line.gate_names),
                    below("the %s.x gates" % line.line, gate, line.gate_names),
                )
            )
            out.append(
                (
                    "%s.%s" % (root, explicit[gate][1]),
                    "DRA driver %s.x has no feature gate %s: every driver container would "
                    "exit at flag parsing; %s" % (line.line, gate, fix),
                )
            )
        effective = versions.effective_gates(line, gates, imex_mode(cluster))
    else:
        effective = gates
    for a, b in GATE_CONFLICTS:
        if effective.get(a) and effective.get(b):
            out.append(
                (
                    _where(root, at, explicit, a, b),
                    "DRA feature gates %s (from %s) and %s (from %s) cannot be enabled together in "
                    "one cluster: the driver refuses to start"
                    % (a, _gate_source(need, explicit, root, a), b, _gate_source(need, explicit, root, b)),
                )
            )
    for a, b in GATE_REQUIRES:
        if effective.get(a) and not effective.get(b, False) and (line is not None or gates.get(b) is False):
            source = (
                _gate_source(need, explicit, root, a) if a in gates else "its default in DRA driver %s.x" % line.line
            )
            out.append(
                (
                    _where(root, at, explicit, a, b),
                    "DRA feature gate %s (from %s) requires %s, which is off: the driver refuses to start; "
                    "enable %s or set %s to false" % (a, source, b, b, a),
                )
            )
    return out


def _where(root, at, explicit, *gates):
    """Where a rule spanning `gates` is reported: the raw chart value that set one of them, else feature_gates."""
    for gate in gates:
        if gate in explicit and explicit[gate][1].startswith(VALUES_GATES):
            return "%s.%s" % (root, explicit[gate][1])
    return at
