# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG groups (``mig.groups``): N of a static pool's nodes with their own layout, checked like the pool's layout.

A group's nodes are labelled with its own mig-parted config, ``<pool's config>-<group name>``
(model/mig_configs.py checks that name is a label value and unique); here: static mode only, exactly one of
layout/layouts, the layouts themselves, names unique within the pool, no more nodes than the nodegroup has, and
``prefer`` entries that can be node names.
"""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_checks import holder_layout_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    DNS_SUBDOMAIN_RULE,
    LABEL_VALUE_RULE,
    is_dns_subdomain,
    is_label_value,
)


def _group_problems(pool, at: str, k: int) -> List[Tuple[str, str]]:
    group = pool.mig.groups[k]
    here = "%s.mig.groups[%d]" % (at, k)
    out = []
    if group.name is not None and (not group.name or not is_label_value(group.name)):
        out.append(
            (
                here + ".name",
                "%r cannot name a MIG group: it is part of the node label value %s-<name> (%s); "
                "choose a short name such as small or g%d"
                % (group.name, pool.mig_config_name, LABEL_VALUE_RULE, k + 1),
            )
        )
    if (group.layout is None) == (group.layouts is None):
        out.append(
            (
                here,
                "a MIG group needs exactly one of 'layout' (all GPUs of its nodes) or 'layouts' (per GPU index), "
                "e.g. {nodes: %d, layout: {1g.10gb: 7}}" % group.nodes,
            )
        )
    gpu = pool.catalog_gpu
    if gpu is not None and gpu.mig:  # else gpu_model_problems says why
        out += holder_layout_problems(pool, here, group)
    for j, node in enumerate(group.prefer or []):
        if not is_dns_subdomain(node):
            out.append(
                (
                    "%s.prefer[%d]" % (here, j),
                    "%r cannot be a node name (%s); list the names of the pool's nodes as kubectl get nodes "
                    "shows them" % (node, DNS_SUBDOMAIN_RULE),
                )
            )
    return out


def preferred_twice(cluster, root: str) -> List[Tuple[str, str]]:
    """A node named in `prefer` of groups of two pools: a node is in one pool, so one of the two preferences
    can never be followed, silently. (Within one pool, two groups may both prefer a node: the first takes it.)"""
    out = []
    first = {}  # node -> (pool name, path of its first mention)
    for pool in cluster.pools:
        at = pool_path(root, pool)
        for k, group in enumerate(pool.mig.groups or []):
            for j, node in enumerate(group.prefer or []):
                here = "%s.mig.groups[%d].prefer[%d]" % (at, k, j)
                if node not in first:
                    first[node] = (pool.name, here)
                elif first[node][0] != pool.name:
                    out.append(
                        (
                            here,
                            "node %r is also preferred by pool %r (%s); a node belongs to one pool, so one of the "
                            "two preferences would do nothing: keep it in the pool whose node selector or "
                            "nodegroup it is in" % (node, first[node][0], first[node][1]),
                        )
                    )
    return out


def mig_group_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """mig.groups: static mode only, each group a valid layout, unique names, at most the nodegroup's nodes."""
    out = []
    for pool in cluster.pools:
        groups = pool.mig.groups
        if not groups:
            continue
        at = pool_path(root, pool)
        gpu = pool.catalog_gpu
        if gpu is not None and not gpu.mig:
            out.append(
                (
                    at + ".mig.groups",
                    "%s has no MIG, so its nodes cannot carry MIG groups; remove mig.groups (a pool of a "
                    "MIG-capable GPU, such as A100 or H100, can have them)" % gpu.key,
                )
            )
            continue
        if pool.mig.mode != "static":
            out.append(
                (
                    at + ".mig.groups",
                    "MIG groups give some nodes another static layout, but mig.mode is %r; set mig.mode: static "
                    "with a layout for the other nodes, or remove mig.groups" % pool.mig.mode,
                )
            )
            continue
        claims = Claims()
        for k, name in enumerate(pool.group_names()):
            out += _group_problems(pool, at, k)
            clash = claims.clash(name, k)
            if clash:
                out.append(
                    (
                        "%s.mig.groups[%d].name" % (at, k),
                        "the MIG group name %r is also the name of mig.groups[%d] (a group without a name is "
                        "called g<position>); give each group its own name" % (name, clash.holder),
                    )
                )
        wanted = sum(g.nodes for g in groups)
        if pool.nodegroup is not None and wanted > pool.nodegroup.node_count:
            out.append(
                (
                    at + ".mig.groups",
                    "the MIG groups ask for %d node(s) but the nodegroup has node_count %d; lower the groups' "
                    "nodes or raise nodegroup.node_count (the nodes no group takes carry mig.layout)"
                    % (wanted, pool.nodegroup.node_count),
                )
            )
    return out + preferred_twice(cluster, root)
