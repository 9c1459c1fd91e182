# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.compute_domain, run in the controller (its documentation: plugins/modules/compute_domain.py).

The objects are plan/objects/compute_domains.py's, the wait for Ready k8s/compute_domains.py's."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.k8s.compute_domains import compute_domain_status, wait_ready
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import COMPUTE_DOMAIN
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import cluster_compute_domains
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class ComputeDomainModule(KubernetesModule):
    shared = (APPLY, WAIT)
    argument_spec = dict(
        recreate=dict(type="bool", default=False),
        prune=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
    )

    def run(self):
        """Build the ComputeDomains (once, before any request), converge them, wait until they are Ready."""
        p = self.params
        wanted = cluster_compute_domains(self.cluster, self.pool_names)  # the engine sets the served apiVersion
        if self.engine.version(COMPUTE_DOMAIN, required=bool(wanted)) is None:
            return {"api_version": None}  # no ComputeDomain wanted and the CRD is not installed: nothing to do
        info = {"api_version": self.engine.api_version(COMPUTE_DOMAIN)}
        prune = PruneScope.of(self.cluster, self.pool_names) if p["prune"] else None
        self.converge(
            COMPUTE_DOMAIN,
            wanted,
            prune=prune,
            immutable=("spec",),
            recreate=p["recreate"],
            delete_timeout=float(p["wait_timeout"]),
        )
        if p["wait"] and self.may_wait:
            info["wait_log"] = wait_ready(self.engine, self.results, self.wait_for, p["wait_timeout"], p["wait_sleep"])
        return info

    def object_results(self):
        objects = []
        for r in self.results:
            d = r.as_dict()
            d["status"] = compute_domain_status(r.object) if r.action != "deleted" else None
            objects.append(d)
        return objects


class ActionModule(StepAction):
    step = ComputeDomainModule
