# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Magnum nodegroup each pool wants, from the validated model: the model's defaults are the only defaults.

The result is what plan/nodegroup.desired_state() takes (the nodegroup module's options), so a pool's
nodegroup is planned exactly like one given to the module option by option.
"""
from __future__ import annotations

from typing import Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.names import nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodegroup import desired_state


def pool_nodegroup_params(cluster, pool) -> Optional[dict]:
    """The nodegroup options of a pool with a nodegroup, or None. Labels: the cluster's Magnum labels
    overlaid with the pool's (merge_labels then keeps the cluster template's as well)."""
    group = pool.nodegroup
    if group is None:
        return None
    labels = dict(cluster.magnum.labels) if cluster.magnum is not None else {}
    labels.update(group.labels)
    return {"name": nodegroup_name(pool), "state": pool.state, "flavor": group.flavor, "image": group.image,
            "node_count": group.node_count, "min_node_count": group.min_node_count,
            "max_node_count": group.max_node_count, "docker_volume_size": group.docker_volume_size,
            "role": group.role, "labels": labels, "merge_labels": group.merge_labels}


def pool_nodegroup_desired(cluster, pool) -> Optional[dict]:
    """desired_state() of the pool's nodegroup (API field names), or None without a nodegroup."""
    params = pool_nodegroup_params(cluster, pool)
    return desired_state(params) if params is not None else None
