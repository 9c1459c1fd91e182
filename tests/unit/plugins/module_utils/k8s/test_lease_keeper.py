"""k8s.lease_keeper: the run lease renewed in the background, and the step stopped before its next write once it is
lost (scripted client, scripted clocks; one test with the real thread)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease_keeper import LeaseKeeper, LeaseLost, renew
from tests.unit.plugins.module_utils.k8s.test_lease import Script, lease, run_lease


def test_renewing_a_held_lease_writes_it_with_its_resource_version():
    client = Script(lease("me", 30))
    out = renew(run_lease(client))
    ((method, body),) = client.writes
    assert method == "PUT" and body["metadata"]["resourceVersion"] == "7"
    assert body["spec"]["holderIdentity"] == "me" and out["action"] == "renewed"


@pytest.mark.parametrize(
    "current, words",
    [
        (lease("other", 5), "lost its run lease kube-system/gpupool-run to other"),
        (lease("other", 500), "lost its run lease kube-system/gpupool-run to other"),  # another run's, expired too
        (None, "was deleted or released"),
        (lease("", 0), "was deleted or released"),
    ],
)
def test_a_lease_that_is_not_ours_any_more_is_never_taken_back(current, words):
    client = Script(current)
    with pytest.raises(LeaseLost) as exc:
        renew(run_lease(client))
    assert words in exc.value.message and client.writes == []


def test_our_own_lease_past_its_expiry_is_renewed_nobody_held_it_meanwhile():
    client = Script(lease("me", 61))  # 60 s lease, renewed 61 s ago, still naming this run: nobody took it
    assert renew(run_lease(client))["action"] == "renewed" and client.writes[0][1]["spec"]["holderIdentity"] == "me"


def test_a_race_during_renewal_reads_again_and_finds_the_lease_taken():
    client = Script(lease("me", 30))
    client.race = lease("other", 0)
    with pytest.raises(LeaseLost, match="to other"):
        renew(run_lease(client))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def keeper_with(outcomes, duration=60):
    """A keeper whose renewals answer from `outcomes` (None: renewed; an exception: raised)."""
    clock, calls = Clock(), []

    def renew_once(_lease):
        calls.append(clock.now)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    lease_ = run_lease(Script(lease("me", 0)))
    lease_.duration = duration
    return LeaseKeeper(lease_, monotonic=clock, renew_once=renew_once), clock, calls


def test_a_lost_lease_stops_the_next_write_with_a_sentence():
    keeper, _clock, _calls = keeper_with([None, LeaseLost("this run lost its run lease kube-system/gpupool-run to x")])
    keeper.renew_now()
    keeper.check("cordoning node-1")  # still held: no exception
    keeper.renew_now()
    with pytest.raises(LeaseLost) as exc:
        keeper.check("cordoning node-1")
    assert "to x" in exc.value.message and "stopped before cordoning node-1" in exc.value.message
    assert "run again" in exc.value.hint


def test_unanswered_renewals_lose_the_lease_only_once_it_would_have_expired():
    down = K8sError("cannot reach the Kubernetes API", status=0)
    keeper, clock, _calls = keeper_with([down, down, down], duration=60)
    for now in (20.0, 40.0):
        clock.now = now
        keeper.renew_now()
        keeper.check()  # the lease is still ours on the server: keep working
    clock.now = 60.0
    keeper.renew_now()
    with pytest.raises(LeaseLost, match="could not renew its run lease .* for 60s"):
        keeper.check()


@given(st.lists(st.sampled_from(["ok", "down", "lost"]), max_size=12))
def test_the_keeper_says_lost_exactly_when_a_renewal_found_it_lost_or_it_went_unrenewed_for_a_duration(script):
    """Property: after any sequence of renewals 20 s apart (60 s lease), the keeper refuses writes iff some renewal
    found the lease taken, or renewals failed for a whole lease duration since the last success."""
    outcomes = [None if s == "ok" else K8sError("down") if s == "down" else LeaseLost("lost") for s in script]
    keeper, clock, _calls = keeper_with(list(outcomes), duration=60)
    last_ok, expected = 0.0, False
    for step, kind in enumerate(script, start=1):
        clock.now = 20.0 * step
        keeper.renew_now()
        if expected:
            continue
        if kind == "ok":
            last_ok = clock.now
        elif kind == "lost" or clock.now - last_ok >= 60:
            expected = True
    assert (keeper.lost is not None) == expected


def test_the_thread_renews_a_third_of_the_duration_apart_and_stops():
    renewed = threading.Event()
    count = []

    def renew_once(_lease):
        count.append(1)
        if len(count) >= 2:
            renewed.set()

    keeper = LeaseKeeper(run_lease(Script(lease("me", 0))), interval=0.05, renew_once=renew_once).start()
    assert renewed.wait(5.0)
    keeper.stop()
    after = len(count)
    assert not keeper._thread.is_alive() and after >= 2 and keeper.renewals >= 2
    assert keeper.interval == 0.05 and LeaseKeeper(run_lease(Script())).interval == 20.0  # 60 s lease: every 20 s


def test_the_keeper_never_renews_after_the_loss():
    keeper, _clock, calls = keeper_with([LeaseLost("lost"), None])
    keeper.renew_now()
    keeper.renew_now()
    assert len(calls) == 1 and keeper.lost == "lost"


def test_a_step_stops_writing_once_its_lease_went_unrenewed_for_a_duration_even_if_the_thread_is_late():
    keeper, clock, _calls = keeper_with([], duration=60)  # the thread never ran (a renewal request hangs)
    clock.now = 59.0
    keeper.check("cordoning node-1")
    clock.now = 60.0
    with pytest.raises(LeaseLost, match="went unrenewed for 60s .* stopped before cordoning node-1"):
        keeper.check("cordoning node-1")


def test_the_lease_life_counts_from_its_last_renewal_on_the_server_and_from_before_each_renewal_request():
    clock = Clock()
    keeper = LeaseKeeper(run_lease(Script(lease("me", 0))), monotonic=clock, age=50.0)  # renewed 50 s before the step
    clock.now = 9.0
    keeper.check()
    clock.now = 10.0
    with pytest.raises(LeaseLost):
        keeper.check()

    def slow_renewal(_lease):
        clock.now += 30.0  # the PUT took 30 s; the renewTime it wrote is from before it

    keeper = LeaseKeeper(run_lease(Script(lease("me", 0))), monotonic=clock, renew_once=slow_renewal)
    clock.now = 100.0
    keeper.renew_now()
    clock.now = 159.0
    keeper.check()
    clock.now = 160.0
    with pytest.raises(LeaseLost):
        keeper.check()


def test_a_step_whose_renewal_fails_sends_no_further_write_through_its_client():
    """K8sClient.request checks the keeper before every attempt of a write: a PATCH retried after a 503 while the
    lease was lost meanwhile is not sent again, the next write is never sent, reads still are."""
    from tests.unit.plugins.module_utils.k8s.test_schema_answers import Server, client

    keeper, _clock, _calls = keeper_with([LeaseLost("this run lost its run lease kube-system/gpupool-run to other")])
    server = Server((503, {"kind": "Status", "code": 503, "message": "busy"}))
    c = client(server)
    c._sleep = lambda _s: keeper.renew_now()  # the renewal thread finds the lease taken during the back-off
    c.write_guard = keeper.check
    with pytest.raises(LeaseLost) as exc:
        c.request("PATCH", "/api/v1/nodes/gpu-1", body={"spec": {"unschedulable": True}})
    assert server.sent == [("PATCH", "https://api.example:6443/api/v1/nodes/gpu-1")]
    assert "to other" in exc.value.message and "stopped before PATCH /api/v1/nodes/gpu-1" in exc.value.message
    for method in ("POST", "PUT", "DELETE"):
        with pytest.raises(LeaseLost):
            c.request(method, "/api/v1/namespaces/x/configmaps")
    assert len(server.sent) == 1
    assert c.request("GET", "/api/v1/nodes/gpu-1") == {} and len(server.sent) == 2


def test_a_drain_waiting_for_pods_to_leave_stops_within_one_poll_once_the_lease_is_lost():
    """The drain's wait only reads: it still stops at its next look after the loss, not at its deadline."""
    from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain
    from tests.unit.plugins.module_utils.k8s.kube_api_simulator import KubeApiSimulator
    from tests.unit.plugins.module_utils.k8s.test_drain import Clock as DrainClock
    from tests.unit.plugins.module_utils.k8s.test_drain import error, node, pod

    class Terminating(KubeApiSimulator):
        """An evicted pod takes its time to go (a long grace period): it stays listed."""

        def request(self, method, path, query=None, body=None, content_type=None, retry_status=None):
            if path.endswith("/eviction"):
                self.requests.append((method, path, body))
                return {"kind": "Status", "status": "Success", "code": 201}
            return super().request(method, path, query, body, content_type, retry_status)

    keeper, _clock, _calls = keeper_with([LeaseLost("this run lost its run lease kube-system/gpupool-run to other")])
    api = Terminating(error, nodes=[node("n0")], pods=[pod("train", "n0")])
    api.write_guard = keeper.check
    clock = DrainClock()
    polls = []

    def pause(seconds):
        polls.append(seconds)
        clock.pause(seconds)
        keeper.renew_now()  # the renewal thread finds the lease taken during the first pause

    with pytest.raises(LeaseLost, match="stopped before waiting for"):
        Drain(api, "nodegroup", clock=clock, pause=pause, timeout=3600).drain(["n0"])
    assert len(polls) == 1 and clock.now < 60  # one poll, far from the one-hour deadline
    assert [m for m, _p in api.writes()] == ["PATCH", "POST"]  # cordon and eviction before the loss, nothing after


