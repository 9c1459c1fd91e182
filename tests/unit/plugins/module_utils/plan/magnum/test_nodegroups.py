"""Unit tests of the pure nodegroup planner (plugins/module_utils/plan/magnum/: nodegroups, desired, values)."""

from __future__ import annotations

import ast
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.desired import (
    desired_from_pool,
    desired_state,
    orphaned_nodegroups,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import plan_nodegroup, view
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.values import (
    normalize_field,
    normalize_labels,
    normalize_taints,
)

CLUSTER = {"uuid": "c-1", "name": "k8s", "flavor_id": "m1", "labels": {"kube_tag": "v1.29", "cern_enabled": "true"}}


def params(**kw):
    base = {"name": "gpu", "merge_labels": True}
    base.update(kw)
    return base


def observed(**kw):
    ng = {
        "uuid": "ng-1",
        "name": "gpu",
        "role": "worker",
        "flavor_id": "g1",
        "image_id": "img",
        "node_count": 2,
        "min_node_count": 0,
        "max_node_count": None,
        "docker_volume_size": None,
        "is_default": False,
        "labels": {"kube_tag": "v1.29", "cern_enabled": "true", "nvidia_gpu_enabled": "true"},
        "node_labels": {},
        "node_taints": [],
        "status": "CREATE_COMPLETE",
        "status_reason": None,
    }
    ng.update(kw)
    return ng


def plan(p, obs=None, version=(1, 14), state="present", cluster=None):
    return plan_nodegroup(desired_state(p), obs, cluster or CLUSTER, version, state)


# ------------------------------------------------------------------------------------------- values
def test_labels_become_strings_like_the_cli_sends_them():
    assert normalize_labels({"a": True, "b": False, "c": 3, "d": 1.5, "e": "x", "f": None}) == {
        "a": "true",
        "b": "false",
        "c": "3",
        "d": "1.5",
        "e": "x",
        "f": "",
    }
    assert normalize_labels(None) is None


def test_taints_are_sorted_and_value_defaults_to_empty():
    assert normalize_taints(
        [{"key": "b", "effect": "NoSchedule"}, {"key": "a", "value": "x", "effect": "NoExecute"}]
    ) == [{"key": "a", "value": "x", "effect": "NoExecute"}, {"key": "b", "value": "", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"node_count": -1}, "node_count must be 0 or more"),
        ({"min_node_count": -2}, "min_node_count must be 0 or more"),
        ({"docker_volume_size": 0}, "docker_volume_size must be at least 1"),
        ({"node_taints": [{"key": "k", "effect": "Sometimes"}]}, "effect 'Sometimes'"),
    ],
)
def test_desired_state_validation(bad, match):
    with pytest.raises(Problems, match=match):
        desired_state(params(**bad))


def test_view_keeps_comparable_fields_only():
    v = view(observed(extra="x", labels={"a": True}))
    assert "extra" not in v and "status" not in v and v["labels"] == {"a": "true"}
    assert view(None) == {}


