# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a validated cluster means in concrete terms: gates, MIG configs, placements.

Pure functions over a validated `Cluster` (see model/inventory.py).
"""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import mig_parted_config
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import plan
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import effective_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.load import dump_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_configs import pool_configs


def cluster_mig_parted_config(cluster):
    """The mig-parted document: one config per static-MIG pool and one per MIG group of such a pool."""
    configs = {name: entries for p in cluster.present_pools for _group, name, entries in pool_configs(p)}
    return mig_parted_config(configs)


def pool_placements(pool, group=None):
    """{gpu index (str): [instance dicts]} for a static-MIG pool's nodes, or for those of its MIG group `group`."""
    out = {}
    for idx in range(pool.gpu.per_node):
        layout = pool.layout_for(idx, group)
        if layout:
            out[str(idx)] = [inst._asdict() for inst in plan(pool.catalog_gpu, layout)]
    return out


def normalized_result(cluster):
    return {
        "cluster": dump_cluster(cluster),
        "pools": [p.name for p in cluster.present_pools],
        "feature_gates": effective_gates(cluster),
        "mig_parted_config": cluster_mig_parted_config(cluster),
        "mig_placements": {p.name: pool_placements(p) for p in cluster.present_pools if p.mig.mode == "static"},
        "mig_group_placements": {
            p.name: {g: pool_placements(p, g) for g in p.group_names()}
            for p in cluster.present_pools
            if p.mig.mode == "static" and p.group_names()
        },
    }
