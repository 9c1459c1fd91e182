"""A controller that dies is safe (issue #18): ansible-playbook killed during a drain and during a MIG wave, with
SIGTERM (what an AWX cancel sends) and with SIGKILL (a pod or container killed with everything in it), then run
again. Afterwards: the pool converged, no node left cordoned by gpupool, no GPU pod lost (only ever evicted through
the Eviction API, never deleted by the dying run), and the run lease released by the dying run (SIGTERM) or taken
over by the next run once it expired (SIGKILL).

The drain is held up by a PodDisruptionBudget (minAvailable 1 over the one running pod: the real disruption
controller allows no disruption until the budget is removed); the MIG wave by a slow MIG manager simulator. The run is killed when its own
progress lines say it is there.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, playbook_env, site_argv

pytestmark = pytest.mark.sandbox
HOST = "death"
ADMIN = "gpupool-admin"
NS = "death-test"
POOL = "death-a100"
NG_LABEL = "magnum.openstack.org/nodegroup"
CORDON_ANNOTATION = "gpupool.io/cordoned-by"
LAYOUTS = ({"3g.20gb": 1, "2g.10gb": 2}, {"1g.5gb": 7})
LEASE_SECONDS = 15  # a killed run's lease expires this soon here


def cluster(sandbox, layout):
    return {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},
        "drain": {"timeout": 300, "grace_period": 0},
        "pools": [
            {
                "name": POOL,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": dict(layout)},
            }
        ],
    }


def site_command(bed, layout, lease_wait=0):
    variables = {"gpupool_lease_duration": LEASE_SECONDS, "gpupool_lease_wait": lease_wait}
    return site_argv(bed["tmp"], HOST, cluster(bed["sandbox"], layout), variables)


def run_site(bed, layout, lease_wait=0):
    proc = subprocess.run(
        site_command(bed, layout, lease_wait), capture_output=True, text=True, env=playbook_env(), cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return proc.stdout


def changed(stdout):
    return int(re.search(r"^%s\s+: ok=\d+\s+changed=(\d+)" % HOST, stdout, re.M).group(1))


def children(pid):
    """The processes whose parent is `pid` (Ansible's workers are children of ansible-playbook)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def kill_when(bed, layout, pattern, sig):
    """Start site.yml and kill it once a line matches `pattern`. SIGKILL kills its workers too, as a killed pod
    does (a worker is a session of its own: killing ansible-playbook alone leaves it to notice and stop)."""
    proc = subprocess.Popen(
        site_command(bed, layout),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=playbook_env(),
        cwd=ROOT,
        bufsize=1,
    )
    seen, deadline = [], time.monotonic() + 180
    try:
        for line in proc.stdout:
            seen.append(line)
            if re.search(pattern, line):
                break
            assert time.monotonic() < deadline, "".join(seen)[-4000:]
        else:
            raise AssertionError("the run ended before %r:\n%s" % (pattern, "".join(seen)[-4000:]))
        victims = [proc.pid] + (children(proc.pid) if sig == signal.SIGKILL else [])
        for pid in victims:
            os.kill(pid, sig)
        seen.append(proc.stdout.read())
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return "".join(seen)


def lease_holder(sandbox):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        lease = client.CoordinationV1Api(sandbox.cp.api_client()).read_namespaced_lease("gpupool-run", "kube-system")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease.spec.holder_identity


def wait_for(what, probe, timeout=30):
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "timed out waiting for %s" % what
        time.sleep(0.2)


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    core.create_namespace({"metadata": {"name": NS}})
    h.wait_for_default_service_account(core, NS)
    data = {"sandbox": sandbox, "tmp": tmp_path_factory.mktemp("death"), "core": core, "layout": 0}
    run_site(data, LAYOUTS[0])
    (data["node"],) = [n.metadata.name for n in core.list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items]
    yield data
    sandbox.mig.delay = 0.3
    core.delete_namespace(NS)
    proxy = __import__("openstack").connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
    proxy.container_infrastructure_management.request(
        "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], POOL),
        "DELETE",
        raise_exc=False,
        headers={"OpenStack-API-Version": "container-infra 1.14"},
    )


def _running_ready(pod):
    conditions = pod.status.conditions or []
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True" for c in conditions)


def gpu_pod(core, name, node):
    """A GPU pod bound to the node and running (a Pending pod may always be evicted, budget or not)."""
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {
                "nodeName": node,
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {"name": "c", "image": "registry.example/cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
            },
        },
    )
    # The node simulator (the kubelet's part) reports it Running and Ready: until then the Eviction API would
    # ignore the budget (a Pending pod may always be evicted).
    deadline = time.monotonic() + 30
    while not _running_ready(core.read_namespaced_pod(name, NS)):
        assert time.monotonic() < deadline, "pod %s/%s was never reported Running and Ready" % (NS, name)
        time.sleep(0.1)


