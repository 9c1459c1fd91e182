#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_pool
short_description: Label and taint the Kubernetes nodes of GPU pools and wait for them to be Ready
version_added: "0.1.0"
description:
  - Finds each pool's nodes, applies the pool's labels and taints, and optionally waits until enough of them are Ready.
  - "Nodes of a pool: those matching the pool's C(node_selector) (every label); else those whose Magnum nodegroup
    label (O(nodegroup_label)) equals the pool's nodegroup name; plus, with O(name_pattern), those whose name matches
    it. A node matched by two pools is an error."
  - "Labels: the pool's C(node_labels), C(gpupool.io/pool=<pool>), and C(nvidia.com/gpu.present=true) when no Node
    Feature Discovery or GPU Feature Discovery label that the NVIDIA DRA kubelet plugin's node affinity needs is
    present (O(set_gpu_present)). Labels set by others stay; a label another field manager set to a different value
    is a conflict unless O(force_conflicts). The label keys gpupool set are recorded in the C(gpupool.io/labels)
    annotation, so a label dropped from the inventory is removed and nobody else's is."
  - "Taints: C(node-role.kubernetes.io/gpu=true:NoSchedule) (unless the pool sets C(gpu_taint: false)) and the
    pool's C(taints). C(spec.taints) is an atomic list in server-side apply, so gpupool reads the taints, keeps
    everyone else's, adds or updates its own and removes those it set before but no longer wants (recorded in the
    C(gpupool.io/taints) annotation)."
  - "One write per node that differs: labels, taints and both annotations go in ONE JSON merge patch (field manager
    C(gpupool)) with the node's C(resourceVersion) as precondition, recomputed from a fresh read when the node
    changed meanwhile; a node already right gets no request."
  - "Nodes of a pool that left: a node that carries C(gpupool.io/pool=<pool>) but that no present pool claims any
    more (the pool was removed from the inventory, set to C(absent), or its selector no longer matches) is an
    orphan. It is never handed back schedulable: gpupool's labels and taints stay, it gets the label
    C(gpupool.io/orphaned=true) and is cordoned (annotation C(gpupool.io/cordoned-by=node-pool)), and it is listed
    in RV(orphaned) on every run. A pool that claims it again adopts it: the orphan label goes and node_pool's own
    cordon is lifted. O(release_orphans) hands orphans back instead (labels, taints and node_pool's cordon
    removed). Nodes of a pool gone from the inventory are only looked at when every pool is in scope."
  - Nodes are never created or deleted (a merge patch never creates; a node deleted meanwhile is reported as vanished).
author:
  - gpupool.core developers (@gpupool)
options:
  release_orphans:
    description:
      - Hand the orphaned nodes in scope back to general use - remove gpupool's labels and taints and lift
        node_pool's cordon - instead of keeping them cordoned and tainted.
      - For a machine that should stay in the cluster as an ordinary node after its pool was removed.
    type: bool
    default: false
  set_gpu_present:
    description:
      - Label C(nvidia.com/gpu.present=true) on nodes that have none of the NFD/GFD labels the DRA kubelet plugin's
        node affinity needs (without one the plugin never runs there).
    type: bool
    default: true
  wait:
    description:
      - Wait until each pool in scope has at least O(min_ready) Ready nodes; nodes that appear meanwhile are labelled
        and tainted as they come. Skipped in check mode.
    type: bool
    default: false
  min_ready:
    description:
      - Ready nodes to wait for, per pool. Default is the pool's C(nodegroup.node_count), else 1.
    type: int
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two checks while waiting.
    type: float
    default: 10.0
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.wait
  - gpupool.core.k8s_auth.nodes
  - gpupool.core.k8s_auth.apply
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Writes are sent with C(dryRun=All).
  diff_mode:
    support: full
  platform:
    platforms: all
"""

EXAMPLES = r"""
- name: Label and taint every pool's nodes, wait for the nodegroups' node counts
  gpupool.core.node_pool:
    cluster: "{{ gpupool_cluster }}"
    wait: true
    wait_timeout: 1200

- name: One pool, nodes found by name
  gpupool.core.node_pool:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-t4]
    name_pattern: "-{nodegroup}-\\d+$"
