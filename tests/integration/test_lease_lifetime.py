"""A run lease that lives as long as the run (issue #24), on the sandbox: a lease shortened to seconds, a MIG wave
that lasts several lease durations, and a second run started meanwhile.

Before the lease was renewed in the background, the first run's lease expired while its wave waited for the MIG
manager, the second run took it over and relabelled the same node while the first was still writing. Now the first
run renews it a third of its duration apart (k8s/lease_keeper.py): the second run that does not wait stops naming the
holder, and the one that waits starts writing only after the first run's last write. The two runs use two
identities, so the kube-apiserver's audit log (written in request order) tells their writes apart. Each test ends
with no node cordoned by gpupool and a run after that changes nothing.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from tests.integration.playbook import ROOT, playbook_env, recap_changed, site_argv

pytestmark = pytest.mark.sandbox
HOST = "lease-life"
POOL = "lease-a100"
NG_LABEL = "magnum.openstack.org/nodegroup"
LAYOUTS = ({"3g.20gb": 1, "2g.10gb": 2}, {"1g.5gb": 7}, {"3g.20gb": 2})
LEASE_SECONDS = 6  # renewed every 2 s; the wave below lasts about four lease durations
WAVE_SECONDS = 25


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


def start_site(bed, kubeconfig, layout, **extra):
    cluster = inventory(bed["sandbox"], kubeconfig, layout)
    argv = site_argv(bed["tmp"], HOST, cluster, dict({"gpupool_lease_duration": LEASE_SECONDS}, **extra))
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=ROOT, bufsize=1
    )


def wait_for_line(proc, pattern, timeout=180):
    """Read the run's output until a line matches; the lines so far."""
    seen, deadline = [], time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if re.search(pattern, line):
            return seen
        assert time.monotonic() < deadline, "".join(seen)[-4000:]
    raise AssertionError("the run ended before %r:\n%s" % (pattern, "".join(seen)[-4000:]))


def finish(proc, seen=()):
    out = "".join(seen) + proc.stdout.read()
    proc.wait(timeout=300)
    return proc.returncode, out


def cordoned_by_gpupool(core):
    nodes = core.list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items
    return [
        n.metadata.name
        for n in nodes
        if n.spec.unschedulable and (n.metadata.annotations or {}).get("gpupool.io/cordoned-by")
    ]


