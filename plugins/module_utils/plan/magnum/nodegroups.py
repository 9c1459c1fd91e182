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
- 0 nodes need microversion 1.10, node labels and taints 1.14 (plan/magnum/api_rules.py);
- ``labels`` without ``merge_labels`` replace every cluster label on the new nodegroup;
- a nodegroup gpupool creates carries its owner in ``labels`` (``gpupool.io/owner``, which Magnum keeps and no
  PATCH changes), and only a nodegroup of this owner, or an unowned one the pool adopts, is changed
  (plan/magnum/ownership.py).

The desired state comes from plan/magnum/desired.py, values are compared in plan/magnum/values.py's form; the
client negotiates the microversion and waits for each action's ``expect`` (openstack/magnum_versions.py,
openstack/magnum_wait.py).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, NamedTuple, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import OWNER_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum import ownership
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.actions import (
    NODE_FIELDS,
    Action,
    Plan,
    bounds_text,
    patch_ops,
    within,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import (
    COMPLETE_STATES,
    NODE_LABELS_VERSION,
    ZERO_NODES_VERSION,
    Version,
    format_version,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import COUNT_FIELDS
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.values import normalize_field, normalize_labels

# Fields shown in diffs (API names).
VIEW_FIELDS = (
    "name",
    "role",
    "flavor_id",
    "image_id",
    *COUNT_FIELDS,
    "docker_volume_size",
    "labels",
    "node_labels",
    "node_taints",
)
# What a create sends when the task asks for it; labels go with merge_labels (_sent_labels).
CREATE_FIELDS = tuple(f for f in VIEW_FIELDS if f not in ("name", "labels"))
IMMUTABLE = (
    ("flavor_id", "flavor"),
    ("image_id", "image"),
    ("docker_volume_size", "docker_volume_size"),
    ("role", "role"),
)


def view(nodegroup: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The comparable part of an API nodegroup (for diffs and results)."""
    if not nodegroup:
        return {}
    return {f: normalize_field(f, nodegroup[f]) for f in VIEW_FIELDS if f in nodegroup}


def _task_labels(desired):
    """The labels the task asks for: the inventory's cluster-wide labels under the pool's own (None: none)."""
    if desired["labels"] is None and not desired.get("cluster_labels"):
        return None
    sent = dict(desired.get("cluster_labels") or {})
    sent.update(desired["labels"] or {})
    return sent


def _sent_labels(desired):
    """The labels a create sends: the task's, and the owner label (plan/magnum/ownership.py) when there is an
    owner - the one field Magnum keeps that no PATCH can change (None: send none)."""
    labels = _task_labels(desired)
    if desired.get("owner"):
        labels = dict(labels or {}, **{OWNER_LABEL: desired["owner"]})
    return labels


def _merges(desired):
    """Whether a create sends merge_labels: as asked, and always when the owner label is all it sends (without
    labels Magnum copies the cluster's; the owner label alone must not drop them)."""
    return bool(desired["merge_labels"]) or _task_labels(desired) is None


def _expected_labels(desired, cluster_labels):
    labels = _sent_labels(desired)
    if labels is None:
        return dict(cluster_labels)
    if _merges(desired):
        merged = dict(cluster_labels)
        merged.update(labels)
        return merged
    return dict(labels)


def _where(desired, cluster):
    return "nodegroup '%s' of cluster '%s'" % (desired["name"], cluster.get("name") or cluster.get("uuid"))


def plan_nodegroup(
    desired: Mapping[str, Any],
    observed: Optional[Mapping[str, Any]],
    cluster: Mapping[str, Any],
    version: Version,
    state: str = "present",
) -> Plan:
    """Desired state (plan/magnum/desired.py), the observed nodegroup (full API view or None), the cluster
    (API view) and the negotiated microversion (major, minor) => Plan. Raises Problems with a fix-it message."""
    version = tuple(version)
    where = _where(desired, cluster)
    before = view(observed)
    if observed is not None:
        # before anything else, for every kind of action: another owner's nodegroup, or one of none not adopted,
        # is left as it is (plan/magnum/ownership.py)
        refused = ownership.refusal(desired, observed, where)
        if refused:
            raise Problems(refused)
    if state == "absent":
        return _plan_absent(observed, before, where)
    if desired.get("node_labels_if_supported") and version < NODE_LABELS_VERSION:
        desired = dict(desired, node_labels=None, node_taints=None)
    _check_versions(desired, version, where)
    if observed is None:
        return _plan_create(desired, cluster, version, where)
    return _plan_update(desired, observed, before, where)


def _check_versions(desired, version, where):
    needs = [f for f in NODE_FIELDS if desired.get(f) is not None]
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


class Counts(NamedTuple):
    """A nodegroup's node count and bounds now and as planned (high None: unbounded)."""

    count: int
    low: int
    high: Optional[int]
    new_count: int
    new_low: int
    new_high: Optional[int]


def _count_problem(where, count, low, high, given):
    """The sentence for counts that break min <= count <= max, or None. `given`: (count, low, high) were asked
    for (else they are the current values)."""

    def label(name: str, value: Any, asked: bool) -> str:
        return "%s %s%s" % (name, value, "" if asked else " (current)")

    if high is not None and low > high:
        return "%s: %s is above %s. Set min_node_count <= max_node_count." % (
            where,
            label("min_node_count", low, given[1]),
            label("max_node_count", high, given[2]),
        )
    if not within(count, low, high):
        bounds = "[%s, %s]" % (
            label("min_node_count", low, given[1]),
            label("max_node_count", "unbounded" if high is None else high, given[2]),
        )
        return (
            "%s: %s is outside %s. Set node_count, min_node_count and max_node_count so that min <= count <= max."
            % (
                where,
                label("node_count", count, given[0]),
                bounds,
            )
        )
    return None


def _asked(desired):
    return tuple(desired[f] is not None for f in COUNT_FIELDS)


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
    problem = _count_problem(where, count, low, high, _asked(desired))
    if problem:
        raise Problems(problem.replace(" (current)", " (default)"))
    body = {"name": desired["name"]}
    body.update((f, desired[f]) for f in CREATE_FIELDS if desired.get(f) is not None)
    if _sent_labels(desired) is not None:
        body["labels"] = _sent_labels(desired)
        if _merges(desired):
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


def _label_problem(desired, have, inherited):
    """What differs in the nodegroup's Magnum labels from the ones the task asks for, or None."""
    if desired["labels"] is None:
        return None
    if desired["merge_labels"]:
        wrong = {k: v for k, v in desired["labels"].items() if have.get(k) != v}
        if not wrong:
            return None
        changes = "; ".join("%s: %r -> %r" % (k, have.get(k), v) for k, v in sorted(wrong.items()))
        return "labels %s differ (%s)" % (", ".join(sorted(wrong)), changes)
    extra = sorted(set(have) - set(desired["labels"]) - set(inherited) - {OWNER_LABEL})
    wrong = sorted(k for k, v in desired["labels"].items() if have.get(k) != v)
    detail = []
    if wrong:
        detail.append("different or missing: %s" % ", ".join(wrong))
    if extra:
        detail.append("present but not asked for (merge_labels is false): %s" % ", ".join(extra))
    return "labels differ (%s)" % "; ".join(detail) if detail else None


def _immutable_problems(desired, observed):
    """(problems, drift): changes Magnum cannot make that the task asks for, and the cluster-wide labels
    (`cluster_labels`) the nodegroup has with another value: {key: {"nodegroup": have, "inventory": want}}."""
    problems = []
    for name, option in IMMUTABLE:
        want, have = desired.get(name), observed.get(name)
        if want is not None and str(want) != str(have):
            problems.append("%s is %r, the task asks for %r" % (option, have, want))
    have = normalize_labels(observed.get("labels") or {})
    inherited = desired.get("cluster_labels") or {}
    drift = {k: {"nodegroup": have.get(k), "inventory": v} for k, v in sorted(inherited.items()) if have.get(k) != v}
    labels = _label_problem(desired, have, inherited)
    return problems + ([labels] if labels else []), drift


def drift_note(where: str, drift: Mapping[str, Mapping[str, Any]]) -> str:
    """The warning for cluster-wide labels an existing nodegroup has with another value."""
    labels = ", ".join("%s=%r (inventory: %r)" % (k, d["nodegroup"], d["inventory"]) for k, d in sorted(drift.items()))
    return (
        "%s keeps the Magnum label(s) it was created with: %s. gpupool_cluster.magnum.labels now says otherwise; "
        "Magnum cannot change the labels of an existing nodegroup, so only nodegroups created from now on get "
        "the new value. To move this one, create a replacement nodegroup (another nodegroup.name), move the "
        "workloads and set state: absent on the old pool - or keep the old value in the pool's nodegroup.labels "
        "to silence this." % (where, labels)
    )


# ---------------------------------------------------------------------------------------- update
def _refuse_unrepairable(observed, where):
    """A nodegroup being deleted or that failed to be made or deleted cannot be updated."""
    status = observed.get("status") or ""
    if status == "DELETE_IN_PROGRESS":
        raise Problems("%s is being deleted (DELETE_IN_PROGRESS). Run again once it is gone to create it anew." % where)
    if status in ("CREATE_FAILED", "DELETE_FAILED"):
        raise Problems(
            "%s is in %s (%s). Magnum cannot repair it: delete it with state=absent and run again."
            % (where, status, observed.get("status_reason") or "no reason given")
        )


def _refuse_immutable(desired, observed, where):
    """Refuse what Magnum cannot change in place; returns the cluster-wide label drift (only reported)."""
    problems, drift = _immutable_problems(desired, observed)
    if problems:
        raise Problems(
            "%s cannot be changed in place: %s. Magnum cannot change the flavor, image, labels, docker volume "
            "size or role of an existing nodegroup (only node_count, min/max_node_count and, from microversion "
            "1.14, node_labels/node_taints). Create a nodegroup with another name and the new settings, move the "
            "workloads, then remove this one with state=absent - or change the task back to the current values."
            % (where, "; ".join(problems))
        )
    return drift


def _new_counts(desired, observed, where):
    """The counts now and as asked (an unset option keeps the current value), refused when out of order."""
    now = (observed.get("node_count") or 0, observed.get("min_node_count") or 0, observed.get("max_node_count"))
    new = tuple(have if desired[f] is None else desired[f] for f, have in zip(COUNT_FIELDS, now))
    problem = _count_problem(where, new[0], new[1], new[2], _asked(desired))
    if problem:
        raise Problems(problem)
    counts = Counts(*(now + new))
    if counts.new_count != counts.count and observed.get("role") == "master":
        raise Problems("%s: Magnum cannot resize master nodegroups; leave node_count unset for it." % where)
    return counts


def _bound_changes(low, high, new_low, new_high):
    """The min/max_node_count that change from (low, high) to (new_low, new_high)."""
    changes = {}
    if new_low != low:
        changes["min_node_count"] = new_low
    if new_high != high:
        changes["max_node_count"] = new_high
    return changes


def _node_field_changes(desired, observed):
    """The node labels and taints asked for that the nodegroup does not have (absent there: none)."""
    changes = {}
    for name in NODE_FIELDS:
        if desired.get(name) is not None:
            have = normalize_field(name, observed.get(name))
            if have is None:
                have = {} if name == "node_labels" else []
            if have != desired[name]:
                changes[name] = desired[name]
    return changes


class _Steps:
    """Makes the patch and resize actions of one update, worded for `where`."""

    def __init__(self, observed, desired, counts, where):
        self.observed, self.counts, self.where = observed, counts, where
        self.ident = observed.get("uuid") or desired["name"]

    def patch(
        self, changes: Dict[str, Any], final_low: int, final_high: Optional[int], summary: Optional[str] = None
    ) -> Action:
        """A patch, waited for until the bounds are (final_low, final_high) and the other changes show."""
        fields = {"min_node_count": final_low, "max_node_count": final_high}
        fields.update({k: v for k, v in changes.items() if k not in fields})
        expect = {"status": sorted(COMPLETE_STATES), "fields": fields}
        if summary is None:
            described = ", ".join("%s %s -> %s" % (k, self.observed.get(k), v) for k, v in changes.items())
            summary = "update %s: %s" % (self.where, described)
        return Action("patch", patch_ops(changes), expect, summary)

    def update(self, changes: Dict[str, Any]) -> Action:
        """A patch to the planned bounds."""
        return self.patch(changes, self.counts.new_low, self.counts.new_high)

    def resize(self, low_now: int, high_now: Optional[int]) -> Action:
        """The resize to the planned count, inside the bounds (low_now, high_now) Magnum then checks it against."""
        c = self.counts
        body = {"node_count": c.new_count, "nodegroup": self.ident}
        expect = {"status": sorted(COMPLETE_STATES), "fields": {"node_count": c.new_count}}
        summary = "resize %s from %d to %d node(s) (bounds %s)" % (
            self.where,
            c.count,
            c.new_count,
            bounds_text(low_now, high_now),
        )
        return Action("resize", body, expect, summary, shrink_by=max(0, c.count - c.new_count))


def _widen_resize_narrow(steps, counts, node_changes):
    """Neither order of resize and patch passes Magnum's checks: widen the bounds, resize, then narrow them."""
    c = counts
    wide_low = min(c.low, c.new_low)
    wide_high = None if c.high is None or c.new_high is None else max(c.high, c.new_high)
    widen = steps.patch(
        _bound_changes(c.low, c.high, wide_low, wide_high),
        wide_low,
        wide_high,
        "widen the bounds of %s to %s for the resize" % (steps.where, bounds_text(wide_low, wide_high)),
    )
    actions = [widen, steps.resize(wide_low, wide_high)]
    final = dict(_bound_changes(wide_low, wide_high, c.new_low, c.new_high), **node_changes)
    if final:
        actions.append(steps.update(final))
    return actions


def _update_actions(steps, counts, bound_changes, node_changes):
    """The patches and the resize in an order each of them passes Magnum's count checks in."""
    c = counts
    changes = dict(bound_changes, **node_changes)
    if c.new_count == c.count:
        return [steps.update(changes)] if changes else []
    if not bound_changes:
        return [steps.resize(c.low, c.high)] + ([steps.update(node_changes)] if node_changes else [])
    if within(c.new_count, c.low, c.high):  # resize within the current bounds, then move the bounds
        return [steps.resize(c.low, c.high), steps.update(changes)]
    if within(c.count, c.new_low, c.new_high):  # move the bounds first, then resize inside them
        return [steps.update(changes), steps.resize(c.new_low, c.new_high)]
    return _widen_resize_narrow(steps, c, node_changes)


def _plan_update(desired, observed, before, where):
    _refuse_unrepairable(observed, where)
    drift = _refuse_immutable(desired, observed, where)
    counts = _new_counts(desired, observed, where)
    bound_changes = _bound_changes(counts.low, counts.high, counts.new_low, counts.new_high)
    node_changes = _node_field_changes(desired, observed)
    actions = _update_actions(_Steps(observed, desired, counts, where), counts, bound_changes, node_changes)
    after = dict(before)
    after.update(bound_changes)
    after.update(node_changes)
    after["node_count"] = counts.new_count
    notes = [drift_note(where, drift)] if drift else []
    return Plan(actions, before, after, notes=notes, drift=drift)
