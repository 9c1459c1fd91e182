"""k8s.lease: who holds the run lease, when it expires, and how a run takes, renews or loses it (scripted client)."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import (
    LeaseHeld,
    LeaseLost,
    RunLease,
    lease_body,
    microtime,
    state_of,
)

NOW = datetime.datetime(2026, 11, 23, 3, 0, 0, tzinfo=datetime.timezone.utc)


def lease(holder, renewed_ago, duration=60, rv="7"):
    return {
        "metadata": {"name": "gpupool-run", "namespace": "kube-system", "resourceVersion": rv},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": microtime(NOW - datetime.timedelta(seconds=renewed_ago + 5)),
            "renewTime": microtime(NOW - datetime.timedelta(seconds=renewed_ago)),
        },
    }


def test_state_of_a_lease():
    assert state_of(None, "me", NOW) == ("free", 0.0)
    assert state_of(lease("", 0), "me", NOW)[0] == "free"  # released
    assert state_of(lease("me", 10), "me", NOW)[0] == "mine"
    assert state_of(lease("other", 10), "me", NOW) == ("held", 50.0)
    assert state_of(lease("other", 61), "me", NOW)[0] == "expired"  # a killed run stopped renewing


def test_taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time():
    old = lease("other", 90)
    taken = lease_body("gpupool-run", "kube-system", "me", 60, NOW, "run", old)
    assert taken["metadata"]["resourceVersion"] == "7"  # the precondition: one of two racing runs wins
    assert taken["spec"]["holderIdentity"] == "me" and taken["spec"]["leaseTransitions"] == 1
    assert taken["spec"]["acquireTime"] == microtime(NOW)
    mine = lease("me", 30)
    renewed = lease_body("gpupool-run", "kube-system", "me", 60, NOW, "run", mine)
    assert renewed["spec"]["acquireTime"] == mine["spec"]["acquireTime"] and renewed["spec"]["renewTime"] == microtime(
        NOW
    )


class Script:
    """A client answering GETs from a current lease and recording writes; `race` makes the next write 409."""

    def __init__(self, current=None):
        self.current, self.writes, self.race = current, [], None

    @staticmethod
    def path(group, version, plural, namespace=None, name=None):
        return "/apis/%s/%s/namespaces/%s/%s%s" % (group, version, namespace, plural, "/" + name if name else "")

    def request(self, method, path, query=None, body=None):
        if method == "GET":
            if self.current is None:
                raise NotFound("not found", status=404)
            return self.current
        self.writes.append((method, body))
        if self.race is not None:
            self.current, self.race = self.race, None
            raise Conflict("changed", status=409)
        self.current = None if method == "DELETE" else dict(body, metadata=dict(body["metadata"], resourceVersion="8"))
        return self.current


def run_lease(client, holder="me", check=False, monotonic=lambda: 1000.0):
    return RunLease(
        client, "kube-system", "gpupool-run", holder, 60, check_mode=check, clock=lambda: NOW, monotonic=monotonic
    )


def test_acquire_creates_takes_renews_and_refuses_naming_the_holder():
    client = Script()
    assert run_lease(client).acquire()["action"] == "created" and client.writes[0][0] == "POST"
    assert run_lease(client).acquire()["action"] == "renewed" and client.writes[1][0] == "PUT"
    with pytest.raises(LeaseHeld) as err:
        run_lease(client, holder="second").acquire()
    assert "holder me" in err.value.message and "expires by itself in 60s" in err.value.message
    assert "kubectl -n kube-system delete lease gpupool-run" in err.value.describe()
    assert len(client.writes) == 2  # the refused run wrote nothing
    stale = Script(lease("killed", 300))
    out = run_lease(stale).acquire()
    assert out["action"] == "taken" and out["previous"] == "killed"


def test_two_runs_racing_for_a_free_lease_one_wins_the_other_is_told():
    client = Script(lease("", 0))
    client.race = lease("other", 0)  # the other run's write lands between our read and our write
    with pytest.raises(LeaseHeld):
        run_lease(client).acquire()


def test_check_mode_never_writes_and_release_leaves_another_runs_lease():
    client = Script()
    assert run_lease(client, check=True).acquire()["action"] == "would be created" and client.writes == []
    other = Script(lease("other", 1))
    assert run_lease(other).release()["action"] == "not held" and other.writes == []
    mine = Script(lease("me", 1))
    assert run_lease(mine).release()["action"] == "released"
    assert mine.writes[0][1]["preconditions"] == {"resourceVersion": "7"}


def test_a_step_of_a_run_whose_lease_was_taken_over_stops():
    client = Script(lease("other", 1))
    with pytest.raises(LeaseHeld) as err:
        run_lease(client).hold()
    assert err.value.message.startswith("this run lost its lease")
    fresh = Script(lease("me", 5))
    assert run_lease(fresh).hold()["action"] == "held" and fresh.writes == []  # a young lease is not rewritten
    old = Script(lease("me", 30))  # a third of 60 s has passed: renewed
    assert run_lease(old).hold()["action"] == "renewed" and old.writes[0][0] == "PUT"


@pytest.mark.parametrize(
    "current, words",
    [
        (None, "kube-system/gpupool-run was deleted or released"),  # the run that took it over finished
        (lease("", 0), "kube-system/gpupool-run was deleted or released"),
        (lease("second", 90), "lost its run lease kube-system/gpupool-run to second"),  # taken, then let expire
    ],
)
def test_a_step_never_takes_again_a_lease_its_run_lost_in_between(current, words):
    """Issue #32: a run paused between two steps (SIGSTOP) whose lease expired, was taken by a second run and then
    released (or left to expire) used to take it again at its next step and write on. Now the step stops, writes
    nothing, and says whose it is (or that it is gone)."""
    client = Script(current)
    with pytest.raises(LeaseLost) as err:
        run_lease(client).hold()
    assert words in err.value.message and "stopped before its first write" in err.value.message
    assert client.writes == []


def test_check_mode_steps_take_nothing_and_say_what_a_real_run_would_do():
    client = Script()  # run_lease in check mode wrote nothing: the lease is free
    assert run_lease(client, check=True).hold()["action"] == "would be created" and client.writes == []


def test_our_own_lease_past_its_expiry_at_a_steps_start_is_renewed_and_counts_from_before_the_renewal():
    """Paused between two steps past its expiry, nobody took it (it still names this run): no other run wrote, so
    the step renews it (with the resourceVersion it read) and its life counts from before that write was sent."""
    ticks = iter([500.0, 501.0])  # after the step's read, just before the renewal's PUT
    client = Script(lease("me", 300))
    held = run_lease(client, monotonic=lambda: next(ticks))
    assert held.hold()["action"] == "renewed" and held.renewed_at == 501.0
    ((method, body),) = client.writes
    assert method == "PUT" and body["metadata"]["resourceVersion"] == "7"
    client = Script(lease("me", 300))
    client.race = lease("second", 0)  # a second run takes it between our read and our write: not taken back
    with pytest.raises(LeaseLost, match="to second"):
        run_lease(client).hold()
    assert len(client.writes) == 1


def test_a_young_lease_at_a_steps_start_counts_its_life_from_its_renew_time():
    held = run_lease(Script(lease("me", 5)), monotonic=lambda: 1000.0)
    assert held.hold()["action"] == "held" and held.renewed_at == 995.0  # renewed 5 s before the read