"""

RETURN = r"""
objects:
  description: One entry per node gpupool touched or checked.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(Node).
      type: str
    name:
      description: Node name.
      type: str
    pool:
      description: Pool of the node (for orphaned and released nodes, the pool it left).
      type: str
    action:
      description:
        - C(updated), C(unchanged), C(orphaned) (kept tainted, labelled C(gpupool.io/orphaned) and cordoned),
          C(adopted) (an orphan claimed by a pool again), C(released) (gpupool's labels and taints removed, with
          O(release_orphans)), C(vanished) or C(failed).
      type: str
    changed:
      description: Whether the node changed (or would, in check mode).
      type: bool
  sample: [{kind: Node, name: cern-gpu-t4-0, pool: gpu-t4, action: updated, changed: true}]
pools:
  description: Per pool in scope, its nodes and how many are Ready.
  returned: always
  type: dict
  sample: {gpu-t4: {nodes: [cern-gpu-t4-0], ready: 1, selector: "magnum.openstack.org/nodegroup=gpu-t4"}}
orphaned:
  description: The orphaned nodes in scope after the run (kept cordoned and tainted), with the pool each left and why.
  returned: always
  type: list
  elements: dict
  sample: [{name: cern-gpu-old-0, pool: gpu-old, reason: pool gpu-old is no longer in the inventory}]
wait_log:
  description: Progress lines while waiting.
  returned: when O(wait=true)
  type: list
  elements: str
