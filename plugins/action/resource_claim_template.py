# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.resource_claim_template, run in the controller (its documentation: plugins/modules/resource_claim_template.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import RESOURCE_CLAIM_TEMPLATE
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.claim_templates import (
    cluster_resource_claim_templates,
    in_served_version,
    tenant_claim_templates,
)
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class ResourceClaimTemplateModule(KubernetesModule):
    shared = (APPLY,)
    argument_spec = dict(
        # The keys of a template are the model's (ClaimTemplate), checked there: no second schema here.
        namespaces=dict(type="list", elements="str"),
        templates=dict(type="list", elements="dict"),
        recreate=dict(type="bool", default=True),
        prune=dict(type="bool", default=True),
    )

    def run(self):
        p = self.params
        if p["namespaces"] is None and p["templates"] is None:
            return self.converge_tenants()
        scope = dict(pools=self.pool_names, namespaces=p["namespaces"] or [], templates=p["templates"])
        wanted = cluster_resource_claim_templates(self.cluster, **scope)  # built once, before any request
        api_version = self.engine.api_version(RESOURCE_CLAIM_TEMPLATE)
        wanted = in_served_version(wanted, api_version)  # v1beta1 (Kubernetes 1.32) spells requests flat
        namespaces = set(p["namespaces"] or [])
        for t in p["templates"] or []:
            namespaces.update(t.get("namespaces") or [])
        prune = PruneScope.of(self.cluster, self.pool_names, namespaces) if p["prune"] and namespaces else None
        self.converge(RESOURCE_CLAIM_TEMPLATE, wanted, prune=prune, immutable=("spec",), recreate=p["recreate"])
        return {"api_version": api_version}

    def converge_tenants(self):
        """The inventory's tenants: every namespace they name, and gpupool's templates anywhere else pruned."""
        if self.cluster.tenants is None:
            raise Problems(
                [
                    (
                        "gpupool_cluster.tenants",
                        "the inventory declares no tenants and the task gives neither "
                        "namespaces nor templates, so there is nothing to converge; add tenants: [{namespace: "
                        "team-a, templates: [...]}] to gpupool_cluster (or tenants: [] to remove gpupool's "
                        "templates), or give namespaces/templates",
                    )
                ]
            )
        wanted = tenant_claim_templates(self.cluster, self.pool_names)  # built once, before any request
        api_version = self.engine.api_version(RESOURCE_CLAIM_TEMPLATE)
        wanted = in_served_version(wanted, api_version)
        prune = PruneScope.of(self.cluster, self.pool_names) if self.params["prune"] else None
        self.converge(
            RESOURCE_CLAIM_TEMPLATE, wanted, prune=prune, immutable=("spec",), recreate=self.params["recreate"]
        )
        return {"api_version": api_version}


class ActionModule(StepAction):
    step = ResourceClaimTemplateModule
