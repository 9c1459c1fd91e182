# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a pool's nodes come from: its Magnum nodegroup (sizes Magnum accepts, a name of its own) or a node selector."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    NODEGROUP_LABEL,
    OWNER_LABEL,
    nodegroup_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_label, pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    LABEL_VALUE_RULE,
    is_dns_label,
    is_label_value,
)


def nodegroup_size_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """A nodegroup needs gpupool_cluster.magnum, a role other than master, and min_node_count <= node_count <= max_node_count."""
    out = []
    for pool in cluster.pools:
        group = pool.nodegroup
        if group is None:
            continue
        at = pool_path(root, pool) + ".nodegroup"
        if cluster.magnum is None:
            out.append(
                (
                    at,
                    "a nodegroup needs %s.magnum (cloud and cluster) to be set, e.g. "
                    "magnum: {cloud: openstack, cluster: k8s-gpu}; or find the nodes with node_selector instead" % root,
                )
            )
        if group.role == "master":
            out.append(
                (
                    at + ".role",
                    "Magnum cannot create master nodegroups (400 CreateMasterNodeGroup) and a GPU "
                    "pool's nodes are workers; use role: worker (the default) or another custom role",
                )
            )
        if group.min_node_count > group.node_count:
            out.append(
                (
                    at + ".min_node_count",
                    "min_node_count %d is greater than node_count %d; "
                    "lower min_node_count or raise node_count" % (group.min_node_count, group.node_count),
                )
            )
        if group.max_node_count is not None and group.node_count > group.max_node_count:
            out.append(
                (
                    at + ".node_count",
                    "node_count %d is greater than max_node_count %d; "
                    "raise max_node_count or lower node_count" % (group.node_count, group.max_node_count),
                )
            )
        if group.max_node_count is not None and group.min_node_count > group.max_node_count:
            out.append(
                (
                    at + ".min_node_count",
                    "min_node_count %d is greater than max_node_count %d"
                    % (group.min_node_count, group.max_node_count),
                )
            )
    return out


def nodegroup_name_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Each pool has its own nodegroup name, usable as the value of the node label that finds its nodes."""
    out, claims = [], Claims()
    for pool in cluster.pools:
        name = nodegroup_name(pool)
        if name is None:
            continue
        at = pool_path(root, pool) + ".nodegroup" + (".name" if pool.nodegroup.name else "")
        # A nodegroup named after an invalid pool name: pool_name_problems says it once.
        if not is_label_value(name) and (pool.nodegroup.name or is_dns_label(pool.name)):
            out.append(
                (
                    at,
                    "nodegroup name %r cannot be the value of the node label %s, so the pool's nodes could "
                    "not be found (%s); choose a shorter nodegroup.name" % (name, NODEGROUP_LABEL, LABEL_VALUE_RULE),
                )
            )
        clash = claims.clash(name, pool, pool.name)
        if clash and not clash.same_owner:  # a duplicate pool name: pool_name_problems says it once
            out.append(
                (
                    at,
                    "nodegroup %r is also the nodegroup of %s.%s; two pools would resize, relabel and "
                    "delete the same Magnum nodegroup, so give each pool its own nodegroup.name"
                    % (name, root, pool_label(clash.holder._index, clash.holder.name)),
                )
            )
    return out


def nodegroup_owner_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """No Magnum labels of the inventory set gpupool.io/owner: gpupool sets it on the nodegroups it creates."""
    # Set by hand it could give a nodegroup to another owner, or the cluster's owner to every nodegroup made by
    # hand (a nodegroup created without labels copies the cluster's); docs/concurrency.md, "Owners: Magnum
    # nodegroups".
    out = []
    why = (
        "%s is the Magnum label gpupool sets to the inventory's owner (gpupool_cluster.owner, default its name) on "
        "the nodegroups it creates; remove it from these labels (to manage a nodegroup made without it, set the "
        "pool's nodegroup.adopt: true)" % OWNER_LABEL
    )
    if cluster.magnum is not None and OWNER_LABEL in cluster.magnum.labels:
        out.append(("%s.magnum.labels.%s" % (root, OWNER_LABEL), why))
    for pool in cluster.pools:
        if pool.nodegroup is not None and OWNER_LABEL in pool.nodegroup.labels:
            out.append(("%s.nodegroup.labels.%s" % (pool_path(root, pool), OWNER_LABEL), why))
    return out


def node_lookup_problem(pool) -> Optional[str]:
    """Why the nodes of a present pool cannot be found, or None."""
    if pool.state != "present" or pool.node_selector or pool.nodegroup is not None:
        return None
    return (
        "pool %s has neither a nodegroup nor a node_selector, so its nodes cannot be found; add node_selector "
        "(e.g. node_selector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}) or a Magnum nodegroup" % pool.name
    )


def node_lookup_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Every present pool has a nodegroup or a node_selector, so its nodes can be found."""
    out = []
    for pool in cluster.pools:
        problem = node_lookup_problem(pool)
        if problem:
            out.append((pool_path(root, pool) + ".node_selector", problem))
    return out
