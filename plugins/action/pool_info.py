# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.pool_info, run in the controller (its documentation: plugins/modules/pool_info.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import NODES
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import (
    COMPUTE_DOMAIN,
    DAEMON_SET,
    NODE,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.markdown import cluster_markdown, pictures
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.pool_report import build_report, summary
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class PoolInfoModule(KubernetesModule):
    shared = (NODES,)
    argument_spec = dict(fail_on_mismatch=dict(type="bool", default=False), markdown=dict(type="bool", default=False))

    def run(self):
        p = self.params
        # the run's view (k8s/run_view.py): what node_pool, mig_layout and compute_domain listed, as written since
        cd_version = self.engine.version(COMPUTE_DOMAIN, required=False)
        observed = Observed(
            nodes=self.engine.observe(NODE),
            # resource.k8s.io is served: the engine refused a cluster without it before any request (k8s/support.py)
            slices=self.engine.observe(RESOURCE_SLICE),
            claims=self.engine.observe(RESOURCE_CLAIM),
            daemonsets=self.engine.observe(DAEMON_SET),  # the DRA driver's kubelet plugin: which gates it runs with
            compute_domains=self.engine.observe(COMPUTE_DOMAIN) if cd_version else [],
            compute_domains_served=cd_version is not None,
        )
        report = build_report(
            self.cluster, observed, self.selected, p["nodegroup_label"], p["name_pattern"], capacity=True
        )
        text = summary(report)
        out = dict(
            pools=report["pools"],
            mismatches=report["mismatches"],
            totals=report["totals"],
            driver=report["driver"],
            orphaned=report["orphaned"],
            ok=not report["mismatches"],
            summary=text,
            resource_api_version=self.engine.api_version(RESOURCE_SLICE),
        )
        if p["markdown"]:
            out["markdown"] = cluster_markdown(self.cluster.name, report)
            out["pictures"] = pictures(report)
        if p["fail_on_mismatch"] and report["mismatches"]:
            raise GpupoolError(
                "%d mismatch(es) between the inventory and the cluster:\n%s" % (len(report["mismatches"]), text), **out
            )
        return out

    def partial_result(self):
        return {"changed": False}  # a report: it reads, never writes


class ActionModule(StepAction):
    step = PoolInfoModule
