# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU sharing and passthrough settings of one pool that the DRA driver cannot combine."""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path


def sharing_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """time_slicing and mps are exclusive; MPS and passthrough cannot meet dynamic MIG in a pool."""
    out = []
    for pool in cluster.pools:
        at = pool_path(root, pool)
        if pool.sharing.time_slicing and pool.sharing.mps:
            out.append((at + ".sharing", "time_slicing and mps cannot be used together on one pool; keep one"))
        if pool.sharing.mps and pool.mig.mode == "dynamic":
            out.append(
                (
                    at + ".sharing.mps",
                    "MPS cannot be combined with dynamic MIG (DRA driver gates MPSSupport "
                    "and DynamicMIG conflict); use static MIG or drop mps",
                )
            )
        if pool.passthrough and pool.mig.mode == "dynamic":
            out.append(
                (
                    at + ".passthrough",
                    "passthrough (PassthroughSupport) cannot be combined with dynamic MIG "
                    "(the DRA driver refuses both gates together); drop passthrough or use static MIG",
                )
            )
    return out
