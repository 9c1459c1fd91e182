"""The cordon ledger on the sandbox (issue #24): site.yml killed (SIGTERM, what an AWX cancel sends) with a node
cordoned by gpupool, then the inventory changed so that the dead run's reason no longer holds, then one run.
Afterwards: no node cordoned by gpupool, no GPU pod lost (never deleted, only evicted through the Eviction API), and
the run after that changes nothing.

  - killed between the cordon and the drain of a MIG wave (a PodDisruptionBudget holds the drain), then the pool
    turned to `mig: {mode: off}`;
  - killed between the relabel and the uncordon of a MIG wave (a slow MIG manager), then the pool made absent;
  - killed during a Magnum shrink (the nodegroup step's drain, held by a budget), then the inventory set back to
    the old size.

Each run is killed when its own progress lines say it is there. Each test runs site.yml three times at most
(the killed run, the run that recovers, the run after), on one module bed made by one run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, playbook_env, site_argv

pytestmark = pytest.mark.sandbox
HOST = "ledger"
ADMIN = "gpupool-admin"
NS = "ledger-test"
MIG_POOL = "ledger-a100"
SHRINK_POOL = "ledger-t4"
NG_LABEL = "magnum.openstack.org/nodegroup"
CORDON_ANNOTATION = "gpupool.io/cordoned-by"
REASON_ANNOTATION = "gpupool.io/cordon-reason"
RUN_ANNOTATION = "gpupool.io/cordon-run"
LAYOUTS = ({"3g.20gb": 1, "2g.10gb": 2}, {"1g.5gb": 7})
LEASE_SECONDS = 15


def inventory(sandbox, mig=None, mig_state="present", shrink_count=2):
    mig = {"mode": "static", "layout": dict(LAYOUTS[0])} if mig is None else mig
    return {
        "name": HOST,
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},
        "drain": {"timeout": 300, "grace_period": 0},
        "pools": [
            {
                "name": MIG_POOL,
                "state": mig_state,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": mig,
            },
            {
                "name": SHRINK_POOL,
                "nodegroup": {"flavor": "g2.xlarge", "node_count": shrink_count},
                "gpu": {"model": "T4", "per_node": 1},
            },
        ],
    }


def site_command(bed, cluster):
    variables = {"gpupool_lease_duration": LEASE_SECONDS, "gpupool_lease_wait": 3 * LEASE_SECONDS}
    return site_argv(bed["tmp"], HOST, cluster, variables)


def run_site(bed, cluster):
    proc = subprocess.run(
        site_command(bed, cluster), capture_output=True, text=True, env=playbook_env(), cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return proc.stdout


def changed(stdout):
    return int(re.search(r"^%s\s+: ok=\d+\s+changed=(\d+)" % HOST, stdout, re.M).group(1))


def kill_when(bed, cluster, pattern):
    """Start site.yml and send it SIGTERM (an AWX cancel) once a line of its output matches `pattern`."""
    proc = subprocess.Popen(
        site_command(bed, cluster),
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
        os.kill(proc.pid, signal.SIGTERM)
        seen.append(proc.stdout.read())
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return "".join(seen)


def nodes_of(core, pool):
    return sorted(n.metadata.name for n in core.list_node(label_selector="%s=%s" % (NG_LABEL, pool)).items)


def gpupool_cordoned(core):
    """Nodes of this module's pools cordoned with gpupool's mark."""
    out = []
    for pool in (MIG_POOL, SHRINK_POOL):
        for n in core.list_node(label_selector="%s=%s" % (NG_LABEL, pool)).items:
            if n.spec.unschedulable and CORDON_ANNOTATION in (n.metadata.annotations or {}):
                out.append(n.metadata.name)
    return out


def _running_ready(pod):
    conditions = pod.status.conditions or []
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True" for c in conditions)


def gpu_pod(core, name, node):
    """A running GPU pod bound to the node, and a budget that allows no eviction of it (minAvailable 1 over one
    healthy pod: the real disruption controller allows 0), so a drain of the node waits."""
    from kubernetes import client

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
    budget = {"metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}}}
    client.PolicyV1Api(core.api_client).create_namespaced_pod_disruption_budget(NS, budget)


def pod_deletes(sandbox, mark):
    return [e for e in sandbox.cp.audit.since(mark).writes(user=ADMIN, resource="pods") if e["verb"] == "delete"]


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    core.create_namespace({"metadata": {"name": NS}})
    h.wait_for_default_service_account(core, NS)
    data = {"sandbox": sandbox, "tmp": tmp_path_factory.mktemp("ledger"), "core": core}
    run_site(data, inventory(sandbox))
    yield data
    sandbox.mig.delay = 0.3
    core.delete_namespace(NS)
    proxy = __import__("openstack").connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
    for pool in (MIG_POOL, SHRINK_POOL):
        proxy.container_infrastructure_management.request(
            "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], pool),
            "DELETE",
            raise_exc=False,
            headers={"OpenStack-API-Version": "container-infra 1.14"},
        )


def test_a_shrink_killed_mid_drain_then_set_back_to_the_old_size_is_uncordoned(bed):
    sandbox, core = bed["sandbox"], bed["core"]
    nodes = nodes_of(core, SHRINK_POOL)
    assert len(nodes) == 2
    for index, name in enumerate(nodes):
        gpu_pod(core, "shrink-%d" % index, name)
    mark = sandbox.cp.audit.mark()
    pattern = r"draining \S+: pod %s/shrink-\d: its PodDisruptionBudget allows no disruption" % NS
    kill_when(bed, inventory(sandbox, shrink_count=1), pattern)
    (left,) = gpupool_cordoned(core)
    annotations = core.read_node(left).metadata.annotations
    assert annotations[CORDON_ANNOTATION] == "nodegroup"
    assert annotations[REASON_ANNOTATION] == "shrink:%s:1" % SHRINK_POOL

    recovered = run_site(bed, inventory(sandbox, shrink_count=2))
    assert "lifted the cordon nodegroup left on node %s (shrink:%s:1)" % (left, SHRINK_POOL) in recovered
    assert gpupool_cordoned(core) == [] and nodes_of(core, SHRINK_POOL) == nodes
    after = core.read_node(left).metadata.annotations or {}
    assert REASON_ANNOTATION not in after and RUN_ANNOTATION not in after
    assert pod_deletes(sandbox, mark) == []
    assert sorted(p.metadata.name for p in core.list_namespaced_pod(NS).items) == ["shrink-0", "shrink-1"]
    assert changed(run_site(bed, inventory(sandbox, shrink_count=2))) == 0
    policy = __import__("kubernetes").client.PolicyV1Api(core.api_client)
    for index in range(2):
        policy.delete_namespaced_pod_disruption_budget("shrink-%d" % index, NS)
        core.delete_namespaced_pod("shrink-%d" % index, NS, grace_period_seconds=0)


def test_a_mig_wave_killed_between_cordon_and_drain_then_turned_off_is_uncordoned(bed):
    sandbox, core = bed["sandbox"], bed["core"]
    (node,) = nodes_of(core, MIG_POOL)
    gpu_pod(core, "wave-job", node)
    mark = sandbox.cp.audit.mark()
    pattern = r"draining %s: pod %s/wave-job: its PodDisruptionBudget allows no disruption" % (node, NS)
    kill_when(bed, inventory(sandbox, mig={"mode": "static", "layout": dict(LAYOUTS[1])}), pattern)
    assert gpupool_cordoned(core) == [node]
    annotations = core.read_node(node).metadata.annotations
    assert annotations[REASON_ANNOTATION] == "mig-layout:%s:gpupool-%s" % (MIG_POOL, MIG_POOL)
    assert annotations.get(RUN_ANNOTATION)  # the dead run's identity: its lease holder

    recovered = run_site(bed, inventory(sandbox, mig={"mode": "off"}))
    assert "lifted the cordon mig-layout left on node %s" % node in recovered
    assert gpupool_cordoned(core) == []
    assert not core.read_node(node).spec.unschedulable
    assert pod_deletes(sandbox, mark) == []
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == ["wave-job"]  # never evicted
    assert changed(run_site(bed, inventory(sandbox, mig={"mode": "off"}))) == 0
    __import__("kubernetes").client.PolicyV1Api(core.api_client).delete_namespaced_pod_disruption_budget("wave-job", NS)
    core.delete_namespaced_pod("wave-job", NS, grace_period_seconds=0)


def unschedulable_managers(sandbox, node):
    """Who owns spec.unschedulable, from the node's managedFields as the API server wrote them."""
    live = h.kubectl_json(sandbox.cp, "get", "node", node, "--show-managed-fields")
    return sorted(
        entry["manager"]
        for entry in live["metadata"].get("managedFields") or []
        if "f:unschedulable" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    )


