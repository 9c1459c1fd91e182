"""Unit tests of what one nodegroup call converges and reports (plugins/module_utils/plan/magnum/targets.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import plan_nodegroup
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.targets import (
    failure_message,
    must_settle,
    needs_cluster,
    pool_targets,
    pruned_target,
    standalone_target,
    step_result,
    target_drain,
)

NO_OPTIONS = {"drain": None, "drain_timeout": None, "drain_grace_period": None}
CLUSTER = {"name": "k8s", "flavor_id": "m1", "labels": {}}


def inventory():
    return load_cluster(
        {
            "name": "k8s-gpu",
            "magnum": {"cloud": "c", "cluster": "k8s"},
            "drain": {"timeout": 300},
            "pools": [
                {"name": "gpu-a", "gpu": {"model": "A100-40GB"}, "nodegroup": {"flavor": "g1", "node_count": 2}},
                {
                    "name": "gpu-b",
                    "gpu": {"model": "A100-40GB"},
                    "nodegroup": {"flavor": "g1"},
                    "drain": {"enabled": False},
                },
                {"name": "gpu-c", "gpu": {"model": "T4"}, "node_selector": {"site": "onprem"}},
            ],
        }
    )


def observed(**kw):
    out = {"uuid": "ng-1", "name": "gpu-a", "role": "worker", "flavor_id": "g1", "image_id": "img", "node_count": 2}
    out.update(min_node_count=0, max_node_count=None, status="CREATE_COMPLETE", is_default=False)
    out.update(labels={"gpupool.io/owner": "k8s-gpu"})  # made by the inventory k8s-gpu
    out.update(kw)
    return out


def test_a_target_per_pool_with_a_nodegroup_each_with_its_drain_policy():
    cluster = inventory()
    targets, skipped = pool_targets(cluster, cluster.pools, NO_OPTIONS)
    assert [(t.key, t.name, t.state) for t in targets] == [("gpu-a", "gpu-a", "present"), ("gpu-b", "gpu-b", "present")]
    assert skipped == {"gpu-c": "no nodegroup: its nodes are found by node_selector"}
    assert targets[0].desired["node_count"] == 2
    assert (targets[0].settings.enabled, targets[0].settings.timeout) == (True, 300), "the cluster's policy"
    assert targets[1].settings.enabled is False, "the pool's own policy"


def test_drain_options_of_the_call_override_the_policy_and_standalone_drains_only_when_asked():
    cluster = inventory()
    options = dict(NO_OPTIONS, drain=True, drain_timeout=60)
    assert target_drain(cluster, cluster.pools[1], options)[:2] == (True, 60)
    assert target_drain(None, None, NO_OPTIONS).enabled is False
    standalone = standalone_target(dict(NO_OPTIONS, name="gpu", state=None, merge_labels=None))
    assert (standalone.key, standalone.state, standalone.settings.enabled) == ("gpu", "present", False)


def test_only_a_nodegroup_to_create_needs_the_cluster():
    cluster = inventory()
    targets = pool_targets(cluster, cluster.pools, NO_OPTIONS)[0]
    both = {"gpu-a": {}, "gpu-b": {}}
    assert needs_cluster(targets, {"gpu-a": {}}) is True
    assert needs_cluster(targets, both) is False
    gone = pruned_target("old", "gpu-old", target_drain(cluster, None, NO_OPTIONS))
    assert needs_cluster([gone], {}) is False, "a delete of a nodegroup that is not there reads nothing more"


def test_a_nodegroup_in_progress_is_waited_for_only_when_waits_are_allowed():
    busy = observed(status="UPDATE_IN_PROGRESS")
    assert must_settle(busy, wait=True, may_wait=True)
    assert not must_settle(busy, wait=False, may_wait=True) and not must_settle(busy, wait=True, may_wait=False)
    assert not must_settle(observed(), wait=True, may_wait=True) and not must_settle(None, True, True)


def test_the_failure_names_each_failed_pool_and_counts_the_others():
    cluster = inventory()
    targets = pool_targets(cluster, cluster.pools, NO_OPTIONS)[0]
    targets[1].fail("flavor cannot change.", {"status": 409})
    assert failure_message(targets, standalone=False) == (
        "The nodegroups of 1 pool(s) failed (gpu-b); 1 other pool(s) were converged, see pools. "
        "Pool gpu-b: flavor cannot change."
    )
    assert failure_message(targets[1:], standalone=True) == "flavor cannot change."


def test_the_result_has_a_pool_entry_each_the_orphans_the_pruned_and_the_diff():
    cluster = inventory()
    targets, skipped = pool_targets(cluster, cluster.pools, NO_OPTIONS)
    for target in targets:
        target.of_cluster("k8s")
    targets[0].observed = observed(node_count=1)
    targets[0].planned(plan_nodegroup(targets[0].desired, targets[0].observed, CLUSTER, (1, 12)), check_mode=True)
    targets[1].fail("refused.", {"status": 409})
    gone = pruned_target("old", "gpu-old", targets[0].settings)
    out = step_result(
        targets + [gone], skipped, ["stray"], False, check_mode=True, diff_mode=True, version=(1, 12), events=["e"]
    )
    assert out["changed"] is True and out["microversion"] == "1.12" and out["progress"] == ["e"]
    assert sorted(out["pools"]) == ["gpu-a", "gpu-b", "gpu-c"]
    assert out["pools"]["gpu-a"]["changed"] is True and out["pools"]["gpu-a"]["nodegroup"]["node_count"] == 2
    assert out["pools"]["gpu-b"] == {
        "name": "gpu-b",
        "changed": False,
        "actions": [],
        "failed": True,
        "msg": "refused.",
        "status": 409,
    }
    assert out["pools"]["gpu-c"] == {"skipped": "no nodegroup: its nodes are found by node_selector"}
    assert out["orphaned"] == ["stray"] and out["pruned"] == {
        "old": {"name": "old", "changed": False, "actions": [], "pool": "gpu-old"}
    }
    assert [d["before_header"] for d in out["diff"]] == ["nodegroup 'gpu-a' of cluster 'k8s'"]
    assert out["diff"][0]["before"]["node_count"] == 1 and out["diff"][0]["after"]["node_count"] == 2


def test_written_means_changed_outside_check_mode():
    cluster = inventory()
    targets, skipped = pool_targets(cluster, cluster.pools, NO_OPTIONS)
    targets[0].observed = observed(node_count=1)
    targets[0].planned(plan_nodegroup(targets[0].desired, targets[0].observed, CLUSTER, (1, 12)), check_mode=False)
    out = step_result(targets, skipped, None, False, check_mode=False, diff_mode=False)
    assert out["changed"] is False and "nodegroup" not in out["pools"]["gpu-a"], "planned, nothing written yet"
    assert "orphaned" not in out and "diff" not in out and "microversion" not in out
    targets[0].wrote = True
    assert step_result(targets, skipped, None, False, check_mode=False, diff_mode=False)["changed"] is True


def test_standalone_result_is_the_one_nodegroups_at_the_top():
    target = standalone_target(dict(NO_OPTIONS, name="gpu-a", state=None, merge_labels=None, node_count=2))
    target.of_cluster("k8s")
    target.observed = observed(node_count=1, labels={})  # made by hand: standalone use has no owner
    target.planned(plan_nodegroup(target.desired, target.observed, CLUSTER, (1, 12)), check_mode=True)
    target.result["drain"] = {"victims": []}
    out = step_result([target], {}, None, True, check_mode=True, diff_mode=True)
    assert out["actions"][0]["action"] == "resize" and out["nodegroup"]["node_count"] == 2
    assert out["drain"] == {"victims": []} and "pools" not in out
    assert out["diff"]["before_header"] == "nodegroup 'gpu-a' of cluster 'k8s'"
    assert step_result([], {}, None, True, check_mode=False, diff_mode=False) == {"changed": False, "progress": []}


def test_the_nodegroups_prune_leaves_are_in_the_result_and_each_is_a_line_of_the_diff():
    cluster = inventory()
    targets, skipped = pool_targets(cluster, cluster.pools, NO_OPTIONS)
    left = {
        "gpu-t4": "leave nodegroup 'gpu-t4' of cluster 'k8s': owned by 'team-a'",
        "by-hand": "leave nodegroup 'by-hand' of cluster 'k8s': it has no owner",
    }
    out = step_result(targets, skipped, ["by-hand"], False, check_mode=True, diff_mode=True, left=left)
    assert out["left"] == left and out["orphaned"] == ["by-hand"]
    assert out["diff"] == [{"prepared": left["by-hand"] + "\n"}, {"prepared": left["gpu-t4"] + "\n"}]
    assert "left" not in step_result(targets, skipped, [], False, check_mode=True, diff_mode=False, left={})
