# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.node_pool, run in the controller (its documentation: plugins/modules/node_pool.py).

The decisions are plan/nodes/'s, the requests in their order k8s/node_pool.py's (the node-pool runner)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, NODES, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.node_pool import NodePoolRunner
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_matcher
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


class NodePoolModule(KubernetesModule):
    shared = (APPLY, NODES, WAIT)
    argument_spec = dict(
        set_gpu_present=dict(type="bool", default=True),
        release_orphans=dict(type="bool", default=False),
        confirm_orphans=dict(type="bool", default=False),
        min_ready=dict(type="int"),
        wait_sleep=dict(type="float", default=10.0),
    )
    runner = None

    def prepare(self):
        super().prepare()
        for pool in self.selected:  # a pool whose nodes cannot be found fails before any request
            if pool.state == "present":
                node_matcher(pool, self.params["nodegroup_label"], self.params["name_pattern"])

    def run(self):
        """Converge the pools' nodes, then (wait: true) wait for enough Ready nodes; the runner's fields are the result."""
        self.runner = NodePoolRunner(
            self.engine, self.cluster, self.selected, self.params, self.warn, self.wait_for, self.run_holder
        )
        self.runner.converge()
        if self.params["wait"] and self.may_wait:
            self.runner.wait()
        return self.runner.info()

    def partial_result(self):
        runner = self.runner
        self.results = runner.results() if runner is not None else []
        out = super().partial_result()
        out["cordons_lifted"] = [runner.lifted[name] for name in sorted(runner.lifted)] if runner else []
        out["cordons_left"] = [runner.kept[name] for name in sorted(runner.kept)] if runner else []
        out["changed"] = out["changed"] or bool(runner and (runner.lifted or runner.kept))
        out["nodes_adopted"] = sorted(runner.adopted) if runner else []
        return out


class ActionModule(StepAction):
    step = NodePoolModule
