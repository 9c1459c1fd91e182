# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pools' mig-parted configs: their entries, and the names nodes are labelled with.

A static-MIG pool's nodes get the label nvidia.com/mig.config=<config name>, so the name must be a label value;
pools that share a name share one config in the MIG manager's ConfigMap, so their layouts must be the same.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import config_entries
from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CONFIG_LABEL, mig_config_name
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_label, pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    DNS_LABEL_RULE,
    DNS_SUBDOMAIN_RULE,
    LABEL_VALUE_RULE,
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
)

DEFAULT_PREFIX = "gpupool-"


def pool_mig_entries(pool, group: Optional[str] = None):
    """mig-parted entries of one static-MIG pool's nodes (group None) or of its group `group`: [(devices, layout)]."""
    if pool.mig.mode != "static":
        return []
    holder = pool.mig if group is None else pool.mig.groups[pool.group_names().index(group)]
    if holder.layouts is None:
        return [("all", holder.layout)]
    return [([idx], pool.layout_for(idx, group)) for idx in range(pool.gpu.per_node)]


def pool_configs(pool) -> List[Tuple[Optional[str], str, list]]:
    """[(group or None, config name, mig-parted entries)] of a static-MIG pool: its own config, then one per group."""
    if pool.mig.mode != "static":
        return []
    groups: List[Optional[str]] = [None]
    groups += pool.group_names()
    return [(g, mig_config_name(pool, g), pool_mig_entries(pool, g)) for g in groups]


def static_pools(pools):
    return [p for p in pools if p.state == "present" and p.mig.mode == "static"]


def config_name_problem(pool) -> str:
    """Why the pool's config name cannot be a node label value, or ''."""
    name = mig_config_name(pool)
    if is_label_value(name) or (pool.mig.config_name is None and not is_dns_label(pool.name)):
        return ""  # a name made from an invalid pool name: pool_name_problems says it once
    if pool.mig.config_name is None:
        return (
            "the pool name is too long for the %s label value: its MIG config is named %r (%d characters) and "
            "label values are at most 63; shorten the pool name to at most %d characters or set "
            "mig.config_name" % (CONFIG_LABEL, name, len(name), 63 - len(DEFAULT_PREFIX))
        )
    return "%r cannot be the value of the node label %s (%s); choose another config_name" % (
        name,
        CONFIG_LABEL,
        LABEL_VALUE_RULE,
    )


def mig_config_problems_of(pools, root: str) -> List[Tuple[str, str]]:
    """Config names of the present static-MIG pools among `pools`: label values, and shared only with the same layout."""
    out, claims = [], Claims()
    for pool in static_pools(pools):
        at = pool_path(root, pool) + ".mig.config_name"
        problem = config_name_problem(pool)
        if problem:
            out.append((at, problem))
            continue
        for k, (group, name, raw) in enumerate(pool_configs(pool)):
            where = at if group is None else "%s.mig.groups[%d].name" % (pool_path(root, pool), k - 1)
            if group is not None and not is_label_value(name):
                if is_label_value(group):  # else mig_group_problems says the group name is wrong
                    out.append((where, group_config_name_problem(name)))
                continue
            entries = config_entries(raw)
            clash = claims.clash(name, (pool, entries, group), (pool.name, group))
            if clash and clash.holder[1] != entries and not clash.same_owner:
                other = clash.holder[0]
                what = "pools that share a config name share one mig-parted config, so give one of them its own mig.config_name"
                if group is not None or clash.holder[2] is not None:
                    what = (
                        "a MIG group's config is named <pool's config>-<group name>, and configs that share a name share "
                        "one mig-parted config, so rename the group or give one pool its own mig.config_name"
                    )
                out.append(
                    (
                        where,
                        "MIG config %r is also used by %s.%s with a different layout; %s"
                        % (name, root, pool_label(other._index, other.name), what),
                    )
                )
                continue
    return out


def group_config_name_problem(name: str) -> str:
    """Why a MIG group's config name (<pool's config>-<group>) cannot be a node label value."""
    return (
        "the group's MIG config would be named %r (%d characters), which cannot be the value of the node label %s "
        "(%s); shorten the group name or the pool's mig.config_name" % (name, len(name), CONFIG_LABEL, LABEL_VALUE_RULE)
    )


def mig_config_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """MIG config names (default gpupool-<pool>) are label values, shared only with the same layout; valid MIG manager names."""
    out = mig_config_problems_of(cluster.pools, root)
    manager = cluster.mig_manager
    if not is_dns_subdomain(manager.config_map):
        out.append(
            (
                root + ".mig_manager.config_map",
                "%r is not a valid ConfigMap name (%s)" % (manager.config_map, DNS_SUBDOMAIN_RULE),
            )
        )
    if not is_dns_label(manager.namespace):
        out.append(
            (
                root + ".mig_manager.namespace",
                "%r is not a valid namespace name (%s)" % (manager.namespace, DNS_LABEL_RULE),
            )
        )
    return out
