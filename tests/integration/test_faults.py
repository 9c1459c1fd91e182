"""Faults on the way: a killed kube-apiserver or Magnum API mid-change, overloaded APIs (429, 5xx,
timeouts), Magnum operations ending *_FAILED, a MIG reconfiguration that never finishes.

Each test proves the same things: the failure is retried with back-off or reported with a sentence
that says what to do, and after a rerun everything is converged with nothing duplicated, lost or
half-applied (counted in the apiserver's audit log and the Magnum emulator's request log).

The apiserver tests use a control plane of their own (they kill it); the fault front
(testbed/fault_proxy.py) forwards to that apiserver with the test's identity.
"""

from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT as ROOT_DIR
from tests.integration.playbook import VENV_BIN

ROOT = Path(ROOT_DIR)

USER = "gpupool-faults"
SELECTOR = "faults.gpupool.io/pool"
FOREIGN_TAINT = {"key": "example.org/maintenance", "value": "planned", "effect": "PreferNoSchedule"}
FOREIGN_LABEL = ("example.org/rack", "r12")
T4_NODES = ["faults-t4-%02d" % i for i in range(40)]
H100_NODES = ["faults-h100-%02d" % i for i in range(12)]


def inventory(kubeconfig, t4_labels=None):
    return {
        "name": "faults",
        "kubeconfig": str(kubeconfig),
        # No DRA driver chart or helm on this bed: the driver role (tested in test_dra_driver_module.py and
        # molecule) is off, so site.yml runs what this test is about.
        "dra_driver": {"enabled": False},
        "pools": [
            {
                "name": "faults-t4",
                "node_selector": {SELECTOR: "faults-t4"},
                "gpu": {"model": "T4"},
                "node_labels": dict(t4_labels or {"team": "vision"}),
                "taints": [{"key": "dedicated", "value": "vision"}],
                "sharing": {"time_slicing": {"interval": "Medium"}},
            },
            {
                "name": "faults-h100",
                "node_selector": {SELECTOR: "faults-h100"},
                "gpu": {"model": "H100-80GB", "per_node": 4},
                "device_classes": {"extra": [{"name": "faults-h100-big", "min_memory": "80Gi"}]},
            },
        ],
    }


def run_module(module, **args):
    """A step in-process with these arguments, as its action plugin runs it (fast: no ansible-playbook)."""
    from tests.support.steps import run_action

    return run_action(module, **args)


# ---- a control plane of our own, with Nodes registered as the node simulator does -------------------------
@pytest.fixture(scope="module")
def own_cp(tmp_path_factory):
    from testbed.controlplane import ControlPlane
    from testbed.node_simulator import IDENTITY, GpuInventory, NodeSimulator
    from testbed.simulator_client import Kube, simulator_kubeconfig

    cp = ControlPlane(tmp_path_factory.mktemp("faults-cp") / "cp")
    try:
        cp.start()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        kubeconfig = simulator_kubeconfig(cp, IDENTITY)
        local = threading.local()

        def register(item):
            name, flavor, pool = item
            if not hasattr(local, "nodes"):  # a client per thread
                local.nodes = NodeSimulator(
                    Kube(kubeconfig, "node-simulator"), GpuInventory(False), log=lambda _m: None
                )
            # Someone else's label and taint are already there: a converge must keep them.
            local.nodes.register_node(
                name, flavor, labels={SELECTOR: pool, FOREIGN_LABEL[0]: FOREIGN_LABEL[1]}, taints=[FOREIGN_TAINT]
            )

        with ThreadPoolExecutor(6) as pool:
            list(
                pool.map(
                    register,
                    [(n, "g2.5xlarge", "faults-t4") for n in T4_NODES]
                    + [(n, "g5.h100x4", "faults-h100") for n in H100_NODES],
                )
            )
        h.ensure_namespace(cp, "gpu-operator")
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="module")
def kubeconfig(own_cp):
    return own_cp.mint_kubeconfig(USER, ["system:masters"])


