"""gpupool.core.run_lease run in-process against the Kubernetes API simulator: one coordination.k8s.io Lease per
cluster, taken, renewed, refused to another holder with what to do, and handed back."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.action import run_lease
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

GROUP = "coordination.k8s.io"
CLUSTER = {"name": "unit", "pools": [{"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}}]}


def run(**args):
    return run_action(run_lease, cluster=CLUSTER, **CONNECTION, **args)


def holder_of(api):
    lease = api.get(GROUP, "leases", "gpupool-run", "kube-system")
    return lease and lease["spec"].get("holderIdentity")


def test_check_mode_takes_nothing(api):
    out = run(holder="run-a", _ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert api.writes() == [] and holder_of(api) is None


def test_taken_then_renewed_by_the_same_holder(api):
    first = run(holder="run-a")
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["action"] == "created" and holder_of(api) == "run-a"
    second = run(holder="run-a")
    assert second.get("failed") is not True, second
    assert second["changed"] is False and holder_of(api) == "run-a"


def test_another_holder_is_refused_with_who_holds_it(api):
    run(holder="run-a")
    out = run(holder="run-b")
    assert out["failed"] is True
    assert "run-a" in said(out) and "gpupool-run" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())
    assert holder_of(api) == "run-a"


def test_released_by_its_holder_then_free_for_another(api):
    run(holder="run-a")
    out = run(holder="run-a", state="released")
    assert out.get("failed") is not True, out
    assert out["changed"] is True and out["action"] == "released"
    assert run(holder="run-a", state="released")["changed"] is False
    assert run(holder="run-b")["changed"] is True and holder_of(api) == "run-b"


def test_release_without_a_holder_says_which_value_to_pass(api):
    out = run(state="released")
    assert out["failed"] is True
    assert "state=released needs the holder" in said(out)
    assert api.requests == []
