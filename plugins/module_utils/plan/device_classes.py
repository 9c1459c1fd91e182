# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DeviceClasses (resource.k8s.io) generated from the pools: full GPUs, MIG profiles, VFIO and extra classes.
"""
from __future__ import annotations


from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import extended_resource_name
from ansible_collections.gpupool.core.plugins.module_utils.model.names import full_gpu_class_name
from ansible_collections.gpupool.core.plugins.module_utils.model.names import mig_class_name
from ansible_collections.gpupool.core.plugins.module_utils.model.names import vfio_class_name
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_SUBDOMAIN
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import QUALIFIED_NAME
from ansible_collections.gpupool.core.plugins.module_utils.plan.cel import cel_device
from ansible_collections.gpupool.core.plugins.module_utils.plan.cel import cel_min_compute_capability
from ansible_collections.gpupool.core.plugins.module_utils.plan.cel import cel_min_memory
from ansible_collections.gpupool.core.plugins.module_utils.plan.cel import selector
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver_config import opaque
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver_config import sharing_parameters
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.ownership import ownership_labels


def product_names(pool):
    gpu = pool.catalog_gpu
    return list(gpu.product_names) if gpu else [pool.gpu.model]


def pool_mig_profiles(pool):
    """MIG profiles that get a class: static: in the layout(s), dynamic: all of the GPU's."""
    gpu = pool.catalog_gpu
    if pool.mig.mode == "dynamic" and gpu is not None and gpu.mig:
        return [p.name for p in gpu.mig.profiles]
    if pool.mig.mode != "static":
        return []
    seen = []
    layouts = [pool.mig.layout] if pool.mig.layout is not None else list((pool.mig.layouts or {}).values())
    for layout in layouts:
        for name in layout or {}:
            if name not in seen:
                seen.append(name)
    return seen


def pool_has_full_gpus(pool):
    if pool.mig.mode != "static":
        return True
    if pool.mig.layout is not None:
        return not pool.mig.layout
    return any(not pool.layout_for(i) for i in range(pool.gpu.per_node))


def _device_class(api_version, name, pool, origin, role, selectors, config=None, ext_name=None, profile=None,
                  selector_origins=None):
    spec = {"selectors": [selector(s) for s in selectors]}
    if config:
        spec["config"] = [opaque(config)]
    if ext_name:
        spec["extendedResourceName"] = ext_name
    obj = {"apiVersion": api_version, "kind": "DeviceClass",
           "metadata": {"name": name, "labels": ownership_labels(pool.name)}, "spec": spec}
    info = {"role": role, "profile": profile, "selector_origins": selector_origins or [origin] * len(selectors)}
    return Desired(obj, pool.name, origin, info)


def pool_device_classes(pool, at="gpupool_cluster.pools[0]", api_version="resource.k8s.io/v1"):
    """DeviceClasses of one present pool."""
    if pool.state != "present":
        return []
    products = product_names(pool)
    ext = pool.device_classes.extended_resource_names
    out = []
    if pool.device_classes.defaults:
        if pool_has_full_gpus(pool):
            name = full_gpu_class_name(pool)
            out.append(_device_class(api_version, name, pool, at, "gpu", [cel_device("gpu", products)],
                                     sharing_parameters(pool.sharing), extended_resource_name(name) if ext else None))
        for profile in pool_mig_profiles(pool):
            name = mig_class_name(pool, profile)
            out.append(_device_class(api_version, name, pool, at + ".mig", "mig", [cel_device("mig", products, profile)],
                                     sharing_parameters(pool.sharing, mig=True),
                                     extended_resource_name(name) if ext else None, profile=profile))
        if pool.passthrough:
            name = vfio_class_name(pool)
            out.append(_device_class(api_version, name, pool, at + ".passthrough", "vfio", [cel_device("vfio", products)],
                                     None, extended_resource_name(name) if ext else None))
    for j, extra in enumerate(pool.device_classes.extra):
        where = "%s.device_classes.extra[%d]" % (at, j)
        profile = extra.mig_profile
        selectors = [cel_device("mig" if profile else "gpu", products, profile)]
        origins = [where]
        if extra.min_memory:
            selectors.append(cel_min_memory(extra.min_memory))
            origins.append(where + ".min_memory")
        min_cc = getattr(extra, "min_compute_capability", None)  # accepted once the model has the key
        if min_cc:
            selectors.append(cel_min_compute_capability(min_cc))
            origins.append(where + ".min_compute_capability")
        for k, sel in enumerate(extra.selectors):
            selectors.append(sel)
            origins.append("%s.selectors[%d]" % (where, k))
        out.append(_device_class(api_version, extra.name, pool, where, "extra", selectors,
                                 sharing_parameters(pool.sharing, mig=bool(profile)), extra.extended_resource_name,
                                 profile=profile, selector_origins=origins))
    return out


def cluster_device_classes(cluster, pools=None, root="gpupool_cluster", api_version="resource.k8s.io/v1"):
    """DeviceClasses of the pools in scope; names are checked across every present pool
    (DeviceClasses are cluster-scoped, so two pools must not claim one name)."""
    scope = set(p.name for p in select_pools(cluster, pools, root))
    problems, seen, out = [], {}, []
    for i, pool in enumerate(cluster.pools):
        for d in pool_device_classes(pool, "%s.pools[%d]" % (root, i), api_version):
            name = d.obj["metadata"]["name"]
            if name in seen:
                problems.append((d.origin, "DeviceClass name %r is also generated by %s; DeviceClass names are "
                                 "cluster-wide, rename one of them" % (name, seen[name])))
                continue
            seen[name] = d.origin
            if not DNS_SUBDOMAIN.match(name) or len(name) > 253:
                problems.append((d.origin, "%r is not a valid DeviceClass name (DNS subdomain: lowercase letters, "
                                 "digits, '-' and '.')" % name))
            ext = d.obj["spec"].get("extendedResourceName")
            if ext and not _extended_resource_ok(ext):
                problems.append((d.origin, "%r is not a valid extended resource name: use <domain>/<name>, the "
                                 "name at most 63 characters of [A-Za-z0-9-_.], outside kubernetes.io" % ext))
            if d.pool in scope:
                out.append(d)
    if problems:
        raise Problems(problems)
    return out


def _extended_resource_ok(name):
    if "/" not in name:
        return False
    domain, short = name.split("/", 1)
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or domain.endswith("requests."):
        return False
    return bool(DNS_SUBDOMAIN.match(domain)) and len(short) <= 63 and bool(QUALIFIED_NAME.match(short))


def without_extended_resource_names(desired):
    """The same classes without extendedResourceName (for clusters that drop the field)."""
    out = []
    for d in desired:
        obj = dict(d.obj, spec=dict((k, v) for k, v in d.obj["spec"].items() if k != "extendedResourceName"))
        out.append(d._replace(obj=obj))
    return out
