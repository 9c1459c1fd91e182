# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GPU pools look like in the cluster, against what the inventory declares: pure, no I/O.

Input: the validated `Cluster` and one `Observed` (observed.py: Nodes, ResourceSlices, ResourceClaims, the DRA
driver's DaemonSets and ComputeDomains as the API returns them). Output: one report per pool and a list of
mismatches (mismatches.py), each with a sentence a person can act on.

The pieces: observed.py (the objects, and the slices and claims read from them), devices.py (the GPU and MIG
devices a node publishes), gpu_identity.py (which GPU index each published GPU has; layout differences),
driver_state.py (the driver's feature gates, ComputeDomains), capacity.py (what more fits), mismatches.py. This
file matches nodes to pools, makes each node's row and mismatches, and the summary a person reads.

Facts used: the MIG manager (mig-parted) reports ``nvidia.com/mig.config.state`` on the node, and applies the
config named by ``nvidia.com/mig.config``.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CONFIG_LABEL,
    DRIVER,
    NODEGROUP_LABEL,
    STATE_LABEL,
    mig_config_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.node_owners import may_write
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.orphans import orphan_message, orphan_rows
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    desired_node_taints,
    match_nodes,
    node_matcher,
    node_ready,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import pool_capacity
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import (
    attribute,
    pool_bus_ids,
    published_gpus,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.driver_state import (
    compute_domain_report,
    driver_plugin,
    gate_mismatches,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_identity import (
    Layout,
    expected_layout,
    layout_differences,
    place_gpus,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.mismatches import (
    Mismatch,
    mismatch,
    mismatch_lines,
    sort_mismatches,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Obj, Observed, meta

Report = Dict[str, Any]


class NodeWants(NamedTuple):
    """What the inventory wants on one node of a pool."""

    group: Optional[str]  # the node's MIG group (None: it carries the pool's layout)
    layout: Optional[Dict[int, Layout]]  # expected_layout; None when not fixed (dynamic MIG)
    config: Optional[str]  # the mig-parted config it is labelled with (static MIG), else None
    taints: List[dict]  # desired_node_taints of the pool


def assign(pools, nodes: List[Obj], nodegroup_label: str = NODEGROUP_LABEL, name_pattern: Optional[str] = None):
    """({pool: [nodes]}, mismatches, {pool: selector in words}) - like node_pool's assignment, but a problem is
    reported, not raised."""
    mismatches, matchers = [], []
    for pool in pools:
        try:
            matchers.append((pool, node_matcher(pool, nodegroup_label, name_pattern)))
        except Problems as exc:  # only a cluster that skipped load_cluster's checks gets here
            mismatches.append(mismatch(pool.name, None, "no_node_selector", exc.problems[0][1]))
    named = [n for n in nodes if meta(n).get("name")]
    matched, conflicts = match_nodes(matchers, named)
    out = {pool.name: matched.get(pool.name, []) for pool in pools}
    mismatches += [mismatch(pool, node, "node_in_two_pools", text) for pool, node, text in conflicts]
    return out, mismatches, {p.name: m.describe for p, m in matchers}


def taint_text(taint) -> str:
    """key=value:effect, as kubectl taint writes it."""
    value = taint.get("value")
    return "%s%s:%s" % (taint["key"], "=%s" % value if value else "", taint.get("effect", ""))


def missing_taints(pool, node, wanted: Optional[List[dict]] = None) -> list:
    """The pool's taints (key, value and effect; `wanted`: desired_node_taints(pool), worked out here when not
    given) the node does not carry."""
    have = {
        (t.get("key"), t.get("value") or "", t.get("effect")) for t in ((node.get("spec") or {}).get("taints") or [])
    }
    wanted = desired_node_taints(pool) if wanted is None else wanted
    return [t for t in wanted if (t["key"], t.get("value") or "", t.get("effect")) not in have]


def _bucket() -> Dict[str, int]:
    return {"total": 0, "allocated": 0, "free": 0}


def _count(bucket: Dict[str, int], allocated: bool) -> None:
    bucket["total"] += 1
    bucket["allocated" if allocated else "free"] += 1


def _sum(buckets) -> Dict[str, int]:
    out = _bucket()
    for b in buckets:
        for k in out:
            out[k] += b[k]
    return out


def _str_keys(layouts):
    if layouts is None:
        return None
    return {str(k): (dict(v) if v is not None else None) for k, v in sorted(layouts.items())}


def _pool_head(pool, selector: Optional[str]) -> Report:
    """A pool's report before its nodes are read: what the inventory declares, and empty counts."""
    return {
        "mig_mode": pool.mig.mode,
        "gpu_model": pool.gpu.model,
        "gpus_per_node": pool.gpu.per_node,
        "selector": selector,
        "config_name": pool.mig_config_name if pool.mig.mode == "static" else None,
        "expected_nodes": pool.nodegroup.node_count if pool.nodegroup is not None else None,
        "expected_layout": _str_keys(expected_layout(pool)),
        "nodes": [],
        "gpus": _bucket(),
        "mig_devices": {},
        "devices": _bucket(),
        "ready_nodes": 0,
    }


def _node_row(node: Obj, devs: list, published, allocated, rep: Report) -> Report:
    """One node's row, its devices counted into the row and into the pool's report `rep`."""
    name = meta(node).get("name")
    labels = meta(node).get("labels") or {}
    row = {
        "name": name,
        "ready": node_ready(node),
        "schedulable": not (node.get("spec") or {}).get("unschedulable", False),
        "mig_config": labels.get(CONFIG_LABEL),
        "mig_state": labels.get(STATE_LABEL),
        "published": bool(devs),
        "layout": _str_keys(published),
        "gpus": _bucket(),
        "mig_devices": {},
        "allocated": [],
    }
    for pool_name, dev in devs:
        key = (DRIVER, pool_name, dev.get("name"))
        is_alloc = key in allocated
        if is_alloc:
            row["allocated"].append({"device": dev.get("name"), "claim": allocated[key]})
        dtype = attribute(dev, "type")
        if dtype == "mig":
            profile = attribute(dev, "profile") or "unknown"
            _count(row["mig_devices"].setdefault(profile, _bucket()), is_alloc)
            _count(rep["mig_devices"].setdefault(profile, _bucket()), is_alloc)
        elif dtype == "gpu":
            _count(row["gpus"], is_alloc)
            _count(rep["gpus"], is_alloc)
        else:
            continue
        _count(rep["devices"], is_alloc)
    return row


def _node_mismatches(pool, node: Obj, row: Report, wants: NodeWants, published) -> List[Mismatch]:
    """What is wrong with one node of the pool: Ready, taints, the MIG manager's state and config, its devices."""
    name, static, expected = row["name"], pool.mig.mode == "static", wants.layout
    out = []
    if not row["ready"]:
        why = "node %s is NotReady; its GPUs cannot be used (check the kubelet and the machine)" % name
        out.append(mismatch(pool.name, name, "node_not_ready", why))
    for taint in missing_taints(pool, node, wants.taints):
        # A GPU node without the pool's taint takes any pod: report it, never call it OK.
        why = (
            "node %s lacks the taint %s the pool declares, so pods that do not tolerate it can land "
            "there; run gpupool.core.node_pool (site.yml's node_pools step) to put it back" % (name, taint_text(taint))
        )
        out.append(mismatch(pool.name, name, "taint_missing", why))
    if row["mig_state"] == "failed":
        why = (
            "node %s: the MIG manager reports %s=failed for config %s; read the nvidia-mig-manager "
            "log on the node, fix the cause, then rerun gpupool.core.mig_layout with "
            "retry_failed: true" % (name, STATE_LABEL, row["mig_config"])
        )
        out.append(mismatch(pool.name, name, "mig_failed", why))
    if static and row["mig_config"] != wants.config:
        whose = "pool's" if wants.group is None else "MIG group %s's" % wants.group
        why = "node %s has %s=%s, the %s config is %s; run gpupool.core.mig_layout" % (
            name,
            CONFIG_LABEL,
            row["mig_config"] or "(not set)",
            whose,
            wants.config,
        )
        out.append(mismatch(pool.name, name, "mig_config_label", why))
    if not row["published"]:
        why = (
            "node %s publishes no %s devices (no ResourceSlice); check that the NVIDIA DRA "
            "driver's kubelet plugin runs there (its node affinity needs nvidia.com/gpu.present"
            "=true or an NFD PCI label, and it must tolerate the node's taints)" % (name, DRIVER)
        )
        out.append(mismatch(pool.name, name, "not_published", why))
    elif expected is not None:
        diffs = layout_differences(expected, published)
        if diffs:
            hint = (
                "run gpupool.core.mig_layout, or wait while %s=%s" % (STATE_LABEL, row["mig_state"])
                if row["mig_state"] in ("pending", "rebooting")
                else "run gpupool.core.mig_layout"
                if static
                else "disable MIG on the node (mig.mode is off)"
            )
            why = "node %s: %s; %s" % (name, "; ".join(diffs), hint)
            out.append(
                mismatch(
                    pool.name, name, "wrong_layout", why, expected=_str_keys(expected), published=_str_keys(published)
                )
            )
    return out


def _size_mismatches(pool, rep: Report) -> List[Mismatch]:
    """The pool's node count against its nodegroup's node_count."""
    want, found = rep["expected_nodes"], len(rep["nodes"])
    if want is None or found == want:
        return []
    if found < want:
        why = (
            "pool %s has %d of the %d nodes of its nodegroup (found: %s); check the nodegroup "
            "(gpupool.core.nodegroup_info) and that the nodes joined the cluster"
            % (pool.name, found, want, ", ".join(r["name"] for r in rep["nodes"]) or "none")
        )
        return [mismatch(pool.name, None, "missing_nodes", why, expected=want, found=found)]
    why = (
        "pool %s has %d nodes but its nodegroup's node_count is %d; a resize may be in progress, "
        "or nodes of another group match the pool" % (pool.name, found, want)
    )
    return [mismatch(pool.name, None, "extra_nodes", why, expected=want, found=found)]


def pool_report(pool, nodes: List[Obj], observed: Observed, selector: Optional[str] = None) -> Report:
    """Report and mismatches of one present pool and its nodes (see build_report)."""
    rep = _pool_head(pool, selector)
    # MIG groups: each node is expected to carry its group's layout and config (plan/mig/node_groups decides which)
    groups = assign_groups(pool, nodes) if pool.mig.mode == "static" and pool.mig.groups else {}
    # GPUs by identity: the pool's nodes share PCI slots, so their bus IDs together number every node's GPUs
    devs_of = {meta(n).get("name"): observed.devices_of(meta(n).get("name")) for n in nodes}
    gpus_of = {name: published_gpus(None, observed.gpu_devices_of(name)) for name in devs_of}
    bus_ids = pool_bus_ids(gpus_of.values())
    taints = desired_node_taints(pool)
    wants_of = {None: NodeWants(None, expected_layout(pool), rep["config_name"], taints)}
    for group in set(groups.values()) - {None}:
        wants_of[group] = NodeWants(group, expected_layout(pool, group), mig_config_name(pool, group), taints)
    mismatches = []
    for node in sorted(nodes, key=lambda n: meta(n).get("name")):
        name = meta(node).get("name")
        wants = wants_of[groups.get(name)]
        placed = place_gpus(gpus_of[name], wants.layout, pool.gpu.per_node, bus_ids)
        published = {index: gpu["layout"] for index, gpu in placed}
        row = _node_row(node, devs_of[name], published, observed.allocated, rep)
        if groups:
            row.update(mig_group=wants.group, expected_layout=_str_keys(wants.layout))
        rep["nodes"].append(row)
        rep["ready_nodes"] += 1 if row["ready"] else 0
        mismatches += _node_mismatches(pool, node, row, wants, published)
    rep["mismatches"] = _size_mismatches(pool, rep) + mismatches
    return rep


def _driver_mismatches(pool, observed: Observed, plugin, rep: Report) -> List[Mismatch]:
    """The pool's DRA driver gates and ComputeDomain (each skipped when the step did not read it); sets the report's
    "compute_domain"."""
    out = gate_mismatches(pool, plugin) if observed.daemonsets is not None else []
    if observed.compute_domains is not None:
        rep["compute_domain"], found = compute_domain_report(
            pool, observed.compute_domains, observed.compute_domains_served
        )
        out += found
    return out


def _orphaned(cluster, nodes: List[Obj], assigned: Dict[str, List[Obj]], pools) -> List[dict]:
    """Nodes of pools that left (removed, absent, no longer selected): listed on every run until they are gone."""
    members = {meta(n).get("name") for group in assigned.values() for n in group}
    # A run limited to some pools (fewer than the inventory's) only reports the orphans of those.
    limited = pools is not None and {p.name for p in pools} != {p.name for p in cluster.pools}
    # Only this inventory's nodes: another owner's (gpupool.io/owner), or one of a pool it does not declare without
    # an owner label, is never this inventory's orphan (node_pool leaves them alone: plan/nodes/node_owners.py).
    names = [p.name for p in cluster.pools]
    own = [n for n in nodes if may_write(n, cluster.owner_id, names, members)]
    return orphan_rows(cluster, own, members, [p.name for p in pools] if limited else None)


def _totals(reports: Dict[str, Report]) -> Dict[str, Any]:
    totals = {
        "nodes": sum(len(r["nodes"]) for r in reports.values()),
        "ready_nodes": sum(r["ready_nodes"] for r in reports.values()),
        "gpus": _sum(r["gpus"] for r in reports.values()),
        "mig_devices": {},
        "devices": _sum(r["devices"] for r in reports.values()),
    }
    for r in reports.values():
        for profile, b in r["mig_devices"].items():
            t = totals["mig_devices"].setdefault(profile, _bucket())
            for k in t:
                t[k] += b[k]
    return totals


def build_report(
    cluster,
    observed: Observed,
    pools=None,
    nodegroup_label: str = NODEGROUP_LABEL,
    name_pattern: Optional[str] = None,
    capacity: bool = False,
    root: str = "gpupool_cluster",
) -> Report:
    """{"pools": {name: report}, "mismatches": [...], "totals": {...}, "driver": {...}, "orphaned": [...]} for the
    present pools in scope (`pools`, default: every present pool of the cluster).

    `observed.daemonsets` None skips the DRA driver's gates, `observed.compute_domains` None the ComputeDomains.
    capacity: also per pool "capacity" ({"allocatable", "templates", "left_out"}) and per node row "allocatable"
    and "gpu_devices" (each GPU's devices and slices: what the picture draws), from capacity.pool_capacity (`root`:
    the inventory variable, for the tenants' templates)."""
    scope = [p for p in (pools if pools is not None else cluster.pools) if p.state == "present"]
    assigned, mismatches, selectors = assign(scope, observed.nodes, nodegroup_label, name_pattern)
    plugin = (
        driver_plugin(observed.daemonsets, cluster.dra_driver.namespace) if observed.daemonsets is not None else None
    )
    reports = {}
    for pool in scope:
        nodes = assigned.get(pool.name, [])
        rep = pool_report(pool, nodes, observed, selectors.get(pool.name))
        rep["mismatches"] = _driver_mismatches(pool, observed, plugin, rep) + rep["mismatches"]
        if capacity:
            counts = pool_capacity(cluster, pool, nodes, observed, root)
            for row in rep["nodes"]:
                row.update(counts["nodes"].get(row["name"]) or {"gpu_devices": [], "allocatable": {}})
            rep["capacity"] = {k: v for k, v in counts.items() if k != "nodes"}
        reports[pool.name] = rep
        mismatches += rep["mismatches"]
    orphaned = _orphaned(cluster, observed.nodes, assigned, pools)
    mismatches += [mismatch(row["pool"], row["name"], "orphaned_node", orphan_message(row)) for row in orphaned]
    sort_mismatches(mismatches, [p.name for p in scope])
    return {
        "pools": reports,
        "mismatches": mismatches,
        "totals": _totals(reports),
        "driver": plugin,
        "orphaned": orphaned,
    }


def summary(report: Report) -> str:
    """A few lines a person reads: per pool nodes, devices and free counts, then the mismatches."""
    lines = []
    for name, rep in report["pools"].items():
        want = rep["expected_nodes"]
        nodes = "%d/%d nodes Ready" % (rep["ready_nodes"], len(rep["nodes"]))
        if want is not None:
            nodes += " (nodegroup wants %d)" % want
        parts = []
        if rep["gpus"]["total"]:
            parts.append("%d full GPU(s), %d free" % (rep["gpus"]["total"], rep["gpus"]["free"]))
        for profile, b in sorted(rep["mig_devices"].items()):
            parts.append("%d x %s, %d free" % (b["total"], profile, b["free"]))
        devices = "; ".join(parts) or "no devices published"
        state = "OK" if not rep["mismatches"] else "%d mismatch(es)" % len(rep["mismatches"])
        lines.append("%s: %s; %s; %s" % (name, nodes, devices, state))
    lines += mismatch_lines(report["mismatches"])
    if not report["pools"]:
        lines.append("no pools in scope")
    return "\n".join(lines)