def test_a_cordon_a_person_set_again_after_a_killed_run_stays_and_is_named(bed):
    """Issue #32: a run killed mid-wave leaves its cordon record; a person then runs kubectl uncordon and kubectl
    cordon (maintenance). The next run, whose inventory no longer wants the wave, leaves the node cordoned."""
    sandbox, core = bed["sandbox"], bed["core"]
    (node,) = nodes_of(core, MIG_POOL)
    gpu_pod(core, "maintenance-job", node)
    pattern = r"draining %s: pod %s/maintenance-job: its PodDisruptionBudget allows no disruption" % (node, NS)
    kill_when(bed, inventory(sandbox, mig={"mode": "static", "layout": dict(LAYOUTS[1])}), pattern)
    assert gpupool_cordoned(core) == [node] and unschedulable_managers(sandbox, node) == ["gpupool"]

    sandbox.cp.kubectl("uncordon", node)  # the real kubectl, as a person runs it
    sandbox.cp.kubectl("cordon", node)
    (person,) = unschedulable_managers(sandbox, node)
    assert person != "gpupool"
    assert core.read_node(node).metadata.annotations[CORDON_ANNOTATION] == "mig-layout"  # the dead run's record

    mark = sandbox.cp.audit.mark()
    proc = subprocess.run(  # gpupool's own cordon would be lifted now: mig off
        site_command(bed, inventory(sandbox, mig={"mode": "off"})),
        capture_output=True,
        text=True,
        env=playbook_env(),
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    summary = "node_pools: left the cordon %s set on node %s after gpupool's cordon" % (person, node)
    assert summary in proc.stdout
    warning = "node %s: cordoned by %s after gpupool's cordon; left cordoned" % (node, person)
    squeeze = re.compile(r"\s+")  # Ansible wraps a warning's lines (on stderr)
    assert squeeze.sub("", warning) in squeeze.sub("", proc.stderr), proc.stderr[-3000:]
    left = core.read_node(node)
    assert left.spec.unschedulable and unschedulable_managers(sandbox, node) == [person]
    assert not {CORDON_ANNOTATION, REASON_ANNOTATION, RUN_ANNOTATION} & set(left.metadata.annotations or {})
    node_patches = [
        e for e in sandbox.cp.audit.since(mark).writes(user=ADMIN, resource="nodes") if e["verb"] == "patch"
    ]
    assert node_patches, "the run removed gpupool's record with a patch"
    assert changed(run_site(bed, inventory(sandbox, mig={"mode": "off"}))) == 0
    assert core.read_node(node).spec.unschedulable  # still the person's, a run later
    sandbox.cp.kubectl("uncordon", node)
    __import__("kubernetes").client.PolicyV1Api(core.api_client).delete_namespaced_pod_disruption_budget(
        "maintenance-job", NS
    )
    core.delete_namespaced_pod("maintenance-job", NS, grace_period_seconds=0)


def test_a_mig_wave_killed_between_relabel_and_uncordon_then_made_absent_leaves_no_cordon(bed):
    sandbox, core = bed["sandbox"], bed["core"]
    (node,) = nodes_of(core, MIG_POOL)
    sandbox.mig.delay = 120  # the MIG manager takes its time: the wave waits with the node relabelled
    pattern = r"MIG wave 1/1 of %s: %s (pending|waiting for the MIG manager)" % (MIG_POOL, node)
    mark = sandbox.cp.audit.mark()
    try:
        kill_when(bed, inventory(sandbox, mig={"mode": "static", "layout": dict(LAYOUTS[1])}), pattern)
    finally:
        sandbox.mig.delay = 0.3
    left = core.read_node(node)
    assert left.spec.unschedulable and left.metadata.labels["nvidia.com/mig.config"] == "gpupool-%s" % MIG_POOL

    run_site(bed, inventory(sandbox, mig_state="absent"))
    assert gpupool_cordoned(core) == [] and nodes_of(core, MIG_POOL) == []  # its nodegroup was deleted
    assert pod_deletes(sandbox, mark) == []
    assert changed(run_site(bed, inventory(sandbox, mig_state="absent"))) == 0
