# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What `validate` warns about: inventory that is valid but probably not what was meant (no refusal).

Every warning is (path, message) with the pool's name and a fix; nothing here does I/O.
"""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import quantity_bytes

MIB = 2**20


def semantic_warnings(cluster, root: str = "gpupool_cluster") -> list:
    """[(path, message)] for every pool (see the module docstring)."""
    out = []
    for pool in cluster.pools:
        out += _min_memory_warnings(pool, pool_path(root, pool))
    return out


def _min_memory_warnings(pool, at):
    """An extra DeviceClass whose min_memory is above what every device of the pool publishes matches nothing:
    the DRA driver's `memory` capacity is NVML's total (an H100 80GB publishes 81559 MiB, less than 80Gi)."""
    gpu = pool.catalog_gpu
    out = []
    if gpu is None:
        return out
    for j, extra in enumerate(pool.device_classes.extra):
        if not extra.min_memory:
            continue
        prof = profile_by_name(gpu, extra.mig_profile) if extra.mig_profile else None
        if extra.mig_profile and prof is None:
            continue  # checks.py already refuses the profile
        have_mib = prof.memory_mib if prof else gpu.memory_mib
        what = (
            "every %s MIG device of %s publishes %d MiB%s"
            % (
                prof.name,
                gpu.key,
                have_mib,
                "" if prof.measured else " (catalog estimate; NVML reports the exact size)",
            )
            if prof
            else "every %s publishes %d MiB (NVML's total memory)" % (gpu.key, have_mib)
        )
        if quantity_bytes(extra.min_memory) > have_mib * MIB:
            out.append(
                (
                    "%s.device_classes.extra[%d].min_memory" % (at, j),
                    "pool %s: DeviceClass %s asks for min_memory %s but %s, so it would match no device; "
                    "lower min_memory to at most %dMi" % (pool.name, extra.name, extra.min_memory, what, have_mib),
                )
            )
    return out
