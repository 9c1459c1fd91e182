# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain policy of the cluster and of each pool: settings a drain could never honour.

The syntax of each key (ranges, the skip_pods label selector) is checked by the DrainPolicy / PoolDrain models.
"""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path


def _grace_problem(policy) -> str:
    return (
        "grace_period %ds is longer than timeout %ds: an evicted pod may take its whole grace period to stop, so "
        "the drain would give up while the pod is still stopping and nothing would be removed or reconfigured; "
        "raise timeout to at least %d or lower grace_period"
        % (policy.grace_period, policy.timeout, policy.grace_period)
    )


def drain_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """An evicted pod's grace period fits in the drain's timeout (the cluster's policy, and each pool's as changed)."""
    out = []
    policy = cluster.drain
    if policy.enabled and policy.grace_period is not None and policy.grace_period > policy.timeout:
        out.append((root + ".drain.grace_period", _grace_problem(policy)))
    for pool in cluster.pools:
        if pool.drain is None or not ({"grace_period", "timeout"} & pool.drain.model_fields_set):
            continue  # the cluster's values: reported once above
        mine = drain_policy(cluster, pool)
        if mine.enabled and mine.grace_period is not None and mine.grace_period > mine.timeout:
            key = "grace_period" if "grace_period" in pool.drain.model_fields_set else "timeout"
            out.append((pool_path(root, pool) + ".drain." + key, _grace_problem(mine)))
    return out
