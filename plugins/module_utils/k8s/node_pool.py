# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The requests of gpupool.core.node_pool, in order. Thin I/O over plan/nodes/.

read    ONE LIST of Nodes, live: which labels are gpupool's to remove is decided from the nodes' managedFields as
        well (labels applied before they were recorded), which the run's view does not keep. It becomes the
        run's view of Nodes, that mig_layout and pool_info plan from (k8s/run_view.py)
refuse  a present pool that selects another owner's node, a run that would orphan too many nodes: before any write
write   per node one merge patch of gpupool's labels and taints (decided here, in one thread, from the node as
        listed), then a cordon or uncordon where an orphan needs one; the nodes that need a write are written by
        a bounded pool of workers (k8s/workers.py). Each patch carries the resourceVersion it was decided from: a
        node changed meanwhile (409) is read again and decided anew. Results, warnings and errors are recorded
        in node order, whatever order the answers came in
ledger  every gpupool cordon whose reason no longer holds is lifted (plan/nodes/cordon_ledger.py), the same way
wait    converge again and count Ready nodes until each pool has enough (the one waiter, through `wait_for`)
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import ConvergeError, Result
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.k8s.node_writes import decide_node, send_node
from ansible_collections.gpupool.core.plugins.module_utils.k8s.workers import NODE_WORKERS, run_bounded
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    NODEGROUP_LABEL,
    ORPHANED_LABEL,
    OWNER_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_ledger, cordon_owner, node_owners
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


class NodeWrite:
    """One node's writes, decided from the node as listed: its labels and taints, then maybe a cordon patch."""

    def __init__(self, node: dict, labels: dict, taints: Optional[list], pool: str, action: str) -> None:
        self.node, self.labels, self.taints, self.pool, self.action = node, labels, taints, pool, action
        self.name = node["metadata"]["name"]
        self.cordon: Optional[tuple] = None  # (merge patch, action) where the node is cordoned or uncordoned
        self.res: Optional[Result] = None
        self.patch: Optional[dict] = None
        self.reasons: list = []
        self.error: Optional[K8sError] = None  # the labels/taints write refused
        self.cordon_error: Optional[K8sError] = None
        self.lift_state: Optional[str] = None  # a lifted orphan cordon: plan_eviction.uncordon_decision's state
        self.manager: Optional[str] = None  # "theirs": who cordoned the node after node_pool

    @property
    def sends(self) -> bool:
        return (self.error is None and self.patch is not None) or self.cordon is not None