# ------------------------------------------------------------------------------------------- create
def test_create_with_merge_labels_sends_merge_flag_and_predicts_merged_labels():
    p = plan(params(flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": True}))
    (action,) = p.actions
    assert action.kind == "create"
    assert action.payload == {
        "name": "gpu",
        "flavor_id": "g1",
        "node_count": 2,
        "labels": {"nvidia_gpu_enabled": "true"},
        "merge_labels": True,
    }
    assert p.after["labels"] == {"kube_tag": "v1.29", "cern_enabled": "true", "nvidia_gpu_enabled": "true"}
    assert p.before == {} and p.changed
    assert action.expect["status"] == ["CREATE_COMPLETE"]


def test_create_without_merge_labels_gets_only_the_given_labels():
    p = plan(params(labels={"x": "1"}, merge_labels=False))
    assert "merge_labels" not in p.actions[0].payload
    assert p.after["labels"] == {"x": "1"}


def test_create_without_labels_copies_the_cluster_labels_and_sends_no_merge_flag():
    p = plan(params())
    assert p.actions[0].payload == {"name": "gpu"}
    assert p.after["labels"] == CLUSTER["labels"]
    assert p.after["flavor_id"] == "m1" and p.after["node_count"] == 1 and p.after["min_node_count"] == 0


def test_create_sends_every_given_field():
    p = plan(
        params(
            flavor="g1",
            image="img",
            node_count=3,
            min_node_count=1,
            max_node_count=5,
            docker_volume_size=50,
            role="gpu",
            node_labels={"pool": "a100"},
            node_taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        )
    )
    body = p.actions[0].payload
    assert body == {
        "name": "gpu",
        "flavor_id": "g1",
        "image_id": "img",
        "node_count": 3,
        "min_node_count": 1,
        "max_node_count": 5,
        "docker_volume_size": 50,
        "role": "gpu",
        "node_labels": {"pool": "a100"},
        "node_taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }


def test_create_master_is_refused():
    with pytest.raises(Problems, match="cannot create master nodegroups"):
        plan(params(role="master"))


@pytest.mark.parametrize(
    "kw, match",
    [
        (
            {"node_count": 5, "max_node_count": 3},
            r"node_count 5 is outside \[min_node_count 0 \(default\), max_node_count 3\]",
        ),
        ({"min_node_count": 3}, r"node_count 1 \(default\) is outside"),
        ({"node_count": 3, "min_node_count": 4, "max_node_count": 2}, "min_node_count 4 is above max_node_count 2"),
    ],
)
def test_create_with_inconsistent_counts_is_refused_before_any_request(kw, match):
    with pytest.raises(Problems, match=match):
        plan(params(**kw))


def test_zero_nodes_need_1_10():
    with pytest.raises(Problems, match="node_count 0 needs Magnum API microversion 1.10"):
        plan(params(node_count=0), version=(1, 9))
    assert plan(params(node_count=0), version=(1, 10)).actions[0].payload["node_count"] == 0


@pytest.mark.parametrize(
    "field, value", [("node_labels", {"a": "b"}), ("node_taints", [{"key": "k", "effect": "NoSchedule"}])]
)
def test_node_labels_and_taints_need_1_14(field, value):
    with pytest.raises(Problems, match="need Magnum API microversion 1.14, but the server only supports 1.12"):
        plan(params(**{field: value}), version=(1, 12))
    with pytest.raises(Problems, match="1.14"):
        plan(params(**{field: value}), observed(), version=(1, 12))


def test_create_after_has_no_node_labels_before_1_14():
    assert "node_labels" not in plan(params(), version=(1, 12)).after


# ------------------------------------------------------------------------------------------- absent
def test_absent_and_missing_is_a_no_op():
    p = plan(params(), None, state="absent")
    assert not p.changed and p.after == {}


def test_absent_deletes_and_waits_for_404():
    p = plan(params(), observed(), state="absent")
    (action,) = p.actions
    assert action.kind == "delete" and action.expect == {"gone": True}
    assert p.after == {} and p.before["name"] == "gpu"


def test_default_nodegroup_cannot_be_deleted():
    with pytest.raises(Problems, match="default nodegroup"):
        plan(params(), observed(is_default=True, name="default-worker"), state="absent")


def test_absent_while_delete_in_progress_only_waits():
    p = plan(params(), observed(status="DELETE_IN_PROGRESS"), state="absent")
    assert not p.changed and p.wait_gone


# ------------------------------------------------------------------------------------------- update
def test_same_settings_plan_nothing():
    p = plan(
        params(
            flavor="g1",
            image="img",
            node_count=2,
            min_node_count=0,
            labels={"nvidia_gpu_enabled": "true"},
            role="worker",
            node_labels={},
            node_taints=[],
        ),
        observed(),
    )
    assert p.actions == [] and p.before == p.after


def test_unset_options_are_not_compared():
    assert plan(params(), observed(flavor_id="other", labels={})).actions == []


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"flavor": "g2"}, "flavor is 'g1', the task asks for 'g2'"),
        ({"image": "img2"}, "image is 'img', the task asks for 'img2'"),
        ({"docker_volume_size": 100}, "docker_volume_size is None, the task asks for 100"),
        ({"role": "gpu"}, "role is 'worker', the task asks for 'gpu'"),
        ({"labels": {"nvidia_gpu_enabled": "false"}}, "labels nvidia_gpu_enabled differ"),
        ({"labels": {"nvidia_gpu_enabled": "true"}, "merge_labels": False}, "present but not asked for"),
    ],
)
def test_immutable_fields_fail_with_what_to_do(kw, words):
    with pytest.raises(Problems) as err:
        plan(params(**kw), observed())
    text = str(err.value)
    assert words in text
    assert "cannot be changed in place" in text and "Create a nodegroup with another name" in text
    assert "state=absent" in text


