# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor: why each waiting claim waits, and per pool the smallest inventory change that serves them. Pure.

Input: the validated `Cluster` and the raw inventory data it came from, and what the step listed as one
`Observed` (plan/report/observed.py: Nodes, ResourceSlices, ResourceClaims, DeviceClasses and Pods as the API returns
them, resource.k8s.io v1, v1beta2 or v1beta1). Output: a
dict (see `advise`) with the reasons, the ranked options per pool, the advice as a YAML snippet and a diff, and a
picture per changed pool.

The pieces: claims.py (demand), supply.py (what the pools have, read as the pool report reads it), classes.py and
selectors.py (which pool and unit a class stands for), reasons.py (why a claim waits; ledger.py reserves the free
units claim by claim), layouts.py and candidates.py (the changes that serve the claims), ranking.py (which one),
inventory_edit.py (the change as inventory, checked by the model like validate checks it), picture.py, text.py.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.model.tenants import inventory_entries, template_class
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import inventory_edit, ranking, text
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import search
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.claims import is_allocated, read_claims
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.classes import class_unit
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import ClaimNeed, Need
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.picture import change_picture
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.reasons import Reasoner
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import add_attributes, pool_supply
from ansible_collections.gpupool.core.plugins.module_utils.plan.collector import collector_paused
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import pod_ref, pods_to_evict
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.pool_report import assign

Obj = Dict[str, Any]


def template_units(cluster, pool_name: str, root: str = "gpupool_cluster") -> List[str]:
    """The units the tenants' templates of a pool ask for: a change must keep offering them."""
    out: List[str] = []
    for entry in inventory_entries(cluster, root):
        if entry.template.pool != pool_name:
            continue
        device_class = template_class(cluster, entry.template)[0]
        unit = class_unit(device_class) if device_class is not None else None
        if unit is not None and unit not in out:
            out.append(unit)
    return out


def claim_needs(waiting: List[Dict[str, Any]]) -> Dict[str, List[ClaimNeed]]:
    """{pool: [ClaimNeed]} of the waiting servable claims (reasons rows), in their order. A claim is allocated on one
    node, so all its requests on one node: one ClaimNeed. Its requests under the same matchAttribute attribute
    share one constraint (rows name the attribute, not the constraint: two constraints over one attribute are
    taken as one, which is stricter). A claim whose requests go to different pools cannot be served by any pool (a
    node is in one pool): its row is marked not servable, with why."""
    out: Dict[str, List[ClaimNeed]] = {}
    for row in waiting:
        if not row["servable"] or not row["requests"]:
            continue
        ref = "%s/%s" % (row["namespace"], row["name"])
        pools = sorted({r["pool"] for r in row["requests"]})
        if len(pools) > 1:
            row["servable"] = False
            row["no_change_serves"] = (
                "its requests go to pools %s, and all devices of a claim are allocated on one node, in one pool: "
                "ask for devices of one pool" % " and ".join(pools)
            )
            continue
        match: List[str] = []
        wanted = []
        for req in row["requests"]:
            constraint = None
            if req["match_attribute"]:
                if req["match_attribute"] not in match:
                    match.append(req["match_attribute"])
                constraint = match.index(req["match_attribute"])
            wanted.append(Need(req["unit"], req["count"], constraint))
        out.setdefault(pools[0], []).append(ClaimNeed(ref, tuple(wanted), tuple(match)))
    return out


