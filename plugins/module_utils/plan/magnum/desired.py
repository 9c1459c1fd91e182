# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The desired Magnum nodegroup (pure): one dict in API field names, None meaning "not asked for, keep what Magnum
has". It comes from a pool of the validated inventory (`desired_from_pool`: the model's defaults are the only
defaults; the cluster's Magnum labels under the pool's) or, standalone, from the module's flat options
(`desired_state`); plan/magnum/nodegroups.plan_nodegroup plans both the same way."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.values import (
    normalize_labels,
    normalize_taints,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    birth_node_labels,
    birth_node_taints,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
COUNT_FIELDS = ("node_count", "min_node_count", "max_node_count")


def desired_state(params: Mapping[str, Any]) -> Dict[str, Any]:
    """Module parameters -> desired nodegroup fields (API names). Unset options stay None (= keep)."""
    desired = {
        "name": params["name"],
        "flavor_id": params.get("flavor"),
        "image_id": params.get("image"),
        "node_count": params.get("node_count"),
        "min_node_count": params.get("min_node_count"),
        "max_node_count": params.get("max_node_count"),
        "docker_volume_size": params.get("docker_volume_size"),
        "labels": normalize_labels(params.get("labels")),
        "cluster_labels": None,
        "merge_labels": params.get("merge_labels", True) is not False,
        "role": params.get("role"),
        "node_labels": normalize_labels(params.get("node_labels")),
        "node_taints": normalize_taints(params.get("node_taints")),
        # standalone use has no owner: it creates nodegroups without the owner label and changes only those
        # (plan/magnum/ownership.py), never one an inventory owns
        "owner": None,
        "adopt": False,
    }
    for field in COUNT_FIELDS:
        if desired[field] is not None and desired[field] < 0:
            raise Problems("%s must be 0 or more, got %s." % (field, desired[field]))
    if desired["docker_volume_size"] is not None and desired["docker_volume_size"] < 1:
        raise Problems("docker_volume_size must be at least 1 (GB), got %s." % desired["docker_volume_size"])
    for taint in desired["node_taints"] or []:
        if taint["effect"] not in TAINT_EFFECTS:
            raise Problems(
                "node_taints: effect %r of taint %r must be one of %s."
                % (taint["effect"], taint["key"], ", ".join(TAINT_EFFECTS))
            )
    return desired


def desired_from_pool(cluster: Any, pool: Any) -> Dict[str, Any]:
    """The desired nodegroup of a pool of the validated inventory (model/inventory.py), in API field names.

    Every value comes from the model, defaults included (node_count 1, min_node_count 0, role worker,
    merge_labels true); max_node_count, image and docker_volume_size unset mean "keep what Magnum has".
    Labels: the pool's own (``nodegroup.labels``) must hold on the nodegroup; the cluster's
    (``magnum.labels``) are sent under them when the nodegroup is created, and a later change of one of them
    is reported as drift, not refused (Magnum cannot relabel an existing nodegroup, and refusing would stop
    every pool of the cluster for one cluster-wide setting).
    Owner: the inventory's (gpupool_cluster.owner, default its name), set as the Magnum label gpupool.io/owner on a
    nodegroup it creates; only a nodegroup carrying it, or an unowned one the pool adopts, is changed
    (plan/magnum/ownership.py).
    Node labels and taints: the pool's, given to its nodes from birth (plan/nodes.birth_node_labels and
    birth_node_taints) where the server speaks microversion 1.14; `plan_nodegroup` drops them on older servers
    (``node_labels_if_supported``) instead of refusing, and node_pool sets them after the join there."""
    group = pool.nodegroup
    own = normalize_labels(group.labels) or {}
    inherited = normalize_labels(cluster.magnum.labels if cluster.magnum is not None else {}) or {}
    return {
        "name": nodegroup_name(pool),
        "flavor_id": group.flavor,
        "image_id": group.image,
        "node_count": group.node_count,
        "min_node_count": group.min_node_count,
        "max_node_count": group.max_node_count,
        "docker_volume_size": group.docker_volume_size,
        "labels": own if own or inherited else None,
        "cluster_labels": {k: v for k, v in inherited.items() if k not in own} or None,
        "merge_labels": group.merge_labels,
        "role": group.role,
        "node_labels": normalize_labels(birth_node_labels(pool)),
        "node_taints": normalize_taints(birth_node_taints(pool)),
        "node_labels_if_supported": True,
        "owner": cluster.owner_id,  # the Magnum label gpupool.io/owner of the nodegroups it creates
        "adopt": group.adopt,
        "adopt_at": _adopt_at(pool),
    }


def _adopt_at(pool: Any) -> str:
    """The key path of the pool's adopt setting, for the refusal that names it."""
    index = getattr(pool, "_index", None)
    at = "" if index is None else " (gpupool_cluster.pools[%d].nodegroup.adopt)" % index
    return "adopt: true in the nodegroup of pool %s%s" % (pool.name, at)


def orphaned_nodegroups(listing: Iterable[Dict[str, Any]], cluster: Any) -> List[str]:
    """Nodegroups of the Magnum cluster that no pool of the inventory declares (present or absent), apart from
    Magnum's default ones: left over from a pool removed from the inventory."""
    declared = {nodegroup_name(pool) for pool in cluster.pools if pool.nodegroup is not None}
    return sorted(
        ng["name"]
        for ng in listing
        if not ng.get("is_default") and ng.get("role") != "master" and ng["name"] not in declared
    )