def test_several_immutable_problems_are_reported_together():
    with pytest.raises(Problems) as err:
        plan(params(flavor="g2", image="x"), observed())
    assert "flavor is" in str(err.value) and "image is" in str(err.value)


def test_merge_labels_compares_only_given_keys_and_string_values():
    assert plan(params(labels={"nvidia_gpu_enabled": True}), observed()).actions == []


@pytest.mark.parametrize("status", ["CREATE_FAILED", "DELETE_FAILED"])
def test_broken_nodegroup_must_be_deleted_first(status):
    with pytest.raises(Problems, match="%s \\(quota\\).*state=absent" % status):
        plan(params(node_count=3), observed(status=status, status_reason="quota"))


def test_present_while_being_deleted_fails():
    with pytest.raises(Problems, match="being deleted"):
        plan(params(), observed(status="DELETE_IN_PROGRESS"))


def test_update_failed_can_be_retried():
    assert [a.kind for a in plan(params(node_count=3), observed(status="UPDATE_FAILED")).actions] == ["resize"]


def test_resize_up():
    p = plan(params(node_count=4), observed())
    (action,) = p.actions
    assert action.kind == "resize" and action.payload == {"node_count": 4, "nodegroup": "ng-1"}
    assert action.shrink_by == 0 and action.expect["fields"] == {"node_count": 4}
    assert p.before["node_count"] == 2 and p.after["node_count"] == 4


def test_resize_down_knows_how_many_nodes_go():
    (action,) = plan(params(node_count=1), observed(node_count=3)).actions
    assert action.shrink_by == 2


def test_master_cannot_be_resized():
    with pytest.raises(Problems, match="cannot resize master"):
        plan(params(name="default-master", node_count=3), observed(role="master", is_default=True))


def test_patch_min_max_only():
    (action,) = plan(params(min_node_count=1, max_node_count=5), observed()).actions
    assert action.kind == "patch"
    assert action.payload == [
        {"op": "replace", "path": "/min_node_count", "value": 1},
        {"op": "replace", "path": "/max_node_count", "value": 5},
    ]
    assert action.expect["fields"] == {"min_node_count": 1, "max_node_count": 5}


def test_max_below_current_count_without_node_count_is_refused():
    with pytest.raises(Problems, match=r"node_count 2 \(current\) is outside"):
        plan(params(max_node_count=1), observed())


def test_node_labels_patch_is_a_python_literal_string():
    (action,) = plan(
        params(node_labels={"pool": "a100"}, node_taints=[{"key": "gpu", "effect": "NoSchedule"}]), observed()
    ).actions
    ops = {op["path"]: op["value"] for op in action.payload}
    assert ast.literal_eval(ops["/node_labels"]) == {"pool": "a100"}
    assert ast.literal_eval(ops["/node_taints"]) == [{"key": "gpu", "value": "", "effect": "NoSchedule"}]
    assert all(isinstance(v, str) for v in ops.values())


def test_node_labels_equal_is_no_change():
    assert plan(params(node_labels={"pool": "a100"}), observed(node_labels={"pool": "a100"})).actions == []


def test_resize_with_node_labels_change_resizes_then_patches():
    kinds = [a.kind for a in plan(params(node_count=3, node_labels={"a": "b"}), observed()).actions]
    assert kinds == ["resize", "patch"]


