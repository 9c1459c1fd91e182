# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model's entry points: inventory data -> validated `Cluster` (or `Problems`), the normalized dump, pool selection.
"""
from __future__ import annotations


from ansible_collections.gpupool.core.plugins.module_utils.model.checks import semantic_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import effective_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Cluster, ValidationError
from ansible_collections.gpupool.core.plugins.module_utils.model.shape_errors import _pydantic_problems


def load_cluster(data, root="gpupool_cluster"):
    """Validate inventory data; return the normalized Cluster or raise Problems."""
    if not isinstance(data, dict):
        raise Problems([(root, "must be a mapping with name and pools, got %s" % type(data).__name__)])
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as err:
        raise Problems(_pydantic_problems(err, root))
    problems = semantic_problems(cluster, root)
    if problems:
        raise Problems(problems)
    return cluster


def dump_cluster(cluster):
    """Normalized plain data (defaults filled in) for playbooks."""
    data = cluster.model_dump(mode="json")
    for pool, raw in zip(cluster.pools, data["pools"]):
        raw["taints_effective"] = pool.all_taints
        raw["mig"]["config_name"] = pool.mig_config_name
        raw["sharing"]["strategy"] = pool.sharing.strategy
        gpu = pool.catalog_gpu
        raw["gpu"]["catalog_key"] = gpu.key if gpu else None
        raw["nodegroup_name"] = (pool.nodegroup.name or pool.name) if pool.nodegroup else None
    data["dra_driver"]["feature_gates_effective"] = effective_gates(cluster)
    return data


def select_pools(cluster, names=None, root="gpupool_cluster"):
    """The pools in scope (present and absent), in inventory order; unknown names are an error."""
    if not names:
        return list(cluster.pools)
    known = [p.name for p in cluster.pools]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise Problems([("pools", "pool(s) %s not in %s.pools; known pools: %s"
                           % (", ".join(repr(n) for n in unknown), root, ", ".join(known) or "none"))])
    return [p for p in cluster.pools if p.name in names]


def pool_index(cluster, pool):
    return [p.name for p in cluster.pools].index(pool.name)