@pytest.mark.parametrize(
    "where, sig",
    [("drain", signal.SIGTERM), ("drain", signal.SIGKILL), ("wave", signal.SIGTERM), ("wave", signal.SIGKILL)],
    ids=["drain-SIGTERM", "drain-SIGKILL", "wave-SIGTERM", "wave-SIGKILL"],
)
def test_a_run_killed_mid_step_is_finished_by_the_next_run(bed, where, sig):
    from kubernetes import client

    sandbox, core, node = bed["sandbox"], bed["core"], bed["node"]
    policy = client.PolicyV1Api(sandbox.cp.api_client())
    target = LAYOUTS[1 - bed["layout"]]
    pod = "job-%s-%s" % (where, sig.name.lower())
    gpu_pod(core, pod, node)
    if where == "drain":
        budget = {"metadata": {"name": pod}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": pod}}}}
        policy.create_namespaced_pod_disruption_budget(NS, budget)
        pattern = r"draining %s: pod %s/%s: its PodDisruptionBudget allows no disruption" % (node, NS, pod)
    else:
        sandbox.mig.delay = 120  # the MIG manager takes its time: the wave waits
        pattern = r"MIG wave 1/1 of %s: %s (pending|waiting for the MIG manager)" % (POOL, node)
    mark = sandbox.cp.audit.mark()
    killed = kill_when(bed, target, pattern, sig)
    assert "ASYNC POLL" not in killed

    # what the dead run left: its node cordoned and marked as gpupool's, the pod where it was (drain) or evicted
    # through the Eviction API before the MIG label (wave) - never deleted outright
    left = core.read_node(node)
    assert left.spec.unschedulable and left.metadata.annotations.get(CORDON_ANNOTATION) == "mig-layout"
    deletes = [e for e in sandbox.cp.audit.since(mark).writes(user=ADMIN, resource="pods") if e["verb"] == "delete"]
    assert deletes == []
    pods = [p.metadata.name for p in core.list_namespaced_pod(NS).items]
    assert (pod in pods) == (where == "drain"), pods
    if sig == signal.SIGTERM:  # the dying run handed its lease back
        wait_for("the dying run to release its lease", lambda: lease_holder(sandbox) is None)
    else:  # nothing ran to release it: it is still held, and the next run takes it over once it expired
        assert lease_holder(sandbox) is not None

    if where == "drain":
        policy.delete_namespaced_pod_disruption_budget(pod, NS)
    sandbox.mig.delay = 0.3
    mark = sandbox.cp.audit.mark()
    again = run_site(bed, target, lease_wait=3 * LEASE_SECONDS)
    bed["layout"] = 1 - bed["layout"]
    if sig == signal.SIGKILL:
        assert "run lease" in again  # it waited for the dead run's lease (a progress line) and took it over
    done = core.read_node(node)
    labels = done.metadata.labels
    assert labels.get("nvidia.com/mig.config.state") == "success" and labels.get("nvidia.com/mig.config") == (
        "gpupool-%s" % POOL
    )
    assert sandbox.mig.layout(node) == {0: target, 1: target}  # the MIG manager applied the wanted layout
    assert not done.spec.unschedulable and CORDON_ANNOTATION not in (done.metadata.annotations or {})
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == []
    evicted = [
        e["objectRef"]["name"]
        for e in sandbox.cp.audit.since(mark).writes(user=ADMIN, resource="pods")
        if e["objectRef"].get("subresource") == "eviction"
    ]
    assert evicted == ([pod] if where == "drain" else [])
    assert changed(run_site(bed, target)) == 0


def test_a_budget_that_refuses_is_waited_out_and_the_drain_goes_on(bed):
    """On the real API server, an Eviction refused by a PodDisruptionBudget (HTTP 429) is tried again until the
    budget allows it, and every other request of the step still goes out (a refusal is not a server in trouble)."""
    from kubernetes import client

    sandbox, core, node = bed["sandbox"], bed["core"], bed["node"]
    policy = client.PolicyV1Api(sandbox.cp.api_client())
    target, pod = LAYOUTS[1 - bed["layout"]], "job-budget"
    gpu_pod(core, pod, node)
    budget = {"metadata": {"name": pod}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": pod}}}}
    policy.create_namespaced_pod_disruption_budget(NS, budget)
    proc = subprocess.Popen(
        site_command(bed, target),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=playbook_env(),
        cwd=ROOT,
    )
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "its PodDisruptionBudget allows no disruption" in line:
                policy.delete_namespaced_pod_disruption_budget(pod, NS)  # the workload's owner relaxes it
                break
        seen.append(proc.stdout.read())
        assert proc.wait(timeout=300) == 0, "".join(seen)[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    bed["layout"] = 1 - bed["layout"]
    out = "".join(seen)
    assert re.search(r"draining %s: evicted pod %s/%s, 0 to go" % (node, NS, pod), out), out[-4000:]
    assert core.read_node(node).metadata.labels.get("nvidia.com/mig.config.state") == "success"
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == []
