# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.compute_domain, run in the controller (its documentation: plugins/modules/compute_domain.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import COMPUTE_DOMAIN
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import cluster_compute_domains
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


def compute_domain_status(obj):
    return ((obj or {}).get("status") or {}).get("status")


class ComputeDomainModule(KubernetesModule):
    shared = (APPLY, WAIT)
    argument_spec = dict(
        recreate=dict(type="bool", default=False),
        prune=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
    )

    def run(self):
        p = self.params
        desired = cluster_compute_domains(self.cluster, self.pool_names)  # inventory problems before any request
        info = {}
        if self.engine.version(COMPUTE_DOMAIN, required=bool(desired)) is None:
            info["api_version"] = None  # no ComputeDomain wanted and the CRD is not installed: nothing to do
            return info
        api_version = self.engine.api_version(COMPUTE_DOMAIN)
        info["api_version"] = api_version
        wanted = cluster_compute_domains(self.cluster, self.pool_names, api_version=api_version)
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
            self.wait_ready(info)
        return info

    def wait_ready(self, info):
        pending = [r for r in self.results if r.action not in ("deleted", "failed")]

        def probe():
            waiting = []
            for r in pending:
                r.object = self.engine.get(COMPUTE_DOMAIN, r.name, r.namespace)
                if compute_domain_status(r.object) != "Ready":
                    waiting.append(r)
            status = "%d/%d ComputeDomain(s) Ready" % (len(pending) - len(waiting), len(pending))
            if waiting:
                status += "; waiting for " + ", ".join(
                    "%s/%s (%s)" % (r.namespace, r.name, compute_domain_status(r.object) or "no status")
                    for r in waiting
                )
            probe.waiting = waiting
            return not waiting, status

        result = self.wait_for("ComputeDomains", probe, self.params["wait_timeout"], self.params["wait_sleep"])
        info["wait_log"] = result.log
        if not result.done:
            raise GpupoolError(
                "%d ComputeDomain(s) not Ready after %ds: %s. Check the DRA driver's compute-domain controller and the "
                "IMEX daemon pods in its namespace (kubectl get computedomain -A, kubectl -n <driver namespace> get "
                "pods)"
                % (
                    len(probe.waiting),
                    self.params["wait_timeout"],
                    ", ".join(
                        "%s/%s (status %s)" % (r.namespace, r.name, compute_domain_status(r.object) or "unset")
                        for r in probe.waiting
                    ),
                ),
                wait_log=result.log,
            )

    def object_results(self):
        objects = []
        for r in self.results:
            d = r.as_dict()
            d["status"] = compute_domain_status(r.object) if r.action != "deleted" else None
            objects.append(d)
        return objects


class ActionModule(StepAction):
    step = ComputeDomainModule