class NodePoolRunner:
    """Converges the pools' nodes and waits for them: `converge()`, `wait()`; what it did stays in its fields
    (node_results, assigned, ready, orphaned, lifted, adopted), also after a failure."""

    def __init__(
        self,
        engine: Any,
        cluster: Any,
        scope: Sequence[Any],
        params: Dict[str, Any],
        warn: Callable[[str], None],
        wait_for: Callable[..., Any],
        run_holder: Optional[str] = None,
        workers: int = NODE_WORKERS,
    ) -> None:
        self.engine, self.cluster, self.p = engine, cluster, params
        self.scope = list(scope)
        self.present = [pool for pool in self.scope if pool.state == "present"]
        self.warn, self.wait_for, self.run_holder, self.workers = warn, wait_for, run_holder, workers
        self.node_results: Dict[str, Result] = {}  # node name -> Result (latest)
        self.assigned: Dict[str, List[dict]] = {}
        self.ready: Dict[str, int] = {}
        self.orphaned: Dict[str, dict] = {}  # node name -> {name, pool, reason}
        self.lifted: Dict[str, dict] = {}  # node name -> the cordon the ledger lifted (cordon_ledger.Verdict.as_dict)
        self.kept: Dict[str, dict] = {}  # node name -> a cordon someone set after gpupool's: left, its record removed
        self.adopted: set = set()  # nodes made before owner labels that this run gave the owner label
        self.wait_log: List[str] = []

    @property
    def scope_names(self) -> Optional[List[str]]:
        """The pools a run limited to some pools looks at; None: every pool (no `pools` option)."""
        return [pool.name for pool in self.scope] if self.p["pools"] else None

    def matcher(self, pool: Any) -> Any:
        return node_matcher(pool, self.p["nodegroup_label"], self.p["name_pattern"])

    # ---- converge --------------------------------------------------------------------------------------
    def converge(self) -> List[dict]:
        """One pass: LIST nodes, converge labels/taints of every node in scope. Returns the nodes this inventory
        may write; raises ConvergeError (with every node's result) when a write was refused."""
        listed = self.engine.list(NODE)
        self.assigned = assign_nodes(self.present, listed, self.p["nodegroup_label"], self.p["name_pattern"])
        nodes = self.own_nodes(listed)  # before any write: refuses a pool that selects another owner's node
        self.guard_orphans(nodes)  # before any write
        owner, scope = self.cluster.owner_id, self.scope_names
        member, writes = {}, []
        for pool in self.present:
            for node in self.assigned[pool.name]:
                member[node["metadata"]["name"]] = pool.name
                labels = desired_node_labels(pool, node, gpupool_label_keys(node), self.p["set_gpu_present"])
                labels[OWNER_LABEL] = owner
                writes.append(NodeWrite(node, labels, desired_node_taints(pool), pool.name, "updated"))
                if plan_orphans.lifts_orphan_cordon(node):
                    writes[-1].cordon = (plan_orphans.uncordon_patch(), "adopted")
        self.orphaned = {}
        for node, left in plan_orphans.find_orphans(nodes, member, scope):
            if self.p["release_orphans"]:
                writes.append(NodeWrite(node, {}, [], left, "released"))
                if plan_orphans.lifts_orphan_cordon(node):
                    writes[-1].cordon = (plan_orphans.uncordon_patch(), "released")
                continue
            name = node["metadata"]["name"]
            self.orphaned[name] = {"name": name, "pool": left, "reason": plan_orphans.orphan_reason(left, self.cluster)}
            labels = plan_orphans.orphan_labels(node, gpupool_label_keys(node), left, owner)
            writes.append(NodeWrite(node, labels, None, left, "orphaned"))
            if plan_orphans.needs_orphan_cordon(node):
                writes[-1].cordon = (plan_orphans.orphan_cordon_patch(left, self.run_holder), "orphaned")
        errors = self.write(writes, set(self.split.adopted))
        errors += self.lift_cordons(nodes, member, scope)
        if self.adopted:
            self.warn(node_owners.adopted_message(sorted(self.adopted), owner))
        self.ready = {pool.name: sum(1 for n in self.assigned[pool.name] if node_ready(n)) for pool in self.present}
        if errors:
            raise ConvergeError("\n".join(errors), list(self.node_results.values()))
        return nodes

    def write(self, writes: List[NodeWrite], legacy: set) -> List[str]:
        """Decide every node here, send the writes through the bounded workers, record them in node order."""
        for w in writes:
            try:
                w.res, w.patch, w.reasons = decide_node(self.engine, w.node, w.labels, w.taints, pool=w.pool)
            except K8sError as err:
                w.error = err
        run_bounded([(lambda w=w: self._send(w)) for w in writes if w.sends], self.workers)
        errors: List[str] = []
        for w in writes:
            errors += self._failed(w.name, w.pool, w.error) if w.error is not None else self._converged(w)
            if w.action != "released":
                self._adopting(w.name, legacy)
            if w.cordon is not None:
                errors += self._cordoned(w)
            if w.action == "orphaned" and self.node_results[w.name].changed:
                self.warn(
                    "node %s: %s, so it is kept cordoned with gpupool's taints and labelled %s=true instead "
                    "of being handed back schedulable; see the pool report for how to remove or reuse it"
                    % (w.name, self.orphaned[w.name]["reason"], ORPHANED_LABEL)
                )
        return errors

    def _send(self, w: NodeWrite) -> None:
        """In a worker: the node's patch (re-decided on a 409), then its cordon; refusals are kept, not raised."""
        if w.error is None and w.patch is not None:
            try:
                send_node(self.engine, w.res, w.node, w.labels, w.taints, w.patch, w.reasons)
            except K8sError as err:
                w.error = err
        if w.cordon is not None:
            try:
                if w.cordon[0]["spec"]["unschedulable"] is None:
                    w.lift_state = self._lift_orphan_cordon(w)
                else:
                    self.engine.merge_patch(NODE, w.name, w.cordon[0])
            except K8sError as err:
                w.cordon_error = err

    def _lift_orphan_cordon(self, w: NodeWrite, attempts: int = 5) -> Optional[str]:
        """Lift node_pool's orphan cordon of an adopted or released node, decided from the node's managedFields
        (plan/nodes/cordon_owner.py) as last read, with that read's resourceVersion; a node changed meanwhile (its
        label patch above, or a person's kubectl cordon) is read again and decided anew. Returns
        plan_eviction.uncordon_decision's state ("uncordoned", "theirs", "free"), None for a node gone."""
        node: Optional[dict] = w.node if w.patch is None or w.error is not None else self.engine.get(NODE, w.name)
        for _attempt in range(attempts):
            if node is None:
                return None
            patch, state = plan_eviction.uncordon_decision(node, self.engine.field_manager)
            if patch:
                try:
                    self.engine.merge_patch(NODE, w.name, patch)
                except Conflict:
                    node = self.engine.get(NODE, w.name)
                    continue
            if state == "theirs":
                w.manager = cordon_owner.cordoned_by_whom(node, self.engine.field_manager)
            return state
        raise K8sError(
            "Node %s kept changing while gpupool lifted its orphan cordon (%d attempts)" % (w.name, attempts),
            hint="rerun; if it persists, find the controller rewriting the node",
        )

    def _converged(self, w: NodeWrite) -> List[str]:
        if w.res.changed and w.action in ("released", "orphaned"):
            w.res.action = w.action
        self._record(w.res)
        return []

    def _cordoned(self, w: NodeWrite) -> List[str]:
        """A cordon or uncordon sent: the change joins the node's result (before/after say unschedulable)."""
        if w.cordon_error is not None:
            return self._failed(w.name, w.pool, w.cordon_error)
        res = self.node_results.get(w.name)
        if res is None or res.action == "failed":
            return []
        patch, action = w.cordon
        if w.lift_state == "theirs":  # someone cordoned it after node_pool: theirs now, named, left cordoned
            self.kept[w.name] = {"name": w.name, "cordoned_by": "node-pool", "manager": w.manager}
            self.warn(cordon_owner.persons_cordon_message(w.name, w.manager or "someone else"))
            return []
        if patch["spec"]["unschedulable"] is None and w.lift_state != "uncordoned":
            return []  # not cordoned any more, or gone: nothing was lifted
        unschedulable = bool(patch["spec"]["unschedulable"])
        for view, value in ((res.before, not unschedulable), (res.after, unschedulable)):
            if view is not None:
                view.setdefault("spec", {})["unschedulable"] = value
        res.changed, res.action = True, action
        return []

    def _failed(self, name: str, pool: Optional[str], err: K8sError) -> List[str]:
        """Record a node write the API server refused; returns its sentence, for the step's failure."""
        res = Result("Node", name, None, pool)
        res.action = "failed"
        res.error = self.engine.explain(NODE, res, err, None)
        self._record(res)
        return [res.error]

    def _record(self, res: Result) -> None:
        prev = self.node_results.get(res.name)
        if prev is not None and prev.changed and not res.changed:
            return  # keep the change an earlier pass made
        self.node_results[res.name] = res

    def _adopting(self, name: str, legacy: set) -> None:
        """Count a node made before owner labels that this run's write gave the owner label."""
        res = self.node_results.get(name)
        if name in legacy and res is not None and res.changed and res.action != "failed":
            self.adopted.add(name)

    def own_nodes(self, listed: List[dict]) -> List[dict]:
        """The nodes this inventory may write (plan/nodes/node_owners.py): another owner's are left out, and a present
        pool that selects one is refused here, before any write; a node of a pool this inventory does not declare
        without an owner label is left out with a warning (it may be another inventory's)."""
        owner = self.cluster.owner_id
        clashes = node_owners.owner_clashes(self.cluster.pools, self.assigned, owner, self.selectors())
        if clashes:
            raise GpupoolError(node_owners.clash_message(clashes, owner))
        selected = [n["metadata"]["name"] for group in self.assigned.values() for n in group]
        self.split = node_owners.split_nodes(listed, owner, [pool.name for pool in self.cluster.pools], selected)
        if self.scope_names is None:  # a run limited to some pools does not look at nodes of pools it does not name
            for node in self.split.unknown:
                self.warn(node_owners.unknown_message(node, owner))
        return self.split.mine

    def selectors(self) -> Dict[str, str]:
        """{pool: how its nodes are selected, in words} of the present pools, for the refusals' messages."""
        return {pool.name: self.matcher(pool).describe for pool in self.present}

    def guard_orphans(self, nodes: List[dict]) -> None:
        """Refuse, before any write, a run that would orphan too many nodes of a present pool (plan/nodes/orphans.py:
        the orphan guard). release_orphans hands nodes back on purpose and is not guarded."""
        if self.p["release_orphans"]:
            return
        claimed = [n["metadata"]["name"] for pool in self.present for n in self.assigned[pool.name]]
        hits = plan_orphans.guard_hits(
            self.cluster, nodes, claimed, self.selectors(), self.scope_names, self.p["confirm_orphans"]
        )
        if hits:
            raise GpupoolError(plan_orphans.guard_message(hits, self.cluster.orphan_guard.max_share))

    def lift_cordons(self, nodes: List[dict], member: Dict[str, str], scope: Optional[List[str]]) -> List[str]:
        """The cordon ledger (plan/nodes/cordon_ledger.py): lift every gpupool cordon whose reason no longer holds,
        whatever step made it; a cordon node_pool lifted above as an adopted or released orphan is not lifted twice.
        While this run holds the run lease no other run writes, so no other run's cordon is spared for that. A
        cordon someone set after gpupool's stays (the ledger's RELEASE: only gpupool's record goes), with a warning.
        Each patch carries the resourceVersion it was decided from; a node changed meanwhile is decided anew."""
        handled = {name for name, res in self.node_results.items() if res.action in ("adopted", "released")}

        def plan(listed: List[dict]) -> List[Any]:
            return cordon_ledger.plan_ledger(
                [n for n in listed if n["metadata"]["name"] not in handled],
                self.cluster.pools,
                member,
                orphans=self.orphaned,
                scope=scope,
                busy_runs=frozenset() if self.run_holder else None,
                nodegroup_label=self.p["nodegroup_label"] or NODEGROUP_LABEL,
                owner=self.cluster.owner_id,
                field_manager=self.engine.field_manager,
            )

        by_name = {n["metadata"]["name"]: n for n in nodes}
        sends = [v for v in plan(nodes) if v.action != cordon_ledger.KEEP and v.node not in self.lifted]

        def send(verdict: Any) -> Any:
            """The verdict as sent (re-decided on a 409), None when nothing was left to send, or a K8sError."""
            node = by_name[verdict.node]
            for _attempt in range(5):
                try:
                    self.engine.merge_patch(NODE, verdict.node, cordon_ledger.ledger_patch(verdict, node))
                    return verdict
                except NotFound:
                    return None
                except Conflict:
                    node = self.engine.get(NODE, verdict.node)
                    again = plan([node]) if node is not None else []
                    if not again or again[0].action == cordon_ledger.KEEP:
                        return None
                    verdict = again[0]
                except K8sError as err:
                    return err
            return K8sError(
                "Node %s kept changing while gpupool lifted its cordon (5 attempts)" % verdict.node,
                hint="rerun; if it persists, find the controller rewriting the node",
            )

        errors: List[str] = []
        for first, done in zip(sends, run_bounded([(lambda v=v: send(v)) for v in sends], self.workers)):
            if isinstance(done, K8sError):
                errors += self._failed(first.node, None, done)
            elif done is not None and done.action == cordon_ledger.LIFT:
                self.lifted[done.node] = done.as_dict()
                self.warn(cordon_ledger.lifted_message(done))
            elif done is not None:
                self.kept[done.node] = done.as_dict()
                self.warn(cordon_ledger.released_message(done))
        return errors

    # ---- wait ------------------------------------------------------------------------------------------
    def wanted_ready(self, pool: Any) -> int:
        if self.p["min_ready"] is not None:
            return self.p["min_ready"]
        return pool.nodegroup.node_count if pool.nodegroup is not None else 1

    def short(self) -> List[Any]:
        return [pool for pool in self.present if self.ready.get(pool.name, 0) < self.wanted_ready(pool)]

    def wait(self) -> None:
        """Re-converge and count Ready nodes until every pool has enough; raises GpupoolError (with the wait's log
        and the pools) when the wait timed out."""

        def probe():
            if probe.rounds:  # converge() has just run: the first round only counts
                self.converge()
            probe.rounds += 1
            return not self.short(), ", ".join(
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
        self.wait_log = self.wait_for("Ready pool nodes", probe, self.p["wait_timeout"], self.p["wait_sleep"]).log
        short = self.short()
        if short:
            raise GpupoolError(self.timeout_message(short), wait_log=self.wait_log, pools=self.pools_info())

    def timeout_message(self, short: List[Any]) -> str:
        pools = "; ".join(
            "pool %s has %d of %d (nodes found: %s)"
            % (
                pool.name,
                self.ready.get(pool.name, 0),
                self.wanted_ready(pool),
                ", ".join(n["metadata"]["name"] for n in self.assigned.get(pool.name, [])) or "none",
            )
            for pool in short
        )
        return (
            "timed out after %ds waiting for Ready nodes: %s. Check the nodegroups (openstack coe nodegroup list), "
            "that the nodes joined (kubectl get nodes -L %s) and their kubelets"
            % (self.p["wait_timeout"], pools, self.p["nodegroup_label"])
        )

    # ---- what the step reports -------------------------------------------------------------------------
    def pools_info(self) -> Dict[str, dict]:
        return {
            pool.name: {
                "nodes": [n["metadata"]["name"] for n in self.assigned.get(pool.name, [])],
                "ready": self.ready.get(pool.name, 0),
                "selector": self.matcher(pool).describe,
            }
            for pool in self.present
        }

    def info(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "pools": self.pools_info(),
            "orphaned": [self.orphaned[n] for n in sorted(self.orphaned)],
        }
        if self.wait_log:
            out["wait_log"] = self.wait_log
        return out

    def results(self) -> List[Result]:
        return sorted(self.node_results.values(), key=lambda r: r.name)
