# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure planning for Magnum nodegroups: desired vs observed => ordered actions. No I/O here.

Magnum rules the plan follows (see docs/modules/nodegroup.md and the Magnum source it cites):

- only ``min_node_count``/``max_node_count`` (and ``node_labels``/``node_taints`` from microversion
  1.14) can be changed with a JSON-patch; ``node_count`` changes through the cluster resize action;
  flavor, image, labels, docker volume size and role cannot be changed at all;
- PATCH validates ``min <= node_count <= max`` with the *current* node_count, resize checks the new
  count against the *current* bounds, so the order of resize and patch matters;
- 0 nodes need microversion 1.10, the nodegroup API itself 1.9;
- ``labels`` without ``merge_labels`` replace every cluster label on the new nodegroup.

The desired state is one dict in API field names (None: not asked for, keep what Magnum has). It comes
from a pool of the validated inventory (`desired_from_pool`: the model's defaults are the only defaults;
the cluster's Magnum labels under the pool's) or, standalone, from the module's flat options
(`desired_state`); both are planned by the same `plan_nodegroup`.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    birth_node_labels,
    birth_node_taints,
)

CLIENT_MAX_VERSION = (1, 14)
NODEGROUP_MIN_VERSION = (1, 9)
ZERO_NODES_VERSION = (1, 10)
NODE_LABELS_VERSION = (1, 14)

