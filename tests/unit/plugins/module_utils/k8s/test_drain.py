"""The one drain (k8s/drain.py) against the Kubernetes API simulator, with a virtual clock."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import EVICTION_RETRY_STATUS, Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CORDON_ANNOTATION
from tests.unit.plugins.module_utils.k8s.kube_api_simulator import KubeApiSimulator


def error(status, message):
    return {404: NotFound, 409: Conflict}.get(status, K8sError)(message, status=status)


def node(name, unschedulable=False, cordoned_by=None):
    meta = {"name": name, "labels": {"magnum.openstack.org/nodegroup": "gpu"}}
    if cordoned_by:
        meta["annotations"] = {CORDON_ANNOTATION: cordoned_by}
    return {"metadata": meta, "spec": {"unschedulable": True} if unschedulable else {}}


def pod(name, node_name, gpu=True, daemonset=False, ns="ml"):
    meta = {"name": name, "namespace": ns, "uid": "uid-" + name}
    if daemonset:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "dcgm"}]
    limits = {"nvidia.com/gpu": "1"} if gpu else {"cpu": "1"}
    return {"metadata": meta, "spec": {"nodeName": node_name, "containers": [{"resources": {"limits": limits}}]}}


class Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def pause(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock():
    return Clock()


def drain(api, clock, **kw):
    warnings = []
    d = Drain(api, "nodegroup", clock=clock, pause=clock.pause, warn=warnings.append, **kw)
    d.warnings = warnings
    return d


def test_drain_cordons_marks_and_evicts_only_gpu_pods(clock):
    api = KubeApiSimulator(
        error,
        nodes=[node("n0"), node("n1")],
        pods=[pod("train", "n0"), pod("web", "n0", gpu=False), pod("dcgm", "n0", daemonset=True), pod("other", "n1")],
    )
    d = drain(api, clock)
    done = d.drain(["n0"])
    assert done == {"cordoned": ["n0"], "evicted": ["ml/train"]}
    assert api.nodes["n0"]["spec"]["unschedulable"] is True
    assert api.nodes["n0"]["metadata"]["annotations"][CORDON_ANNOTATION] == "nodegroup"
    assert sorted(k[1] for k in api.pods) == ["dcgm", "other", "web"]
    assert d.warnings == [
        "node n0: pod ml/dcgm uses GPUs but is not evicted: DaemonSet pod (the MIG manager pauses GPU operands itself)"
    ]
    eviction = [body for method, path, body in api.requests if path.endswith("/eviction")]
    assert eviction == [
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "train", "namespace": "ml"},
            "deleteOptions": {"preconditions": {"uid": "uid-train"}},
        }
    ]


def test_cordon_leaves_someone_elses_cordon_alone_and_recognises_its_own(clock):
    api = KubeApiSimulator(
        error, nodes=[node("mine", True, "nodegroup"), node("theirs", True), node("mig", True, "mig-layout")]
    )
    d = drain(api, clock)
    assert [d.cordon(n) for n in ("mine", "theirs", "mig", "gone")] == ["ours", "theirs", "theirs", None]
    assert api.writes() == []


def test_cordon_from_a_listed_node_reads_nothing_and_sends_one_write_with_the_extra_patch(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")])
    d = drain(api, clock)
    (listed,) = d.nodes("magnum.openstack.org/nodegroup=gpu")
    before = len(api.requests)
    label = {"metadata": {"labels": {"nvidia.com/mig.config": "c", "nvidia.com/mig.config.state": None}}}
    assert d.cordon("n0", listed, also=label) == "cordoned"
    ((method, path, body),) = api.requests[before:]
    assert (method, path) == ("PATCH", "/api/v1/nodes/n0")
    assert body["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]
    assert api.nodes["n0"]["metadata"]["labels"]["nvidia.com/mig.config"] == "c"
    assert api.nodes["n0"]["spec"]["unschedulable"] is True


def test_the_extra_patch_goes_even_to_a_node_someone_else_cordoned(clock):
    api = KubeApiSimulator(error, nodes=[node("n0", True)])
    d = drain(api, clock)
    assert d.cordon("n0", also={"metadata": {"labels": {"x": "1"}}}) == "theirs"
    assert api.nodes["n0"]["metadata"]["labels"]["x"] == "1"
    assert CORDON_ANNOTATION not in (api.nodes["n0"]["metadata"].get("annotations") or {})


def test_a_node_changed_since_it_was_listed_is_read_again_and_decided_anew(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")])
    d = drain(api, clock)
    (stale,) = d.nodes("magnum.openstack.org/nodegroup=gpu")
    # someone else cordons it after our LIST
    api.request("PATCH", "/api/v1/nodes/n0", body={"spec": {"unschedulable": True}})
    assert d.cordon("n0", stale) == "theirs"
    assert [m for m, p, b in api.requests[-3:]] == ["PATCH", "PATCH", "GET"]  # theirs, our refused one, re-read
    assert CORDON_ANNOTATION not in (api.nodes["n0"]["metadata"].get("annotations") or {})


def test_uncordon_clears_the_mark(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")])
    d = drain(api, clock)
    d.cordon("n0")
    d.uncordon("n0")
    assert "unschedulable" not in api.nodes["n0"]["spec"]
    assert CORDON_ANNOTATION not in (api.nodes["n0"]["metadata"].get("annotations") or {})
    assert d.writes == 2


def test_a_cordon_a_person_set_after_gpupools_is_never_uncordoned(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")])
    d = drain(api, clock, reason="mig-layout:a100:cfg", run="run-1")
    d.cordon("n0")  # a run cordons, then is killed
    # a person: kubectl uncordon, then kubectl cordon (kubectl patches with its own field managers)
    api.request("PATCH", "/api/v1/nodes/n0", {"fieldManager": "kubectl-uncordon"}, {"spec": {"unschedulable": None}})
    api.request("PATCH", "/api/v1/nodes/n0", {"fieldManager": "kubectl-cordon"}, {"spec": {"unschedulable": True}})
    assert api.nodes["n0"]["metadata"]["annotations"][CORDON_ANNOTATION] == "nodegroup"  # the killed run's record
    assert d.uncordon("n0") == "theirs"
    assert api.nodes["n0"]["spec"]["unschedulable"] is True
    assert CORDON_ANNOTATION not in api.nodes["n0"]["metadata"]["annotations"]  # gpupool's record went
    assert d.warnings == [
        "node n0: cordoned by kubectl-cordon after gpupool's cordon; left cordoned (gpupool's "
        "cordon record on it was removed, so the cordon is theirs to lift)"
    ]
    method, _path, body = api.requests[-1]
    assert method == "PATCH" and "spec" not in body and body["metadata"]["resourceVersion"]


def test_an_uncordon_carries_the_version_it_decided_on_and_decides_anew_after_a_409(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")])
    d = drain(api, clock)
    d.cordon("n0")
    seen = api.request("GET", "/api/v1/nodes/n0")
    # between our read and our uncordon a person re-cordons it (kubectl uncordon + kubectl cordon)
    api.request("PATCH", "/api/v1/nodes/n0", {"fieldManager": "kubectl-uncordon"}, {"spec": {"unschedulable": None}})
    api.request("PATCH", "/api/v1/nodes/n0", {"fieldManager": "kubectl-cordon"}, {"spec": {"unschedulable": True}})
    assert d.uncordon("n0", seen) == "theirs"  # refused (409) at the old version, read again: the person's now
    assert api.nodes["n0"]["spec"]["unschedulable"] is True
    ours = api.requests[-3:]  # after the person's two patches
    assert [m for m, _p, _b in ours] == ["PATCH", "GET", "PATCH"]  # refused, read again, the record removed
    assert ours[0][2]["metadata"]["resourceVersion"] == seen["metadata"]["resourceVersion"]
    assert ours[0][2]["spec"] == {"unschedulable": None} and "spec" not in ours[2][2]


def test_a_cordon_records_its_reason_and_run_and_the_uncordon_removes_the_whole_record(clock):
    api = KubeApiSimulator(error, nodes=[node("n0"), node("n1")])
    d = drain(api, clock, reason="shrink:gpu:1", run="run-7")
    d.cordon("n0")
    d.cordon("n1", reason="delete:gpu")  # a reason per node overrides the drain's
    ann = {name: api.nodes[name]["metadata"]["annotations"] for name in ("n0", "n1")}
    assert ann["n0"] == {
        CORDON_ANNOTATION: "nodegroup",
        "gpupool.io/cordon-reason": "shrink:gpu:1",
        "gpupool.io/cordon-run": "run-7",
    }
    assert ann["n1"]["gpupool.io/cordon-reason"] == "delete:gpu"
    d.uncordon("n0")
    left = api.nodes["n0"]["metadata"].get("annotations") or {}
    assert not {CORDON_ANNOTATION, "gpupool.io/cordon-reason", "gpupool.io/cordon-run"} & set(left)
    # a run that takes over a cordon its step left (an interrupted run's) records itself on it, once
    api.nodes["n0"]["spec"]["unschedulable"] = True
    api.nodes["n0"]["metadata"].setdefault("annotations", {}).update({CORDON_ANNOTATION: "nodegroup"})
    taker = drain(api, clock, reason="shrink:gpu:1", run="run-8")
    before = len(api.writes())
    assert taker.cordon("n0") == "ours" and len(api.writes()) == before + 1
    assert api.nodes["n0"]["metadata"]["annotations"]["gpupool.io/cordon-run"] == "run-8"
    assert taker.cordon("n0") == "ours" and len(api.writes()) == before + 1  # nothing stale: no write
    # without a lease (a step run alone) no run is recorded
    api = KubeApiSimulator(error, nodes=[node("n2")])
    drain(api, clock).cordon("n2")
    assert "gpupool.io/cordon-run" not in api.nodes["n2"]["metadata"]["annotations"]


def test_a_budget_that_refuses_is_retried_until_it_allows(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("train", "n0")])
    api.budget_refusals[("ml", "train")] = 3
    d = drain(api, clock, timeout=60, sleep=2.0)
    assert d.evict(["n0"]) == ["ml/train"]
    assert len([p for m, p, b in api.requests if p.endswith("/eviction")]) == 4
    assert clock.slept[:3] == [2.0, 2.0, 2.0]


def test_a_budget_that_keeps_refusing_fails_at_the_deadline_naming_the_pod(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("train", "n0")])
    api.budget_refusals[("ml", "train")] = 1000
    d = drain(api, clock, timeout=10, sleep=2.0)
    with pytest.raises(
        DrainError,
        match=r"pod ml/train cannot be evicted: its PodDisruptionBudget allows no "
        r"disruption now \(Cannot evict pod .*\) and still refused after 10s",
    ):
        d.evict(["n0"])
    assert 10.0 <= clock.now <= 10.2
    assert ("ml", "train") in api.pods


def test_eviction_429_is_not_retried_by_the_client_itself():
    assert 429 not in EVICTION_RETRY_STATUS and {500, 502, 503, 504} <= EVICTION_RETRY_STATUS


def test_evicted_pods_that_do_not_go_fail_the_drain(clock, monkeypatch):
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("stuck", "n0")])
    stuck = dict(api.pods[("ml", "stuck")])
    real = api.request

    def request(method, path, **kw):
        out = real(method, path, **kw)
        if path.endswith("/eviction"):
            api.pods[("ml", "stuck")] = dict(stuck, metadata=dict(stuck["metadata"], deletionTimestamp="now"))
        return out

    monkeypatch.setattr(api, "request", request)
    d = drain(api, clock, timeout=30, sleep=5.0)
    with pytest.raises(DrainError, match=r"pods evicted from n0 are still there after 30s: ml/stuck"):
        d.evict(["n0"])


def test_gpu_pods_reads_only(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("train", "n0"), pod("web", "n0", gpu=False)])
    assert [p["metadata"]["name"] for p in drain(api, clock).gpu_pods("n0")] == ["train"]
    assert api.writes() == []


def test_idle_says_whether_a_drain_has_nothing_to_evict_or_wait_for_reading_only(clock):
    """mig_layout sends a node's config label with its cordon only when the node is idle."""
    leaving = pod("leaving", "n2")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # a GPU pod still terminating: not idle
    api = KubeApiSimulator(
        error,
        nodes=[node("n0"), node("n1"), node("n2"), node("n3")],
        pods=[pod("train", "n0"), pod("web", "n1", gpu=False), pod("dcgm", "n1", daemonset=True), leaving],
    )
    d = drain(api, clock)
    assert [d.idle(n) for n in ("n0", "n1", "n2", "n3")] == [False, True, False, True]
    assert api.writes() == []