diff:
  description: Labels, taints and the taints annotation before and after, per changed node (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, NODES, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ConvergeError, Result
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import ORPHANED_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans as plan_orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    assign_nodes,
    desired_node_labels,
    desired_node_taints,
    gpupool_label_keys,
    node_matcher,
    node_ready,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter


class NodePoolModule(KubernetesModule):
    shared = (APPLY, NODES, WAIT)
    argument_spec = dict(
        set_gpu_present=dict(type="bool", default=True),
        release_orphans=dict(type="bool", default=False),
        min_ready=dict(type="int"),
        wait_sleep=dict(type="float", default=10.0),
    )

    def __init__(self):
        super().__init__()
        self.p = self.params
        self.node_results = {}  # node name -> Result (latest)
        self.assigned = {}
        self.ready = {}
        self.orphaned = {}  # node name -> {name, pool, reason}

    def prepare(self):
        super().prepare()
        self.scope = self.selected
        self.present = [pool for pool in self.scope if pool.state == "present"]
        for pool in self.present:  # a pool whose nodes cannot be found fails before any request
            node_matcher(pool, self.p["nodegroup_label"], self.p["name_pattern"])

    def run(self):
        self.converge_nodes()
        info = {}
        if self.p["wait"] and self.may_wait:
            short = self.wait(info)
            if short:
                raise GpupoolError(
                    "timed out after %ds waiting for Ready nodes: %s. Check the nodegroups (openstack coe nodegroup "
                    "list), that the nodes joined (kubectl get nodes -L %s) and their kubelets"
                    % (
                        self.p["wait_timeout"],
                        "; ".join(
                            "pool %s has %d of %d (nodes found: %s)"
                            % (
                                pool.name,
                                self.ready.get(pool.name, 0),
                                self.wanted_ready(pool),
                                ", ".join(n["metadata"]["name"] for n in self.assigned.get(pool.name, [])) or "none",
                            )
                            for pool in short
                        ),
                        self.p["nodegroup_label"],
                    ),
                    wait_log=info["wait_log"],
                    pools=self.pools_info(),
                )
        info["pools"] = self.pools_info()
        info["orphaned"] = [self.orphaned[name] for name in sorted(self.orphaned)]
        return info

    def partial_result(self):
        self.results = sorted(self.node_results.values(), key=lambda r: r.name)
        return super().partial_result()

    def converge_nodes(self):
        """One pass: LIST nodes, converge labels/taints of every node in scope. Returns the node list."""
        nodes = self.engine.list(NODE)
        self.assigned = assign_nodes(self.present, nodes, self.p["nodegroup_label"], self.p["name_pattern"])
        errors = []
        member = {}
        for pool in self.present:
            for node in self.assigned[pool.name]:
                member[node["metadata"]["name"]] = pool.name
                labels = desired_node_labels(pool, node, gpupool_label_keys(node), self.p["set_gpu_present"])
                errors += self._one(node, labels, desired_node_taints(pool), pool.name, "updated")
                if plan_orphans.lifts_orphan_cordon(node):
                    errors += self._cordon(node, pool.name, plan_orphans.uncordon_patch(), "adopted")
        scope = [pool.name for pool in self.scope] if self.p["pools"] else None
        self.orphaned = {}
        for node, left in plan_orphans.find_orphans(nodes, member, scope):
            if self.p["release_orphans"]:
                errors += self._one(node, {}, [], left, "released")
                if plan_orphans.lifts_orphan_cordon(node):
                    errors += self._cordon(node, left, plan_orphans.uncordon_patch(), "released")
                continue
            name = node["metadata"]["name"]
            self.orphaned[name] = {"name": name, "pool": left, "reason": plan_orphans.orphan_reason(left, self.cluster)}
            labels = plan_orphans.orphan_labels(node, gpupool_label_keys(node), left)
            errors += self._one(node, labels, None, left, "orphaned")
            if plan_orphans.needs_orphan_cordon(node):
                errors += self._cordon(node, left, plan_orphans.orphan_cordon_patch(), "orphaned")
            if self.node_results[name].changed:
                self.warn(
                    "node %s: %s, so it is kept cordoned with gpupool's taints and labelled %s=true instead "
                    "of being handed back schedulable; see the pool report for how to remove or reuse it"
                    % (name, self.orphaned[name]["reason"], ORPHANED_LABEL)
                )
        self.ready = {pool.name: sum(1 for n in self.assigned[pool.name] if node_ready(n)) for pool in self.present}
        if errors:
            raise ConvergeError("\n".join(errors), list(self.node_results.values()))
        return nodes

    def _one(self, node, labels, taints, pool, action):
        name = node["metadata"]["name"]
        try:
            res = self.engine.converge_node(node, labels, taints, pool=pool)
        except K8sError as err:
            res = Result("Node", name, None, pool)
            res.action = "failed"
            res.error = self.engine.explain(NODE, res, err, None)
            self._record(res)
            return [res.error]
        if res.changed and action in ("released", "orphaned"):
            res.action = action
        self._record(res)
        return []

    def _cordon(self, node, pool, patch, action):
        """Cordon or uncordon one node (merge patch, dry run in check mode); the change joins the node's result."""
        name = node["metadata"]["name"]
        try:
            self.engine.merge_patch(NODE, name, patch)
        except K8sError as err:
            res = Result("Node", name, None, pool)
            res.action = "failed"
            res.error = self.engine.explain(NODE, res, err, None)
            self._record(res)
            return [res.error]
        res = self.node_results.get(name)
        if res is None or res.action == "failed":
            return []
        unschedulable = bool(patch["spec"]["unschedulable"])
        for view, value in ((res.before, not unschedulable), (res.after, unschedulable)):
            if view is not None:
                view.setdefault("spec", {})["unschedulable"] = value
        res.changed, res.action = True, action
        return []

    def _record(self, res):
        prev = self.node_results.get(res.name)
        if prev is not None and prev.changed and not res.changed:
            return  # keep the change an earlier pass made
        self.node_results[res.name] = res

    def wanted_ready(self, pool):
        if self.p["min_ready"] is not None:
            return self.p["min_ready"]
        return pool.nodegroup.node_count if pool.nodegroup is not None else 1

    def wait(self, info):
        """Re-converge and count Ready nodes until every pool has enough; returns the pools still short."""

        def probe():
            if probe.rounds:  # run() has just converged: the first round only counts
                self.converge_nodes()
            probe.rounds += 1
            short = [pool for pool in self.present if self.ready.get(pool.name, 0) < self.wanted_ready(pool)]
            probe.short = short
            return not short, ", ".join(
                "%s %d/%d Ready (%d node(s) found)"
                % (
                    pool.name,
                    self.ready.get(pool.name, 0),
                    self.wanted_ready(pool),
                    len(self.assigned.get(pool.name, [])),
                )
                for pool in self.present
            )

        probe.rounds = 0
        result = Waiter(self.p["wait_timeout"], self.p["wait_sleep"]).until(probe)
        info["wait_log"] = result.log
        return probe.short

    def pools_info(self):
        out = {}
        for pool in self.present:
            out[pool.name] = {
                "nodes": [n["metadata"]["name"] for n in self.assigned.get(pool.name, [])],
                "ready": self.ready.get(pool.name, 0),
                "selector": node_matcher(pool, self.p["nodegroup_label"], self.p["name_pattern"]).describe,
            }
        return out


def main():
    NodePoolModule()()


if __name__ == "__main__":
    main()
