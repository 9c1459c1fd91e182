# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pool's GPU model: known to the catalog (or declared as not in it), and able to do what the pool asks.

A misspelt model would otherwise become a DeviceClass whose productName selector matches no device: the
class exists, every claim for it stays pending, and nothing says why.
"""

from __future__ import annotations

import re
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import (
    CATALOG,
    gpu_candidates,
    gpu_keys,
    mig_capable_keys,
)
from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import unknown_profile_message
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import ascii_fold
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path


def similar_models(model: str, limit: int = 3) -> List[str]:
    """Catalog keys that look like `model`: the catalog's own name matching (one source of truth for names),
    asked again with look-alike characters folded to ASCII."""
    return gpu_candidates(model, limit) or gpu_candidates(ascii_fold(model), limit)


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", ascii_fold(text).lower())


def unknown_model_message(model: str) -> str:
    close = similar_models(model)
    # 'A100' is part of two catalog names: say it is ambiguous rather than unknown.
    ambiguous = len(close) > 1 and all(_squash(model) and _squash(model) in _squash(c) for c in close)
    text = ("%r is ambiguous" if ambiguous else "unknown GPU model %r") % model
    if close:
        text += "; did you mean %s?" % " or ".join(repr(c) for c in close)
    else:
        text += "; catalog keys: %s." % inline(model, gpu_keys())
    return text + (
        "\nUse a catalog key or an NVML product name such as 'NVIDIA A100-SXM4-40GB' (docs/mig-catalog.md)."
        "\nA GPU not in the catalog needs gpu.not_in_catalog: true, and as model the productName the DRA driver "
        "publishes.%s" % below("catalog keys", model, gpu_keys())
    )


def missing_profile_message(pool, profile: str) -> str:
    """Why `pool`'s GPU has no MIG profile `profile`, naming what it has: its profiles, or that it has no MIG."""
    gpu = pool.catalog_gpu
    if gpu is None:
        return "%r is not in the catalog, so gpupool knows no MIG profile of it (asked for %r)" % (
            pool.gpu.model,
            profile,
        )
    if not gpu.mig:
        return "%s has no MIG, so no MIG profile %r; MIG-capable GPUs: %s%s" % (
            gpu.key,
            profile,
            inline(gpu.key, mig_capable_keys()),
            below("MIG-capable GPUs", gpu.key, mig_capable_keys()),
        )
    return unknown_profile_message(gpu, profile)


def gpu_model_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """The GPU model is a catalog key or product name (did-you-mean otherwise); MIG and NVLink only where the GPU has them."""
    out = []
    for pool in cluster.pools:
        at = pool_path(root, pool)
        gpu = pool.catalog_gpu
        if pool.gpu.not_in_catalog:
            if gpu is not None:
                out.append(
                    (
                        at + ".gpu.not_in_catalog",
                        "%r is in the catalog (as %s); remove not_in_catalog so the "
                        "pool gets the catalog's product names and MIG profiles" % (pool.gpu.model, gpu.key),
                    )
                )
                continue
        elif gpu is None:
            out.append((at + ".gpu.model", unknown_model_message(pool.gpu.model)))
            continue
        if pool.mig.mode != "off":
            if gpu is None:
                out.append(
                    (
                        at + ".gpu.model",
                        "MIG needs a GPU model from the catalog, %r is not in it; use a MIG-capable catalog key: %s%s"
                        % (
                            pool.gpu.model,
                            inline(pool.gpu.model, mig_capable_keys()),
                            below("MIG-capable catalog keys", pool.gpu.model, mig_capable_keys()),
                        ),
                    )
                )
            elif not gpu.mig:
                out.append(
                    (
                        at + ".mig.mode",
                        "%s has no MIG: set mig.mode: off, or share the GPU with sharing.time_slicing or "
                        "sharing.mps; MIG-capable GPUs: %s%s"
                        % (
                            gpu.key,
                            inline(gpu.key, mig_capable_keys()),
                            below("MIG-capable GPUs", gpu.key, mig_capable_keys()),
                        ),
                    )
                )
        if pool.nvlink.mode != "none" and (gpu is None or not gpu.multinode_nvlink):
            out.append(
                (
                    at + ".nvlink.mode",
                    "%s has no multi-node NVLink, so ComputeDomains/IMEX do not apply; "
                    "set nvlink.mode: none (multi-node NVLink GPUs: %s)"
                    % (
                        gpu.key if gpu else pool.gpu.model,
                        ", ".join(k for k in gpu_keys() if CATALOG[k].multinode_nvlink),
                    ),
                )
            )
        if pool.nvlink.mode == "host_imex" and not pool.nvlink.imex_nodes:
            out.append(
                (
                    at + ".nvlink.imex_nodes",
                    "host_imex needs the member node addresses in imex_nodes, e.g. imex_nodes: [10.0.0.1, 10.0.0.2]",
                )
            )
    return out