# -------------------------------------------------------------------- ordering, checked exhaustively
def _magnum_accepts_patch(ng, ops):
    new = dict(ng)
    for op in ops:
        new[op["path"][1:]] = None if op["op"] == "remove" else op["value"]
    low, high, count = new["min_node_count"], new["max_node_count"], new["node_count"]
    if high is not None and (high < low or count > high):
        return None
    if low > count:
        return None
    return new


def _magnum_accepts_resize(ng, count):
    if count < ng["min_node_count"] or (ng["max_node_count"] is not None and count > ng["max_node_count"]):
        return None
    return dict(ng, node_count=count)


VALUES = range(0, 4)
HIGHS = [None, 0, 1, 2, 3]


def _valid(count, low, high):
    return low <= count and (high is None or (low <= high and count <= high))


STATES = [(c, lo, hi) for c in VALUES for lo in VALUES for hi in HIGHS if _valid(c, lo, hi)]


@pytest.mark.parametrize("start", STATES)
def test_every_reachable_target_is_reached_through_steps_magnum_accepts(start):
    """For every valid (count, min, max) start and every valid target (also with options left out), the
    planned actions pass Magnum's checks one by one (resize: new count within the current bounds;
    patch: the current count within the new bounds) and end exactly at the target."""
    c, lo, hi = start
    obs = observed(node_count=c, min_node_count=lo, max_node_count=hi)
    for tc, tlo, thi in itertools.product([None] + list(VALUES), [None] + list(VALUES), [None, 0, 1, 2, 3]):
        want = (c if tc is None else tc, lo if tlo is None else tlo, hi if thi is None else thi)
        try:
            p = plan(params(node_count=tc, min_node_count=tlo, max_node_count=thi), obs)
        except Problems:
            assert not _valid(*want), (start, want)
            continue
        assert _valid(*want), (start, want)
        ng = dict(obs)
        for action in p.actions:
            if action.kind == "resize":
                ng = _magnum_accepts_resize(ng, action.payload["node_count"])
            else:
                ng = _magnum_accepts_patch(ng, action.payload)
            assert ng is not None, (start, want, p.actions)
            for key, value in action.expect["fields"].items():
                assert ng[key] == value, (start, want, action)
        assert (ng["node_count"], ng["min_node_count"], ng["max_node_count"]) == want
        assert p.changed == (want != (c, lo, hi))
        assert len(p.actions) <= 3
        assert (p.after["node_count"], p.after["min_node_count"], p.after["max_node_count"]) == want


def test_widen_resize_narrow_when_no_order_works():
    kinds = [
        (a.kind, a.payload)
        for a in plan(
            params(node_count=1, min_node_count=0, max_node_count=2),
            observed(node_count=3, min_node_count=3, max_node_count=3),
        ).actions
    ]
    assert kinds == [
        ("patch", [{"op": "replace", "path": "/min_node_count", "value": 0}]),
        ("resize", {"node_count": 1, "nodegroup": "ng-1"}),
        ("patch", [{"op": "replace", "path": "/max_node_count", "value": 2}]),
    ]


# ------------------------------------------------------------------------------------------- from the model
def inventory(pools, labels=None):
    return load_cluster(
        {"name": "k8s-gpu", "magnum": {"cloud": "c", "cluster": "k8s", "labels": labels or {}}, "pools": pools}
    )


def pool(pool_name="gpu-a", **group):
    return {"name": pool_name, "gpu": {"model": "A100-40GB"}, "nodegroup": dict({"flavor": "g1"}, **group)}


