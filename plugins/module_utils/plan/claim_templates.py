# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ResourceClaimTemplates over the pools' DeviceClasses, per tenant namespace."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Sharing
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL, LABEL_KEY
from ansible_collections.gpupool.core.plugins.module_utils.plan.device_classes import cluster_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver_config import opaque, sharing_parameters
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.ownership import ownership_labels


def resource_claim_template(
    name,
    namespace,
    pool_name,
    device_class,
    api_version="resource.k8s.io/v1",
    count=1,
    allocation_mode="ExactCount",
    config=None,
    match_attribute=None,
    request="gpu",
):
    """One ResourceClaimTemplate: one request for `count` devices of `device_class`."""
    version = api_version.split("/")[-1]
    exact = {"deviceClassName": device_class, "allocationMode": allocation_mode}
    if allocation_mode == "ExactCount":
        exact["count"] = int(count)
    req = {"name": request}
    if version == "v1beta1":
        req.update(exact)  # v1beta1: the request is flat (no `exactly`)
    else:
        req["exactly"] = exact
    devices = {"requests": [req]}
    if match_attribute:
        devices["constraints"] = [{"requests": [request], "matchAttribute": match_attribute}]
    if config:
        devices["config"] = [dict(opaque(config), requests=[request])]
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": ownership_labels(pool_name)},
        "spec": {"metadata": {"labels": {POOL_LABEL: pool_name}}, "spec": {"devices": devices}},
    }


def cluster_resource_claim_templates(
    cluster, pools=None, namespaces=(), templates=None, api_version="resource.k8s.io/v1", root="gpupool_cluster"
):
    """Templates per tenant namespace.

    templates None: one per DeviceClass of each present pool in scope, named like the class, count 1.
    Otherwise each entry: name, pool, optional device_class | mig_profile, count, allocation_mode,
    sharing (pool_model.Sharing keys), match_attribute, namespaces (default: `namespaces`).
    """
    in_scope = select_pools(cluster, pools, root)
    classes = cluster_device_classes(cluster, None, root)
    by_pool = {}
    for d in classes:
        by_pool.setdefault(d.pool, []).append(d)
    problems, out, seen = [], [], {}
    for ns in namespaces or ():
        if not DNS_LABEL.match(ns):
            problems.append(("namespaces", "%r is not a valid namespace name" % ns))
    if templates is None:
        for pool in in_scope:
            if pool.state != "present":
                continue
            for d in by_pool.get(pool.name, []):
                name = d.obj["metadata"]["name"]
                for ns in namespaces or ():
                    obj = resource_claim_template(name, ns, pool.name, name, api_version)
                    out.append(Desired(obj, pool.name, d.origin, {"device_class": name, "count": 1}))
    else:
        scope_names = [p.name for p in in_scope]
        for i, t in enumerate(templates):
            at = "templates[%d]" % i
            pool_name = t.get("pool")
            try:
                pool = cluster.pool(pool_name)
            except KeyError:
                problems.append((at + ".pool", "pool %r not in %s.pools" % (pool_name, root)))
                continue
            if pool.name not in scope_names or pool.state != "present":
                continue
            device_class, problem = _template_class(pool, t, by_pool.get(pool.name, []))
            if problem:
                problems.append((at, problem))
                continue
            config = None
            if t.get("sharing"):
                try:
                    sharing = Sharing.model_validate(t["sharing"])
                except Exception as exc:  # pydantic ValidationError
                    problems.append((at + ".sharing", _first_line(exc)))
                    continue
                if sharing.time_slicing and sharing.mps:
                    problems.append((at + ".sharing", "time_slicing and mps cannot be used together; keep one"))
                    continue
                is_mig = _is_mig_class(pool, device_class, t, by_pool.get(pool.name, []))
                config = sharing_parameters(sharing, mig=bool(is_mig))
            match = t.get("match_attribute")
            if match and not LABEL_KEY.match(match):
                problems.append(
                    (
                        at + ".match_attribute",
                        "%r is not a qualified attribute name such as resource.kubernetes.io/pcieRoot" % match,
                    )
                )
                continue
            count = t.get("count") or 1
            mode = t.get("allocation_mode") or "ExactCount"
            for ns in t.get("namespaces") or namespaces or ():
                key = (ns, t["name"])
                if key in seen:
                    problems.append((at + ".name", "template %s/%s is also defined by %s" % (ns, t["name"], seen[key])))
                    continue
                seen[key] = at
                obj = resource_claim_template(
                    t["name"], ns, pool.name, device_class, api_version, count, mode, config, match
                )
                out.append(Desired(obj, pool.name, at, {"device_class": device_class, "count": count}))
            if not (t.get("namespaces") or namespaces):
                problems.append((at + ".namespaces", "no namespace: give namespaces for the module or the template"))
    if problems:
        raise Problems(problems)
    return out


def _first_line(exc):
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return " ".join(lines[1:3]) if len(lines) > 1 else (lines[0] if lines else repr(exc))


def _template_class(pool, t, pool_classes):
    if t.get("device_class"):
        if t.get("mig_profile"):
            return None, "give device_class or mig_profile, not both"
        return t["device_class"], None
    if t.get("mig_profile"):
        for d in pool_classes:
            if d.info.get("role") == "mig" and d.info.get("profile") == t["mig_profile"]:
                return d.obj["metadata"]["name"], None
        gpu = pool.catalog_gpu
        if gpu is None or profile_by_name(gpu, t["mig_profile"]) is None:
            return None, "pool %s's GPU (%s) has no MIG profile %r" % (pool.name, pool.gpu.model, t["mig_profile"])
        return None, (
            "pool %s publishes no DeviceClass for MIG profile %r (its MIG mode is %s); add the profile "
            "to the pool's mig.layout or name a device_class" % (pool.name, t["mig_profile"], pool.mig.mode)
        )
    for d in pool_classes:
        if d.info.get("role") == "gpu":
            return d.obj["metadata"]["name"], None
    return None, (
        "pool %s publishes no full-GPU DeviceClass (MIG layout on every GPU, or "
        "device_classes.defaults: false); give mig_profile or device_class" % pool.name
    )


def _is_mig_class(pool, device_class, t, pool_classes):
    if t.get("mig_profile"):
        return True
    for d in pool_classes:
        if d.obj["metadata"]["name"] == device_class:
            return d.info.get("role") == "mig" or bool(d.info.get("profile"))
    return False
