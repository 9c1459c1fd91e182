# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain policy that applies to a pool's nodes: the cluster's `drain`, changed by the keys the pool's `drain` gives.

Every module that drains (nodegroup for shrinks and deletes, mig_layout for MIG waves) asks here, so the
defaults live in the model only and no role re-derives them.
"""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.gpupool.core.plugins.module_utils.model.drain_settings import DrainPolicy

# Keys of a pool's drain whose null means "none" (each pod's own grace period, no pod skipped), not "the cluster's".
NULL_MEANS_NONE = ("grace_period", "skip_pods")


def drain_policy(cluster, pool=None) -> DrainPolicy:
    """The policy for the nodes of `pool` (None: the cluster's own, e.g. for a nodegroup no pool declares)."""
    base = cluster.drain
    override = pool.drain if pool is not None else None
    if override is None:
        return base
    changes: Dict[str, Any] = {}
    for key in override.model_fields_set:
        value = getattr(override, key)
        if value is not None or key in NULL_MEANS_NONE:
            changes[key] = value
    return base.model_copy(update=changes)


def policy_dict(policy: DrainPolicy) -> Dict[str, Any]:
    """The policy as plain data (module results, the normalized inventory)."""
    return policy.model_dump(mode="json")
