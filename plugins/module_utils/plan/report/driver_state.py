# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA driver's feature gates and each NVLink pool's ComputeDomain, against what the pools use. Pure.

Facts used (reference nvidia-dra-mig-imex.md): the driver's kubelet plugin is the DaemonSet ``<release>-kubelet-plugin``
with a ``gpus`` container whose FEATURE_GATES env the chart renders as ``K=V,K=V,``; a claim that needs a gate the
plugin runs without fails at prepare time. A ComputeDomain's ``status.status`` is Ready once the IMEX daemons of its
nodes are; it has no nodes until a workload uses it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.gates import pool_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.names import KUBELET_PLUGIN_SUFFIX, compute_domain_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.mismatches import Mismatch, mismatch
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import meta

Obj = Dict[str, Any]


def _env(container: Obj, name: str) -> Optional[str]:
    for env in container.get("env") or []:
        if env.get("name") == name:
            return env.get("value")
    return None


def driver_plugin(daemonsets: List[Obj], namespace: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The NVIDIA DRA driver's kubelet plugin as deployed: {"name", "namespace", "gates"} or None.

    The DaemonSet named *-kubelet-plugin with a `gpus` container; the one in `namespace` (the inventory's
    dra_driver.namespace) wins, else the only one in the cluster. Gates from its FEATURE_GATES env
    ("K=V,K=V," as the chart renders it)."""
    found = []
    for ds in daemonsets:
        containers = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
        gpus = [c for c in containers if c.get("name") == "gpus"]
        if meta(ds).get("name", "").endswith(KUBELET_PLUGIN_SUFFIX) and gpus:
            gates = {}
            for item in (_env(gpus[0], "FEATURE_GATES") or "").split(","):
                if "=" in item:
                    key, value = item.split("=", 1)
                    gates[key.strip()] = value.strip().lower() == "true"
            found.append({"name": meta(ds).get("name"), "namespace": meta(ds).get("namespace"), "gates": gates})
    mine = [f for f in found if f["namespace"] == namespace]
    if mine:
        return mine[0]
    return found[0] if len(found) == 1 else None


def gate_mismatches(pool, plugin: Optional[Dict[str, Any]]) -> List[Mismatch]:
    """The gates the pool uses that the deployed driver does not have on (claims would fail at prepare)."""
    out = []
    for gate, key in sorted(pool_gates(pool).items()):
        if plugin is None:
            out.append(
                mismatch(
                    pool.name,
                    None,
                    "gate_missing",
                    "pool %s uses %s, which needs the DRA driver feature gate %s, but no NVIDIA DRA driver "
                    "kubelet plugin was found; install it with gpupool.core.dra_driver" % (pool.name, key, gate),
                    gate=gate,
                )
            )
        elif not plugin["gates"].get(gate):
            out.append(
                mismatch(
                    pool.name,
                    None,
                    "gate_missing",
                    "pool %s uses %s but the DRA driver (%s/%s) runs without the feature gate %s: its claims "
                    "fail at prepare time; run gpupool.core.dra_driver (it derives the gates from the pools)"
                    % (pool.name, key, plugin["namespace"], plugin["name"], gate),
                    gate=gate,
                )
            )
    return out


def compute_domain_state(cd: Optional[Obj]) -> Optional[str]:
    """Ready | NotReady | idle (no status, or no node yet: the domain follows its workloads) | None (absent)."""
    if cd is None:
        return None
    status = cd.get("status") or {}
    if status.get("status") == "Ready":
        return "Ready"
    if not status.get("nodes"):
        return "idle"
    return "NotReady"


def compute_domain_report(
    pool, compute_domains: List[Obj], served: bool = True
) -> Tuple[Optional[Dict[str, Any]], List[Mismatch]]:
    """({name, namespace, state, nodes} or None, mismatches) for a pool with multi-node NVLink."""
    if pool.nvlink.mode not in ("compute_domain", "host_imex"):
        return None, []
    name, namespace = compute_domain_name(pool), pool.nvlink.compute_domain.namespace
    cd = next(
        (c for c in compute_domains if meta(c).get("name") == name and meta(c).get("namespace") == namespace), None
    )
    state = compute_domain_state(cd)
    nodes = ((cd or {}).get("status") or {}).get("nodes") or []
    info = {
        "name": name,
        "namespace": namespace,
        "state": state,
        "nodes": [{"name": n.get("name"), "status": n.get("status")} for n in nodes],
    }
    if cd is None:
        why = (
            "the cluster does not serve ComputeDomains (the DRA driver's CRD; gpupool.core.dra_driver enables "
            "them for NVLink pools)"
            if not served
            else "run gpupool.core.compute_domain"
        )
        return info, [
            mismatch(
                pool.name,
                None,
                "compute_domain_missing",
                "pool %s: ComputeDomain %s/%s does not exist; %s" % (pool.name, namespace, name, why),
            )
        ]
    if state == "NotReady":
        waiting = [n.get("name") for n in nodes if n.get("status") != "Ready"]
        return info, [
            mismatch(
                pool.name,
                None,
                "compute_domain_not_ready",
                "pool %s: ComputeDomain %s/%s is NotReady (IMEX daemon not ready on %s); check the IMEX "
                "daemons in the driver namespace%s"
                % (
                    pool.name,
                    namespace,
                    name,
                    ", ".join(waiting) or "its nodes",
                    " and the host nvidia-imex service (gpupool.core.imex)" if pool.nvlink.mode == "host_imex" else "",
                ),
            )
        ]
    return info, []
