"""plan/driver/release.pending_recovery: what the release step does about a release an interrupted helm left
pending, and when it refuses."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import release as r

NOW = datetime.datetime(2026, 11, 26, 18, 0, 0, tzinfo=datetime.timezone.utc)
HOLDER = "gpupool@host/1a2b3c4d"
MINE = {r.RUN_LABEL: r.run_label_value("gpupool@host/99887766")}


def rev(n, status, seconds_ago=30):
    updated = (NOW - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%S.123456789Z")
    return {"revision": n, "status": status, "updated": updated, "chart": "c-0.5.1", "description": ""}


def decide(history, pending=None, previous=None, holder=HOLDER):
    pending = MINE if pending is None else pending
    return r.pending_recovery(history, pending, previous or {}, holder, NOW, "rel", "ns")


def test_not_pending_is_left_alone():
    assert decide([]) is None
    assert decide([rev(1, "superseded"), rev(2, "deployed")]) is None
    assert decide([rev(1, "deployed"), rev(2, "failed")]) is None


def test_a_pending_upgrade_goes_back_to_the_last_deployed_revision():
    plan = decide([rev(1, "superseded"), rev(2, "deployed"), rev(3, "pending-upgrade")])
    assert plan["action"] == "rollback" and plan["revision"] == 2
    assert plan["pending"]["status"] == "pending-upgrade" and plan["pending"]["made_by"] == MINE[r.RUN_LABEL]
    assert "rolling back to revision 2, then upgrading" in plan["message"] and "ns/rel" in plan["message"]


def test_a_pending_install_is_uninstalled_and_installed_again():
    plan = decide([rev(1, "pending-install")])
    assert plan["action"] == "reinstall" and plan["revision"] is None and "CRDs stay" in plan["message"]


def test_without_a_deployed_revision_it_reinstalls():
    assert decide([rev(1, "failed"), rev(2, "pending-upgrade")])["action"] == "reinstall"


def test_only_a_run_that_holds_the_lease_recovers():
    with pytest.raises(GpupoolError) as err:
        decide([rev(1, "deployed"), rev(2, "pending-upgrade")], holder=None)
    assert "run lease" in str(err.value) and "helm rollback rel -n ns" in str(err.value)


def test_a_young_pending_revision_of_another_tool_is_refused_an_old_one_taken_over():
    # no run label, or the label inherited unchanged from the revision before: not made by gpupool
    for pending, previous in (({}, {}), (MINE, MINE)):
        with pytest.raises(GpupoolError) as err:
            decide([rev(1, "deployed"), rev(2, "pending-upgrade", 60)], pending, previous)
        assert "something other than gpupool" in str(err.value) and "60 s ago" in str(err.value)
        old = decide([rev(1, "deployed"), rev(2, "pending-upgrade", r.FOREIGN_GRACE + 1)], pending, previous)
        assert old["action"] == "rollback" and old["pending"]["made_by"] == "not gpupool"


@given(st.text(min_size=1, max_size=200))
def test_run_label_values_are_valid_label_values(holder):
    value = r.run_label_value(holder)
    assert 0 < len(value) <= 63 and all(c.isascii() and (c.isalnum() or c in "._-") for c in value)
    assert value[0].isalnum() and value[-1].isalnum()


@given(
    st.lists(st.sampled_from(["deployed", "superseded", "failed", "uninstalled"]), max_size=6),
    st.sampled_from(r.PENDING_STATUSES),
)
def test_a_rollback_target_is_an_earlier_good_revision(statuses, pending):
    history = [rev(i + 1, s) for i, s in enumerate(statuses)] + [rev(len(statuses) + 1, pending)]
    plan = decide(history)
    if plan["action"] == "rollback":
        target = history[plan["revision"] - 1]
        assert target["status"] in ("deployed", "superseded") and pending != "pending-install"
    else:
        assert pending == "pending-install" or not any(s in ("deployed", "superseded") for s in statuses)


def test_helm_time_reads_helms_timestamps():
    assert r.helm_time("2026-11-26T17:59:30.123456789Z") == NOW - datetime.timedelta(seconds=29.876544)
    assert r.helm_time("2026-11-26T19:59:30.5+02:00") == NOW - datetime.timedelta(seconds=29.5)
    assert r.helm_time("yesterday") is None
