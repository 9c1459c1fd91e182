# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tenants and their ResourceClaimTemplates: names the API server accepts, one template per name and namespace,
a present pool and a DeviceClass it publishes, sharing the driver can apply.

`claim_template_problems` checks a list of entries (model/tenants.py) wherever they come from: the inventory's
tenants (through `tenant_problems`, in model/checks.CHECKS) and the module's own options use the same rules.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import lookalike_of
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import tenant_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    DNS_LABEL_RULE,
    DNS_SUBDOMAIN_RULE,
    is_dns_label,
    is_dns_subdomain,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.tenants import (
    TemplateEntry,
    inventory_entries,
    is_mig_class,
    template_class,
)

Problem = Tuple[str, str]


def claim_template_problems(cluster, entries: Sequence[TemplateEntry], root: str = "gpupool_cluster") -> List[Problem]:
    """Every problem of these templates; each path is the template's own (`entry.at`)."""
    out: List[Problem] = []
    claims = Claims()
    known = [p.name for p in cluster.pools]
    for entry in entries:
        template, at = entry.template, entry.at
        if not entry.default and not is_dns_subdomain(template.name):
            out.append(
                (
                    at + ".name",
                    "%r is not a valid ResourceClaimTemplate name (%s)" % (template.name, DNS_SUBDOMAIN_RULE),
                )
            )
        clash = claims.clash((entry.namespace, template.name), at, at)
        if clash:
            if not clash.same_owner:  # one module template in two namespaces is two objects, not a clash
                out.append(
                    (
                        at + ".name",
                        "template %s/%s is also defined by %s; template names are unique in a "
                        "namespace, rename one" % (entry.namespace, template.name, clash.holder),
                    )
                )
            continue
        if template.pool not in known:
            out.append(
                (
                    at + ".pool",
                    "pool %r not in %s.pools%s; known pools: %s%s"
                    % (
                        template.pool,
                        root,
                        lookalike_of(template.pool, known),
                        inline(template.pool, known),
                        below("known pools", template.pool, known),
                    ),
                )
            )
            continue
        pool = cluster.pool(template.pool)
        if pool.state != "present":
            out.append(
                (
                    at + ".pool",
                    "pool %s is absent (state: absent), so its DeviceClasses are deleted and no "
                    "claim from this template could be allocated; remove the template or move it to another "
                    "pool" % pool.name,
                )
            )
            continue
        device_class, problem = template_class(cluster, template)
        if problem:
            out.append((at + problem[0], problem[1]))
            continue
        sharing = template.sharing
        if sharing is not None:
            if sharing.time_slicing and sharing.mps:
                out.append((at + ".sharing", "time_slicing and mps cannot be used together; keep one"))
            elif (
                sharing.time_slicing
                and "interval" in sharing.time_slicing.model_fields_set
                and sharing.time_slicing.interval != "Default"
                and is_mig_class(device_class)
            ):
                out.append(
                    (
                        at + ".sharing.time_slicing.interval",
                        "interval %r cannot apply to MIG devices (class "
                        "%s): the DRA driver's MigDeviceConfig has no timeSlicingConfig, so it would be dropped "
                        "silently; remove interval" % (sharing.time_slicing.interval, device_class.name),
                    )
                )
        if template.allocation_mode == "All" and "count" in template.model_fields_set:
            out.append(
                (
                    at + ".count",
                    "count applies to allocation_mode ExactCount; with All the claim gets every "
                    "matching device of the node: remove count or use ExactCount",
                )
            )
    return out


def tenant_problems(cluster, root: str) -> List[Problem]:
    """Tenant namespaces are valid namespace names, each declared once, and every template can be built and allocated."""
    if cluster.tenants is None:
        return []
    out: List[Problem] = []
    claims = Claims()
    repeated = []
    for index, tenant in enumerate(cluster.tenants):
        at = tenant_path(root, index, tenant.namespace)
        if not is_dns_label(tenant.namespace):
            out.append(
                (at + ".namespace", "%r is not a valid namespace name (%s)" % (tenant.namespace, DNS_LABEL_RULE))
            )
        clash = claims.clash(tenant.namespace, at)
        if clash:
            out.append(
                (
                    at + ".namespace",
                    "namespace %s is also %s; list its templates under one entry" % (tenant.namespace, clash.holder),
                )
            )
            repeated.append(at + ".")
    # A repeated tenant's templates would each clash with the first one's: the namespace problem says it once.
    entries = [e for e in inventory_entries(cluster, root) if not any(e.at.startswith(r) for r in repeated)]
    return out + claim_template_problems(cluster, entries, root)
