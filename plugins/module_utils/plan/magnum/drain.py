# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain before a Magnum shrink or delete (pure): does a nodegroup plan remove nodes, which Kubernetes
nodes go (the ones Magnum is then told to remove), what leaves them first, and the --diff entry that shows it.

The nodegroup runner (runners/nodegroups.py) reads the nodegroup's Nodes and their pods and drains them with
k8s/drain.py; what it drains and names in the resize is decided here.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.actions import Action, Plan
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.drain_preview import removal_diff

# {node name: (the pods a drain would evict, the GPU pods it leaves alone)}, as k8s/drain.Drain.pod_plan reads them
PodPlans = Mapping[str, Tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]]


def action_removes_nodes(action: Action) -> bool:
    """A delete, or a resize to fewer nodes (plan/magnum/actions.Action)."""
    return action.kind == "delete" or bool(action.shrink_by)


def removes_nodes(plan: Plan) -> bool:
    """Whether a nodegroup plan (plan/magnum/actions.Plan) takes nodes away: then they are drained first."""
    return any(action_removes_nodes(a) for a in plan.actions)


def node_drain_plan(plan: Plan, nodes: Sequence[Mapping[str, Any]], pods: PodPlans, where: str) -> Dict[str, Any]:
    """The drain of a plan that removes nodes: the nodegroup's Nodes (API objects) and each one's pod plan =>
    {victims, nodes_to_remove, cordon, evict, skip}. A shrink removes the nodes `plan_drain` picks and names
    them in the resize; a delete drains every node and names none (the whole nodegroup goes)."""
    shrink = next((a for a in plan.actions if a.kind == "resize" and a.shrink_by), None)
    candidates = [drain_candidate(n, pods[n["metadata"]["name"]][0]) for n in nodes]
    out = plan_drain(candidates, shrink.shrink_by if shrink is not None else len(candidates), where)
    if shrink is None:
        out["nodes_to_remove"] = []
    out["skip"] = [
        {"node": n, "namespace": pod["metadata"].get("namespace"), "name": pod["metadata"].get("name")}
        for n in out["victims"]
        for pod in pods[n][1]
    ]
    return out


def removal_preview(where: str, pods: PodPlans, drain: Mapping[str, Any]) -> Dict[str, Any]:
    """The --diff entry of a drained shrink or delete: the nodes before and after, what leaves each one."""
    victims = drain["victims"]
    return removal_diff(
        where, sorted(pods), victims, {n: pods[n][0] for n in victims}, {n: pods[n][1] for n in victims}
    )


def server_id(node: Mapping[str, Any]) -> Optional[str]:
    """The OpenStack server id from a Node's providerID (openstack:///<id> or openstack://<region>/<id>)."""
    provider = node.get("provider_id") or ""
    if provider.startswith("openstack://"):
        ident = provider.rsplit("/", 1)[-1]
        if ident:
            return ident
    return None


def _index(name):
    match = re.search(r"(\d+)$", name or "")
    return int(match.group(1)) if match else -1


def drain_candidate(node: Dict[str, Any], gpu_pods: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """What plan_drain needs of a Kubernetes Node (API object) and the GPU pods a drain would evict from it."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    return {
        "name": meta.get("name"),
        "provider_id": spec.get("providerID"),
        "unschedulable": bool(spec.get("unschedulable")),
        "gpu_pods": [
            {"namespace": (p.get("metadata") or {}).get("namespace"), "name": (p.get("metadata") or {}).get("name")}
            for p in gpu_pods
        ],
    }


def plan_drain(
    nodes: Sequence[Mapping[str, Any]], remove_count: int, where: str = "the nodegroup"
) -> Dict[str, List[Any]]:
    """Choose which Kubernetes nodes a shrink removes and what to do to them first.

    nodes: [{name, provider_id, unschedulable, gpu_pods: [{namespace, name}]}] of the nodegroup.
    Prefers nodes already cordoned, then the fewest GPU pods, then the newest (highest index).
    Returns {victims, nodes_to_remove, cordon, evict}; nodes_to_remove are server ids (or names when
    the node has no OpenStack providerID) for the resize call."""
    if remove_count <= 0:
        return {"victims": [], "nodes_to_remove": [], "cordon": [], "evict": []}
    if len(nodes) < remove_count:
        raise Problems(
            "%s: the shrink removes %d node(s) but only %d of its nodes are registered in Kubernetes "
            "(label magnum.openstack.org/nodegroup), so the nodes to drain cannot be chosen. Remove the drain "
            "option to let Magnum choose, or wait until every node is registered." % (where, remove_count, len(nodes))
        )
    ranked = sorted(
        nodes,
        key=lambda n: (not n.get("unschedulable"), len(n.get("gpu_pods") or []), -_index(n.get("name")), n.get("name")),
    )
    victims = ranked[:remove_count]
    return {
        "victims": [n["name"] for n in victims],
        "nodes_to_remove": [server_id(n) or n["name"] for n in victims],
        "cordon": [n["name"] for n in victims if not n.get("unschedulable")],
        "evict": [
            {"node": n["name"], "namespace": p["namespace"], "name": p["name"]}
            for n in victims
            for p in (n.get("gpu_pods") or [])
        ],
    }
