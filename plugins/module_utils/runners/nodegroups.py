# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The converge of one Magnum cluster's nodegroups: the I/O sequence under gpupool.core.nodegroup.

It talks to Magnum (openstack/magnum.py) and to Kubernetes (k8s/drain.py drains the nodes a shrink or a
delete removes; the Nodes tell which orphaned nodegroups gpupool made), so it sits below both I/O folders,
which never import each other (docs/architecture.md). Every decision comes from plan/magnum/.

Magnum reads of one call, in order: one list of the cluster's nodegroups (its response headers pick the
microversion: no version request), the cluster only when a nodegroup is to be created (Magnum fills its
flavor, image and labels from it), then one full view of each listed nodegroup in scope - the list view is
abbreviated (no min/max_node_count, labels, node_labels, node_taints: reference magnum-nodegroups.md §1),
so comparing them needs it - and of each orphaned one when prune_nodegroups is on (its labels say whose it is:
only this owner's are pruned, plan/magnum/ownership.py). Writes and waits follow,
nodegroup by nodegroup; a nodegroup that fails does not stop the others.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_errors import (
    MagnumError,
    OperationFailed,
    WaitTimeout,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum import ownership
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.actions import Action
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import orphaned_nodegroups
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.drain import (
    action_removes_nodes,
    node_drain_plan,
    removal_preview,
    removes_nodes,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import plan_nodegroup
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.targets import (
    Target,
    failure_message,
    must_settle,
    needs_cluster,
    orphan_warning,
    pruned_target,
    target_drain,
    undrained_removal_warning,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_reasons
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.orphans import nodegroup_pool

# The value of gpupool.io/cordoned-by on nodes this step cordons (mig_layout uses its own), so neither step
# uncordons the other's nodes.
CORDON_BY = "nodegroup"


def error_of(exc: Exception) -> Tuple[str, Dict[str, Any]]:
    """A target's error: the sentence, and the result keys that say what Magnum answered."""
    extra: Dict[str, Any] = {}
    if isinstance(exc, MagnumError):
        extra["error"] = exc.to_dict()
    if isinstance(exc, (OperationFailed, WaitTimeout)):
        extra.update(status=exc.status, status_reason=exc.detail)
    return (exc.describe() if isinstance(exc, GpupoolError) else str(exc)), extra


class NodegroupsFailed(GpupoolError):
    """One or more nodegroups could not be converged; the others' results are in the task result."""


class NodegroupConverge:
    """The nodegroups of the Magnum cluster `cluster` (its name or uuid, as the inventory or the cluster option
    gives it; messages name it so) through `client` (openstack/magnum.MagnumClient). `kubernetes()` connects to
    the cluster's Kubernetes API, called the first time a drain or a prune needs it."""

    def __init__(
        self,
        client,
        cluster: str,
        kubernetes: Callable[[], Any],
        warn: Callable[[str], None],
        progress,
        wait: bool,
        wait_timeout: int,
        check_mode: bool,
        standalone: bool,
        run: Optional[str] = None,
    ) -> None:
        self.client, self.cluster = client, cluster
        self.warn, self.progress = warn, progress
        self.wait, self.wait_timeout = wait, wait_timeout
        self.check_mode, self.standalone = check_mode, standalone
        self._connect_kubernetes = kubernetes
        self._kubernetes = None
        self._drains: Dict[Target, Drain] = {}
        self.run_holder = run  # this run's identity, recorded with every cordon (the cordon ledger)
        self.left: Dict[str, str] = {}  # nodegroups no pool declares that are not this owner's: {name: why}

    def run(self, targets: List[Target], inventory=None, prune_settings=None) -> Optional[List[str]]:
        """Plan every target, then (not in check mode) apply each one that planned. `inventory`: the cluster
        inventory when the call covers all its pools; the nodegroups no pool declares are then returned
        (orphaned; None when not looked for) and, with magnum.prune_nodegroups, those gpupool provably made join
        `targets` as deletes, drained as `prune_settings` say."""
        listing = self.client.list_nodegroups(self.cluster)
        listed = {}
        for entry in listing:
            listed[entry.get("uuid")] = listed[entry["name"]] = entry
        orphaned = None
        if inventory is not None:
            orphaned = orphaned_nodegroups(listing, inventory)
            if orphaned and inventory.magnum.prune_nodegroups:
                orphaned = self.prune(orphaned, targets, prune_settings, inventory.owner_id)  # warns what it keeps
            else:
                for name in orphaned:
                    self.warn(orphan_warning(name, self.cluster))
        cluster = dict(self.client.get_cluster(self.cluster)) if needs_cluster(targets, listed) else {}
        cluster["name"] = self.cluster
        for target in targets:
            target.of_cluster(self.cluster)
            self.plan(target, cluster, listed.get(target.name))
        if not self.check_mode:
            for target in targets:
                if target.error is None:
                    self.apply(target)
        return orphaned

    def run_call(self, targets: List[Target], inventory, params: Mapping[str, Any]) -> Optional[List[str]]:
        """One gpupool.core.nodegroup call: `run`, looking for orphaned nodegroups only when the call covers every
        pool of the inventory (`params["pools"]` empty), then NodegroupsFailed when any target failed."""
        if inventory is None or params["pools"]:
            orphaned = self.run(targets)
        else:
            orphaned = self.run(targets, inventory, prune_settings=target_drain(inventory, None, params))
        if any(t.error is not None for t in targets):
            raise NodegroupsFailed(failure_message(targets, self.standalone))
        return orphaned

    # ---- plan (reads only) ------------------------------------------------------------------------------------
    def plan(self, target: Target, cluster: Dict[str, Any], listed: Optional[Dict[str, Any]]) -> None:
        try:
            observed = self.client.get_nodegroup(self.cluster, target.name) if listed is not None else None
            if must_settle(observed, self.wait, not self.check_mode):
                observed = self.client.wait_settled(self.cluster, observed["uuid"], self.wait_timeout, target.what)
            target.observed = observed
            plan = plan_nodegroup(target.desired, observed, cluster, self.client.version, target.state)
        except (Problems, MagnumError) as exc:
            target.fail(*error_of(exc))
            return
        target.planned(plan, self.check_mode)
        for note in plan.notes:
            self.warn(note)
        if target.settings.enabled:
            self.plan_drain(target)
        elif removes_nodes(plan) and not self.standalone:
            self.warn(undrained_removal_warning(target.what))

    def plan_drain(self, target: Target) -> None:
        """Which nodes a shrink (or a delete) removes and which pods leave them first."""
        if not removes_nodes(target.plan):
            return
        try:
            drain = self.drainer(target)
            nodes = drain.nodes("%s=%s" % (NODEGROUP_LABEL, target.name))
            pods = {n["metadata"]["name"]: drain.pod_plan(n["metadata"]["name"]) for n in nodes}
            target.drain_plan = node_drain_plan(target.plan, nodes, pods, target.what)
        except (Problems, DrainError) as exc:
            target.fail(*error_of(exc))
            return
        except K8sError as exc:
            target.fail(
                "Cannot read the nodes of %s from Kubernetes: %s. Nothing was changed; fix the connection "
                "(kubeconfig, context) or turn the pool's drain policy off (drain.enabled: false)."
                % (target.what, exc.describe())
            )
            return
        target.result["drain"] = target.drain_plan
        target.preview = removal_preview(target.what, pods, target.drain_plan)

    def prune(self, orphaned: Sequence[str], targets: List[Target], settings, owner: str) -> List[str]:
        """With magnum.prune_nodegroups: a delete (after a drain) of each orphaned nodegroup of this owner (its
        Magnum label gpupool.io/owner, plan/magnum/ownership.py); another owner's is left and said so (`left`),
        one of no owner too, with a warning, and stays orphaned (returned)."""
        kept, ours = [], []
        for name in orphaned:
            found = self.client.get_nodegroup(self.cluster, name) or {"name": name}
            judged = ownership.verdict(found, owner)
            if judged == ownership.OURS:
                ours.append(found)
                continue
            self.left[name] = ownership.leave_text(name, self.cluster, ownership.owner_of(found))
            if judged == ownership.UNOWNED:
                kept.append(name)
                self.warn(ownership.unowned_orphan_warning(name, self.cluster))
        if not ours:
            return kept
        try:
            nodes = self.kubernetes().list("", "v1", "nodes")
        except K8sError as exc:
            raise GpupoolError(
                "gpupool_cluster.magnum.prune_nodegroups is on, but the nodes of the orphaned nodegroups to drain "
                "cannot be read: %s. Nothing was changed; fix the Kubernetes connection (gpupool_cluster.kubeconfig, "
                "context) or turn prune_nodegroups off" % exc.describe()
            ) from None
        for found in ours:
            # the pool it was made for, for the result (its node_labels or its nodes; else its own name)
            pool = nodegroup_pool(found, nodes) or found["name"]
            targets.append(pruned_target(found["name"], pool, settings, owner))
        return kept

    def kubernetes(self) -> Any:
        if self._kubernetes is None:
            self._kubernetes = self._connect_kubernetes()
        return self._kubernetes

    def drainer(self, target: Target) -> Drain:
        """The one drain, as the target's drain policy says; one per target, so the nodes its plan listed need no
        second read when they are cordoned."""
        if target not in self._drains:
            self._drains[target] = Drain.for_settings(
                self.kubernetes(),
                CORDON_BY,
                target.settings,
                warn=self.warn,
                progress=self.progress,
                run=self.run_holder,
            )
        return self._drains[target]

    # ---- apply ------------------------------------------------------------------------------------------------
    def apply(self, target: Target) -> None:
        plan, nodegroup = target.plan, target.observed
        try:
            for index, action in enumerate(plan.actions):
                last = index == len(plan.actions) - 1
                nodegroup = self.send(target, action, wait=self.wait or not last)
                target.result["actions"][index] = action.to_dict()  # nodes_to_remove added by a drain
            if plan.wait_gone and self.wait:
                self.client.wait(
                    self.cluster,
                    target.observed["uuid"],
                    {"gone": True},
                    self.wait_timeout,
                    "delete of %s" % target.what,
                    initial_status=target.observed.get("status"),
                )
        except (Problems, MagnumError, DrainError) as exc:
            target.fail(*error_of(exc))
        except K8sError as exc:
            target.fail(
                "Draining the nodes of %s failed: %s. Nothing was resized or deleted; fix the cause and run again."
                % (target.what, exc.describe())
            )
        if target.error is None:
            target.result["nodegroup"] = (nodegroup or {}) if target.state == "present" else {}

    def drain_before(self, target: Target, action: Action) -> Optional[List[str]]:
        """Drain the nodes the action removes; returns the servers to name in a resize."""
        drain_plan = target.drain_plan
        if not drain_plan or not action_removes_nodes(action):
            return None
        drainer = self.drainer(target)
        # The ledger's reason (plan/nodes/cordon_ledger.py): a later run lifts the cordon once the inventory no
        # longer shrinks (or deletes) this nodegroup.
        if action.kind == "resize":
            drainer.reason = cordon_reasons.shrink(target.name, action.payload["node_count"])
        else:
            drainer.reason = cordon_reasons.delete(target.name)
        done = drainer.drain(drain_plan["victims"])
        target.wrote = target.wrote or bool(done["cordoned"] or done["evicted"])
        drain_plan["evicted"] = done["evicted"]
        return drain_plan["nodes_to_remove"]

    def send(self, target: Target, action: Action, wait: bool) -> Optional[Dict[str, Any]]:
        """Send one action; wait for its expectation when ``wait``. Returns the nodegroup view."""
        client, observed, cluster = self.client, target.observed, self.cluster
        initial = (observed or {}).get("status")
        nodegroup = None
        if action.kind == "create":
            nodegroup = client.create_nodegroup(cluster, action.payload)
            ident = nodegroup.get("uuid") or target.name
        elif action.kind == "delete":
            self.drain_before(target, action)
            client.delete_nodegroup(cluster, observed["uuid"])
            ident = observed["uuid"]
        elif action.kind == "patch":
            nodegroup = client.patch_nodegroup(cluster, observed["uuid"], action.payload)
            ident = observed["uuid"]
        elif action.kind == "resize":
            body = dict(action.payload)
            remove = self.drain_before(target, action)
            if remove:
                body["nodes_to_remove"] = remove
                action.payload = body
            client.resize(cluster, body["nodegroup"], body["node_count"], body.get("nodes_to_remove"))
            ident = observed["uuid"]
        else:  # pragma: no cover - the planner makes only these four
            raise MagnumError("unknown action %s" % action.kind)
        target.wrote = True
        if not wait:
            if action.kind == "delete":
                return None
            return nodegroup if nodegroup is not None else client.get_nodegroup(cluster, ident)
        return client.wait(cluster, ident, action.expect, self.wait_timeout, action.summary, initial_status=initial)