def test_when_budget_blocks_fail_stops_at_the_first_refusal_without_waiting(clock):
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("train", "n0"), pod("zeta", "n0")])
    api.budget_refusals[("ml", "train")] = 1
    d = drain(api, clock, timeout=600, sleep=2.0, when_budget_blocks="fail")
    with pytest.raises(DrainError) as err:
        d.drain(["n0"])
    assert str(err.value).startswith(
        "pod ml/train cannot be evicted: its PodDisruptionBudget allows no disruption now (Cannot evict pod as it "
        "would violate the pod's disruption budget.), and the drain policy says when_budget_blocks: fail, so the "
        "drain stopped at once. The node stays cordoned"
    )
    assert clock.slept == [] and ("ml", "zeta") in api.pods  # nothing waited for, nothing more evicted
    assert api.nodes["n0"]["spec"]["unschedulable"] is True


def test_pods_the_policy_skips_are_named_and_left_alone(clock):
    skipped_pod = pod("monitor", "n0")
    skipped_pod["metadata"]["labels"] = {"gpupool.io/drain": "skip"}
    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("train", "n0"), skipped_pod])
    d = drain(api, clock, skip_pods="gpupool.io/drain=skip")
    evict, skipped = d.pod_plan("n0")
    assert [p["metadata"]["name"] for p in evict] == ["train"] and [p["metadata"]["name"] for p in skipped] == [
        "monitor"
    ]
    assert d.evict(["n0"]) == ["ml/train"]
    assert ("ml", "monitor") in api.pods
    assert d.warnings == [
        "node n0: pod ml/monitor uses GPUs but is not evicted: matches the drain policy's skip_pods "
        "(gpupool.io/drain=skip)"
    ]