def test_desired_from_pool_takes_the_models_defaults():
    cluster = inventory([pool()])
    assert desired_from_pool(cluster, cluster.pools[0]) == {
        "name": "gpu-a",
        "flavor_id": "g1",
        "image_id": None,
        "node_count": 1,
        "min_node_count": 0,
        "max_node_count": None,
        "docker_volume_size": None,
        "labels": None,
        "cluster_labels": None,
        "merge_labels": True,
        "role": "worker",
        "node_labels": {"gpupool.io/pool": "gpu-a"},
        "node_taints": [{"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}],
        "node_labels_if_supported": True,
        "owner": "k8s-gpu",
        "adopt": False,
        "adopt_at": "adopt: true in the nodegroup of pool gpu-a (gpupool_cluster.pools[0].nodegroup.adopt)",
    }


OWN = {"gpupool.io/owner": "k8s-gpu"}  # the Magnum label of a nodegroup the inventory k8s-gpu created
BIRTH = {
    "node_labels": {"gpupool.io/pool": "gpu-a"},
    "node_taints": [{"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}],
}


def test_new_nodes_carry_the_pools_labels_and_taints_from_birth_where_magnum_can():
    cluster = inventory(
        [
            dict(
                pool(),
                node_labels={"example.com/team": "ml", "node-role.kubernetes.io/gpu": ""},
                taints=[{"key": "example.com/dedicated", "value": "ml"}],
            )
        ]
    )
    desired = desired_from_pool(cluster, cluster.pools[0])
    create = plan_nodegroup(desired, None, CLUSTER, (1, 14)).actions[0].payload
    # node-role.kubernetes.io is not kubelet's to set, so Magnum would refuse it: node_pool sets it later
    assert create["node_labels"] == {"example.com/team": "ml", "gpupool.io/pool": "gpu-a"}
    assert create["node_taints"] == [
        {"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"},
    ]
    # before 1.14 the same pool is created without them (node_pool labels and taints after the join), no error
    old = plan_nodegroup(desired, None, CLUSTER, (1, 12))
    assert "node_labels" not in old.actions[0].payload and "node_taints" not in old.actions[0].payload
    # an existing nodegroup made before gets them by JSON-patch, so the nodes it makes later have them too
    patch = plan_nodegroup(desired, observed(name="gpu-a", node_count=1, labels=OWN), CLUSTER, (1, 14))
    assert [(a.kind, [op["path"] for op in a.payload]) for a in patch.actions] == [
        ("patch", ["/node_labels", "/node_taints"])
    ]
    assert plan_nodegroup(desired, observed(name="gpu-a", node_count=1, labels=OWN), CLUSTER, (1, 12)).actions == []


def test_desired_from_pool_splits_the_pools_labels_from_the_clusters():
    cluster = inventory([pool("p", labels={"a": True, "b": 2})], labels={"b": "1", "c": "cluster"})
    desired = desired_from_pool(cluster, cluster.pools[0])
    assert desired["labels"] == {"a": "true", "b": "2"} and desired["cluster_labels"] == {"c": "cluster"}


def test_create_sends_the_cluster_labels_under_the_pools():
    cluster = inventory([pool(labels={"a": "pool"})], labels={"a": "cluster", "b": "cluster"})
    plan_ = plan_nodegroup(desired_from_pool(cluster, cluster.pools[0]), None, CLUSTER, (1, 14))
    assert plan_.actions[0].payload["labels"] == dict(OWN, a="pool", b="cluster")
    assert plan_.after["labels"] == dict(OWN, kube_tag="v1.29", cern_enabled="true", a="pool", b="cluster")


def test_a_changed_cluster_label_is_drift_with_a_note_not_a_problem():
    cluster = inventory([pool(labels={"own": "1"})], labels={"kube_tag": "v1.30"})
    obs = observed(node_count=1, labels=dict(OWN, kube_tag="v1.29", own="1"), **BIRTH)
    plan_ = plan_nodegroup(desired_from_pool(cluster, cluster.pools[0]), obs, CLUSTER, (1, 14))
    assert plan_.actions == [] and plan_.drift == {"kube_tag": {"nodegroup": "v1.29", "inventory": "v1.30"}}
    (note,) = plan_.notes
    assert "kube_tag='v1.29' (inventory: 'v1.30')" in note and "Magnum cannot change the labels" in note
    assert "nodegroup 'gpu-a' of cluster 'k8s'" in note


def test_the_pools_own_label_is_still_immutable():
    cluster = inventory([pool(labels={"own": "2"})], labels={"kube_tag": "v1.30"})
    obs = observed(node_count=1, labels=dict(OWN, kube_tag="v1.29", own="1"))
    with pytest.raises(Problems, match=r"labels own differ \(own: '1' -> '2'\)"):
        plan_nodegroup(desired_from_pool(cluster, cluster.pools[0]), obs, CLUSTER, (1, 14))


def test_without_merge_labels_cluster_labels_count_as_asked_for():
    cluster = inventory([pool(labels={"own": "1"}, merge_labels=False)], labels={"kube_tag": "v1.30"})
    desired = desired_from_pool(cluster, cluster.pools[0])
    ok = plan_nodegroup(
        desired, observed(node_count=1, labels=dict(OWN, kube_tag="v1.29", own="1"), **BIRTH), CLUSTER, (1, 14)
    )
    assert ok.actions == [] and list(ok.drift) == ["kube_tag"]
    with pytest.raises(Problems, match="present but not asked for .merge_labels is false.: extra"):
        plan_nodegroup(
            desired,
            observed(node_count=1, labels=dict(OWN, kube_tag="v1.30", own="1", extra="x")),
            CLUSTER,
            (1, 14),
        )


def test_orphaned_nodegroups_are_those_no_pool_declares():
    cluster = inventory([pool("gpu-a"), dict(pool("gpu-b", name="custom"), state="absent")])
    listing = [
        {"name": "default-master", "is_default": True, "role": "master"},
        {"name": "default-worker", "is_default": True, "role": "worker"},
        {"name": "gpu-a"},
        {"name": "custom"},
        {"name": "gpu-b"},
        {"name": "gpu-old", "role": "worker"},
    ]
    assert orphaned_nodegroups(listing, cluster) == ["gpu-b", "gpu-old"]


# -------------------------------------------------------------------- node labels and counts together
LABEL_SETS = st.dictionaries(st.sampled_from(["pool", "tier", "zone"]), st.sampled_from(["a", "b"]), max_size=2)
TAINT_SETS = st.lists(
    st.fixed_dictionaries({"key": st.sampled_from(["gpu", "mig"]), "effect": st.sampled_from(["NoSchedule"])}),
    max_size=2,
    unique_by=lambda t: t["key"],
)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    start=st.sampled_from(STATES),
    target=st.tuples(st.sampled_from([None, *VALUES]), st.sampled_from([None, *VALUES]), st.sampled_from(HIGHS)),
    have=st.tuples(LABEL_SETS, TAINT_SETS),
    want=st.tuples(st.none() | LABEL_SETS, st.none() | TAINT_SETS),
)
def test_node_labels_and_taints_ride_along_with_any_count_change(start, target, have, want):
    """Whatever the count change, the node labels and taints asked for are sent in exactly one patch (none when
    the nodegroup has them), every action passes Magnum's checks, and each wait expects what Magnum then shows."""
    (c, lo, hi), (tc, tlo, thi) = start, target
    obs = observed(node_count=c, min_node_count=lo, max_node_count=hi, node_labels=have[0], node_taints=have[1])
    try:
        p = plan(
            params(node_count=tc, min_node_count=tlo, max_node_count=thi, node_labels=want[0], node_taints=want[1]), obs
        )
    except Problems:
        assert not _valid(c if tc is None else tc, lo if tlo is None else tlo, hi if thi is None else thi)
        return
    ng = dict(obs)
    for action in p.actions:
        if action.kind == "resize":
            ng = _magnum_accepts_resize(ng, action.payload["node_count"])
        else:
            ng = _magnum_accepts_patch(ng, action.payload)
        assert ng is not None, (start, target, p.actions)
        for field in ("node_labels", "node_taints"):
            if isinstance(ng[field], str):  # a patch sends them as Python literals (Magnum literal_eval()s them)
                ng[field] = ast.literal_eval(ng[field])
        for key, value in action.expect["fields"].items():
            assert normalize_field(key, ng[key]) == value, (start, target, action)
    for field, wanted, had in (("node_labels", want[0], have[0]), ("node_taints", want[1], have[1])):
        expected = normalize_field(field, had if wanted is None else wanted)
        assert normalize_field(field, ng[field]) == expected
        sent = [
            a for a in p.actions if any(op["path"] == "/" + field for op in (a.payload if a.kind == "patch" else []))
        ]
        assert len(sent) == (0 if expected == normalize_field(field, had) else 1)
