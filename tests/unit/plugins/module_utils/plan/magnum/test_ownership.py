"""Whose a Magnum nodegroup is (plan/magnum/ownership.py) and what a run may do to it (#32): the owner gpupool writes
into a nodegroup's Magnum labels at create, and no action of any kind - create aside - ever targets a nodegroup
whose owner label is not this run's, unless it has none and the pool adopts it. Properties over the planner and over
a whole run of the converge (runners/nodegroups.py) against a Magnum stand-in that records every write."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum import ownership
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import desired_from_pool, desired_state
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import plan_nodegroup
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.targets import pool_targets
from ansible_collections.gpupool.core.plugins.module_utils.runners.nodegroups import NodegroupConverge, NodegroupsFailed

OWNER = "gpupool.io/owner"
US, THEM = "team-b", "team-a"
CLUSTER = {"uuid": "c-1", "name": "k8s", "flavor_id": "m1", "labels": {"kube_tag": "v1.29"}}
OWNERS = st.sampled_from([None, "", US, THEM])  # the owner label a nodegroup carries (None: no such label)
NO_OPTIONS = {"pools": [], "drain": None, "drain_timeout": None, "drain_grace_period": None}


def labelled(owner, **labels):
    if owner is not None:
        labels[OWNER] = owner
    return labels


def nodegroup(name, owner, count=2, low=0, high=None, status="CREATE_COMPLETE"):
    return {
        "uuid": "uuid-" + name,
        "name": name,
        "role": "worker",
        "flavor_id": "g1",
        "image_id": "img",
        "node_count": count,
        "min_node_count": low,
        "max_node_count": high,
        "is_default": False,
        "labels": labelled(owner, kube_tag="v1.29"),
        "node_labels": {},
        "node_taints": [],
        "status": status,
    }


def inventory(pools, prune=False, owner=None):
    raw = {
        "name": "k8s-gpu",
        "magnum": {"cloud": "c", "cluster": "k8s", "prune_nodegroups": prune},
        "drain": {"enabled": False},  # the drain is planned only for a plan with actions (nodegroups.py)
        "allow_empty": True,
        "pools": pools,
    }
    if owner:
        raw["owner"] = owner
    return load_cluster(raw)


def pool(name, state="present", **group):
    return {"name": name, "state": state, "gpu": {"model": "T4"}, "nodegroup": dict({"flavor": "g1"}, **group)}


def ours(found, owner, adopt):
    """The rule, spelled out here on its own (not through the code under test): our owner label, or none and
    adopted. An empty label counts as none."""
    label = found or None
    return label == owner or (label is None and adopt)


# ------------------------------------------------------------------------------------------- the rule
@pytest.mark.parametrize(
    "found, owner, adopt, expected",
    [
        (US, US, False, ownership.OURS),
        (THEM, US, False, ownership.OTHER),
        (THEM, US, True, ownership.OTHER),  # adopt never takes another owner's
        (None, US, False, ownership.UNOWNED),
        ("", US, False, ownership.UNOWNED),
        (None, US, True, ownership.OURS),
        (None, None, False, ownership.OURS),  # standalone: only unowned ones
        (US, None, False, ownership.OTHER),
    ],
)
def test_the_owner_label_decides(found, owner, adopt, expected):
    assert ownership.verdict(nodegroup("gpu", found), owner, adopt) == expected


def test_a_created_nodegroup_carries_the_owner_and_keeps_the_cluster_labels():
    cluster = inventory([pool("gpu-a")], owner=US)
    create = plan_nodegroup(desired_from_pool(cluster, cluster.pools[0]), None, CLUSTER, (1, 14)).actions[0]
    assert create.payload["labels"] == {OWNER: US} and create.payload["merge_labels"] is True
    # without merge_labels the pool's own labels replace the cluster's, the owner label rides along
    cluster = inventory([pool("gpu-a", labels={"x": "1"}, merge_labels=False)])
    create = plan_nodegroup(desired_from_pool(cluster, cluster.pools[0]), None, CLUSTER, (1, 14)).actions[0]
    assert create.payload["labels"] == {"x": "1", OWNER: "k8s-gpu"} and "merge_labels" not in create.payload
    # standalone has no owner: nothing added
    create = plan_nodegroup(desired_state({"name": "gpu"}), None, CLUSTER, (1, 14)).actions[0]
    assert "labels" not in create.payload


def test_our_own_nodegroup_without_merge_labels_is_not_refused_for_its_owner_label():
    cluster = inventory([pool("gpu-a", labels={"x": "1"}, merge_labels=False)])
    desired = desired_from_pool(cluster, cluster.pools[0])
    have = nodegroup("gpu-a", "k8s-gpu", count=1)
    have["labels"] = {"x": "1", OWNER: "k8s-gpu"}
    assert plan_nodegroup(desired, have, CLUSTER, (1, 12)).actions == []


def test_the_inventory_may_not_set_the_owner_label_itself():
    with pytest.raises(Problems) as caught:
        load_cluster(
            {
                "name": "k8s-gpu",
                "magnum": {"cloud": "c", "cluster": "k8s", "labels": {OWNER: "x"}},
                "pools": [pool("gpu-a", labels={OWNER: "team-a"})],
            }
        )
    text = str(caught.value)
    assert "gpupool_cluster.magnum.labels.gpupool.io/owner" in text
    assert "gpupool_cluster.pools[0] (gpu-a).nodegroup.labels.gpupool.io/owner" in text
    assert "remove it from these labels" in text and "nodegroup.adopt: true" in text


# ------------------------------------------------------------------------------------------- the planner
@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    found=OWNERS,
    owner=st.sampled_from([None, US]),
    adopt=st.booleans(),
    state=st.sampled_from(["present", "absent"]),
    have=st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from([None, 1, 3])),
    want=st.tuples(st.none() | st.integers(0, 3), st.none() | st.integers(0, 3), st.none() | st.integers(0, 3)),
    node_labels=st.none() | st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2),
)
def test_no_planned_action_targets_a_nodegroup_that_is_not_ours(found, owner, adopt, state, have, want, node_labels):
    count, low, high = have
    observed = nodegroup("gpu", found, count, min(low, count), high if high is None or high >= count else count)
    desired = dict(
        desired_state(
            {
                "name": "gpu",
                "node_count": want[0],
                "min_node_count": want[1],
                "max_node_count": want[2],
                "node_labels": node_labels,
            }
        ),
        owner=owner,
        adopt=adopt,
    )
    mine = ours(found, owner, adopt)
    try:
        plan = plan_nodegroup(desired, observed, CLUSTER, (1, 14), state)
    except Problems as exc:
        if not mine:
            assert "was left as it is (no resize, patch, drain or delete)" in str(exc)
        return
    assert mine, (found, owner, adopt, [a.summary for a in plan.actions])


# ------------------------------------------------------------------------------------------- a whole run
class MagnumStandIn:
    """What the converge calls of openstack/magnum.MagnumClient, answering from a dict and recording writes."""

    version = (1, 14)

    def __init__(self, nodegroups):
        self.nodegroups = {ng["name"]: ng for ng in nodegroups}
        self.writes = []

    def _find(self, ident):
        return next((ng for ng in self.nodegroups.values() if ident in (ng["name"], ng["uuid"])), None)

    def list_nodegroups(self, cluster):
        return [{k: ng[k] for k in ("uuid", "name", "role", "is_default", "status")} for ng in self.nodegroups.values()]

    def get_nodegroup(self, cluster, ident):
        found = self._find(ident)
        return copy.deepcopy(found) if found else None

    def get_cluster(self, cluster):
        return dict(CLUSTER)

    def create_nodegroup(self, cluster, body):
        self.writes.append(("create", body["name"]))
        return dict(body, uuid="uuid-" + body["name"], status="CREATE_COMPLETE")

    def patch_nodegroup(self, cluster, ident, ops):
        self.writes.append(("patch", self._find(ident)["name"]))
        return self.get_nodegroup(cluster, ident)

    def delete_nodegroup(self, cluster, ident):
        self.writes.append(("delete", self._find(ident)["name"]))

    def resize(self, cluster, ident, count, remove=None):
        self.writes.append(("resize", self._find(ident)["name"]))

    def wait(self, cluster, ident, expect, timeout, what, initial_status=None):
        return self.get_nodegroup(cluster, ident)


class NodesStandIn:
    def __init__(self):
        self.reads = 0

    def list(self, group, version, resource):
        self.reads += 1
        return []


NAMES = ["ng-0", "ng-1", "ng-2", "stray-0", "stray-1"]


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    existing=st.dictionaries(st.sampled_from(NAMES), st.tuples(OWNERS, st.integers(0, 3))),
    pools=st.lists(
        st.tuples(st.sampled_from(["present", "absent"]), st.booleans(), st.integers(0, 3)), min_size=1, max_size=3
    ),
    prune=st.booleans(),
    check_mode=st.booleans(),
)
def test_no_write_of_a_whole_run_targets_a_nodegroup_that_is_not_ours(existing, pools, prune, check_mode):
    """Pools ng-0.. (each present or absent, adopting or not, some count) and a Magnum cluster with any of ng-0..
    and stray-0.. of any owner: whatever the run plans and writes - creates, resizes, patches, deletes, prunes - no
    write but a create targets a nodegroup not carrying our owner label, unless it has none and its pool adopts it."""
    declared = [
        pool("ng-%d" % i, state, adopt=adopt, node_count=count) for i, (state, adopt, count) in enumerate(pools)
    ]
    cluster = inventory(declared, prune=prune, owner=US)
    adopted = {p["name"] for p in declared if p["nodegroup"]["adopt"]}
    magnum = MagnumStandIn([nodegroup(name, owner, count) for name, (owner, count) in existing.items()])
    nodes = NodesStandIn()
    converge = NodegroupConverge(
        magnum,
        "k8s",
        kubernetes=lambda: nodes,
        warn=lambda text: None,
        progress=None,
        wait=True,
        wait_timeout=60,
        check_mode=check_mode,
        standalone=False,
    )
    targets, _skipped = pool_targets(cluster, cluster.pools, NO_OPTIONS)
    try:
        converge.run_call(targets, cluster, NO_OPTIONS)
    except NodegroupsFailed:
        pass
    for kind, name in magnum.writes:
        if kind == "create":
            assert name not in existing
            continue
        owner = existing[name][0]
        assert owner == US or (not owner and name in adopted), (kind, name, owner, magnum.writes)
    planned = [t for t in targets if t.plan is not None and t.plan.actions and t.observed is not None]
    for target in planned:
        assert ours(existing[target.name][0], US, target.name in adopted), target.name
    if check_mode:
        assert magnum.writes == []
    for name, line in converge.left.items():  # every one left is someone else's or no one's, and named so
        assert existing[name][0] != US and name in line