def test_for_settings_takes_the_inventory_policy(clock):
    from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import DrainSettings

    d = Drain.for_settings(None, "mig-layout", DrainSettings(True, 42, 0, "a=b", "fail"))
    assert (d.timeout, d.grace_period, d.skip_pods, d.when_budget_blocks) == (42.0, 0, "a=b", "fail")


def test_a_drain_says_what_it_waits_for_a_line_per_change(clock):
    """The nodes being drained, each pod evicted with how many are left, a budget's refusal, the end."""
    from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress

    api = KubeApiSimulator(error, nodes=[node("n0")], pods=[pod("a", "n0"), pod("b", "n0")])
    api.budget_refusals[("ml", "b")] = 1
    lines = []
    d = drain(api, clock, progress=Progress(lines.append, prefix="cern-gpu", clock=clock), sleep=1.0)
    d.drain(["n0"])
    assert lines == [
        "cern-gpu: cordoned node n0",
        "cern-gpu: draining n0: 2 GPU pod(s) to evict, 0 terminating [0s]",
        "cern-gpu: draining n0: evicted pod ml/a, 1 to go [0s]",
        "cern-gpu: draining n0: pod ml/b: its PodDisruptionBudget allows no disruption now "
        "(Cannot evict pod as it would violate the pod's disruption budget.), trying again [0s]",
        "cern-gpu: draining n0: evicted pod ml/b, 0 to go [1s]",
        "cern-gpu: draining n0: drained: 2 GPU pod(s) evicted [1s]",
    ]
