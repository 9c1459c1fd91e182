# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tenants' ResourceClaimTemplates as one flat list of entries, and the DeviceClass each one asks for.

Templates come from two places: the inventory (``gpupool_cluster.tenants``) and the options of
gpupool.core.resource_claim_template (``namespaces`` + ``templates``). Both become `TemplateEntry`s of the
same `ClaimTemplate` model, so one set of checks (model/tenant_checks.py) and one builder
(plan/objects/claim_templates.py) serve both; only the paths in messages differ.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model.gpu_checks import missing_profile_message
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import lookalike_of
from ansible_collections.gpupool.core.plugins.module_utils.model.names import ClassName, device_class_names
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import template_path, tenant_path
from ansible_collections.gpupool.core.plugins.module_utils.model.shape_errors import pydantic_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import ValidationError
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL_RULE, is_dns_label
from ansible_collections.gpupool.core.plugins.module_utils.model.tenant_settings import ClaimTemplate

Problem = Tuple[str, str]


class TemplateEntry(NamedTuple):
    """One template in one namespace; `at` is where it comes from (for messages), `default` when it was not
    written but derived from a pool's DeviceClass."""

    namespace: str
    template: ClaimTemplate
    at: str
    default: bool = False


def default_entries(cluster, namespace: str, at: str) -> List[TemplateEntry]:
    """One template per DeviceClass of each present pool, named like the class, one device."""
    out = []
    for pool in cluster.present_pools:
        for entry in device_class_names(pool):
            template = ClaimTemplate(name=entry.name, pool=pool.name, device_class=entry.name)
            out.append(TemplateEntry(namespace, template, at, True))
    return out


def inventory_entries(cluster, root: str = "gpupool_cluster") -> List[TemplateEntry]:
    """Every template the inventory's tenants declare (none when `tenants` is not set)."""
    out: List[TemplateEntry] = []
    for index, tenant in enumerate(cluster.tenants or []):
        at = tenant_path(root, index, tenant.namespace)
        if tenant.templates is None:
            out += default_entries(cluster, tenant.namespace, at + ".templates")
            continue
        for number, template in enumerate(tenant.templates):
            out.append(TemplateEntry(tenant.namespace, template, template_path(at, number, template.name)))
    return out


def option_entries(
    cluster, namespaces: Sequence[str], templates: Optional[Sequence[dict]]
) -> Tuple[List[TemplateEntry], List[Problem]]:
    """Entries from the module's options: `templates` None means the defaults in every namespace; each template
    may name its own `namespaces`. Shape problems come back with paths like ``templates[0].count``."""
    problems: List[Problem] = []
    for name in namespaces or ():
        if not is_dns_label(name):
            problems.append(("namespaces", "%r is not a valid namespace name (%s)" % (name, DNS_LABEL_RULE)))
    if templates is None:
        out: List[TemplateEntry] = []
        for name in namespaces or ():
            out += default_entries(cluster, name, "namespaces")
        return out, problems
    out = []
    for index, raw in enumerate(templates):
        at = "templates[%d]" % index
        # Ansible fills options the task left out with None; the model has its own defaults.
        data = {k: v for k, v in dict(raw).items() if v is not None}
        own = data.pop("namespaces", None)
        for name in own or ():
            if not is_dns_label(name):
                problems.append((at + ".namespaces", "%r is not a valid namespace name (%s)" % (name, DNS_LABEL_RULE)))
        try:
            template = ClaimTemplate.model_validate(data)
        except ValidationError as err:
            problems += pydantic_problems(err, at, data, model=ClaimTemplate)
            continue
        if not (own or namespaces):
            problems.append((at + ".namespaces", "no namespace: give namespaces for the module or the template"))
        for name in own or namespaces or ():
            out.append(TemplateEntry(name, template, at))
    return out, problems


def template_class(cluster, template: ClaimTemplate) -> Tuple[Optional[ClassName], Optional[Tuple[str, str]]]:
    """(the DeviceClass the template asks for, None) or (None, (key below the template, why not)).

    The class is one the pool publishes (model/names.device_class_names): a template over a class nobody
    publishes could never be allocated."""
    try:
        pool = cluster.pool(template.pool)
    except KeyError:
        known = [p.name for p in cluster.pools]
        return None, (
            ".pool",
            "pool %r not in the cluster's pools%s; known pools: %s%s"
            % (
                template.pool,
                lookalike_of(template.pool, known),
                inline(template.pool, known),
                below("known pools", template.pool, known),
            ),
        )
    classes = device_class_names(pool)
    if template.device_class and template.mig_profile:
        return None, ("", "give device_class or mig_profile, not both")
    if template.device_class:
        for entry in classes:
            if entry.name == template.device_class:
                return entry, None
        return None, (
            ".device_class",
            "pool %s publishes no DeviceClass %r; its classes: %s%s"
            % (
                pool.name,
                template.device_class,
                inline(template.device_class, [e.name for e in classes]),
                below("its classes", template.device_class, [e.name for e in classes]),
            ),
        )
    if template.mig_profile:
        for entry in classes:
            if entry.role == "mig" and entry.profile == template.mig_profile:
                return entry, None
        gpu = pool.catalog_gpu
        if gpu is None or profile_by_name(gpu, template.mig_profile) is None:
            return None, (
                ".mig_profile",
                "pool %s: %s" % (pool.name, missing_profile_message(pool, template.mig_profile)),
            )
        return None, (
            ".mig_profile",
            "pool %s publishes no DeviceClass for MIG profile %r (its MIG mode is %s); add "
            "the profile to the pool's mig.layout or name a device_class"
            % (pool.name, template.mig_profile, pool.mig.mode),
        )
    for entry in classes:
        if entry.role == "gpu":
            return entry, None
    return None, (
        "",
        "pool %s publishes no full-GPU DeviceClass (MIG layout on every GPU, or "
        "device_classes.defaults: false); give mig_profile or device_class" % pool.name,
    )


def is_mig_class(entry: ClassName) -> bool:
    """Whether the class offers MIG devices (its sharing config is then a MigDeviceConfig)."""
    return entry.role == "mig" or bool(entry.profile)
