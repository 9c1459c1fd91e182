# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.mig_layout, run in the controller (its documentation: plugins/modules/mig_layout.py).

The plan and the result are plan/mig/rollout_plan.py's, the decisions inside a wave plan/mig/waves.py's, the
requests in their order k8s/mig_rollout.py's."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import DRAIN, NODES
from ansible_collections.gpupool.core.plugins.module_utils.k8s.mig_rollout import MigRollout
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_plan import RolloutOptions, RolloutPlan
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_matcher
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class MigLayoutModule(KubernetesModule):
    shared = (NODES, DRAIN)
    argument_spec = dict(
        cordon=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=5.0),
        relabel_delay=dict(type="float", default=5.0),
        retry_failed=dict(type="bool", default=False),
        prune=dict(type="bool", default=True),
    )
    required_libraries = ("pydantic", "yaml")
    rollout = None

    def prepare(self):
        super().prepare()
        p = self.params
        for key, low in (("drain_timeout", 1), ("wait_timeout", 1), ("drain_grace_period", 0)):
            if p[key] is not None and p[key] < low:
                raise model_errors.Problems(
                    [(key, "must be at least %d, got %d" % (low, p[key]))], subject="in the module options"
                )
        if p["wait_sleep"] <= 0 or p["relabel_delay"] < 0:
            raise model_errors.Problems("wait_sleep must be greater than 0 and relabel_delay at least 0")
        static = [pl for pl in self.selected if pl.state == "present" and pl.mig.mode == "static"]
        plan_mig_rollout.desired_configs(static)  # plans every layout before any request
        for pl in static:
            node_matcher(pl, p["nodegroup_label"], p["name_pattern"])

    def run(self):
        """Plan from the run's view, write the ConfigMap, roll the waves; the plan is the result."""
        options = RolloutOptions.from_params(self.params)
        plan = RolloutPlan(self.cluster, self.selected, options, self.check_mode)
        runner = MigRollout(self.engine, plan, warn=self.warn, progress=self.progress, run=self.run_holder)
        self.rollout = plan  # once connected and holding the run lease (a refusal there reports no plan)
        runner.plan_rollout()
        runner.run()
        return self.rollout.result(self.diff_mode)

    def partial_result(self):
        if self.rollout is None:
            return {"changed": False}
        return self.rollout.result(self.diff_mode)


class ActionModule(StepAction):
    step = MigLayoutModule