def converged(cp, t4_labels=None):
    """Every Node, taint and DeviceClass as the inventory wants, exactly once; others' kept. [] when so."""
    problems = []
    nodes = {n["metadata"]["name"]: n for n in h.kubectl_json(cp, "get", "nodes")["items"]}
    want_labels = {"faults-t4": dict(t4_labels or {"team": "vision"}), "faults-h100": {}}
    want_taints = {
        "faults-t4": {("node-role.kubernetes.io/gpu", "NoSchedule"), ("dedicated", "NoSchedule")},
        "faults-h100": {("node-role.kubernetes.io/gpu", "NoSchedule")},
    }
    for names, pool in ((T4_NODES, "faults-t4"), (H100_NODES, "faults-h100")):
        for name in names:
            meta, spec = nodes[name]["metadata"], nodes[name].get("spec") or {}
            labels = meta.get("labels") or {}
            taints = [(t["key"], t["effect"]) for t in spec.get("taints") or []]
            if labels.get("gpupool.io/pool") != pool or labels.get(FOREIGN_LABEL[0]) != FOREIGN_LABEL[1]:
                problems.append("%s labels %s" % (name, labels))
            if any(labels.get(k) != v for k, v in want_labels[pool].items()):
                problems.append("%s lacks %s" % (name, want_labels[pool]))
            if len(taints) != len(set(taints)):
                problems.append("%s has a duplicated taint: %s" % (name, taints))
            if set(taints) != want_taints[pool] | {(FOREIGN_TAINT["key"], FOREIGN_TAINT["effect"])}:
                problems.append("%s taints %s" % (name, taints))
            recorded = (meta.get("annotations") or {}).get("gpupool.io/taints", "")
            if set(recorded.split(",")) != {"%s:%s" % t for t in want_taints[pool]}:
                problems.append("%s taints annotation %r" % (name, recorded))
    classes = sorted(
        c["metadata"]["name"]
        for c in h.kubectl_json(cp, "get", "deviceclasses")["items"]
        if (c["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gpupool"
    )
    if classes != ["faults-h100", "faults-h100-big", "faults-t4"]:
        problems.append("DeviceClasses %s" % classes)
    return problems


def site(cp, tmp_path, kubeconfig, name, **kwargs):
    """playbooks/site.yml on the faults inventory, in the background: returns the Popen and its log path."""
    import yaml

    work = tmp_path / name
    work.mkdir()
    (work / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "gpupool_clusters": {
                            "hosts": {
                                "faults": {
                                    "ansible_connection": "local",
                                    "ansible_python_interpreter": h.PYTHON,
                                    # A run that dies with the apiserver cannot release its run lease: a
                                    # short lease, and reruns that wait for it to expire (docs/concurrency.md).
                                    "gpupool_lease_duration": 10,
                                    "gpupool_lease_wait": 30,
                                    "gpupool_cluster": inventory(kubeconfig, **kwargs),
                                }
                            }
                        }
                    }
                }
            }
        )
    )
    env = dict(
        h.env_kubeconfig(kubeconfig),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
    )
    log = work / "out.log"
    proc = subprocess.Popen(
        [VENV_BIN + "/ansible-playbook", "-i", str(work / "hosts.yml"), str(ROOT / "playbooks" / "site.yml")],
        cwd=ROOT,
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    return proc, log


def recap(text):
    import re

    m = re.search(r"^faults\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", text, re.M)
    return {"ok": int(m.group(1)), "changed": int(m.group(2)), "failed": int(m.group(3))} if m else None


def node_writes_so_far(cp, mark):
    return len(list(cp.audit.since(mark, settle_timeout=0).writes(user=USER, resource="nodes")))


def test_apiserver_killed_mid_converge_then_rerun_converges_with_nothing_duplicated_or_lost(
    own_cp, kubeconfig, tmp_path
):
    cp = own_cp
    mark = cp.audit.mark()
    proc, log = site(cp, tmp_path, kubeconfig, "killed")
    deadline = time.monotonic() + 120
    # node_pool writes up to 16 nodes at once (k8s/workers.py): at its first Node write the rest are still to come
    while node_writes_so_far(cp, mark) < 1:
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    cp.kill_apiserver()
    written = {e["objectRef"]["name"] for e in cp.audit.since(mark).writes(user=USER, resource="nodes")}
    try:
        proc.wait(timeout=20)  # the client retries with back-off, then gives up with a sentence
    except subprocess.TimeoutExpired:
        pass  # still retrying node after node: the apiserver comes back under it
    finally:
        cp.restart_apiserver()
    proc.wait(timeout=300)
    out = log.read_text()
    assert proc.returncode != 0, out[-3000:]
    assert "cannot reach the Kubernetes API" in out and "check that the API server is up" in out, out[-3000:]
    assert 0 < len(written) < len(T4_NODES) + len(H100_NODES)  # killed in the middle: a partial converge

    proc, log = site(cp, tmp_path, kubeconfig, "rerun")
    proc.wait(timeout=300)
    assert proc.returncode == 0, log.read_text()[-4000:]
    assert converged(cp) == []

    mark = cp.audit.mark()
    proc, log = site(cp, tmp_path, kubeconfig, "again")
    proc.wait(timeout=300)
    assert recap(log.read_text())["changed"] == 0, log.read_text()[-3000:]
    # the run lease's own take/renew/release is bookkeeping, counted apart (docs/concurrency.md)
    writes = [e for e in cp.audit.since(mark).writes(user=USER) if e["objectRef"].get("resource") != "leases"]
    assert writes == []


# ---- check mode on a changed inventory ------------------------------------------------------------------
def test_check_mode_on_a_changed_inventory_writes_nothing(own_cp, kubeconfig, tmp_path):
    """Runs right after the converge above (the cluster is converged on inventory())."""
    import yaml

    from tests.integration.playbook import run_playbook

    assert converged(own_cp) == []
    changed = inventory(kubeconfig, {"team": "vision", "generation": "3"})
    changed["pools"][1]["device_classes"]["extra"].append({"name": "faults-h100-cc9", "min_compute_capability": "9.0"})
    changed["pools"][1]["taints"] = [{"key": "reserved", "value": "training", "effect": "NoExecute"}]
    hosts = yaml.safe_dump(
        {
            "all": {
                "children": {
                    "gpupool_clusters": {
                        "hosts": {
                            "faults": {
                                "ansible_connection": "local",
                                "ansible_python_interpreter": h.PYTHON,
                                "gpupool_cluster": changed,
                            }
                        }
                    }
                }
            }
        }
    )
    mark = own_cp.audit.mark()
    res = run_playbook(str(ROOT / "playbooks" / "site.yml"), hosts, tmp_path, check=True, diff=True)
    window = own_cp.audit.since(mark)
    assert res.rc == 0, res.stdout[-4000:]
    assert res.changed("faults") >= 2  # node_pool and device_class say what would change
    assert window.writes(user=USER) == []
    assert window.select(verbs={"patch"}, user=USER, include_dry_run=True)  # the server dry-ran them
    assert "faults-h100-cc9" in res.stdout and "reserved" in res.stdout  # --diff shows what would change
    assert converged(own_cp) == []


# ---- an overloaded API between the client and the apiserver ----------------------------------------------
@pytest.fixture
def proxy(own_cp, kubeconfig, tmp_path):
    from testbed.fault_proxy import FaultProxy

    with FaultProxy(own_cp, kubeconfig) as p:
        p.kubeconfig = p.write_kubeconfig(tmp_path / "proxy.kubeconfig")
        yield p


def node_pool(kubeconfig, t4_labels, **args):
    from ansible_collections.gpupool.core.plugins.action import node_pool as module

    return run_module(module, cluster=inventory(kubeconfig, t4_labels), **args)


def test_429_with_retry_after_is_retried_then_applied(own_cp, proxy):
    labels = {"team": "vision", "wave": "429"}
    proxy.inject(status=429, retry_after=1, count=3, match=r"^PATCH /api/v1/nodes/faults-t4-00\?")
    result = node_pool(proxy.kubeconfig, labels)
    assert not result.get("failed"), result.get("msg")
    answers = [what for method, path, what in proxy.log if method == "PATCH" and "/nodes/faults-t4-00?" in path]
    assert answers[:4] == [429, 429, 429, 200]  # the same write again after each Retry-After
    assert converged(own_cp, labels) == []


def test_timeout_is_retried_then_applied(own_cp, proxy):
    labels = {"team": "vision", "wave": "timeout"}
    proxy.inject(hang=4.0, count=1, match=r"^GET /api/v1/nodes\?")
    result = node_pool(proxy.kubeconfig, labels, request_timeout=1.0)
    assert not result.get("failed"), result.get("msg")
    lists = [what for method, path, what in proxy.log if method == "GET" and path.startswith("/api/v1/nodes?")]
    assert lists[:2] == ["hang", 200]
    assert converged(own_cp, labels) == []


def test_5xx_that_persists_is_reported_with_what_to_do_and_nothing_half_written(own_cp, proxy):
    labels = {"team": "vision", "wave": "503"}
    proxy.inject(status=503, count=1000, match=r"^PATCH ")
    mark = own_cp.audit.mark()
    result = node_pool(proxy.kubeconfig, labels, request_retries=2)
    assert result.get("failed") is True
    assert "HTTP 503" in result["msg"] and "still failing after retries" in result["msg"]
    assert "rerun" in result["msg"], result["msg"]
    assert own_cp.audit.since(mark).writes(user=USER) == []
    proxy.clear()
    assert not node_pool(proxy.kubeconfig, labels).get("failed")
    assert converged(own_cp, labels) == []


# ---- Magnum: the API goes away during a resize or a create; 429, timeouts, *_FAILED ---------------------
def ng(magnum, **args):
    from ansible_collections.gpupool.core.plugins.action import nodegroup

    return run_module(nodegroup, cloud=magnum.cloud_name, cluster="k8s", name="gpu", **args)


def restart_when(magnum, method, path_end, down_for=1.5):
    """A thread that stops the emulator (API and conductor) once `method .../path_end` was received,
    and starts it again `down_for` seconds later (Magnum's state survives, as its database would)."""

    def watch():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(r["method"] == method and r["path"].endswith(path_end) for r in magnum.magnum_requests()):
                magnum.stop()
                time.sleep(down_for)
                magnum.start()
                return
            time.sleep(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def writes(magnum, method, path_end):
    return [
        r for r in magnum.magnum_requests(writes_only=True) if r["method"] == method and r["path"].endswith(path_end)
    ]


def test_magnum_down_during_create_and_resize_no_duplicate_nodegroup_no_double_resize(magnum):
    magnum.set_delay(delay=2.0)
    watcher = restart_when(magnum, "POST", "/nodegroups")
    first = ng(magnum, node_count=1, wait_timeout=60)
    watcher.join()
    rerun = ng(magnum, node_count=1, wait_timeout=60)
    assert not rerun.get("failed"), (first, rerun)
    assert len(writes(magnum, "POST", "/nodegroups")) == 1  # never created twice
    groups = [
        g for g in magnum.cloud.clusters[magnum.cluster("k8s")["uuid"]]["nodegroups"].values() if g["name"] == "gpu"
    ]
    assert len(groups) == 1 and groups[0]["status"] == "CREATE_COMPLETE"

    watcher = restart_when(magnum, "POST", "/actions/resize")
    grown = ng(magnum, node_count=3, max_node_count=4, wait_timeout=60)
    watcher.join()
    again = ng(magnum, node_count=3, max_node_count=4, wait_timeout=60)
    assert not again.get("failed") and again["changed"] is False, (grown, again)
    assert len(writes(magnum, "POST", "/actions/resize")) == 1  # resized once
    assert magnum.nodegroup("k8s", "gpu")["node_count"] == 3 and len(magnum.nodes_of("k8s", "gpu")) == 3


def test_magnum_429_and_timeouts_are_retried(magnum):
    magnum.set_faults(error_count=2, error_status=429)
    result = ng(magnum, node_count=1)
    assert not result.get("failed"), result.get("msg")
    assert sum("HTTP 429, retry" in line for line in result["progress"]) == 2
    # Every Magnum request hangs 3 s for a while: the 1 s client timeout fires and the call is retried.
    magnum.set_faults(latency=3.0)
    threading.Timer(2.0, magnum.reset_faults).start()
    result = ng(magnum, node_count=1, api_timeout=1)
    assert not result.get("failed"), result.get("msg")
    assert any("retry" in line and "Timeout" in line for line in result["progress"]), result["progress"]


def test_magnum_update_failed_is_reported_with_what_to_do(magnum):
    ng(magnum, node_count=1)
    magnum.fail_next("resize", nodegroup="gpu", reason="No valid host was found. There are not enough hosts available.")
    result = ng(magnum, node_count=2)
    assert result.get("failed") is True and result["status"] == "UPDATE_FAILED"
    msg = " ".join(result["msg"].split())  # failures are wrapped at 200 characters a line
    assert "ended in UPDATE_FAILED: No valid host was found" in msg
    assert "Fix the cause and run the task again" in msg
    assert all(len(line) <= 200 for line in result["msg"].splitlines())
    retried = ng(magnum, node_count=2)  # Magnum accepts a new update after UPDATE_FAILED
    assert not retried.get("failed") and retried["nodegroup"]["node_count"] == 2


# ---- a MIG reconfiguration that never finishes ---------------------------------------------------------
def test_mig_node_that_never_finishes_stops_the_rollout_at_its_wave(sandbox, tmp_path):
    from ansible_collections.gpupool.core.plugins.action import mig_layout

    cp = sandbox.cp
    names = ["faults-mig-0", "faults-mig-1", "faults-mig-2"]
    # faults-mig-0 is registered like the others but no MIG manager runs there (the simulator only
    # serves the nodes the sandbox registered): its nvidia.com/mig.config.state never comes.
    h.make_node(
        cp,
        names[0],
        labels={
            SELECTOR: "faults-mig",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
            "nvidia.com/mig.capable": "true",
        },
    )
    for name in names[1:]:
        sandbox.nodes.register_node(name, "g4.p2.40g", labels={SELECTOR: "faults-mig"})
    admin = "gpupool-admin"
    try:
        cluster = {
            "name": "faults-mig",
            "kubeconfig": str(cp.kubeconfig),
            "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
            "pools": [
                {
                    "name": "faults-mig",
                    "node_selector": {SELECTOR: "faults-mig"},
                    "gpu": {"model": "A100-40GB", "per_node": 2},
                    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
                }
            ],
        }
        mark = cp.audit.mark()
        result = run_module(mig_layout, cluster=cluster, wait_timeout=2, wait_sleep=0.2, relabel_delay=0)
        window = cp.audit.since(mark)
        assert result.get("failed") is True
        assert "did not reach nvidia.com/mig.config.state=success within 2s" in result["msg"]
        assert "Not touched: %s, %s" % (names[1], names[2]) in result["msg"]
        assert "rerun with retry_failed: true" in result["msg"]
        assert [w["result"] for w in result["waves"]] == ["timeout", "not started", "not started"]
        for name in names[1:]:
            assert window.writes(user=admin, resource="nodes", name=name) == []  # untouched
            assert "nvidia.com/mig.config" not in h.kubectl_json(cp, "get", "node", name)["metadata"]["labels"]
        stuck = h.kubectl_json(cp, "get", "node", names[0])
        assert stuck["spec"].get("unschedulable") is True  # left cordoned, and the message says so
        assert "%s stays cordoned" % names[0] in result["msg"]
    finally:
        h.delete_nodes(cp, names[:1])
        for name in names[1:]:
            sandbox.nodes.remove_node(name)
