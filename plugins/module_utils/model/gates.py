# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA driver feature gates: which gates the pools need, and the combinations the driver refuses.

The driver's gates are cluster-wide, so these checks span pools; rules from ValidateFeatureGates()
(reference nvidia-dra-mig-imex.md §1.8).
"""
from __future__ import annotations


# Rules of the DRA driver's ValidateFeatureGates() (nvidia-dra-mig-imex.md §1.8).
GATE_CONFLICTS = [
    ("DynamicMIG", "MPSSupport"), ("DynamicMIG", "PassthroughSupport"),
    ("DynamicMIG", "NVMLDeviceHealthCheck"), ("PassthroughSupport", "NVMLDeviceHealthCheck"),
]


GATE_REQUIRES = [("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"), ("DeviceMetadata", "PassthroughSupport")]


def derived_gates(cluster):
    """DRA driver feature gates that follow from the pools, each with the pool paths that need it."""
    need = {}
    for i, pool in enumerate(cluster.pools):
        if pool.state != "present":
            continue
        where = "pools[%d] (%s)" % (i, pool.name)
        if pool.sharing.time_slicing:
            need.setdefault("TimeSlicingSettings", []).append(where + ".sharing.time_slicing")
        if pool.sharing.mps:
            need.setdefault("MPSSupport", []).append(where + ".sharing.mps")
        if pool.mig.mode == "dynamic":
            need.setdefault("DynamicMIG", []).append(where + ".mig.mode")
        if pool.passthrough:
            need.setdefault("PassthroughSupport", []).append(where + ".passthrough")
        if pool.nvlink.mode == "host_imex":
            need.setdefault("HostManagedIMEXDaemon", []).append(where + ".nvlink.mode")
    # A claim template's sharing config is applied by the driver like a DeviceClass's: it needs the same gates.
    for i, tenant in enumerate(cluster.tenants or []):
        for k, template in enumerate(tenant.templates or []):
            where = "tenants[%d] (%s).templates[%d] (%s).sharing" % (i, tenant.namespace, k, template.name)
            if template.sharing is not None and template.sharing.time_slicing:
                need.setdefault("TimeSlicingSettings", []).append(where + ".time_slicing")
            if template.sharing is not None and template.sharing.mps:
                need.setdefault("MPSSupport", []).append(where + ".mps")
    return need


def effective_gates(cluster):
    gates = {g: True for g in derived_gates(cluster)}
    gates.update(cluster.dra_driver.feature_gates)
    return gates


def _gate_source(need, at, gate):
    return ", ".join(need.get(gate, [])) or "%s.%s" % (at, gate)


def _gate_problems(cluster, root):
    out = []
    need = derived_gates(cluster)
    gates = effective_gates(cluster)
    at = root + ".dra_driver.feature_gates"
    for gate, value in cluster.dra_driver.feature_gates.items():
        if value is False and gate in need:
            out.append(("%s.%s" % (at, gate), "set to false but %s need(s) it" % ", ".join(need[gate])))
    for a, b in GATE_CONFLICTS:
        if gates.get(a) and gates.get(b):
            out.append((at, "DRA feature gates %s (from %s) and %s (from %s) cannot be enabled together in "
                        "one cluster: the driver refuses to start"
                        % (a, _gate_source(need, at, a), b, _gate_source(need, at, b))))
    for a, b in GATE_REQUIRES:
        if gates.get(a) and gates.get(b) is False:
            out.append((at, "DRA feature gate %s requires %s" % (a, b)))
    return out
