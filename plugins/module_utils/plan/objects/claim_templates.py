# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ResourceClaimTemplates over the pools' DeviceClasses, per tenant namespace.

What to build comes from the model (model/tenants.py: the inventory's tenants, or the module's options turned
into the same entries). The inventory's tenants were checked with the cluster (model/tenant_checks.py, in
load_cluster); the module's options are checked here, by the same model rules, as they are read.
"""

from __future__ import annotations

import copy
from typing import List

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.model.tenant_checks import claim_template_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.tenants import (
    inventory_entries,
    is_mig_class,
    option_entries,
    template_class,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.driver_config import opaque, sharing_parameters
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ownership import ownership_labels


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
    owner=None,
):
    """One ResourceClaimTemplate: one request for `count` devices of `device_class` (owner: gpupool.io/owner)."""
    exact = {"deviceClassName": device_class, "allocationMode": allocation_mode}
    if allocation_mode == "ExactCount":
        exact["count"] = int(count)
    devices = {"requests": [_spelled({"name": request, "exactly": exact}, api_version)]}
    if match_attribute:
        devices["constraints"] = [{"requests": [request], "matchAttribute": match_attribute}]
    if config:
        devices["config"] = [dict(opaque(config), requests=[request])]
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": ownership_labels(pool_name, owner)},
        "spec": {"metadata": {"labels": {POOL_LABEL: pool_name}}, "spec": {"devices": devices}},
    }


def _spelled(request: dict, api_version: str) -> dict:
    """A request as `api_version` spells it: flat in v1beta1, under `exactly` in v1beta2 and v1."""
    fields = dict(request.get("exactly") or {})
    fields.update((k, v) for k, v in request.items() if k not in ("name", "exactly"))
    if api_version.split("/")[-1] == "v1beta1":
        return dict(fields, name=request["name"])
    return {"name": request["name"], "exactly": fields}


def in_served_version(wanted: List[Desired], api_version: str) -> List[Desired]:
    """The templates built once, spelled as the API server serves them (its apiVersion and request shape): the
    build checks and decides before any request, discovery then says which version is served."""
    out = []
    for desired in wanted:
        obj = copy.deepcopy(desired.obj)
        obj["apiVersion"] = api_version
        devices = obj["spec"]["spec"]["devices"]
        devices["requests"] = [_spelled(r, api_version) for r in devices["requests"]]
        out.append(desired._replace(obj=obj))
    return out


def build_templates(cluster, entries, pools=None, api_version="resource.k8s.io/v1", root="gpupool_cluster"):
    """Desired templates of checked entries (claim_template_problems found nothing) whose pool is in scope."""
    in_scope = {p.name for p in select_pools(cluster, pools, root)}
    out = []
    for entry in entries:
        template = entry.template
        if template.pool not in in_scope:
            continue
        device_class = template_class(cluster, template)[0]
        config = sharing_parameters(template.sharing, mig=is_mig_class(device_class)) if template.sharing else None
        obj = resource_claim_template(
            template.name,
            entry.namespace,
            template.pool,
            device_class.name,
            api_version,
            template.count,
            template.allocation_mode,
            config,
            template.match_attribute,
            owner=cluster.owner_id,
        )
        out.append(Desired(obj, template.pool, entry.at, {"device_class": device_class.name, "count": template.count}))
    return out


def tenant_claim_templates(cluster, pools=None, api_version="resource.k8s.io/v1", root="gpupool_cluster"):
    """The templates the inventory's tenants declare (gpupool_cluster.tenants), for the pools in scope."""
    return build_templates(cluster, inventory_entries(cluster, root), pools, api_version, root)


def cluster_resource_claim_templates(
    cluster, pools=None, namespaces=(), templates=None, api_version="resource.k8s.io/v1", root="gpupool_cluster"
):
    """Templates from the module's options, per tenant namespace.

    templates None: one per DeviceClass of each present pool in scope, named like the class, count 1.
    Otherwise each entry is a ClaimTemplate of the model (name, pool, device_class | mig_profile, count,
    allocation_mode, sharing, match_attribute) plus `namespaces` (default: `namespaces`).
    """
    entries, problems = option_entries(cluster, namespaces, templates)
    if problems:
        raise Problems(problems)
    problems = claim_template_problems(cluster, entries, root)  # options the inventory's checks never saw
    if problems:
        raise Problems(problems)
    return build_templates(cluster, entries, pools, api_version, root)
