# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.compute_domain, run in the controller (its documentation: plugins/modules/compute_domain.py).

The objects are plan/objects/compute_domains.py's, the wait for Ready k8s/compute_domains.py's.

The ComputeDomain CRD comes with the DRA driver's chart. On a cluster without it, a dry run (check mode) of a run
whose driver step would install it says what would be created once it is there, instead of failing: the driver step
before this one only said "would install". Outside check mode a CRD that is still missing is an error with its fix
(the driver step of the same run installed it, or the driver is not gpupool's to install)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ConvergeError, PruneScope
from ansible_collections.gpupool.core.plugins.module_utils.k8s.compute_domains import compute_domain_status, wait_ready
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import COMPUTE_DOMAIN
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.compute_domains import cluster_compute_domains
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction

CRDS_PENDING = "once the DRA driver's CRDs are installed"


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
        if self.engine.version(COMPUTE_DOMAIN, required=False) is None:
            if not wanted:
                return {"api_version": None}  # no ComputeDomain wanted and the CRD is not installed: nothing to do
            if self.check_mode and self.cluster.dra_driver.enabled:
                return self.preview(wanted)
            self.engine.version(COMPUTE_DOMAIN)  # not served: the error says what to install
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

    def preview(self, wanted):
        """Check mode before the DRA driver's CRDs are installed: what would be created once they are."""
        try:
            results = self.engine.preview(COMPUTE_DOMAIN, wanted, CRDS_PENDING)
        except ConvergeError as exc:
            self.results.extend(exc.results)
            raise
        self.results.extend(results)
        return {
            "api_version": None,
            "msg": "; ".join("would create %s %s" % (r.ref, CRDS_PENDING) for r in results),
        }

    def object_results(self):
        objects = []
        for r in self.results:
            d = r.as_dict()
            d["status"] = compute_domain_status(r.object) if r.action != "deleted" else None
            objects.append(d)
        return objects


class ActionModule(StepAction):
    step = ComputeDomainModule
