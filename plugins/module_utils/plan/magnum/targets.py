# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one gpupool.core.nodegroup call converges, and what it reports (pure).

The targets: one per pool in scope that has a nodegroup (pools found by node_selector are skipped), or the
one nodegroup of the flat options (standalone), each with the drain policy that applies to it; the orphaned
nodegroups that magnum.prune_nodegroups deletes join them. The result: one entry per pool, the orphaned and
the pruned nodegroups, the check-mode prediction and the --diff entries, and the message of a partial failure.
The Magnum and Kubernetes calls in between are the runner's (runners/nodegroups.py).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.actions import Plan
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import (
    IN_PROGRESS_STATES,
    Version,
    format_version,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import desired_from_pool, desired_state
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import DrainSettings, drain_settings


class Target:
    """One nodegroup to converge: its key (the pool's name, or the nodegroup's standalone), the desired state
    (plan/magnum/desired.py's dict), the drain policy that applies (plan/nodes/eviction.DrainSettings) and
    what happened to it: the nodegroup read, the plan, the drain plan and its --diff entry, whether something
    was written, the error (message, extra result keys) and the pool's entry of the result."""

    def __init__(self, key, desired, state, pool=None, settings=None, pruned_pool=None):
        self.key, self.desired, self.state, self.pool = key, desired, state, pool
        self.settings = settings or drain_settings()
        self.pruned_pool = pruned_pool  # for the nodegroup of a removed pool: the pool it was made for
        self.name = desired["name"]
        self.what = "nodegroup '%s'" % self.name
        self.observed = self.plan = self.drain_plan = self.preview = None
        self.wrote = False
        self.error: Optional[Tuple[str, Dict[str, Any]]] = None
        self.result: Dict[str, Any] = {"name": self.name, "changed": False, "actions": []}

    def of_cluster(self, cluster_name: str) -> None:
        """Name the nodegroup with its cluster in every message and progress line."""
        self.what = "nodegroup '%s' of cluster '%s'" % (self.name, cluster_name)

    def fail(self, message: str, extra: Optional[Mapping[str, Any]] = None) -> None:
        self.error = (message, dict(extra or {}))

    def planned(self, plan: Plan, check_mode: bool) -> None:
        """The plan (plan/magnum/actions.Plan) as the pool's result shows it; check mode predicts the
        nodegroup after it."""
        self.plan = plan
        self.result.update(changed=plan.changed, actions=[a.to_dict() for a in plan.actions])
        if plan.drift:
            self.result["label_drift"] = plan.drift
        if check_mode:
            self.result["nodegroup"] = dict(self.observed or {}, **plan.after) if plan.after else {}

    def changed(self, check_mode: bool) -> bool:
        """Check mode: whether the plan changes something; otherwise whether something was written."""
        if check_mode:
            return self.error is None and self.plan is not None and self.plan.changed
        return self.wrote


def target_drain(cluster: Any, pool: Any, params: Mapping[str, Any]) -> DrainSettings:
    """The drain of a nodegroup: the inventory's drain policy (the pool's, or the cluster's for a nodegroup no
    pool declares; none standalone, cluster None) with the drain options that were given on top."""
    policy = None if cluster is None else drain_policy(cluster, pool)
    return drain_settings(policy, params["drain"], params["drain_timeout"], params["drain_grace_period"])


def standalone_target(params: Mapping[str, Any]) -> Target:
    """The one nodegroup of the flat options."""
    return Target(
        params["name"], desired_state(params), params["state"] or "present", settings=target_drain(None, None, params)
    )


def pool_targets(cluster, selected, params: Mapping[str, Any]) -> Tuple[List[Target], Dict[str, str]]:
    """(a target per selected pool with a nodegroup, {pool: why it is skipped} for the others)."""
    targets, skipped = [], {}
    for pool in selected:
        if pool.nodegroup is None:
            skipped[pool.name] = "no nodegroup: its nodes are found by node_selector"
            continue
        desired = desired_from_pool(cluster, pool)
        targets.append(Target(pool.name, desired, pool.state, pool, settings=target_drain(cluster, pool, params)))
    return targets, skipped


def call_targets(cluster, selected, params: Mapping[str, Any]) -> Tuple[List[Target], Dict[str, str]]:
    """The targets of one call and the pools skipped: with the inventory as cluster, a target per selected pool
    with a nodegroup; standalone (cluster None), the one nodegroup the flat options name. Refuses options no
    argument spec can check, before any request."""
    if params["wait_sleep"] <= 0:
        raise Problems(
            [("wait_sleep", "must be greater than 0, got %s" % params["wait_sleep"])], subject="in the module options"
        )
    if cluster is not None:
        return pool_targets(cluster, selected, params)
    if not params["name"]:
        why = (
            "is required when cluster is a Magnum cluster name (standalone use); or pass the cluster inventory "
            "({{ gpupool_cluster }}) as cluster"
        )
        raise Problems([("name", why)], subject="in the module options")
    return [standalone_target(params)], {}


def pruned_target(name: str, pool: str, settings: DrainSettings, owner: Optional[str] = None) -> Target:
    """The delete of an orphaned nodegroup of `owner` made for `pool`, drained as `settings` say (the cluster's
    policy: no pool declares the nodegroup any more). Its plan checks the owner again (plan/magnum/ownership.py)."""
    return Target(name, {"name": name, "owner": owner, "adopt": False}, "absent", settings=settings, pruned_pool=pool)


def needs_cluster(targets: Sequence[Target], listed: Mapping[str, Any]) -> bool:
    """Whether planning needs the Magnum cluster itself: only a nodegroup to create does (Magnum fills its flavor,
    image and labels from the cluster's); the rest is planned from the list and each nodegroup's own view."""
    return any(t.state == "present" and t.name not in listed for t in targets)


def must_settle(observed: Optional[Mapping[str, Any]], wait: bool, may_wait: bool) -> bool:
    """A nodegroup still *_IN_PROGRESS is waited for before it is planned, when waits are allowed."""
    return bool(observed) and observed.get("status") in IN_PROGRESS_STATES and wait and may_wait


# ---- messages ------------------------------------------------------------------------------------------------
def orphan_warning(name: str, cluster_name: str) -> str:
    return (
        "Magnum nodegroup %s of cluster %s belongs to no pool of the inventory (a removed pool, or another "
        "inventory's?). It was left as it is, and the nodes of a removed pool stay cordoned and tainted "
        "(gpupool.core.node_pool): delete it with a pool of that nodegroup and state: absent, set "
        "gpupool_cluster.magnum.prune_nodegroups: true (it deletes only this inventory's own nodegroups), or "
        "declare it again" % (name, cluster_name)
    )


def undrained_removal_warning(what: str) -> str:
    return (
        "%s: the drain policy is off (drain.enabled: false), so Magnum removes the nodes of its "
        "choosing with their GPU pods still running" % what
    )


def failure_message(targets: Sequence[Target], standalone: bool) -> str:
    failed = [t for t in targets if t.error is not None]
    if standalone:
        return failed[0].error[0]
    return "The nodegroups of %d pool(s) failed (%s); %d other pool(s) were converged, see pools. %s" % (
        len(failed),
        ", ".join(t.key for t in failed),
        len(targets) - len(failed),
        " ".join("Pool %s: %s" % (t.key, t.error[0]) for t in failed),
    )


# ---- the result ----------------------------------------------------------------------------------------------
def step_result(
    targets: Sequence[Target],
    skipped: Mapping[str, str],
    orphaned: Optional[List[str]],
    standalone: bool,
    check_mode: bool,
    diff_mode: bool,
    version: Optional[Version] = None,
    events: Sequence[str] = (),
    left: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """The task result, also of a failed or cancelled call (what was done until then); `version`: the microversion
    the client negotiated, if it did; `left`: the nodegroups no pool declares that prune leaves, not this owner's
    ({name: the plan's line}), shown in --diff too."""
    for target in targets:
        target.result["changed"] = target.changed(check_mode)
        if target.error is not None:
            target.result.update(failed=True, msg=target.error[0], **target.error[1])
    out: Dict[str, Any] = {"changed": any(t.result["changed"] for t in targets), "progress": list(events)}
    if version:
        out["microversion"] = format_version(version)
    if standalone:
        if targets:
            out.update(_standalone_result(targets[0], diff_mode))
        return out
    pools: Dict[str, Any] = {name: {"skipped": why} for name, why in skipped.items()}
    pools.update((t.key, t.result) for t in targets if t.pruned_pool is None)
    out["pools"] = pools
    if orphaned is not None:
        out["orphaned"] = orphaned
        out["pruned"] = {t.key: dict(t.result, pool=t.pruned_pool) for t in targets if t.pruned_pool is not None}
    if left:
        out["left"] = dict(left)
    if diff_mode:
        out["diff"] = [{"prepared": line + "\n"} for _name, line in sorted((left or {}).items())]
        for target in targets:
            if target.plan is not None and target.plan.changed:
                out["diff"].append(_diff(target))
                if target.preview is not None:
                    out["diff"].append(target.preview)
    return out


def _standalone_result(target: Target, diff_mode: bool) -> Dict[str, Any]:
    result = target.result
    out = dict(actions=result["actions"], nodegroup=result.get("nodegroup", {}))
    for key in ("drain", "label_drift"):
        if key in result:
            out[key] = result[key]
    if target.error is not None:
        out.update(target.error[1])
    if diff_mode and target.plan is not None:
        out["diff"] = _diff(target)
    return out


def _diff(target: Target) -> Dict[str, Any]:
    return {
        "before": target.plan.before,
        "after": target.plan.after,
        "before_header": target.what,
        "after_header": target.what,
    }
