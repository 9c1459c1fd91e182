"""A paused run never writes after its lease is gone, and a killed run blocks the next one for tens of seconds only
(issue #32), on the sandbox.

* Paused: run A is stopped (SIGSTOP to ansible-playbook and every process under it, as a suspended terminal or a
  frozen VM does) between two steps while it holds the lease; once the lease expired, run B takes it, converges
  another layout and releases it; then A resumes (SIGCONT). Before the fix, A's next step took the free lease again
  and rolled its own layout over B's. Now A stops before its first write, naming the lease it lost, and the
  kube-apiserver's audit log (request order) shows no write of A after B took the lease. The two runs use two
  identities, so the audit log tells their writes apart.
* Killed: the whole process tree of a run is killed (SIGKILL) mid-wave, as when AWX's execution environment
  container is removed, with the default lease duration. Nobody releases or deletes the lease; the next run started
  once that duration has passed takes it over and lifts the cordon the killed run left. Before the fix the default
  was 1800 s, and the next run was refused for half an hour.
"""

from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.playbook import ROOT, playbook_env, recap_changed, site_argv

pytestmark = pytest.mark.sandbox
HOST = "lease-fence"
POOL = "fence-a100"
NG_LABEL = "magnum.openstack.org/nodegroup"
CORDON_ANNOTATION = "gpupool.io/cordoned-by"
LAYOUTS = ({"3g.20gb": 1, "2g.10gb": 2}, {"1g.5gb": 7}, {"3g.20gb": 2})
LEASE_SECONDS = 6  # the paused run's lease, so that the test need not wait long for it to expire
LONGEST_DEFAULT = 60  # "tens of seconds": the default duration a killed run may block the next one


def inventory(sandbox, kubeconfig, layout):
    return {
        "name": HOST,
        "kubeconfig": str(kubeconfig),
        "magnum": {"cloud": sandbox.cloud, "cluster": sandbox.cluster_name},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "dra_driver": {"enabled": False},
        "drain": {"timeout": 120, "grace_period": 0},
        "pools": [
            {
                "name": POOL,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": dict(layout)},
            }
        ],
    }


def start_site(bed, kubeconfig, layout, **variables):
    argv = site_argv(bed["tmp"], HOST, inventory(bed["sandbox"], kubeconfig, layout), variables)
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=ROOT, bufsize=1
    )


def read_until(proc, matches, timeout=240):
    """Read the run's output until `matches(lines so far)` is true; the lines so far."""
    seen, deadline = [], time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if matches(seen):
            return seen
        assert time.monotonic() < deadline, "".join(seen)[-4000:]
    raise AssertionError("the run ended before the point the test waits for:\n%s" % "".join(seen)[-4000:])


def finish(proc, seen=()):
    out = "".join(seen) + proc.stdout.read()
    proc.wait(timeout=300)
    return proc.returncode, out


def process_tree(pid):
    """`pid` and every process under it: Ansible's workers are sessions of their own, so a process group does not
    hold them all (a container's removal, a frozen VM stop them all the same)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, []))
    return tree


def signal_tree(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def read_lease(sandbox):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        return client.CoordinationV1Api(sandbox.cp.api_client()).read_namespaced_lease("gpupool-run", "kube-system")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def cordoned_by_gpupool(core):
    nodes = core.list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items
    return [
        n.metadata.name for n in nodes if n.spec.unschedulable and CORDON_ANNOTATION in (n.metadata.annotations or {})
    ]


def successful_writes(window, user):
    return [e for e in window.writes(user=user) if e["responseStatus"]["code"] < 400]


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from kubernetes import client

    data = {
        "sandbox": sandbox,
        "tmp": tmp_path_factory.mktemp("lease-fence"),
        "core": client.CoreV1Api(sandbox.cp.api_client()),
        "a": sandbox.cp.mint_kubeconfig("fence-a", ["system:masters"]),
        "b": sandbox.cp.mint_kubeconfig("fence-b", ["system:masters"]),
    }
    rc, out = finish(start_site(data, data["a"], LAYOUTS[0]))
    assert rc == 0, out[-6000:]
    yield data
    sandbox.mig.delay = 0.3
    proxy = __import__("openstack").connect(load_yaml_config=False, load_envvars=False, **sandbox.cloud)
    proxy.container_infrastructure_management.request(
        "/clusters/%s/nodegroups/%s" % (sandbox.cluster()["uuid"], POOL),
        "DELETE",
        raise_exc=False,
        headers={"OpenStack-API-Version": "container-infra 1.14"},
    )


def node_pools_done(lines):
    """The node_pools step's result is printed: the run is between two steps, before the MIG layouts step."""
    started = [i for i, line in enumerate(lines) if "Label and taint the nodes of each pool" in line]
    return bool(started) and any(re.match(r"(ok|changed): \[%s\]" % HOST, line) for line in lines[started[-1] :])


