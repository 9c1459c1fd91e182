# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.nodegroup, run in the controller (its documentation: plugins/modules/nodegroup.py).

What to converge and what to report: plan/magnum/targets.py; each nodegroup's plan: plan/magnum/nodegroups.py;
the Magnum and Kubernetes calls in between (reads, drains, writes, waits): runners/nodegroups.py."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import AUTH, DRAIN, LEASE, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect as k8s_connect
from ansible_collections.gpupool.core.plugins.module_utils.module import MagnumPoolModule
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import MagnumClient
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import TAINT_EFFECTS
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.targets import call_targets, step_result
from ansible_collections.gpupool.core.plugins.module_utils.runners.nodegroups import NodegroupConverge
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction

# The drain's Kubernetes connection: the AUTH options not named like OpenStack's (TLS: kubeconfig, K8S_AUTH_*).
DRAIN_CONNECTION = {name: AUTH[name] for name in ("kubeconfig", "context", "host", "api_key")}
# The flat options of standalone use; next to an inventory they are refused (the pool's nodegroup says it there).
STANDALONE = dict(
    name=dict(type="str"),
    state=dict(type="str", choices=["present", "absent"]),
    flavor=dict(type="str", aliases=["flavor_id"]),
    image=dict(type="str", aliases=["image_id"]),
    node_count=dict(type="int"),
    min_node_count=dict(type="int"),
    max_node_count=dict(type="int"),
    docker_volume_size=dict(type="int"),
    labels=dict(type="dict"),
    merge_labels=dict(type="bool"),
    node_labels=dict(type="dict"),
    node_taints=dict(
        type="list",
        elements="dict",
        options=dict(
            key=dict(type="str", required=True, no_log=False),
            value=dict(type="str"),
            effect=dict(type="str", required=True, choices=list(TAINT_EFFECTS)),
        ),
    ),
    role=dict(type="str"),
)


class NodegroupModule(MagnumPoolModule):
    shared = (WAIT, DRAIN, DRAIN_CONNECTION, LEASE)
    standalone_options = tuple(STANDALONE)
    # WAIT with the defaults of a Magnum operation (minutes, not seconds)
    argument_spec = dict(
        STANDALONE,
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=15.0),
    )

    def __init__(self, host=None):
        super().__init__(host)
        self.targets, self.skipped, self.orphaned, self.client = [], {}, None, None
        self.kubernetes = None  # the Kubernetes client that holds the run lease (with run_lease)
        self.converge = None

    def execute(self):
        result = super().execute()
        if result.get("cancelled"):  # as KubernetesModule does: the next run need not wait for the lease to expire
            result["run_lease_released"] = self.hand_back_run_lease(self.kubernetes)
        return result

    def prepare(self):
        super().prepare()
        self.require_at_least(wait_timeout=0, drain_timeout=1, drain_grace_period=0)
        self.targets, self.skipped = call_targets(self.cluster, self.selected, self.params)

    def run(self):
        p, inventory = self.params, self.cluster
        if inventory is not None and inventory.magnum is None:
            return {"changed": False, "msg": "gpupool_cluster has no magnum section: no nodegroups to converge"}
        cloud = None if inventory is None else inventory.magnum.cloud
        if cloud is not None and p["cloud"] is not None and p["cloud"] != cloud:
            self.warn("the cloud option is ignored: the cloud of the inventory (gpupool_cluster.magnum.cloud) is used")
        self.client = MagnumClient(
            self.connect(cloud), log=self.log, progress=self.progress, poll_max=max(0.25, p["wait_sleep"])
        )
        if p.get("run_lease") and inventory is not None:
            # The run lease (in Kubernetes): once lost, no Magnum write and no eviction is sent (k8s/lease_keeper.py)
            self.kubernetes = k8s_connect(p, inventory)
            self.keep_run_lease(self.kubernetes)
            self.client.write_guard = self.kubernetes.write_guard
        converge = self.converge = NodegroupConverge(
            self.client,
            p["cluster"] if inventory is None else inventory.magnum.cluster,
            kubernetes=lambda: self.kubernetes or k8s_connect(p, inventory),
            warn=self.warn,
            progress=self.progress,
            wait=p["wait"],
            wait_timeout=p["wait_timeout"],
            check_mode=self.check_mode,
            standalone=inventory is None,
            run=self.run_holder,
        )
        self.orphaned = converge.run_call(self.targets, inventory, p)
        return {}

    def partial_result(self):
        client, standalone = self.client, self.cluster is None
        return step_result(
            self.targets,
            self.skipped,
            self.orphaned,
            standalone,
            check_mode=self.check_mode,
            diff_mode=self.diff_mode,
            version=client.version if client is not None else None,
            events=client.events if client is not None else (),
            left=self.converge.left if self.converge is not None else None,
        )


class ActionModule(StepAction):
    step = NodegroupModule