def test_a_magnum_write_after_the_loss_is_never_sent_nor_retried_as_a_connection_error(monkeypatch):
    """The Magnum client checks the lease before each attempt of a write, outside its transport's error handling:
    the loss is the step's message (not 'failed after 6 attempts ... reachable'), and nothing is sent."""
    from types import SimpleNamespace

    from ansible_collections.gpupool.core.plugins.module_utils.openstack import magnum

    sent, slept = [], []
    monkeypatch.setattr(magnum, "_sleep", slept.append)

    def request(path, method, **_kw):
        sent.append((method, path))
        return SimpleNamespace(status_code=200, headers={}, json=lambda: {"uuid": "ng-1", "status": "UPDATE_COMPLETE"})

    conn = SimpleNamespace(container_infrastructure_management=SimpleNamespace(request=request, get_endpoint=str))
    client = magnum.MagnumClient(conn)
    client.version = (1, 10)
    keeper, _clock, _calls = keeper_with([LeaseLost("this run lost its run lease kube-system/gpupool-run to other")])
    client.write_guard = keeper.check
    client.get_nodegroup("k8s", "gpu-a")  # held: reads and writes go
    keeper.renew_now()
    with pytest.raises(LeaseLost) as exc:
        client.resize("k8s", "gpu-a", 0, ["node-1"])
    assert "stopped before POST /clusters/k8s/actions/resize" in exc.value.message
    assert sent == [("GET", "/clusters/k8s/nodegroups/gpu-a")] and slept == []