COMPLETE_STATES = frozenset(
    (
        "CREATE_COMPLETE",
        "UPDATE_COMPLETE",
        "RESUME_COMPLETE",
        "RESTORE_COMPLETE",
        "ROLLBACK_COMPLETE",
        "SNAPSHOT_COMPLETE",
        "CHECK_COMPLETE",
        "ADOPT_COMPLETE",
    )
)
FAILED_STATES = frozenset(("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "ROLLBACK_FAILED", "RESUME_FAILED"))
IN_PROGRESS_STATES = frozenset(
    ("CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS")
)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Fields shown in diffs (API names).
VIEW_FIELDS = (
    "name",
    "role",
    "flavor_id",
    "image_id",
    "node_count",
    "min_node_count",
    "max_node_count",
    "docker_volume_size",
    "labels",
    "node_labels",
    "node_taints",
)
IMMUTABLE = (
    ("flavor_id", "flavor"),
    ("image_id", "image"),
    ("docker_volume_size", "docker_volume_size"),
    ("role", "role"),
)


# ---------------------------------------------------------------------------------------- versions
def parse_version(text):
    """'1.10' or 'container-infra 1.10' -> (1, 10). Raises ValueError on anything else."""
    if isinstance(text, tuple):
        return text
    value = str(text).strip().split()[-1] if str(text).strip() else ""
    match = re.match(r"^(\d+)\.(\d+)$", value)
    if not match:
        raise ValueError("not a microversion: %r" % (text,))
    return int(match.group(1)), int(match.group(2))


def format_version(version):
    return "%d.%d" % tuple(version)


def choose_microversion(server_max, server_min=None, client_max=CLIENT_MAX_VERSION, where="the Magnum API"):
    """The microversion to send: the highest both sides know. Fails below 1.9 (no nodegroup API)."""
    server_max = parse_version(server_max)
    chosen = min(server_max, tuple(client_max))
    if server_min is not None and chosen < parse_version(server_min):
        raise Problems(
            "%s only accepts microversions %s to %s, this collection speaks up to %s."
            % (where, format_version(parse_version(server_min)), format_version(server_max), format_version(client_max))
        )
    if chosen < NODEGROUP_MIN_VERSION:
        raise Problems(
            "%s supports microversions up to %s, but nodegroups need 1.9 (Magnum Train or newer). "
            "Ask the cloud operators to upgrade Magnum." % (where, format_version(server_max))
        )
    return chosen


# ---------------------------------------------------------------------------------------- values
def label_value(value):
    """Magnum label values as strings, the way the CLI sends them ('true', not True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def normalize_labels(labels):
    if labels is None:
        return None
    return {str(k): label_value(v) for k, v in labels.items()}


def normalize_taints(taints):
    """Sorted list of {key, value, effect}; value '' when absent (what kubectl shows)."""
    if taints is None:
        return None
    out = []
    for taint in taints:
        out.append({"key": str(taint["key"]), "value": label_value(taint.get("value")), "effect": str(taint["effect"])})
    return sorted(out, key=lambda t: (t["key"], t["value"], t["effect"]))


def desired_state(params):
    """Module parameters -> desired nodegroup fields (API names). Unset options stay None (= keep)."""
    desired = {
        "name": params["name"],
        "flavor_id": params.get("flavor"),
        "image_id": params.get("image"),
        "node_count": params.get("node_count"),
        "min_node_count": params.get("min_node_count"),
        "max_node_count": params.get("max_node_count"),
        "docker_volume_size": params.get("docker_volume_size"),
        "labels": normalize_labels(params.get("labels")),
        "cluster_labels": None,
        "merge_labels": params.get("merge_labels", True) is not False,
        "role": params.get("role"),
        "node_labels": normalize_labels(params.get("node_labels")),
        "node_taints": normalize_taints(params.get("node_taints")),
    }
    for field in ("node_count", "min_node_count", "max_node_count"):
        if desired[field] is not None and desired[field] < 0:
            raise Problems("%s must be 0 or more, got %s." % (field, desired[field]))
    if desired["docker_volume_size"] is not None and desired["docker_volume_size"] < 1:
        raise Problems("docker_volume_size must be at least 1 (GB), got %s." % desired["docker_volume_size"])
    for taint in desired["node_taints"] or []:
        if taint["effect"] not in TAINT_EFFECTS:
            raise Problems(
                "node_taints: effect %r of taint %r must be one of %s."
                % (taint["effect"], taint["key"], ", ".join(TAINT_EFFECTS))
            )
    return desired


def desired_from_pool(cluster, pool) -> Dict[str, Any]:
    """The desired nodegroup of a pool of the validated inventory (model/inventory.py), in API field names.

    Every value comes from the model, defaults included (node_count 1, min_node_count 0, role worker,
    merge_labels true); max_node_count, image and docker_volume_size unset mean "keep what Magnum has".
    Labels: the pool's own (``nodegroup.labels``) must hold on the nodegroup; the cluster's
    (``magnum.labels``) are sent under them when the nodegroup is created, and a later change of one of them
    is reported as drift, not refused (Magnum cannot relabel an existing nodegroup, and refusing would stop
    every pool of the cluster for one cluster-wide setting).
    Node labels and taints: the pool's, given to its nodes from birth (plan/nodes.birth_node_labels and
    birth_node_taints) where the server speaks microversion 1.14; `plan_nodegroup` drops them on older servers
    (``node_labels_if_supported``) instead of refusing, and node_pool sets them after the join there."""
    group = pool.nodegroup
    own = normalize_labels(group.labels) or {}
    inherited = normalize_labels(cluster.magnum.labels if cluster.magnum is not None else {}) or {}
    return {
        "name": nodegroup_name(pool),
        "flavor_id": group.flavor,
        "image_id": group.image,
        "node_count": group.node_count,
        "min_node_count": group.min_node_count,
        "max_node_count": group.max_node_count,
        "docker_volume_size": group.docker_volume_size,
        "labels": own if own or inherited else None,
        "cluster_labels": {k: v for k, v in inherited.items() if k not in own} or None,
        "merge_labels": group.merge_labels,
        "role": group.role,
        "node_labels": normalize_labels(birth_node_labels(pool)),
        "node_taints": normalize_taints(birth_node_taints(pool)),
        "node_labels_if_supported": True,
    }


def orphaned_nodegroups(listing: Iterable[Dict[str, Any]], cluster) -> List[str]:
    """Nodegroups of the Magnum cluster that no pool of the inventory declares (present or absent), apart from
    Magnum's default ones: left over from a pool removed from the inventory."""
    declared = {nodegroup_name(pool) for pool in cluster.pools if pool.nodegroup is not None}
    return sorted(
        ng["name"]
        for ng in listing
        if not ng.get("is_default") and ng.get("role") != "master" and ng["name"] not in declared
    )


def view(nodegroup):
    """The comparable part of an API nodegroup (for diffs and results)."""
    if not nodegroup:
        return {}
    out = {}
    for field in VIEW_FIELDS:
        if field in nodegroup:
            value = nodegroup[field]
            if field in ("labels", "node_labels"):
                value = normalize_labels(value) if value is not None else None
            elif field == "node_taints":
                value = normalize_taints(value) if value is not None else None
            out[field] = value
    return out


# ---------------------------------------------------------------------------------------- actions
class Action:
    """One API call of a plan and what to wait for after it.

    kind: create | resize | patch | delete. payload: the JSON body (JSON-patch list for patch).
    expect: {"gone": True} or {"status": [...], "fields": {...}} for the waiter.
    shrink_by: how many nodes a resize removes (for the drain hook).
    """

    def __init__(self, kind, payload, expect, summary, shrink_by=0):
        self.kind, self.payload, self.expect, self.summary, self.shrink_by = kind, payload, expect, summary, shrink_by

    def to_dict(self):
        out = {"action": self.kind, "summary": self.summary}
        if self.payload is not None:
            out["request"] = self.payload
        return out

    def __repr__(self):
        return "Action(%s, %r)" % (self.kind, self.payload)


class Plan:
    """The ordered actions, the comparable view before and after, notes (warnings for the person) and the
    cluster-wide label drift of an existing nodegroup ({key: {nodegroup, inventory}})."""

    def __init__(self, actions, before, after, notes=None, wait_gone=False, drift=None):
        self.actions, self.before, self.after = actions, before, after
        self.notes = notes or []
        self.wait_gone = wait_gone
        self.drift = drift or {}

    @property
    def changed(self):
        return bool(self.actions)


def _ok(count, low, high):
    return low <= count and (high is None or count <= high)


def _bounds(low, high):
    return "[%s, %s]" % (low, "unbounded" if high is None else high)


def _patch_value(field, value):
    # Magnum's JsonPatchType.value is MultiType(text, int): dicts and lists travel as their Python
    # literal and the API literal_eval()s them (magnum api_utils.apply_jsonpatch).
    if field in ("node_labels", "node_taints"):
        return repr(value)
    return value


def _patch_ops(changes):
    ops = []
    for field in ("min_node_count", "max_node_count", "node_labels", "node_taints"):
        if field in changes:
            value = changes[field]
            if value is None:
                ops.append({"op": "remove", "path": "/" + field})
            else:
                ops.append({"op": "replace", "path": "/" + field, "value": _patch_value(field, value)})
    return ops


def _sent_labels(desired):
    """The labels a create sends: the inventory's cluster-wide labels under the pool's own (None: send none)."""
    if desired["labels"] is None and not desired.get("cluster_labels"):
        return None
    sent = dict(desired.get("cluster_labels") or {})
    sent.update(desired["labels"] or {})
    return sent


def _expected_labels(desired, cluster_labels):
    labels = _sent_labels(desired)
    if labels is None:
        return dict(cluster_labels)
    if desired["merge_labels"]:
        merged = dict(cluster_labels)
        merged.update(labels)
        return merged
    return dict(labels)


def _where(desired, cluster):
    return "nodegroup '%s' of cluster '%s'" % (desired["name"], cluster.get("name") or cluster.get("uuid"))


def plan_nodegroup(desired, observed, cluster, version, state="present"):
    """Desired state (desired_state()), the observed nodegroup (full API view or None), the cluster
    (API view) and the negotiated microversion => Plan. Raises Problems with a fix-it message."""
    version = parse_version(version)
    where = _where(desired, cluster)
    before = view(observed)
    if state == "absent":
        return _plan_absent(observed, before, where)
    if desired.get("node_labels_if_supported") and version < NODE_LABELS_VERSION:
        desired = dict(desired, node_labels=None, node_taints=None)
    _check_versions(desired, observed, version, where)
    if observed is None:
        return _plan_create(desired, cluster, version, where)
    return _plan_update(desired, observed, before, version, where)


def _check_versions(desired, observed, version, where):
    needs = [f for f in ("node_labels", "node_taints") if desired.get(f) is not None]
    if needs and version < NODE_LABELS_VERSION:
        raise Problems(
            "%s: %s need Magnum API microversion 1.14, but the server only supports %s. Remove %s and use "
            "labels with merge_labels (applied by the driver at boot), or label and taint the nodes in "
            "Kubernetes instead." % (where, " and ".join(needs), format_version(version), " and ".join(needs))
        )
    if desired.get("node_count") == 0 and version < ZERO_NODES_VERSION:
        raise Problems(
            "%s: node_count 0 needs Magnum API microversion 1.10, the server supports %s. "
            "Use node_count 1 or more." % (where, format_version(version))
        )


def _plan_absent(observed, before, where):
    if observed is None:
        return Plan([], before, {})
    if observed.get("is_default"):
        raise Problems(
            "%s is a default nodegroup; Magnum refuses to delete default nodegroups (400). Delete the "
            "whole cluster instead, or keep it." % where
        )
    if observed.get("status") == "DELETE_IN_PROGRESS":
        return Plan([], before, {}, notes=["already being deleted"], wait_gone=True)
    action = Action("delete", None, {"gone": True}, "delete %s" % where)
    return Plan([action], before, {})


def _count_problem(where, count, low, high, count_given, low_given, high_given):
    def label(name, value, given):
        return "%s %s%s" % (name, value, "" if given else " (current)")

    if high is not None and low > high:
        return "%s: %s is above %s. Set min_node_count <= max_node_count." % (
            where,
            label("min_node_count", low, low_given),
            label("max_node_count", high, high_given),
        )
    if not _ok(count, low, high):
        return (
            "%s: %s is outside %s. Set node_count, min_node_count and max_node_count so that min <= count "
            "<= max."
            % (
                where,
                label("node_count", count, count_given),
                "[%s, %s]"
                % (
                    label("min_node_count", low, low_given),
                    label("max_node_count", "unbounded" if high is None else high, high_given),
                ),
            )
        )
    return None


def _plan_create(desired, cluster, version, where):
    role = desired["role"] or "worker"
    if role == "master":
        raise Problems(
            "%s: Magnum cannot create master nodegroups (400 CreateMasterNodeGroup); use role worker "
            "or another custom role." % where
        )
    count = 1 if desired["node_count"] is None else desired["node_count"]
    low = 0 if desired["min_node_count"] is None else desired["min_node_count"]
    high = desired["max_node_count"]
    problem = _count_problem(
        where,
        count,
        low,
        high,
        desired["node_count"] is not None,
        desired["min_node_count"] is not None,
        high is not None,
    )
    if problem:
        raise Problems(problem.replace(" (current)", " (default)"))
    if count == 0 and version < ZERO_NODES_VERSION:
        raise Problems("%s: node_count 0 needs microversion 1.10." % where)
    body = {"name": desired["name"]}
    for field in (
        "flavor_id",
        "image_id",
        "node_count",
        "min_node_count",
        "max_node_count",
        "docker_volume_size",
        "role",
        "node_labels",
        "node_taints",
    ):
        if desired.get(field) is not None:
            body[field] = desired[field]
    if _sent_labels(desired) is not None:
        body["labels"] = _sent_labels(desired)
        if desired["merge_labels"]:
            # The CLI only sends merge_labels when true, "to avoid breaking older APIs".
            body["merge_labels"] = True
    after = {
        "name": desired["name"],
        "role": role,
        "flavor_id": desired["flavor_id"] or cluster.get("flavor_id"),
        "image_id": desired["image_id"] or cluster.get("image_id"),
        "node_count": count,
        "min_node_count": low,
        "max_node_count": high,
        "docker_volume_size": desired["docker_volume_size"],
        "labels": _expected_labels(desired, normalize_labels(cluster.get("labels") or {})),
    }
    if version >= NODE_LABELS_VERSION:
        after["node_labels"] = desired["node_labels"] or {}
        after["node_taints"] = desired["node_taints"] or []
    if after["image_id"] is None:
        after.pop("image_id")  # comes from the cluster template
    if after["docker_volume_size"] is None:
        after.pop("docker_volume_size")
    expect = {"status": ["CREATE_COMPLETE"], "fields": {}}
    return Plan([Action("create", body, expect, "create %s with %d node(s)" % (where, count))], {}, after)


def _immutable_problems(desired, observed):
    """(problems, drift): changes Magnum cannot make that the task asks for, and the cluster-wide labels
    (`cluster_labels`) the nodegroup has with another value: {key: {"nodegroup": have, "inventory": want}}."""
    problems = []
    for field, option in IMMUTABLE:
        want, have = desired.get(field), observed.get(field)
        if want is not None and str(want) != str(have):
            problems.append("%s is %r, the task asks for %r" % (option, have, want))
    have = normalize_labels(observed.get("labels") or {})
    inherited = desired.get("cluster_labels") or {}
    drift = {k: {"nodegroup": have.get(k), "inventory": v} for k, v in sorted(inherited.items()) if have.get(k) != v}
    if desired["labels"] is not None:
        if desired["merge_labels"]:
            wrong = {k: v for k, v in desired["labels"].items() if have.get(k) != v}
            if wrong:
                problems.append(
                    "labels %s differ (%s)"
                    % (
                        ", ".join(sorted(wrong)),
                        "; ".join("%s: %r -> %r" % (k, have.get(k), v) for k, v in sorted(wrong.items())),
                    )
                )
        else:
            extra = sorted(set(have) - set(desired["labels"]) - set(inherited))
            wrong = sorted(k for k, v in desired["labels"].items() if have.get(k) != v)
            detail = []
            if wrong:
                detail.append("different or missing: %s" % ", ".join(wrong))
            if extra:
                detail.append("present but not asked for (merge_labels is false): %s" % ", ".join(extra))
            if detail:
                problems.append("labels differ (%s)" % "; ".join(detail))
    return problems, drift


def drift_note(where, drift):
    """The warning for cluster-wide labels an existing nodegroup has with another value."""
    labels = ", ".join("%s=%r (inventory: %r)" % (k, d["nodegroup"], d["inventory"]) for k, d in sorted(drift.items()))
    return (
        "%s keeps the Magnum label(s) it was created with: %s. gpupool_cluster.magnum.labels now says otherwise; "
        "Magnum cannot change the labels of an existing nodegroup, so only nodegroups created from now on get "
        "the new value. To move this one, create a replacement nodegroup (another nodegroup.name), move the "
        "workloads and set state: absent on the old pool - or keep the old value in the pool's nodegroup.labels "
        "to silence this." % (where, labels)
    )


def _plan_update(desired, observed, before, version, where):
    status = observed.get("status") or ""
    if status == "DELETE_IN_PROGRESS":
        raise Problems("%s is being deleted (DELETE_IN_PROGRESS). Run again once it is gone to create it anew." % where)
    if status in ("CREATE_FAILED", "DELETE_FAILED"):
        raise Problems(
            "%s is in %s (%s). Magnum cannot repair it: delete it with state=absent and run again."
            % (where, status, observed.get("status_reason") or "no reason given")
        )
    problems, drift = _immutable_problems(desired, observed)
    if problems:
        raise Problems(
            "%s cannot be changed in place: %s. Magnum cannot change the flavor, image, labels, docker volume "
            "size or role of an existing nodegroup (only node_count, min/max_node_count and, from microversion "
            "1.14, node_labels/node_taints). Create a nodegroup with another name and the new settings, move the "
            "workloads, then remove this one with state=absent - or change the task back to the current values."
            % (where, "; ".join(problems))
        )

    count, low, high = (
        observed.get("node_count") or 0,
        observed.get("min_node_count") or 0,
        observed.get("max_node_count"),
    )
    new_count = count if desired["node_count"] is None else desired["node_count"]
    new_low = low if desired["min_node_count"] is None else desired["min_node_count"]
    new_high = high if desired["max_node_count"] is None else desired["max_node_count"]
    problem = _count_problem(
        where,
        new_count,
        new_low,
        new_high,
        desired["node_count"] is not None,
        desired["min_node_count"] is not None,
        desired["max_node_count"] is not None,
    )
    if problem:
        raise Problems(problem)
    resize = new_count != count
    if resize and observed.get("role") == "master":
        raise Problems("%s: Magnum cannot resize master nodegroups; leave node_count unset for it." % where)

    bound_changes = {}
    if new_low != low:
        bound_changes["min_node_count"] = new_low
    if new_high != high:
        bound_changes["max_node_count"] = new_high
    extra_changes = {}
    for field in ("node_labels", "node_taints"):
        if desired.get(field) is not None:
            have = observed.get(field)
            have = (
                (normalize_labels(have) if field == "node_labels" else normalize_taints(have))
                if have is not None
                else ({} if field == "node_labels" else [])
            )
            if have != desired[field]:
                extra_changes[field] = desired[field]

    after = dict(before)
    after.update(bound_changes)
    after.update(extra_changes)
    after["node_count"] = new_count

    def patch(changes, final_low, final_high, summary):
        fields = {"min_node_count": final_low, "max_node_count": final_high}
        fields.update({k: v for k, v in changes.items() if k not in fields})
        expect = {"status": sorted(COMPLETE_STATES), "fields": fields}
        return Action("patch", _patch_ops(changes), expect, summary)

    def resize_action(low_now, high_now):
        body = {"node_count": new_count, "nodegroup": observed.get("uuid") or desired["name"]}
        expect = {"status": sorted(COMPLETE_STATES), "fields": {"node_count": new_count}}
        return Action(
            "resize",
            body,
            expect,
            "resize %s from %d to %d node(s) (bounds %s)" % (where, count, new_count, _bounds(low_now, high_now)),
            shrink_by=max(0, count - new_count),
        )

    def describe(changes):
        return ", ".join("%s %s -> %s" % (k, observed.get(k), v) for k, v in changes.items())

    actions = []
    if not resize:
        changes = dict(bound_changes, **extra_changes)
        if changes:
            actions.append(patch(changes, new_low, new_high, "update %s: %s" % (where, describe(changes))))
    elif not bound_changes:
        actions.append(resize_action(low, high))
        if extra_changes:
            actions.append(patch(extra_changes, new_low, new_high, "update %s: %s" % (where, describe(extra_changes))))
    elif _ok(new_count, low, high):  # resize within the current bounds, then move the bounds
        actions.append(resize_action(low, high))
        changes = dict(bound_changes, **extra_changes)
        actions.append(patch(changes, new_low, new_high, "update %s: %s" % (where, describe(changes))))
    elif _ok(count, new_low, new_high):  # move the bounds first, then resize inside them
        changes = dict(bound_changes, **extra_changes)
        actions.append(patch(changes, new_low, new_high, "update %s: %s" % (where, describe(changes))))
        actions.append(resize_action(new_low, new_high))
    else:  # neither order works: widen, resize, narrow
        wide_low = min(low, new_low)
        wide_high = None if high is None or new_high is None else max(high, new_high)
        widen = {}
        if wide_low != low:
            widen["min_node_count"] = wide_low
        if wide_high != high:
            widen["max_node_count"] = wide_high
        actions.append(
            patch(
                widen,
                wide_low,
                wide_high,
                "widen the bounds of %s to %s for the resize" % (where, _bounds(wide_low, wide_high)),
            )
        )
        actions.append(resize_action(wide_low, wide_high))
        final = {}
        if new_low != wide_low:
            final["min_node_count"] = new_low
        if new_high != wide_high:
            final["max_node_count"] = new_high
        final.update(extra_changes)
        if final:
            actions.append(patch(final, new_low, new_high, "update %s: %s" % (where, describe(final))))
    notes = [drift_note(where, drift)] if drift else []
    return Plan(actions, before, after, notes=notes, drift=drift)


# ---------------------------------------------------------------------------------------- waiting
def evaluate_wait(nodegroup, expect, seen_in_progress=False, initial_status=None):
    """One poll of a waiter: ('done' | 'failed' | 'pending', text).

    nodegroup is the API view or None (404). A *_FAILED status left over from before the operation
    (initial_status) only counts once the operation was seen in progress."""
    if expect.get("gone"):
        if nodegroup is None:
            return "done", "gone"
        status = nodegroup.get("status") or ""
        if status == "DELETE_FAILED" and (seen_in_progress or initial_status != "DELETE_FAILED"):
            return "failed", status
        return "pending", status
    if nodegroup is None:
        # The conductor writes a new nodegroup's row asynchronously: 404 right after the 202 is normal.
        return "pending", "not visible yet"
    status = nodegroup.get("status") or ""
    if status in FAILED_STATES and (seen_in_progress or initial_status not in FAILED_STATES):
        return "failed", status
    fields = expect.get("fields") or {}
    for key, want in fields.items():
        have = nodegroup.get(key)
        if key == "node_labels" and have is not None:
            have = normalize_labels(have)
        elif key == "node_taints" and have is not None:
            have = normalize_taints(have)
        if have != want:
            return "pending", status
    if status in expect.get("status", ()):
        return "done", status
    return "pending", status
