# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG: layouts the placement planner can place, and MIG modes that can live together in one cluster."""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout, plan
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import effective_gates, explicit_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.names import pool_has_full_gpus
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_label, pool_path


def _layouts(holder):
    """[(key below mig, layout)] of a static pool's mig (or of one of its groups)."""
    items = [("layout", holder.layout)] if holder.layout is not None else []
    items += [("layouts[%d]" % k, v) for k, v in sorted((holder.layouts or {}).items())]
    return items


def _layout_problem(gpu, layout):
    """(key suffix, message) for a layout the planner refuses, or None."""
    for name in layout:
        if profile_by_name(gpu, name) is None:
            try:
                plan(gpu, {name: 1})
            except InfeasibleLayout as exc:
                return "[%r]" % name, exc.reason
    try:
        plan(gpu, layout)
    except InfeasibleLayout as exc:
        hint = ""
        if exc.suggestions:
            hint = "; nearest valid layout(s): " + " | ".join(
                ", ".join("%s: %d" % kv for kv in sorted(s.items())) for s in exc.suggestions
            )
        return "", exc.reason + hint
    return None


def holder_layout_problems(pool, at: str, holder) -> List[Tuple[str, str]]:
    """Problems of the layout(s) of `holder` (the pool's mig, or one of its mig.groups) at key path `at`: GPU
    indices that exist, no empty layout, profiles of this GPU, layouts that fit."""
    out = []
    gpu = pool.catalog_gpu
    for key, layout in _layouts(holder):
        if key.startswith("layouts["):
            index = int(key[8:-1])
            if not 0 <= index < pool.gpu.per_node:
                out.append(
                    (
                        at + "." + key,
                        "GPU index %d does not exist: the pool's nodes have %d GPU(s) "
                        "(indices 0..%d); set gpu.per_node or remove this index"
                        % (index, pool.gpu.per_node, pool.gpu.per_node - 1),
                    )
                )
                continue
        if not any(layout.values()):
            # mig-parted would enable MIG and create no instance: the GPU could run nothing at all.
            out.append(
                (
                    at + "." + key,
                    "the layout is empty: MIG would be enabled with no instance, so the "
                    "GPU can run nothing; list the instances, e.g. {%s: 1}, or drop the GPU from layouts "
                    "(or set mig.mode: off) to keep it whole" % gpu.mig.profiles[-1].name,
                )
            )
            continue
        problem = _layout_problem(gpu, layout)
        if problem:
            out.append((at + "." + key + problem[0], problem[1]))
    return out


def mig_layout_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Static MIG has exactly one of layout/layouts, no empty layout, GPU indices that exist, profiles of this GPU, and layouts that fit."""
    out = []
    for pool in cluster.pools:
        at = pool_path(root, pool)
        mig = pool.mig
        gpu = pool.catalog_gpu
        if mig.mode != "static":
            if mig.layout is not None or mig.layouts is not None:
                out.append(
                    (
                        at + ".mig.mode",
                        "a MIG layout is given but mig.mode is %r; set mig.mode: static "
                        "(dynamic MIG takes no layout: the DRA driver creates slices on demand)" % mig.mode,
                    )
                )
            continue
        if (mig.layout is None) == (mig.layouts is None):
            out.append(
                (
                    at + ".mig",
                    "static MIG needs exactly one of 'layout' (all GPUs) or 'layouts' (per GPU "
                    "index), e.g. mig: {mode: static, layout: {3g.20gb: 1, 2g.10gb: 2}}",
                )
            )
        if gpu is None or not gpu.mig:
            continue  # gpu_model_problems says why
        out += holder_layout_problems(pool, at + ".mig", mig)
    return out


def time_slicing_interval_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """time_slicing.interval is refused on a pool whose GPUs are all MIG-partitioned (MIG devices take no interval)."""
    out = []
    for pool in cluster.pools:
        slicing = pool.sharing.time_slicing
        if pool.mig.mode != "static" or slicing is None or "interval" not in slicing.model_fields_set:
            continue
        if slicing.interval == "Default" or pool_has_full_gpus(pool):
            continue
        out.append(
            (
                pool_path(root, pool) + ".sharing.time_slicing.interval",
                "interval %r cannot apply: every GPU of this pool is MIG-partitioned, and the DRA driver's "
                "MigDeviceConfig sharing has no timeSlicingConfig, so the interval would be dropped silently; "
                "remove interval (time_slicing: {} time-slices the MIG devices with the default interval)"
                % slicing.interval,
            )
        )
    return out


def mig_mode_mix_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Dynamic MIG (the DynamicMIG gate) is cluster-wide: no static-MIG pool, and no MIG-capable pool with MIG off, beside it."""
    dynamic = [
        "%s.%s.mig.mode" % (root, pool_label(pool._index, pool.name))
        for pool in cluster.present_pools
        if pool.mig.mode == "dynamic"
    ]
    explicit = explicit_gates(cluster).get("DynamicMIG")  # feature_gates or the raw chart values' featureGates
    gate_only = not dynamic and explicit and explicit[0]
    if gate_only:
        dynamic = ["%s.%s" % (root, explicit[1])]
    if not dynamic or not effective_gates(cluster).get("DynamicMIG"):
        return []
    source = ", ".join(dynamic)
    why = (
        "the DRA driver's DynamicMIG feature gate that %s turns on is cluster-wide (one chart value), and with it "
        "the driver's kubelet plugin destroys at start-up every MIG device it did not create itself "
        "(and on Hopper and newer may switch MIG mode)" % source
    )
    out = []
    for pool in cluster.present_pools:
        gpu = pool.catalog_gpu
        if pool.mig.mode == "dynamic" or gpu is None or not gpu.mig:
            continue
        at = pool_path(root, pool) + ".mig.mode"
        # A gate set by hand is the mistake to name (the pool is fine without it); the pool is said in the text.
        where, pool_is = (dynamic[0], "%s is static: " % at) if gate_only else (at, "")
        if pool.mig.mode == "static":
            out.append(
                (
                    where,
                    pool_is + "static MIG cannot share a cluster with dynamic MIG: %s, so this pool's layout would be "
                    "wiped on every plugin restart. Use mig.mode: dynamic for every MIG-capable pool of the "
                    "cluster, or static (or off) for all of them" % why,
                )
            )
        else:
            out.append(
                (
                    where,
                    pool_is.replace("is static", "has MIG off")
                    + "%s is MIG-capable and MIG is off here, but %s; it would also publish this pool's GPUs "
                    "as dynamic MIG devices. Use mig.mode: dynamic here too, or keep dynamic MIG out of this "
                    "cluster" % (gpu.key, why),
                )
            )
    return out
