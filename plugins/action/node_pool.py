# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.node_pool, run in the controller (its documentation: plugins/modules/node_pool.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import APPLY, NODES, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ConvergeError, Result
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    NODEGROUP_LABEL,
    ORPHANED_LABEL,
    OWNER_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_ledger, node_owners
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans as plan_orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    assign_nodes,
    desired_node_labels,
    desired_node_taints,
    gpupool_label_keys,
    node_matcher,
    node_ready,
)
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

    def __init__(self, host=None):
        super().__init__(host)
        self.p = self.params
        self.node_results = {}  # node name -> Result (latest)
        self.assigned = {}
        self.ready = {}
        self.orphaned = {}  # node name -> {name, pool, reason}
        self.lifted = {}  # node name -> the cordon the ledger lifted (cordon_ledger.Verdict.as_dict)
        self.adopted = set()  # nodes made before owner labels that this run gave the owner label

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
        out = super().partial_result()
        out["cordons_lifted"] = [self.lifted[name] for name in sorted(self.lifted)]
        out["changed"] = out["changed"] or bool(self.lifted)
        out["nodes_adopted"] = sorted(self.adopted)
        return out

    def converge_nodes(self):
        """One pass: LIST nodes, converge labels/taints of every node in scope. Returns the node list.

        Read live, always: which labels are gpupool's to remove is decided from the nodes' managedFields as well
        (labels applied before they were recorded), which the run's view does not keep. This LIST is the run's
        one node LIST: it becomes the view that mig_layout and pool_info plan from (k8s/run_view.py)."""
        listed = self.engine.list(NODE)
        self.assigned = assign_nodes(self.present, listed, self.p["nodegroup_label"], self.p["name_pattern"])
        nodes = self.own_nodes(listed)  # before any write: refuses a pool that selects another owner's node
        self.guard_orphans(nodes)  # before any write
        owner = self.cluster.owner_id
        legacy = set(self.split.adopted)
        errors = []
        member = {}
        for pool in self.present:
            for node in self.assigned[pool.name]:
                member[node["metadata"]["name"]] = pool.name
                labels = desired_node_labels(pool, node, gpupool_label_keys(node), self.p["set_gpu_present"])
                labels[OWNER_LABEL] = owner
                errors += self._one(node, labels, desired_node_taints(pool), pool.name, "updated")
                self._adopting(node, legacy)
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
            labels = plan_orphans.orphan_labels(node, gpupool_label_keys(node), left, owner)
            errors += self._one(node, labels, None, left, "orphaned")
            self._adopting(node, legacy)
            if plan_orphans.needs_orphan_cordon(node):
                errors += self._cordon(node, left, plan_orphans.orphan_cordon_patch(left, self.run_holder), "orphaned")
            if self.node_results[name].changed:
                self.warn(
                    "node %s: %s, so it is kept cordoned with gpupool's taints and labelled %s=true instead "
                    "of being handed back schedulable; see the pool report for how to remove or reuse it"
                    % (name, self.orphaned[name]["reason"], ORPHANED_LABEL)
                )
        errors += self.lift_cordons(nodes, member, scope)
        if self.adopted:
            self.warn(node_owners.adopted_message(sorted(self.adopted), owner))
        self.ready = {pool.name: sum(1 for n in self.assigned[pool.name] if node_ready(n)) for pool in self.present}
        if errors:
            raise ConvergeError("\n".join(errors), list(self.node_results.values()))
        return nodes

    def own_nodes(self, listed):
        """The nodes this inventory may write (plan/nodes/node_owners.py): another owner's are left out, and a present
        pool that selects one is refused here, before any write; a node of a pool this inventory does not declare
        without an owner label is left out with a warning (it may be another inventory's)."""
        owner = self.cluster.owner_id
        clashes = node_owners.owner_clashes(self.cluster.pools, self.assigned, owner, self.selectors())
        if clashes:
            raise GpupoolError(node_owners.clash_message(clashes, owner))
        selected = [n["metadata"]["name"] for group in self.assigned.values() for n in group]
        self.split = node_owners.split_nodes(listed, owner, [pool.name for pool in self.cluster.pools], selected)
        scope = {pool.name for pool in self.scope} if self.p["pools"] else None
        for node in self.split.unknown:
            if scope is None:  # a run limited to some pools does not look at nodes of pools it does not name
                self.warn(node_owners.unknown_message(node, owner))
        return self.split.mine

    def selectors(self):
        """{pool: how its nodes are selected, in words} of the present pools, for the refusals' messages."""
        return {
            pool.name: node_matcher(pool, self.p["nodegroup_label"], self.p["name_pattern"]).describe
            for pool in self.present
        }

    def _adopting(self, node, legacy):
        """Count a node made before owner labels that this run's write gave the owner label."""
        name = node["metadata"]["name"]
        res = self.node_results.get(name)
        if name in legacy and res is not None and res.changed and res.action != "failed":
            self.adopted.add(name)

    def guard_orphans(self, nodes):
        """Refuse, before any write, a run that would orphan too many nodes of a present pool (plan/nodes/orphans.py:
        the orphan guard). release_orphans hands nodes back on purpose and is not guarded."""
        if self.p["release_orphans"]:
            return
        claimed = [n["metadata"]["name"] for pool in self.present for n in self.assigned[pool.name]]
        scope = [pool.name for pool in self.scope] if self.p["pools"] else None
        hits = plan_orphans.guard_hits(self.cluster, nodes, claimed, self.selectors(), scope, self.p["confirm_orphans"])
        if hits:
            raise GpupoolError(plan_orphans.guard_message(hits, self.cluster.orphan_guard.max_share))

    def lift_cordons(self, nodes, member, scope):
        """The cordon ledger (plan/nodes/cordon_ledger.py): lift every gpupool cordon whose reason no longer holds,
        whatever step made it; a cordon node_pool lifted above as an adopted or released orphan is not lifted twice.
        While this run holds the run lease no other run writes, so no other run's cordon is spared for that."""
        handled = {name for name, res in self.node_results.items() if res.action in ("adopted", "released")}
        verdicts = cordon_ledger.plan_ledger(
            [n for n in nodes if n["metadata"]["name"] not in handled],
            self.cluster.pools,
            member,
            orphans=self.orphaned,
            scope=scope,
            busy_runs=frozenset() if self.run_holder else None,
            nodegroup_label=self.p["nodegroup_label"] or NODEGROUP_LABEL,
            owner=self.cluster.owner_id,
        )
        errors = []
        for verdict in verdicts:
            if verdict.action != cordon_ledger.LIFT or verdict.node in self.lifted:
                continue
            try:
                self.engine.merge_patch(NODE, verdict.node, plan_eviction.uncordon_patch())
            except K8sError as err:
                errors += self._failed(verdict.node, None, err)
                continue
            self.lifted[verdict.node] = verdict.as_dict()
            self.warn(cordon_ledger.lifted_message(verdict))
        return errors

    def _one(self, node, labels, taints, pool, action):
        name = node["metadata"]["name"]
        try:
            res = self.engine.converge_node(node, labels, taints, pool=pool)
        except K8sError as err:
            return self._failed(name, pool, err)
        if res.changed and action in ("released", "orphaned"):
            res.action = action
        self._record(res)
        return []

    def _failed(self, name, pool, err):
        """Record a node write the API server refused; returns its sentence, for the step's failure."""
        res = Result("Node", name, None, pool)
        res.action = "failed"
        res.error = self.engine.explain(NODE, res, err, None)
        self._record(res)
        return [res.error]

    def _cordon(self, node, pool, patch, action):
        """Cordon or uncordon one node (merge patch, dry run in check mode); the change joins the node's result."""
        name = node["metadata"]["name"]
        try:
            self.engine.merge_patch(NODE, name, patch)
        except K8sError as err:
            return self._failed(name, pool, err)
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
        result = self.wait_for("Ready pool nodes", probe, self.p["wait_timeout"], self.p["wait_sleep"])
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


class ActionModule(StepAction):
    step = NodePoolModule
