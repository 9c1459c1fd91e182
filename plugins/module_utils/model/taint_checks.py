# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pool's node taints as one list the API server accepts: no key and effect twice.

The syntax of each taint (qualified key, label-value value) is checked by the Taint model itself.
"""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.names import GPU_TAINT
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path


def taint_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """No two taints of a pool with the same key and effect (the API server refuses them), and no extra taint hidden by gpu_taint."""
    out = []
    for pool in cluster.pools:
        at = pool_path(root, pool)
        claims = Claims()
        for index, taint in enumerate(pool.taints):
            where = "%s.taints[%d]" % (at, index)
            if pool.gpu_taint and taint.key == GPU_TAINT["key"]:
                # Pool.all_taints drops it: the node would never get what this entry asks for.
                out.append(
                    (
                        where,
                        "gpu_taint: true already sets %s=%s:%s, so this taint would be ignored; set "
                        "gpu_taint: false to use your own taint with this key"
                        % (GPU_TAINT["key"], GPU_TAINT["value"], GPU_TAINT["effect"]),
                    )
                )
                continue
            clash = claims.clash((taint.key, taint.effect), index)
            if clash:
                out.append(
                    (
                        where,
                        "taint %s:%s is also taints[%d]; the API server refuses two taints with the "
                        "same key and effect on a node, so keep one" % (taint.key, taint.effect, clash.holder),
                    )
                )
    return out
