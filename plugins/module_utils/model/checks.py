# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Semantic checks: what spans fields or pools, so that `validate` refuses whatever a later module would.

Every problem is (path, message) with the pool's name and a fix; nothing here does I/O.
"""
from __future__ import annotations


from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import plan
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import _gate_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL


def semantic_problems(cluster, root="gpupool_cluster"):
    problems = []
    seen = {}
    for i, pool in enumerate(cluster.pools):
        at = "%s.pools[%d]" % (root, i)
        if not DNS_LABEL.match(pool.name) or len(pool.name) > 63:
            problems.append((at + ".name", "%r is not a DNS label: use at most 63 lowercase letters, digits "
                             "and '-', starting and ending with a letter or digit" % pool.name))
        if pool.name in seen:
            problems.append((at + ".name", "duplicate pool name %r (also pools[%d]); pool names must be unique"
                             % (pool.name, seen[pool.name])))
        seen.setdefault(pool.name, i)
        problems += _nodegroup_problems(cluster, pool, at)
        problems += _gpu_problems(pool, at)
    problems += _gate_problems(cluster, root)
    return problems


def _nodegroup_problems(cluster, pool, at):
    ng = pool.nodegroup
    out = []
    if ng is None:
        if cluster.magnum is not None and not pool.node_selector and pool.state == "present":
            out.append((at + ".nodegroup", "the cluster uses Magnum but this pool has neither a nodegroup "
                        "nor a node_selector; add one so its nodes can be found"))
        return out
    if cluster.magnum is None:
        out.append((at + ".nodegroup", "a nodegroup needs gpupool_cluster.magnum (cloud and cluster) to be set"))
    if ng.min_node_count > ng.node_count:
        out.append((at + ".nodegroup.min_node_count", "min_node_count %d is greater than node_count %d; "
                    "lower min_node_count or raise node_count" % (ng.min_node_count, ng.node_count)))
    if ng.max_node_count is not None and ng.node_count > ng.max_node_count:
        out.append((at + ".nodegroup.node_count", "node_count %d is greater than max_node_count %d; "
                    "raise max_node_count or lower node_count" % (ng.node_count, ng.max_node_count)))
    if ng.max_node_count is not None and ng.min_node_count > ng.max_node_count:
        out.append((at + ".nodegroup.min_node_count", "min_node_count %d is greater than max_node_count %d"
                    % (ng.min_node_count, ng.max_node_count)))
    return out


def _gpu_problems(pool, at):
    out = []
    gpu = pool.catalog_gpu
    mig = pool.mig
    if mig.mode != "off":
        if gpu is None:
            out.append((at + ".gpu.model", "MIG needs a GPU model from the catalog, %r is unknown; "
                        "use one of the catalog keys (see docs/mig-catalog.md)" % pool.gpu.model))
            return out
        if not gpu.mig:
            out.append((at + ".mig.mode", "%s has no MIG; set mig.mode: off (or share it with "
                        "sharing.time_slicing / sharing.mps)" % gpu.key))
            return out
    if mig.mode == "static":
        if (mig.layout is None) == (mig.layouts is None):
            out.append((at + ".mig", "static MIG needs exactly one of 'layout' (all GPUs) or 'layouts' (per GPU index)"))
        items = [("layout", mig.layout)] if mig.layout is not None else []
        items += [("layouts[%d]" % k, v) for k, v in sorted((mig.layouts or {}).items())]
        for key, layout in items:
            if key.startswith("layouts["):
                idx = int(key[8:-1])
                if idx >= pool.gpu.per_node:
                    out.append((at + ".mig." + key, "GPU index %d does not exist: the pool's nodes have %d GPU(s) "
                                "(indices 0..%d)" % (idx, pool.gpu.per_node, pool.gpu.per_node - 1)))
                    continue
            for name in layout:
                if profile_by_name(gpu, name) is None:
                    try:
                        plan(gpu, {name: 1})
                    except InfeasibleLayout as exc:
                        out.append((at + ".mig.%s[%r]" % (key, name), exc.reason))
                    break
            else:
                try:
                    plan(gpu, layout)
                except InfeasibleLayout as exc:
                    hint = ""
                    if exc.suggestions:
                        hint = "; nearest valid layout(s): " + " | ".join(
                            ", ".join("%s: %d" % kv for kv in sorted(s.items())) for s in exc.suggestions)
                    out.append((at + ".mig." + key, exc.reason + hint))
    elif mig.layout is not None or mig.layouts is not None:
        out.append((at + ".mig.mode", "a MIG layout is given but mig.mode is %r; set mig.mode: static "
                    "(dynamic MIG takes no layout: the DRA driver creates slices on demand)" % mig.mode))
    if pool.sharing.time_slicing and pool.sharing.mps:
        out.append((at + ".sharing", "time_slicing and mps cannot be used together on one pool; keep one"))
    if pool.sharing.mps and mig.mode == "dynamic":
        out.append((at + ".sharing.mps", "MPS cannot be combined with dynamic MIG (DRA driver gates MPSSupport "
                    "and DynamicMIG conflict); use static MIG or drop mps"))
    if pool.passthrough and mig.mode == "dynamic":
        out.append((at + ".passthrough", "passthrough (PassthroughSupport) cannot be combined with dynamic MIG"))
    if pool.nvlink.mode != "none" and (gpu is None or not gpu.multinode_nvlink):
        out.append((at + ".nvlink.mode", "%s has no multi-node NVLink, so ComputeDomains/IMEX do not apply; "
                    "set nvlink.mode: none (multi-node NVLink GPUs: GB200)" % (gpu.key if gpu else pool.gpu.model)))
    if pool.nvlink.mode == "host_imex" and not pool.nvlink.imex_nodes:
        out.append((at + ".nvlink.imex_nodes", "host_imex needs the member node addresses in imex_nodes"))
    for j, extra in enumerate(pool.device_classes.extra):
        if extra.mig_profile and (gpu is None or profile_by_name(gpu, extra.mig_profile) is None):
            out.append((at + ".device_classes.extra[%d].mig_profile" % j, "%s has no MIG profile %r"
                        % (gpu.key if gpu else pool.gpu.model, extra.mig_profile)))
    return out
