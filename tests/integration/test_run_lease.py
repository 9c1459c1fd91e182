"""Two gpupool runs at once on one cluster (an AWX job launched twice, two operators): the run lease lets one
converge and stops the other, naming the holder, before it writes anything; a second run may wait for the
first; a lease left by a killed run expires and the next run takes it over. Real kube-apiserver, real
ansible-playbook, writes counted per identity in the audit log."""

from __future__ import annotations

import datetime
import subprocess
import threading
from pathlib import Path

import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, VENV_BIN

SELECTOR = "lease.gpupool.io/pool"
NODES = ["lease-t4-0", "lease-t4-1"]
LEASE = ("kube-system", "gpupool-run")


def inventory(kubeconfig, extra=None):
    cluster = {
        "name": "lease",
        "kubeconfig": str(kubeconfig),
        # No DRA driver chart or helm on this bed: the driver role (tested in test_dra_driver_module.py and
        # molecule) is off, so site.yml runs what this test is about.
        "dra_driver": {"enabled": False},
        "pools": [
            {
                "name": "lease-t4",
                "node_selector": {SELECTOR: "t4"},
                "gpu": {"model": "T4"},
                "node_labels": {"team": "vision"},
            }
        ],
    }
    host = dict(
        {"ansible_connection": "local", "ansible_python_interpreter": h.PYTHON, "gpupool_cluster": cluster},
        **(extra or {}),
    )
    return {"all": {"children": {"gpupool_clusters": {"hosts": {"lease": host}}}}}


def start_site(tmp_path, name, kubeconfig, extra=None):
    work = tmp_path / name
    work.mkdir()
    (work / "hosts.yml").write_text(yaml.safe_dump(inventory(kubeconfig, extra)))
    env = dict(
        h.env_kubeconfig(kubeconfig),
        ANSIBLE_COLLECTIONS_PATH=str(Path(ROOT) / ".build" / "collections"),
        ANSIBLE_CONFIG=str(Path(ROOT) / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
    )
    log = work / "out.log"
    proc = subprocess.Popen(
        [VENV_BIN + "/ansible-playbook", "-i", str(work / "hosts.yml"), str(Path(ROOT) / "playbooks" / "site.yml")],
        cwd=ROOT,
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    return proc, log


def finish(proc, log):
    proc.wait(timeout=300)
    return proc.returncode, log.read_text()


def lease_of(cp):
    r = cp.kubectl("-n", LEASE[0], "get", "lease", LEASE[1], "-o", "yaml", check=False)
    return yaml.safe_load(r.stdout) if r.returncode == 0 else None


def converged(cp):
    for name in NODES:
        labels = h.kubectl_json(cp, "get", "node", name)["metadata"]["labels"]
        if labels.get("gpupool.io/pool") != "lease-t4" or labels.get("team") != "vision":
            return False
    return True


def setup_nodes(cp):
    for name in NODES:
        h.make_node(cp, name, {SELECTOR: "t4"}, gpu_product="Tesla-T4")


def test_two_runs_at_once_one_converges_the_other_stops_naming_the_holder(control_plane, tmp_path):
    cp = control_plane
    setup_nodes(cp)
    try:
        a = cp.mint_kubeconfig("operator-a", ["system:masters"])
        b = cp.mint_kubeconfig("operator-b", ["system:masters"])
        mark = cp.audit.mark()
        runs = {"operator-a": start_site(tmp_path, "a", a), "operator-b": start_site(tmp_path, "b", b)}
        out = {user: finish(*run) for user, run in runs.items()}
        window = cp.audit.since(mark)
        winners = [u for u, (rc, _) in out.items() if rc == 0]
        assert len(winners) == 1, {u: text[-2000:] for u, (_rc, text) in out.items()}
        loser = ({"operator-a", "operator-b"} - set(winners)).pop()
        text = out[loser][1]
        assert "another gpupool run holds the lease kube-system/gpupool-run: holder gpupool@" in text, text[-3000:]
        assert "wait for that run to finish" in text
        lease_writes = window.writes(user=loser, resource="leases")
        assert [w for w in window.writes(user=loser) if w not in lease_writes] == []  # the loser wrote nothing
        assert all(w["responseStatus"]["code"] >= 400 for w in lease_writes)  # at most a create that lost the race
        assert converged(cp)
        assert lease_of(cp) is None  # released by the winner at the end
    finally:
        h.delete_nodes(cp, NODES)


def test_a_second_run_can_wait_for_the_first(control_plane, tmp_path):
    from ansible_collections.gpupool.core.plugins.action import run_lease
    from tests.integration.test_faults import run_module

    cp = control_plane
    setup_nodes(cp)
    try:
        kubeconfig = cp.mint_kubeconfig("operator-c", ["system:masters"])
        cluster = inventory(kubeconfig)["all"]["children"]["gpupool_clusters"]["hosts"]["lease"]["gpupool_cluster"]
        first = run_module(run_lease, cluster=cluster, holder="gpupool@first-run/1")
        assert first["action"] == "created" and first["lease"]["holder"] == "gpupool@first-run/1"
        release = threading.Timer(
            4.0, lambda: run_module(run_lease, cluster=cluster, state="released", holder="gpupool@first-run/1")
        )
        release.start()
        rc, text = finish(*start_site(tmp_path, "waits", kubeconfig, {"gpupool_lease_wait": 120}))
        release.join()
        assert rc == 0, text[-3000:]
        assert converged(cp) and lease_of(cp) is None
    finally:
        h.delete_nodes(cp, NODES)


def test_a_killed_runs_lease_expires_and_the_next_run_takes_it_over(control_plane, tmp_path):
    cp = control_plane
    setup_nodes(cp)
    try:
        # What a run killed mid-converge leaves: its lease, renewed two minutes ago, valid for one.
        renewed = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=120)
        stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        cp.kubectl(
            "apply",
            "-f",
            "-",
            input=yaml.safe_dump(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": LEASE[1],
                        "namespace": LEASE[0],
                        "labels": {"app.kubernetes.io/managed-by": "gpupool"},
                    },
                    "spec": {
                        "holderIdentity": "gpupool@killed-run/9",
                        "leaseDurationSeconds": 60,
                        "acquireTime": stamp,
                        "renewTime": stamp,
                    },
                }
            ),
        )
        kubeconfig = cp.mint_kubeconfig("operator-d", ["system:masters"])
        rc, text = finish(*start_site(tmp_path, "after-kill", kubeconfig))
        assert rc == 0, text[-3000:]
        assert converged(cp) and lease_of(cp) is None

        # A lease another run holds and renews is NOT taken: the run stops before any write.
        cp.kubectl(
            "apply",
            "-f",
            "-",
            input=yaml.safe_dump(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": LEASE[1], "namespace": LEASE[0]},
                    "spec": {
                        "holderIdentity": "gpupool@live-run/3",
                        "leaseDurationSeconds": 600,
                        "renewTime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    },
                }
            ),
        )
        mark = cp.audit.mark()
        rc, text = finish(*start_site(tmp_path, "while-held", kubeconfig))
        assert rc != 0 and "holder gpupool@live-run/3" in text, text[-3000:]
        assert cp.audit.since(mark).writes(user="operator-d") == []
        assert lease_of(cp)["spec"]["holderIdentity"] == "gpupool@live-run/3"  # left to its holder
    finally:
        cp.kubectl("-n", LEASE[0], "delete", "lease", LEASE[1], "--ignore-not-found")
        h.delete_nodes(cp, NODES)
