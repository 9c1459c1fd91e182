"""When a wait on a Magnum nodegroup is over (plugins/module_utils/openstack/magnum_wait.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_wait import evaluate_wait, failed_hint
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import COMPLETE_STATES


def test_wait_for_delete():
    assert evaluate_wait(None, {"gone": True})[0] == "done"
    assert evaluate_wait({"status": "DELETE_IN_PROGRESS"}, {"gone": True})[0] == "pending"
    assert evaluate_wait({"status": "DELETE_FAILED"}, {"gone": True})[0] == "failed"
    assert evaluate_wait({"status": "DELETE_FAILED"}, {"gone": True}, initial_status="DELETE_FAILED")[0] == "pending"
    assert evaluate_wait({"status": "DELETE_FAILED"}, {"gone": True}, True, "DELETE_FAILED")[0] == "failed"


def test_wait_for_create():
    expect = {"status": ["CREATE_COMPLETE"], "fields": {}}
    assert evaluate_wait(None, expect) == ("pending", "not visible yet")
    assert evaluate_wait({"status": "CREATE_IN_PROGRESS"}, expect)[0] == "pending"
    assert evaluate_wait({"status": "CREATE_COMPLETE"}, expect) == ("done", "CREATE_COMPLETE")
    assert evaluate_wait({"status": "CREATE_FAILED"}, expect)[0] == "failed"


def test_wait_for_resize_needs_the_new_count_and_a_complete_status():
    expect = {"status": sorted(COMPLETE_STATES), "fields": {"node_count": 3}}
    assert evaluate_wait({"status": "CREATE_COMPLETE", "node_count": 2}, expect)[0] == "pending"  # not picked up
    assert evaluate_wait({"status": "UPDATE_IN_PROGRESS", "node_count": 3}, expect)[0] == "pending"
    assert evaluate_wait({"status": "UPDATE_COMPLETE", "node_count": 3}, expect)[0] == "done"


def test_old_failure_is_ignored_until_the_new_operation_runs():
    expect = {"status": sorted(COMPLETE_STATES), "fields": {"node_count": 3}}
    old = {"status": "UPDATE_FAILED", "node_count": 2}
    assert evaluate_wait(old, expect, False, "UPDATE_FAILED")[0] == "pending"
    assert evaluate_wait(dict(old, node_count=3), expect, True, "UPDATE_FAILED")[0] == "failed"


def test_wait_compares_node_labels_normalized():
    expect = {"status": ["UPDATE_COMPLETE"], "fields": {"node_labels": {"a": "true"}}}
    assert evaluate_wait({"status": "UPDATE_COMPLETE", "node_labels": {"a": True}}, expect)[0] == "done"


def test_every_failed_status_gets_advice():
    assert "state=absent" in failed_hint("CREATE_FAILED")
    assert failed_hint("ROLLBACK_FAILED") == failed_hint(None) == "Fix the cause and run the task again."
