# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DeviceClasses (resource.k8s.io) generated from the pools: full GPUs, MIG profiles, VFIO and extra classes."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import device_class_names
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.cel import (
    cel_device,
    cel_min_compute_capability,
    cel_min_memory,
    selector,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.driver_config import opaque, sharing_parameters
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ownership import ownership_labels


def product_names(pool):
    """productName values a pool's DeviceClasses select (the inventory's override or the catalog's)."""
    return pool.product_names


def _device_class(
    api_version,
    name,
    pool,
    origin,
    role,
    selectors,
    config=None,
    ext_name=None,
    profile=None,
    selector_origins=None,
    owner=None,
):
    spec = {"selectors": [selector(s) for s in selectors]}
    if config:
        spec["config"] = [opaque(config)]
    if ext_name:
        spec["extendedResourceName"] = ext_name
    obj = {
        "apiVersion": api_version,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": ownership_labels(pool.name, owner)},
        "spec": spec,
    }
    info = {"role": role, "profile": profile, "selector_origins": selector_origins or [origin] * len(selectors)}
    return Desired(obj, pool.name, origin, info)


def pool_device_classes(pool, at="gpupool_cluster.pools[0]", api_version="resource.k8s.io/v1", owner=None):
    """DeviceClasses of one present pool (names from model/names.py, checked by model/device_class_checks.py);
    owner: the inventory's gpupool.io/owner (cluster.owner_id)."""
    products = product_names(pool)
    entries = device_class_names(pool)
    out = []
    for entry in entries:
        if entry.role == "extra":
            continue
        config = None if entry.role == "vfio" else sharing_parameters(pool.sharing, mig=entry.role == "mig")
        out.append(
            _device_class(
                api_version,
                entry.name,
                pool,
                at + entry.where,
                entry.role,
                [cel_device(entry.role, products, entry.profile)],
                config,
                entry.extended_resource_name,
                profile=entry.profile,
                owner=owner,
            )
        )
    extras = [entry for entry in entries if entry.role == "extra"]
    for entry, extra in zip(extras, pool.device_classes.extra):
        where = at + entry.where
        selectors = [cel_device("mig" if entry.profile else "gpu", products, entry.profile)]
        origins = [where]
        if extra.min_memory:
            selectors.append(cel_min_memory(extra.min_memory))
            origins.append(where + ".min_memory")
        if extra.min_compute_capability:
            selectors.append(cel_min_compute_capability(extra.min_compute_capability))
            origins.append(where + ".min_compute_capability")
        for k, sel in enumerate(extra.selectors):
            selectors.append(sel)
            origins.append("%s.selectors[%d]" % (where, k))
        out.append(
            _device_class(
                api_version,
                entry.name,
                pool,
                where,
                "extra",
                selectors,
                sharing_parameters(pool.sharing, mig=bool(entry.profile)),
                entry.extended_resource_name,
                profile=entry.profile,
                selector_origins=origins,
                owner=owner,
            )
        )
    return out


def cluster_device_classes(cluster, pools=None, root="gpupool_cluster", api_version="resource.k8s.io/v1"):
    """DeviceClasses of the pools in scope of a validated cluster: their names were checked by the model, across
    every present pool (model/device_class_checks.py: DeviceClasses are cluster-scoped)."""
    scope = {p.name for p in select_pools(cluster, pools, root)}
    out = []
    for i, pool in enumerate(cluster.pools):
        if pool.name in scope:
            out += pool_device_classes(pool, "%s.pools[%d]" % (root, i), api_version, cluster.owner_id)
    return out


def without_extended_resource_names(desired):
    """The same classes without extendedResourceName (for clusters that drop the field)."""
    out = []
    for d in desired:
        obj = dict(d.obj, spec={k: v for k, v in d.obj["spec"].items() if k != "extendedResourceName"})
        out.append(d._replace(obj=obj))
    return out