def test_a_run_paused_past_its_lease_writes_nothing_after_another_run_took_it(bed):
    sandbox = bed["sandbox"]
    a = start_site(bed, bed["a"], LAYOUTS[1], gpupool_lease_duration=LEASE_SECONDS)
    tree = []
    try:
        seen = read_until(a, node_pools_done)
        tree = process_tree(a.pid)
        signal_tree(tree, signal.SIGSTOP)
        mark = sandbox.cp.audit.mark()
        time.sleep(LEASE_SECONDS + 2)  # A's lease expires while it is stopped: nothing of A renews it
        rc_b, text_b = finish(start_site(bed, bed["b"], LAYOUTS[2], gpupool_lease_duration=LEASE_SECONDS))
        assert rc_b == 0, text_b[-6000:]  # B took the expired lease, converged its layout and released the lease
        assert read_lease(sandbox) is None
        signal_tree(tree, signal.SIGCONT)
        rc_a, text_a = finish(a, seen)
    finally:
        signal_tree(tree, signal.SIGCONT)
        if a.poll() is None:
            a.kill()
    # the audit log is in request order: no write of A after B's first (B taking A's expired lease)
    writes = [e for e in sandbox.cp.audit.since(mark).writes() if e["responseStatus"]["code"] < 400]
    writes = [e for e in writes if e["user"]["username"] in ("fence-a", "fence-b")]
    users = [e["user"]["username"] for e in writes]
    assert "fence-b" in users, users
    first_b = users.index("fence-b")
    assert writes[first_b]["objectRef"]["resource"] == "leases"
    late = [(e["verb"], e["objectRef"].get("resource"), e["objectRef"].get("name")) for e in writes[first_b:]]
    assert [w for w, user in zip(late, users[first_b:]) if user == "fence-a"] == [], late
    assert rc_a != 0, text_a[-6000:]
    folded = " ".join(text_a.split())
    # stopped at the next step's start (the lease is gone); had the stop landed inside that step, its fence would
    # have stopped it before its first write all the same
    assert re.search(r"this run('s run lease| lost its run lease) kube-system/gpupool-run", folded), text_a[-4000:]
    assert "it stopped before" in folded, text_a[-4000:]
    node = bed["core"].list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items[0]
    assert sandbox.mig.layout(node.metadata.name) == {0: LAYOUTS[2], 1: LAYOUTS[2]}  # B's layout stays
    assert cordoned_by_gpupool(bed["core"]) == []


def test_a_run_killed_with_its_whole_process_tree_blocks_the_next_one_only_for_the_default_duration(bed):
    sandbox, core = bed["sandbox"], bed["core"]
    sandbox.mig.delay = 120  # the MIG manager takes its time: the wave waits, its node cordoned
    a = start_site(bed, bed["a"], LAYOUTS[0])  # the default lease duration
    try:
        waiting = r"MIG wave 1/1 of %s: \S+ (pending|waiting for the MIG manager)" % POOL
        read_until(a, lambda lines: re.search(waiting, lines[-1]))
        signal_tree(process_tree(a.pid), signal.SIGKILL)
        a.wait(timeout=30)
    finally:
        if a.poll() is None:
            a.kill()
    sandbox.mig.delay = 0.3
    (node,) = core.list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items
    assert node.spec.unschedulable and node.metadata.annotations.get(CORDON_ANNOTATION) == "mig-layout"
    left = read_lease(sandbox)
    assert left is not None and left.spec.holder_identity  # nothing survived to release it
    duration = left.spec.lease_duration_seconds
    assert duration <= LONGEST_DEFAULT, "a killed run blocks the next one for %d s" % duration
    expires = left.spec.renew_time + datetime.timedelta(seconds=duration)
    time.sleep(max(0.0, (expires - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1.0)
    still = read_lease(sandbox)  # nobody deleted it: the next run takes over the dead run's lease
    assert still is not None and still.spec.holder_identity == left.spec.holder_identity

    mark = sandbox.cp.audit.mark()
    rc, out = finish(start_site(bed, bed["b"], LAYOUTS[0]))  # no lease wait: it proceeds at once
    assert rc == 0, out[-6000:]
    window = sandbox.cp.audit.since(mark)
    lease_writes = [e["verb"] for e in successful_writes(window, "fence-b") if e["objectRef"]["resource"] == "leases"]
    assert lease_writes[:1] == ["update"], lease_writes  # taken over (the dead run's lease was still there)
    assert cordoned_by_gpupool(core) == []
    node = core.read_node(node.metadata.name)
    assert not node.spec.unschedulable and sandbox.mig.layout(node.metadata.name) == {0: LAYOUTS[0], 1: LAYOUTS[0]}
    rc, out = finish(start_site(bed, bed["b"], LAYOUTS[0]))
    assert rc == 0 and recap_changed(out, HOST) == 0, out[-4000:]