def evicted_by_node(cluster, pool, node_names: List[str], pods: List[Obj]) -> Dict[str, List[str]]:
    """{node: pods a drain of it would evict} under the pool's drain policy (none when the policy drains nothing)."""
    policy = drain_policy(cluster, pool)
    if not policy.enabled:
        return {}
    wanted = set(node_names)
    by_node: Dict[str, List[Obj]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in wanted:
            by_node.setdefault(node, []).append(pod)
    return {
        node: [pod_ref(p) for p, _why in pods_to_evict(items, node, policy.skip_pods)[0]]
        for node, items in by_node.items()
    }


def option_row(cluster, candidate, raw_pool: Obj) -> Dict[str, Any]:
    pool = cluster.pool(candidate.pool)
    group = pool.nodegroup
    return {
        "kind": ranking.kind(candidate),
        "layouts": {str(i): lay for i, lay in sorted(candidate.changed.items())},
        "group": {
            "nodes": list(candidate.group_nodes),
            "layouts": {str(i): lay for i, lay in sorted((candidate.group_layout or {}).items())},
        }
        if candidate.group_nodes
        else None,
        "node_count": {"from": group.node_count, "to": group.node_count + candidate.nodes_added}
        if candidate.nodes_added
        else None,
        "nodes_repartitioned": candidate.nodes_repartitioned,
        "pods_evicted": candidate.pods_evicted,
        "gpus_changed": candidate.gpus_changed,
        "nodes_added": candidate.nodes_added,
        "idle_gpus": candidate.idle_gpus,
        "inventory": inventory_edit.change_data(pool, raw_pool, candidate),
        "text": text.describe_candidate(pool, candidate),
    }


@collector_paused()  # the cluster's objects are many: plan/collector.py
def advise(
    cluster,
    raw: Obj,
    observed: Observed,
    pools=None,
    nodegroup_label: str = NODEGROUP_LABEL,
    name_pattern: Optional[str] = None,
    inventory_text: Optional[str] = None,
    inventory_path: Optional[str] = None,
    root: str = "gpupool_cluster",
    pictures: bool = True,
    namespaces: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """{"waiting": [per waiting claim: pods, requests, reason, message], "pools": {pool: {"demand", "options",
    "advice", "unserved", "cut_short"}}, "nothing_to_change", "snippet", "inventory_diff", "diff_note", "pictures",
    "problems", "summary"} for the present pools in scope (default: all) and the claims of `namespaces` (default:
    every namespace), from `observed`'s nodes, slices, claims, device classes and pods."""
    scope = [p for p in (pools if pools is not None else cluster.pools) if p.state == "present"]
    assigned = assign(scope, observed.nodes, nodegroup_label, name_pattern)[0]
    by_node, allocated = observed.slices_by_node, observed.allocated
    supplies = {p.name: pool_supply(p, assigned.get(p.name, []), by_node, allocated) for p in scope}
    live = {(c.get("metadata") or {}).get("name"): c for c in observed.device_classes}
    reasoner = Reasoner(cluster, supplies, live, by_node)
    waiting = []
    # only the waiting claims are read whole (allocated_devices has what the allocated ones hold)
    claims = read_claims([c for c in observed.claims if not is_allocated(c)], observed.pods)
    matched = {r.match_attribute for c in claims for r in c.requests if r.match_attribute}
    if matched:  # the attributes their matchAttribute constraints compare, any the devices publish
        for supply in supplies.values():
            add_attributes(supply, matched, by_node)
    for claim in claims:
        if claim.allocated or (namespaces and claim.namespace not in namespaces):
            continue
        row = reasoner.claim(claim)
        if row["requests"] and all(r["reason"] == "out_of_scope" for r in row["requests"]):
            continue  # another pool's claim: a run limited to some pools says nothing about it
        waiting.append(row)

    demand = claim_needs(waiting)

    raw_pools = {p.get("name"): p for p in raw.get("pools") or [] if isinstance(p, dict)}
    out_pools: Dict[str, Any] = {}
    advice = []
    problems: List[Dict[str, str]] = []
    for pool in scope:
        wants = demand.get(pool.name)
        if not wants:
            continue
        supply = supplies[pool.name]
        evicted = evicted_by_node(cluster, pool, [r["name"] for r in supply["nodes"]], observed.pods)
        found = search(pool, supply, wants, template_units(cluster, pool.name, root), evicted)
        entry: Dict[str, Any] = {
            "demand": text.demand_counts(found["claims"]),
            "serves_now": found["serves_now"],
            "options": [],
            "advice": None,
            "rejected": [],
            "cut_short": found["cut_short"],
            "unserved": [{"claim": d.claim, "why": why} for d, why in found["unserved"]],
            "evaluations": found["evaluations"],
        }
        for d, why in found["unserved"]:
            for row in waiting:
                if "%s/%s" % (row["namespace"], row["name"]) == d.claim:
                    row["servable"] = False
                    row["no_change_serves"] = why
        chosen, seen = [], set()
        for candidate in ranking.ranked(found["candidates"]):
            if ranking.kind(candidate) in seen:
                continue
            refused = inventory_edit.problems_of(inventory_edit.cluster_after(cluster, raw, [candidate]), root)
            if not refused and candidate.group_nodes:
                refused = inventory_edit.group_problems(
                    cluster, raw, candidate, [r["node"] for r in supply["nodes"]], root
                )
            if refused:
                if len(entry["rejected"]) < 3:
                    entry["rejected"].append(
                        {"text": text.describe_candidate(pool, candidate), "problems": [m for _p, m in refused]}
                    )
                continue
            seen.add(ranking.kind(candidate))
            chosen.append(candidate)
            if len(chosen) == 3:
                break
        entry["options"] = [option_row(cluster, c, raw_pools.get(pool.name, {})) for c in chosen]
        if chosen:
            entry["advice"] = entry["options"][0]
            advice.append(chosen[0])
            if pictures:
                entry["picture"] = "advice-%s.svg" % pool.name
        out_pools[pool.name] = entry

    # The pools' advice together must pass validate too (checks across pools).
    together = inventory_edit.cluster_after(cluster, raw, advice)
    for path, message in inventory_edit.problems_of(together, root) if advice else []:
        problems.append({"path": path, "message": message})
    changes = [inventory_edit.change_data(cluster.pool(c.pool), raw_pools.get(c.pool, {}), c) for c in advice]
    afters = {c.pool: inventory_edit.pool_after(cluster.pool(c.pool), raw_pools.get(c.pool, {}), c) for c in advice}
    diff, note = "", None
    if advice and inventory_text is not None:
        diff, note = inventory_edit.file_diff(inventory_text, inventory_path or "inventory", afters)
    if advice and not diff:
        diff = inventory_edit.data_diff(
            [raw_pools.get(c.pool, {}) for c in advice], [afters[c.pool] for c in advice], "%s.pools" % root
        )
    drawn = {}
    if pictures:
        for candidate in advice:
            pool = cluster.pool(candidate.pool)
            drawn["advice-%s.svg" % pool.name] = change_picture(pool, supplies[pool.name], candidate)
    result = {
        "waiting": waiting,
        "pools": out_pools,
        "nothing_to_change": not advice,
        "snippet": inventory_edit.snippet(cluster.name, changes),
        "inventory_diff": diff,
        "diff_note": note,
        "pictures": drawn,
        "problems": problems,
    }
    result["summary"] = text.summary(cluster.name, result)
    return result
