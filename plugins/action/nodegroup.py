# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.nodegroup, run in the controller (its documentation: plugins/modules/nodegroup.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import AUTH, DRAIN, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect as k8s_connect
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.module import MagnumPoolModule
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import (
    MagnumClient,
    MagnumError,
    OperationFailed,
    WaitTimeout,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import (
    IN_PROGRESS_STATES,
    desired_from_pool,
    desired_state,
    drain_candidate,
    format_version,
    orphaned_nodegroups,
    plan_drain,
    plan_nodegroup,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.drain_preview import removal_diff
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import drain_settings
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.orphans import nodegroup_pool
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction

# The value of gpupool.io/cordoned-by on nodes this module cordons (mig_layout uses its own), so neither module
# uncordons the other's nodes.
CORDON_BY = "nodegroup"
# The Kubernetes connection of the drain: the AUTH options whose names do not clash with the OpenStack ones
# (TLS settings for Kubernetes come from the kubeconfig or the K8S_AUTH_* variables).
DRAIN_CONNECTION = {name: AUTH[name] for name in ("kubeconfig", "context", "host", "api_key")}
STANDALONE = (
    "name",
    "state",
    "flavor",
    "image",
    "node_count",
    "min_node_count",
    "max_node_count",
    "docker_volume_size",
    "labels",
    "merge_labels",
    "node_labels",
    "node_taints",
    "role",
)


class NodegroupsFailed(GpupoolError):
    """One or more nodegroups could not be converged; the others' results are in the task result."""


class Target:
    """One nodegroup to converge: its key (the pool's name, or the nodegroup's standalone), the desired state
    (plan/magnum/nodegroups.py's dict) and what happened to it."""

    def __init__(self, key, desired, state, pool=None, settings=None, pruned_pool=None):
        self.key, self.desired, self.state, self.pool = key, desired, state, pool
        self.settings = settings or drain_settings()  # plan/eviction.DrainSettings: the drain policy that applies
        self.pruned_pool = pruned_pool  # for the nodegroup of a removed pool: the pool it was made for
        self.name = desired["name"]
        self.what = "nodegroup '%s'" % self.name
        self.observed = self.plan = self.drain_plan = self.preview = self.drain = None
        self.wrote = False
        self.error = None  # (message, extra result keys)
        self.result = {"name": self.name, "changed": False, "actions": []}

    def fail(self, exc):
        extra = {}
        if isinstance(exc, MagnumError):
            extra["error"] = exc.to_dict()
        if isinstance(exc, (OperationFailed, WaitTimeout)):
            extra.update(status=exc.status, status_reason=exc.detail)
        self.error = (exc.describe() if isinstance(exc, GpupoolError) else str(exc), extra)


class NodegroupModule(MagnumPoolModule):
    shared = (WAIT, DRAIN, DRAIN_CONNECTION)
    standalone_options = STANDALONE
    argument_spec = dict(
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
                effect=dict(type="str", required=True, choices=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
            ),
        ),
        role=dict(type="str"),
        # WAIT with the defaults of a Magnum operation (minutes, not seconds)
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=15.0),
    )

    def __init__(self, host=None):
        super().__init__(host)
        self.targets = []
        self.skipped = {}
        self.orphaned = None
        self.client = None
        self.microversion = None
        self._k8s = None

    # ---- what to converge ---------------------------------------------------------------------------
    @property
    def standalone(self):
        return self.cluster is None

    def prepare(self):
        super().prepare()
        p = self.params
        self.require_at_least(wait_timeout=0, drain_timeout=1, drain_grace_period=0)
        if p["wait_sleep"] <= 0:
            raise Problems(
                [("wait_sleep", "must be greater than 0, got %s" % p["wait_sleep"])], subject="in the module options"
            )
        if self.standalone:
            if not p["name"]:
                raise Problems(
                    [
                        (
                            "name",
                            "is required when cluster is a Magnum cluster name (standalone use); or pass "
                            "the cluster inventory ({{ gpupool_cluster }}) as cluster",
                        )
                    ],
                    subject="in the module options",
                )
            self.targets = [Target(p["name"], desired_state(p), p["state"] or "present", settings=self.settings())]
            return
        for pool in self.selected:
            if pool.nodegroup is None:
                self.skipped[pool.name] = "no nodegroup: its nodes are found by node_selector"
                continue
            self.targets.append(
                Target(pool.name, desired_from_pool(self.cluster, pool), pool.state, pool, settings=self.settings(pool))
            )

    def settings(self, pool=None):
        """The drain of a pool's nodegroup: the inventory's drain policy (the cluster's for a nodegroup no pool
        declares; none standalone) with the drain options that were given on top."""
        p = self.params
        policy = None if self.standalone else drain_policy(self.cluster, pool)
        return drain_settings(policy, p["drain"], p["drain_timeout"], p["drain_grace_period"])

    # ---- the run --------------------------------------------------------------------------------------
    def run(self):
        if not self.standalone and self.cluster.magnum is None:
            return {"changed": False, "msg": "gpupool_cluster has no magnum section: no nodegroups to converge"}
        cloud = None if self.standalone else self.cluster.magnum.cloud
        if cloud is not None and self.params["cloud"] is not None and self.params["cloud"] != cloud:
            self.warn("the cloud option is ignored: the cloud of the inventory (gpupool_cluster.magnum.cloud) is used")
        self.client = MagnumClient(
            self.connect(cloud), log=self.log, progress=self.progress, poll_max=max(0.25, self.params["wait_sleep"])
        )
        version = self.client.negotiate()
        self.microversion = format_version(version)
        ident = self.params["cluster"] if self.standalone else self.cluster.magnum.cluster
        magnum_cluster = self.client.get_cluster(ident)
        cid = magnum_cluster["uuid"]
        cluster_name = magnum_cluster.get("name") or cid
        # One list of the cluster's nodegroups; a full read only of those that exist and are in scope.
        listing = self.client.list_nodegroups(cid)
        listed = {}
        for entry in listing:
            listed[entry.get("uuid")] = listed[entry["name"]] = entry
        if not self.standalone and not self.params["pools"]:
            self.orphaned = orphaned_nodegroups(listing, self.cluster)
            if self.orphaned and self.cluster.magnum.prune_nodegroups:
                self.plan_prune(cid, cluster_name)
            for name in self.orphaned:
                self.warn(
                    "Magnum nodegroup %s of cluster %s belongs to no pool of the inventory (a removed pool?). It "
                    "was left as it is and its nodes stay cordoned and tainted (gpupool.core.node_pool): delete "
                    "it with a pool of that nodegroup and state: absent, set "
                    "gpupool_cluster.magnum.prune_nodegroups: true, or declare it again" % (name, cluster_name)
                )
        for target in self.targets:
            target.what = "nodegroup '%s' of cluster '%s'" % (target.name, cluster_name)
            self.plan_target(target, cid, magnum_cluster, version, listed.get(target.name))
        if not self.check_mode:
            for target in self.targets:
                if target.error is None:
                    self.apply_target(target, cid)
        failed = [t for t in self.targets if t.error is not None]
        if failed:
            raise NodegroupsFailed(self.failure_message(failed))
        return {}

    def failure_message(self, failed):
        if self.standalone:
            return failed[0].error[0]
        done = len(self.targets) - len(failed)
        return "The nodegroups of %d pool(s) failed (%s); %d other pool(s) were converged, see pools. %s" % (
            len(failed),
            ", ".join(t.key for t in failed),
            done,
            " ".join("Pool %s: %s" % (t.key, t.error[0]) for t in failed),
        )

    # ---- plan -----------------------------------------------------------------------------------------
    def plan_target(self, target, cid, magnum_cluster, version, listed):
        p = self.params
        try:
            observed = self.client.get_nodegroup(cid, target.name) if listed is not None else None
            if observed and observed.get("status") in IN_PROGRESS_STATES and p["wait"] and self.may_wait:
                observed = self.client.wait_settled(cid, observed["uuid"], p["wait_timeout"], target.what)
            target.observed = observed
            plan = target.plan = plan_nodegroup(target.desired, observed, magnum_cluster, version, target.state)
        except (Problems, MagnumError) as exc:
            target.fail(exc)
            return
        for note in plan.notes:
            self.warn(note)
        target.result.update(changed=plan.changed, actions=[a.to_dict() for a in plan.actions])
        if plan.drift:
            target.result["label_drift"] = plan.drift
        if self.check_mode:
            target.result["nodegroup"] = dict(observed or {}, **plan.after) if plan.after else {}
        if target.settings.enabled:
            self.plan_drain(target)
        elif any(a.kind == "delete" or a.shrink_by for a in plan.actions) and not self.standalone:
            self.warn(
                "%s: the drain policy is off (drain.enabled: false), so Magnum removes the nodes of its "
                "choosing with their GPU pods still running" % target.what
            )

    def plan_drain(self, target):
        """Which nodes a shrink (or a delete) removes and which pods leave them first; reads only."""
        plan = target.plan
        shrink = next((a for a in plan.actions if a.kind == "resize" and a.shrink_by), None)
        delete = next((a for a in plan.actions if a.kind == "delete"), None)
        if shrink is None and delete is None:
            return
        try:
            drain = self.drainer(target)
            nodes = drain.nodes("%s=%s" % (NODEGROUP_LABEL, target.name))
            pods = {n["metadata"]["name"]: drain.pod_plan(n["metadata"]["name"]) for n in nodes}
            candidates = [drain_candidate(n, pods[n["metadata"]["name"]][0]) for n in nodes]
            count = shrink.shrink_by if shrink is not None else len(candidates)
            target.drain_plan = plan_drain(candidates, count, target.what)
        except (Problems, DrainError) as exc:
            target.fail(exc)
            return
        except K8sError as exc:
            target.fail(
                GpupoolError(
                    "Cannot read the nodes of %s from Kubernetes: %s. Nothing was changed; fix "
                    "the connection (kubeconfig, context) or turn the pool's drain policy off (drain.enabled: false)."
                    % (target.what, exc.describe())
                )
            )
            return
        if delete is not None:
            target.drain_plan["nodes_to_remove"] = []  # the whole nodegroup goes
        victims = target.drain_plan["victims"]
        target.drain_plan["skip"] = [
            {"node": n, "namespace": pod["metadata"].get("namespace"), "name": pod["metadata"].get("name")}
            for n in victims
            for pod in pods[n][1]
        ]
        target.result["drain"] = target.drain_plan
        target.preview = removal_diff(
            target.what,
            sorted(pods),
            victims,
            {n: pods[n][0] for n in victims},
            {n: pods[n][1] for n in victims},
        )

    def k8s(self):
        """The cluster's Kubernetes API (for drains and for recognising nodegroups of removed pools), connected
        on first use."""
        if self._k8s is None:
            self._k8s = k8s_connect(self.params, self.cluster)
        return self._k8s

    def drainer(self, target):
        """The one drain, as the target's drain policy says; one per target, so the nodes its plan listed need no
        second read when they are cordoned."""
        if target.drain is None:
            target.drain = Drain.for_settings(
                self.k8s(), CORDON_BY, target.settings, warn=self.warn, progress=self.progress
            )
        return target.drain

    def plan_prune(self, cid, cluster_name):
        """With magnum.prune_nodegroups: a delete (after a drain) of each orphaned nodegroup gpupool provably made
        (plan/orphans.nodegroup_pool); the others stay orphaned and reported. Reads only."""
        try:
            nodes = self.k8s().list("", "v1", "nodes")
        except K8sError as exc:
            raise GpupoolError(
                "gpupool_cluster.magnum.prune_nodegroups is on, but the nodes that tell which orphaned nodegroups "
                "gpupool made cannot be read: %s. Nothing was changed; fix the Kubernetes connection "
                "(gpupool_cluster.kubeconfig, context) or turn prune_nodegroups off" % exc.describe()
            ) from None
        kept = []
        for name in self.orphaned:
            pool = nodegroup_pool(self.client.get_nodegroup(cid, name) or {"name": name}, nodes)
            if pool is None:
                kept.append(name)
                self.warn(
                    "Magnum nodegroup %s of cluster %s is not pruned although prune_nodegroups is on: gpupool cannot "
                    "tell that it made it (no gpupool.io/pool in its node_labels, and not every node of it carries "
                    "gpupool.io/pool=%s). Delete it yourself if it belonged to a removed pool"
                    % (name, cluster_name, name)
                )
                continue
            self.targets.append(Target(name, {"name": name}, "absent", settings=self.settings(), pruned_pool=pool))
        self.orphaned = kept

    # ---- apply ----------------------------------------------------------------------------------------
    def apply_target(self, target, cid):
        p, plan = self.params, target.plan
        ng = target.observed
        try:
            for index, action in enumerate(plan.actions):
                last = index == len(plan.actions) - 1
                ng = self.apply_action(target, cid, action, wait=p["wait"] or not last)
                target.result["actions"][index] = action.to_dict()  # nodes_to_remove added by a drain
            if plan.wait_gone and p["wait"]:
                self.client.wait(
                    cid,
                    target.observed["uuid"],
                    {"gone": True},
                    p["wait_timeout"],
                    "delete of %s" % target.what,
                    initial_status=target.observed.get("status"),
                )
        except (Problems, MagnumError, DrainError) as exc:
            target.fail(exc)
        except K8sError as exc:
            target.fail(
                GpupoolError(
                    "Draining the nodes of %s failed: %s. Nothing was resized or deleted; fix the "
                    "cause and run again." % (target.what, exc.describe())
                )
            )
        if target.error is None:
            target.result["nodegroup"] = (ng or {}) if target.state == "present" else {}

    def drain_before(self, target, action):
        """Drain the nodes the action removes; returns the servers to name in a resize."""
        drain_plan = target.drain_plan
        if not drain_plan or not (action.kind == "delete" or action.shrink_by):
            return None
        done = self.drainer(target).drain(drain_plan["victims"])
        target.wrote = target.wrote or bool(done["cordoned"] or done["evicted"])
        drain_plan["evicted"] = done["evicted"]
        return drain_plan["nodes_to_remove"]

    def apply_action(self, target, cid, action, wait):
        """Send one action; wait for its expectation when ``wait``. Returns the nodegroup view."""
        client, observed = self.client, target.observed
        initial = (observed or {}).get("status")
        ng = None
        if action.kind == "create":
            ng = client.create_nodegroup(cid, action.payload)
            ident = ng.get("uuid") or target.name
        elif action.kind == "delete":
            self.drain_before(target, action)
            client.delete_nodegroup(cid, observed["uuid"])
            ident = observed["uuid"]
        elif action.kind == "patch":
            ng = client.patch_nodegroup(cid, observed["uuid"], action.payload)
            ident = observed["uuid"]
        elif action.kind == "resize":
            body = dict(action.payload)
            remove = self.drain_before(target, action)
            if remove:
                body["nodes_to_remove"] = remove
                action.payload = body
            client.resize(cid, body["nodegroup"], body["node_count"], body.get("nodes_to_remove"))
            ident = observed["uuid"]
        else:  # pragma: no cover - the planner makes only these four
            raise MagnumError("unknown action %s" % action.kind)
        target.wrote = True
        if not wait:
            if action.kind == "delete":
                return None
            return ng if ng is not None else client.get_nodegroup(cid, ident)
        return client.wait(
            cid, ident, action.expect, self.params["wait_timeout"], action.summary, initial_status=initial
        )

    # ---- results --------------------------------------------------------------------------------------
    def changed(self, target):
        """Check mode: whether the plan changes something; otherwise whether something was written."""
        if self.check_mode:
            return target.error is None and target.plan is not None and target.plan.changed
        return target.wrote

    def partial_result(self):
        for target in self.targets:
            target.result["changed"] = self.changed(target)
            if target.error is not None:
                target.result.update(failed=True, msg=target.error[0], **target.error[1])
        out = {
            "changed": any(t.result["changed"] for t in self.targets),
            "progress": self.client.events if self.client is not None else [],
        }
        if self.microversion:
            out["microversion"] = self.microversion
        if self.standalone:
            self._standalone_result(out)
        else:
            pools = {name: {"skipped": why} for name, why in self.skipped.items()}
            pools.update((t.key, t.result) for t in self.targets if t.pruned_pool is None)
            out["pools"] = pools
            if self.orphaned is not None:
                out["orphaned"] = self.orphaned
                out["pruned"] = {
                    t.key: dict(t.result, pool=t.pruned_pool) for t in self.targets if t.pruned_pool is not None
                }
            if self.diff_mode:
                out["diff"] = []
                for target in self.targets:
                    if target.plan is not None and target.plan.changed:
                        out["diff"].append(self._diff(target))
                        if target.preview is not None:
                            out["diff"].append(target.preview)
        return out

    def _standalone_result(self, out):
        if not self.targets:
            return
        target = self.targets[0]
        result = target.result
        out.update(actions=result["actions"], nodegroup=result.get("nodegroup", {}))
        if "drain" in result:
            out["drain"] = result["drain"]
        if "label_drift" in result:
            out["label_drift"] = result["label_drift"]
        if target.error is not None:
            out.update(target.error[1])
        if self.diff_mode and target.plan is not None:
            out["diff"] = self._diff(target)

    @staticmethod
    def _diff(target):
        return {
            "before": target.plan.before,
            "after": target.plan.after,
            "before_header": target.what,
            "after_header": target.what,
        }


class ActionModule(StepAction):
    step = NodegroupModule