def successful_writes(window, user):
    return [e for e in window.writes(user=user) if e["responseStatus"]["code"] < 400]


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    from kubernetes import client

    core = client.CoreV1Api(sandbox.cp.api_client())
    data = {
        "sandbox": sandbox,
        "tmp": tmp_path_factory.mktemp("lease-life"),
        "core": core,
        "a": sandbox.cp.mint_kubeconfig("operator-a", ["system:masters"]),
        "b": sandbox.cp.mint_kubeconfig("operator-b", ["system:masters"]),
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


def long_wave(bed, layout, second_layout, **second):
    """Run A changes the layout with a MIG manager that takes WAVE_SECONDS; once A waits for it and a lease duration
    has passed, run B starts with `second` variables. Returns (rc, output) of A and of B, and the audit window."""
    sandbox = bed["sandbox"]
    mark = sandbox.cp.audit.mark()
    sandbox.mig.delay = WAVE_SECONDS
    try:
        a = start_site(bed, bed["a"], layout)
        seen = wait_for_line(a, r"MIG wave 1/1 of %s: \S+ (pending|waiting for the MIG manager)" % POOL)
        time.sleep(2 * LEASE_SECONDS)  # a lease renewed only at the step's start would have expired by now
        b = start_site(bed, bed["b"], second_layout, **second)
        out_a = finish(a, seen)
        out_b = finish(b)
    finally:
        sandbox.mig.delay = 0.3
    return out_a, out_b, sandbox.cp.audit.since(mark)


def test_a_second_run_that_does_not_wait_stops_naming_the_holder_while_the_first_renews(bed):
    (rc_a, text_a), (rc_b, text_b), window = long_wave(bed, LAYOUTS[1], LAYOUTS[2], gpupool_lease_wait=0)
    assert rc_a == 0, text_a[-6000:]
    assert rc_b != 0 and "another gpupool run holds the lease kube-system/gpupool-run" in text_b, text_b[-4000:]
    assert successful_writes(window, "operator-b") == []  # at most a lease create that lost (409)
    renewals = [e for e in successful_writes(window, "operator-a") if e["objectRef"]["resource"] == "leases"]
    assert len(renewals) >= WAVE_SECONDS // (LEASE_SECONDS // 3) // 2  # renewed all through the wave
    assert cordoned_by_gpupool(bed["core"]) == []
    rc, out = finish(start_site(bed, bed["a"], LAYOUTS[1]))
    assert rc == 0 and recap_changed(out, HOST) == 0, out[-4000:]


def test_a_second_run_that_waits_writes_only_after_the_first_runs_last_write(bed):
    (rc_a, text_a), (rc_b, text_b), window = long_wave(bed, LAYOUTS[0], LAYOUTS[2], gpupool_lease_wait=180)
    assert rc_a == 0, text_a[-6000:]
    assert rc_b == 0, text_b[-6000:]
    order = [e["user"]["username"] for e in window.writes() if e["responseStatus"]["code"] < 400]
    order = [u for u in order if u in ("operator-a", "operator-b")]
    assert "operator-a" in order and "operator-b" in order
    first_b = order.index("operator-b")
    assert "operator-a" not in order[first_b:], order  # no write of A after B's first: never interleaved
    node = bed["core"].list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items[0]
    assert node.metadata.labels["nvidia.com/mig.config"] == "gpupool-%s" % POOL
    assert cordoned_by_gpupool(bed["core"]) == []
    rc, out = finish(start_site(bed, bed["b"], LAYOUTS[2]))
    assert rc == 0 and recap_changed(out, HOST) == 0, out[-4000:]


def test_a_run_whose_lease_is_taken_over_mid_wave_stops_before_its_next_write_and_the_next_run_finishes(bed):
    """Another holder takes the lease while run A waits for its MIG wave (as a run would after A's renewals failed
    for a whole duration): A's renewal finds it lost, its wait stops within a poll, and A writes nothing more; once
    that holder is gone, the next run finishes the wave A left (the cordon ledger, the MIG rollout)."""
    from kubernetes import client

    sandbox = bed["sandbox"]
    leases = client.CoordinationV1Api(sandbox.cp.api_client())
    sandbox.mig.delay = WAVE_SECONDS
    try:
        a = start_site(bed, bed["a"], LAYOUTS[1])
        seen = wait_for_line(a, r"MIG wave 1/1 of %s: \S+ (pending|waiting for the MIG manager)" % POOL)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        taken = {"spec": {"holderIdentity": "intruder", "acquireTime": now, "renewTime": now}}
        leases.patch_namespaced_lease("gpupool-run", "kube-system", taken)
        mark = sandbox.cp.audit.mark()  # from here on, A must not write
        rc_a, text_a = finish(a, seen)
    finally:
        sandbox.mig.delay = 0.3
    assert rc_a != 0, text_a[-6000:]
    folded = " ".join(text_a.split())
    assert "this run lost its run lease kube-system/gpupool-run to intruder" in folded, text_a[-4000:]
    assert "it stopped before waiting for" in folded, text_a[-4000:]
    assert successful_writes(sandbox.cp.audit.since(mark), "operator-a") == []
    leases.delete_namespaced_lease("gpupool-run", "kube-system")  # the intruder is gone (it never ran)
    rc, out = finish(start_site(bed, bed["a"], LAYOUTS[1]))
    assert rc == 0, out[-6000:]
    assert cordoned_by_gpupool(bed["core"]) == []
    node = bed["core"].list_node(label_selector="%s=%s" % (NG_LABEL, POOL)).items[0]
    assert node.metadata.labels["nvidia.com/mig.config"] == "gpupool-%s" % POOL
    rc, out = finish(start_site(bed, bed["a"], LAYOUTS[1]))
    assert rc == 0 and recap_changed(out, HOST) == 0, out[-4000:]