@given(
    st.floats(min_value=0.0, max_value=59.0),
    st.lists(
        st.tuples(
            st.sampled_from(["renewal", "write"]),
            st.floats(min_value=0.0, max_value=90.0),  # the time since the previous event (a SIGSTOP: any of it)
            st.floats(min_value=0.0, max_value=30.0),  # how long a renewal's request took to answer
            st.sampled_from(["ok", "down", "lost"]),
        ),
        max_size=15,
    ),
)
def test_the_fence_never_lets_a_write_through_a_whole_duration_after_the_last_renewal_was_sent(age, events):
    """Property (issue #32, client-go's leader election rule): whatever the renewals do, however long the process
    is paused between two events, and however long a renewal's request hangs, a write is allowed only at a monotonic
    time before (the send time of the last renewal that reached the server) + the lease duration. The step's
    start counts as a renewal `age` seconds before it (the renewTime it read)."""
    clock = Clock()
    clock.now = 100.0
    outcomes = []

    def renew_once(_lease):
        took, outcome = outcomes.pop(0)
        clock.now += took
        if outcome == "down":
            raise K8sError("cannot reach the Kubernetes API", status=0)
        if outcome == "lost":
            raise LeaseLost("this run lost its run lease kube-system/gpupool-run to other")

    lease_ = run_lease(Script(lease("me", 0)))
    keeper = LeaseKeeper(lease_, monotonic=clock, renew_once=renew_once, renewed_at=clock.now - age)
    last_sent, lost = clock.now - age, False
    for kind, pause, took, outcome in events:
        clock.now += pause
        if kind == "renewal":
            sent = clock.now
            outcomes.append((took, outcome))
            keeper.renew_now()
            if keeper.lost is None and outcome == "ok":
                last_sent = sent
            lost = lost or outcome == "lost"
            continue
        try:
            keeper.check("a write")
            allowed = True
        except LeaseLost:
            allowed = False
        if allowed:
            assert clock.now < last_sent + 60.0 and not lost
        else:
            assert keeper.lost is not None  # once refused, refused for good: no later write either


def test_the_keeper_starts_from_the_renewal_the_step_saw_and_retries_a_failed_renewal_soon():
    clock = Clock()
    clock.now = 1000.0
    keeper = LeaseKeeper(run_lease(Script(lease("me", 0))), monotonic=clock, renewed_at=950.0)
    clock.now = 1009.9
    keeper.check()
    clock.now = 1010.0  # 60 s after the renewal the step saw, not 60 s after the keeper started
    with pytest.raises(LeaseLost, match="went unrenewed for 60s"):
        keeper.check()
    waits, results = [], [False, True]  # a renewal that failed, one that reached the server

    class Stop:
        def wait(self, seconds):
            waits.append(seconds)
            return not results

    keeper = LeaseKeeper(run_lease(Script(lease("me", 0))))
    keeper._stop = Stop()
    keeper.renew_now = lambda: results.pop(0)
    keeper._loop()
    assert waits == [20.0, 2.0, 20.0]  # a third of 60 s; after a failure, the retry period
