"""gpupool's drain (k8s/drain.py, the one drain of nodegroup shrinks and MIG waves) against PodDisruptionBudgets
whose status the REAL disruption controller computes.

Real: kube-apiserver (its Eviction subresource holds each eviction to the budget's status), the disruption
controller (kube-controller-manager), the drain's own client. Simulated: the kubelet (the node simulator reports the
bound pods Running and Ready, and finalizes a deleted pod once its containers stopped). Bare pods, so the budget is a
minAvailable integer (a maxUnavailable budget needs a controller with a scale subresource).
"""

from __future__ import annotations

import functools
import re
import threading
import uuid

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain
from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress
from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.sandbox
REFUSED = "its PodDisruptionBudget allows no disruption"


wait_for = functools.partial(h.wait_for, interval=0.1)


@pytest.fixture
def bed(sandbox):
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    suffix = uuid.uuid4().hex[:5]
    ns, gpu, cpu = "drain-%s" % suffix, "drain-gpu-%s" % suffix, "drain-cpu-%s" % suffix
    core.create_namespace({"metadata": {"name": ns}})
    h.wait_for_default_service_account(core, ns)
    sandbox.nodes.register_node(gpu, "g4.p2.40g")
    sandbox.nodes.register_node(cpu, "m2.large")
    yield {"core": core, "policy": client.PolicyV1Api(core.api_client), "ns": ns, "gpu": gpu, "cpu": cpu}
    core.delete_namespace(ns)
    for name in (gpu, cpu):
        sandbox.nodes.remove_node(name)


def train_pod(core, ns, name, node):
    """A bare GPU pod bound to the node, with the default 30 s grace (its simulated containers stop sooner)."""
    limits = {"nvidia.com/gpu": "1"}
    container = {"name": "train", "image": "registry.example/cuda:12", "resources": {"limits": limits}}
    spec = {"nodeName": node, "tolerations": [{"operator": "Exists"}], "containers": [container]}
    core.create_namespaced_pod(ns, {"metadata": {"name": name, "labels": {"app": "train"}}, "spec": spec})


def ready(core, ns, name):
    pod = core.read_namespaced_pod(name, ns)
    return pod.status.phase == "Running" and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
    )


def budget_status(policy, ns):
    pdb = policy.read_namespaced_pod_disruption_budget("train", ns)
    if pdb.status is None or pdb.status.observed_generation != pdb.metadata.generation:
        return None
    return pdb.status


def allowed(policy, ns, healthy):
    """The budget's status once the controller counted `healthy` pods."""
    status = budget_status(policy, ns)
    return status if status is not None and status.current_healthy == healthy else None


def live_on(core, ns, node):
    """Pods of the node that are neither gone nor terminating."""
    pods = core.list_namespaced_pod(ns, field_selector="spec.nodeName=%s" % node).items
    return sorted(p.metadata.name for p in pods if p.metadata.deletion_timestamp is None)


def test_a_drain_evicts_what_the_real_budget_allows_and_waits_for_the_rest(sandbox, bed):
    core, policy, ns, node = bed["core"], bed["policy"], bed["ns"], bed["gpu"]
    names = ["train-0", "train-1", "train-2"]
    for name in names:
        train_pod(core, ns, name, node)
    for name in names:  # no test writes a pod's status: the node simulator plays the kubelet
        wait_for("%s Running and Ready" % name, lambda name=name: ready(core, ns, name))
    pdb = {"metadata": {"name": "train"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "train"}}}}
    policy.create_namespaced_pod_disruption_budget(ns, pdb)
    status = wait_for("the disruption controller's count", lambda: budget_status(policy, ns))
    assert (status.current_healthy, status.desired_healthy, status.expected_pods) == (3, 2, 3)
    assert status.disruptions_allowed == 1

    lines, result = [], {}
    client = connect({"kubeconfig": str(sandbox.kubeconfig)})
    drain = Drain(client, "nodegroup", timeout=180, sleep=0.3, progress=Progress(lines.append))

    def run():
        try:
            result["done"] = drain.drain([node])
        except Exception as exc:  # reported by the test thread
            result["error"] = exc

    mark = sandbox.cp.audit.mark()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        # The budget allows one: train-0 goes, train-1 is refused and waited for.
        wait_for("the refusal of train-1", lambda: any(REFUSED in line and "/train-1" in line for line in lines))
        assert live_on(core, ns, node) == ["train-1", "train-2"]
        status = wait_for("the controller's new count", lambda: allowed(policy, ns, healthy=2))
        assert status.disruptions_allowed == 0
        # One more healthy pod elsewhere: the controller allows one more disruption, and only one.
        train_pod(core, ns, "train-extra", bed["cpu"])
        wait_for("the refusal of train-2", lambda: any(REFUSED in line and "/train-2" in line for line in lines))
        assert live_on(core, ns, node) == ["train-2"]
        assert "error" not in result and thread.is_alive()
        # The budget removed: the drain finishes, once the kubelet (node simulator) finalized the evicted pods.
        policy.delete_namespaced_pod_disruption_budget("train", ns)
        thread.join(timeout=120)
    finally:
        drain.timeout = 0  # never left running past the test
    assert not thread.is_alive()
    assert "error" not in result, result.get("error")
    assert result["done"]["evicted"] == ["%s/%s" % (ns, n) for n in names]
    assert core.list_namespaced_pod(ns, field_selector="spec.nodeName=%s" % node).items == []
    assert [p.metadata.name for p in core.list_namespaced_pod(ns).items] == ["train-extra"]
    assert any(re.search(r"draining %s: drained: 3 GPU pod\(s\) evicted" % node, line) for line in lines), lines
    window = sandbox.cp.audit.since(mark)
    evictions = [
        (e["objectRef"]["name"], e["responseStatus"]["code"])
        for e in window.writes(resource="pods", namespace=ns)
        if e["objectRef"].get("subresource") == "eviction"
    ]
    assert [name for name, code in evictions if code < 300] == names  # each once, in order
    assert {name for name, code in evictions if code == 429} == {"train-1", "train-2"}
    finalized = window.writes(user="testbed:node-simulator", resource="pods", namespace=ns)
    assert sorted(e["objectRef"]["name"] for e in finalized if e["verb"] == "delete") == names
