"""The SANDBOX: a whole simulated GPU cloud on loopback, brought up and torn down by one command.

    python -m testbed.sandbox up       # control plane + Magnum emulator + simulators, in the background
    python -m testbed.sandbox status   # JSON: endpoints, nodes, DRA driver and MIG manager state
    python -m testbed.sandbox down     # stops everything `up` started (by pid), removes its files

What runs (docs/testbed.md has what each piece models and what it does not):

- a REAL Kubernetes control plane (etcd + kube-apiserver v1.37.1, or the release GPUPOOL_K8S_VERSION names:
  testbed/k8s_releases.py; testbed/controlplane.py);
- the Magnum API EMULATOR (testbed/magnum_emulator.py) with the cluster of inventories/example
  (``digaponc-gpu-004``, labels incl. ``nvidia_gpu_enabled=true``, default-master and
  default-worker nodegroups of flavor ``m2.large``), its ``api_address`` the real apiserver;
- the node SIMULATOR (testbed/node_simulator.py): Nodes for the emulator's nodegroups, and the kubelet's
  pod part on them (bound pods Running/Ready, deleted pods finalized);
- the DRA driver SIMULATOR (testbed/dra_simulator.py): ResourceSlices where its kubelet-plugin pod runs, claim
  prepare, the controller Deployment's ReplicaSet and status (the real DaemonSet controller and scheduler place
  the plugin pods);
- the MIG manager SIMULATOR (testbed/mig_manager_simulator.py): ``nvidia.com/mig.config``.

The simulators poll the apiserver (one node and one pod LIST per poll, default every 0.5 s) in one thread; the
node simulator is driven by the emulator's ``on_nodegroup_change`` hook. ``up`` starts a detached
process (``python -m testbed.sandbox run``), waits until it is ready and prints its progress; the
state lives in ``.build/sandbox/`` (or ``$GPUPOOL_STATE/sandbox``): ``state.json`` (pid, ports,
kubeconfig, clouds.yaml, ...), ``status.json`` (refreshed every few seconds), ``sandbox.log``,
``clouds.yaml``. ``up`` also writes ``inventories/sandbox/`` (git-ignored): the pools of
inventories/example with ``kubeconfig`` = the sandbox's admin kubeconfig and ``magnum.cloud`` = the
emulator's cloud **as a dict** (no clouds.yaml or OS_CLIENT_CONFIG_FILE needed; the clouds.yaml in
the state dir is for the ``openstack`` CLI). ``down`` removes both.

Python::

    sb = Sandbox(magnum_delay=0.2, mig_delay=0.3).start()     # or Sandbox(control_plane=cp)
    sb.kubeconfig, sb.clouds_yaml, sb.cloud, sb.magnum        # MagnumEmulator instance
    sb.mig.inject_fault(node="..."); sb.mig.layout("...")     # MIG manager simulator
    sb.sync()                                                 # one simulator pass, now
    sb.stop()
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from testbed import gpu_flavors
from testbed.dra_simulator import IDENTITY as DRA_IDENTITY
from testbed.dra_simulator import DraDriverSimulator
from testbed.mig_manager_simulator import DEFAULT_CONFIG_MAP, DEFAULT_NAMESPACE, MigManagerSimulator
from testbed.mig_manager_simulator import IDENTITY as MIG_IDENTITY
from testbed.node_simulator import IDENTITY as NODE_IDENTITY
from testbed.node_simulator import GpuInventory, NodeSimulator
from testbed.simulator_client import Kube, simulator_kubeconfig

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_INVENTORY = ROOT / "inventories" / "example"
SIMULATION_CHART = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu"
DEFAULT_INVENTORY = ROOT / "inventories" / "sandbox"
CLUSTER_NAME = "digaponc-gpu-004"
INVENTORY_MARKER = ".written-by-testbed-sandbox"
CLUSTER_LABELS = {
    # CERN-like cluster-template labels (reference magnum-nodegroups.md §3) with GPUs enabled.
    "kube_tag": "v1.37.1",
    "container_infra_prefix": "registry.cern.ch/magnum/",
    "cern_enabled": "true",
    "cern_chart_enabled": "true",
    "nvidia_gpu_enabled": "true",
    "monitoring_enabled": "true",
}


def _log(msg: str) -> None:
    print("[sandbox] %s" % msg, file=sys.stderr, flush=True)


def state_dir() -> Path:
    return Path(os.environ.get("GPUPOOL_STATE") or ROOT / ".build") / "sandbox"


def cluster_seed(name: str = CLUSTER_NAME, api_address: str | None = None) -> dict:
    """The Magnum cluster the sandbox starts with (what inventories/example points at)."""
    return {
        "name": name,
        "labels": dict(CLUSTER_LABELS),
        "master_count": 1,
        "node_count": 1,
        "flavor_id": "m2.large",
        "master_flavor_id": "m2.large",
        "image_id": "fedora-coreos-40",
        "docker_volume_size": 50,
        "api_address": api_address or "auto",
    }


class Sandbox:
    """Control plane + Magnum emulator + node, DRA driver and MIG manager simulators (one process)."""

    def __init__(
        self,
        *,
        control_plane=None,
        cluster: str = CLUSTER_NAME,
        magnum_delay: float = 2.0,
        conductor_lag: float = 0.1,
        mig_delay: float = 2.0,
        poll_interval: float = 0.5,
        state: str | os.PathLike | None = None,
        inventory: str | os.PathLike | None = None,
        example: str | os.PathLike = EXAMPLE_INVENTORY,
        magnum_port: int = 0,
        mig_config_map: str | None = None,
        mig_namespace: str | None = None,
        adopt_foreign_nodes: bool = True,
        pod_exit_seconds: float = 1.0,
        log=_log,
    ):
        """control_plane: a started ControlPlane to use (not stopped by stop()); None starts one.
        state: directory for clouds.yaml (a temp dir by default). inventory: where to write the
        sandbox inventory (None: none is written). mig_config_map/mig_namespace: where the MIG
        manager simulator reads the mig-parted config (default: the example inventory's mig_manager,
        else gpupool-mig-parted-config in gpu-operator). adopt_foreign_nodes: the DRA driver and MIG
        manager simulators also act on GPU Nodes the node simulator did not register (recognised by
        their instance-type or GFD labels); the pytest fixture turns it off, its apiserver is shared.
        pod_exit_seconds: how long a deleted pod's simulated containers take to stop (at most its grace period)."""
        self.pod_exit_seconds = pod_exit_seconds
        self.cp = control_plane
        self._own_cp = control_plane is None
        self.cluster_name = cluster
        self.magnum_delay, self.conductor_lag, self.mig_delay = magnum_delay, conductor_lag, mig_delay
        self.poll_interval = poll_interval
        self.state = Path(state) if state else None
        self.inventory_dir = Path(inventory) if inventory else None
        self.example = Path(example)
        self.magnum_port = magnum_port
        self.log = log
        mm = self._example_mig_manager()
        self.mig_config_map = mig_config_map or mm.get("config_map") or DEFAULT_CONFIG_MAP
        self.mig_namespace = mig_namespace or mm.get("namespace") or DEFAULT_NAMESPACE
        self.magnum = None
        self.inventory = GpuInventory(adopt_foreign=adopt_foreign_nodes)
        self.nodes = self.dra = self.mig = None
        self.clouds_yaml: Path | None = None
        self.errors: list[str] = []
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tick_lock = threading.RLock()
        self._tmp: str | None = None
        self.start_seconds = 0.0

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> "Sandbox":
        from testbed.magnum_emulator import MagnumEmulator

        t0 = time.monotonic()
        try:
            if self.cp is None:
                from testbed.controlplane import ControlPlane

                self.cp = ControlPlane()
                self.log("starting the control plane (etcd + kube-apiserver %s) ..." % self.cp.release.version)
                self.cp.start()
            if self.state is None:
                self._tmp = tempfile.mkdtemp(prefix="gpupool-sandbox-")
                self.state = Path(self._tmp)
            self.state.mkdir(parents=True, exist_ok=True)
            self.log("control plane: %s" % self.cp.server)
            node_kube = Kube(simulator_kubeconfig(self.cp, NODE_IDENTITY), "node-simulator")
            self._loop_kube = Kube(simulator_kubeconfig(self.cp, NODE_IDENTITY), "node-simulator")
            dra_kube = Kube(simulator_kubeconfig(self.cp, DRA_IDENTITY), "dra-driver-simulator")
            mig_kube = Kube(simulator_kubeconfig(self.cp, MIG_IDENTITY), "nvidia-mig-manager-simulator")
            self._ensure_namespace(mig_kube, self.mig_namespace)
            self.dra = DraDriverSimulator(dra_kube, self.inventory)
            self.mig = MigManagerSimulator(
                mig_kube,
                self.inventory,
                config_map=self.mig_config_map,
                namespace=self.mig_namespace,
                delay=self.mig_delay,
                republish=lambda _node: self.dra.tick(),
            )
            self.nodes = NodeSimulator(
                node_kube,
                self.inventory,
                clusters={self.cluster_name},
                pod_kube=self._loop_kube,
                exit_seconds=self.pod_exit_seconds,
            )
            self.nodes.set_readiness(self.dra.pod_readiness)
            self.log("starting the Magnum emulator (cluster %s) ..." % self.cluster_name)
            self.magnum = MagnumEmulator(
                port=self.magnum_port,
                delay=self.magnum_delay,
                conductor_lag=self.conductor_lag,
                clusters=[cluster_seed(self.cluster_name, self.cp.server)],
                flavors=sorted(gpu_flavors.FLAVOR_TABLE),
            ).start()
            self.clouds_yaml = self.magnum.write_clouds_yaml(self.state / "clouds.yaml")
            self.log(
                "Magnum emulator: %s (clouds.yaml %s, cloud %s)"
                % (self.magnum.url, self.clouds_yaml, self.magnum.cloud_name)
            )
            self.nodes.attach(self.magnum)  # replays the default nodegroups: their Nodes register now
            self.log("nodes registered: %s" % ", ".join(self.nodes.nodes()))
            self.sync()
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="sandbox-simulators", daemon=True)
            self._thread.start()
            if self.inventory_dir is not None:
                self.write_inventory(self.inventory_dir)
                self.log("inventory written: %s" % self.inventory_dir)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        self.log("sandbox up in %.1fs" % self.start_seconds)
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self.magnum is not None:
            self.magnum.stop()
            self.magnum = None
        if self._own_cp and self.cp is not None:
            self.cp.stop()
            self.cp = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @staticmethod
    def _ensure_namespace(kube: Kube, name: str) -> None:
        # The GPU Operator's namespace exists where a MIG manager runs; the simulator plays it.
        if kube.get("/api/v1/namespaces/" + name) is None:
            kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    # ---- the simulator loop -------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(self.poll_interval):
            self.sync()

    def sync(self) -> None:
        """One pass of the kubelets (node simulator), the DRA driver and MIG manager simulators (the loop calls it
        every poll): one node LIST and one pod LIST, shared by all of them."""
        with self._tick_lock:
            try:
                nodes = self._loop_kube.list("/api/v1/nodes")
                pods = self._loop_kube.list("/api/v1/pods")
                self.inventory.prune({n["metadata"]["name"] for n in nodes})
                pods = self.nodes.tick(nodes, pods)
                self.dra.tick(nodes, pods)
                self.mig.tick(nodes)
                self.ticks += 1
            except Exception as exc:  # the next poll retries; a dead apiserver just logs
                msg = "%s: %s" % (type(exc).__name__, exc)
                if not self.errors or self.errors[-1] != msg:
                    self.log("simulator pass failed: %s" % msg)
                self.errors = (self.errors + [msg])[-50:]

    # ---- addresses ------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.cp.kubeconfig

    @property
    def server(self) -> str:
        return self.cp.server

    @property
    def cloud(self) -> dict:
        """The emulator's cloud as an openstacksdk/clouds.yaml dict."""
        return self.magnum.cloud_config()

    def cluster(self) -> dict:
        return self.magnum.cluster(self.cluster_name)

    def status(self) -> dict:
        mig = {}
        for name in self.inventory.names():
            st = self.mig.state(name)
            if st["config"] or any(v is not None for v in self.inventory.layouts(name).values()):
                mig[name] = {
                    "config": st["config"],
                    "state": st["state"],
                    "message": st["message"],
                    "layout": {str(k): v for k, v in self.inventory.layouts(name).items()},
                }
        return {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "magnum_url": self.magnum.url if self.magnum else None,
            "clouds_yaml": str(self.clouds_yaml) if self.clouds_yaml else None,
            "cluster": self.cluster_name,
            "nodes": self.nodes.nodes() if self.nodes else [],
            "dra_driver": self.dra.status() if self.dra else None,
            "mig_manager": mig,
            "ticks": self.ticks,
            "errors": self.errors[-5:],
        }

    # ---- inventory ------------------------------------------------------------------------------------
    def _example_mig_manager(self) -> dict:
        for path in sorted(self.example.glob("host_vars/*/gpupool.yml")):
            data = yaml.safe_load(path.read_text()) or {}
            return (data.get("gpupool_cluster") or {}).get("mig_manager") or {}
        return {}

    def write_inventory(self, directory: str | os.PathLike) -> Path:
        """inventories/example's hosts and pools, pointed at this sandbox (see the module docstring)."""
        directory = Path(directory)
        if directory.exists():
            if not (directory / INVENTORY_MARKER).exists():
                raise FileExistsError("%s exists and was not written by the sandbox; not overwriting it" % directory)
            shutil.rmtree(directory)
        (directory / "host_vars").mkdir(parents=True)
        (directory / INVENTORY_MARKER).write_text("written by python -m testbed.sandbox; removed by `down`\n")
        hosts = yaml.safe_load((self.example / "hosts.yml").read_text())
        header = (
            "# Written by the SANDBOX (python -m testbed.sandbox up) from inventories/example: the same\n"
            "# hosts and pools, pointed at the simulated GPU cloud. Not in git; `down` removes it.\n"
        )
        (directory / "hosts.yml").write_text(header + yaml.safe_dump(hosts, sort_keys=False))
        for src in sorted(self.example.glob("host_vars/*/gpupool.yml")):
            data = yaml.safe_load(src.read_text()) or {}
            cluster = copy.deepcopy(data.get("gpupool_cluster") or {})
            cluster["kubeconfig"] = str(self.kubeconfig)
            magnum = dict(cluster.get("magnum") or {})
            magnum["cloud"] = self.cloud  # a dict: the modules need no clouds.yaml
            magnum["cluster"] = self.cluster_name
            cluster["magnum"] = magnum
            # The sandbox cannot pull NVIDIA's chart: the DRA driver role installs the SIMULATION chart
            # (same name and values keys; the DRA driver simulator plays its pods).
            dra = dict(cluster.get("dra_driver") or {})
            dra["chart"] = str(SIMULATION_CHART)
            dra["version"] = yaml.safe_load((SIMULATION_CHART / "Chart.yaml").read_text())["version"]
            cluster["dra_driver"] = dra
            data["gpupool_cluster"] = cluster
            out = directory / "host_vars" / src.parent.name
            out.mkdir(parents=True, exist_ok=True)
            helm = _helm_path()
            if helm:  # the dra_driver role's helm: the test bed's own (PATH may have none). A file of its
                # own, so an edit of gpupool.yml (the molecule pool-change scenario rewrites it) keeps it.
                (out / "testbed.yml").write_text(
                    "---\n"
                    + header.replace("hosts and pools", "helm")
                    + yaml.safe_dump({"dra_driver_helm_binary": helm})
                )
            (out / "gpupool.yml").write_text(
                "---\n" + header.replace("hosts and pools", "pools") + yaml.safe_dump(data, sort_keys=False)
            )
        return directory


def _helm_path() -> str | None:
    from testbed import binaries

    try:
        return str(binaries.find("helm", allow_fetch=False).path)
    except (FileNotFoundError, RuntimeError):
        return None


# ---- CLI -------------------------------------------------------------------------------------------
def _pid_alive(pid: int, marker: str) -> bool:
    try:
        cmdline = Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return marker in cmdline and "testbed.sandbox" in cmdline


def _read_state(sdir: Path) -> dict | None:
    try:
        return json.loads((sdir / "state.json").read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)


def cmd_run(args) -> int:
    """The background process `up` starts: runs the sandbox until SIGTERM/SIGINT."""
    sdir = Path(args.state)
    sdir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    sb = Sandbox(
        state=sdir,
        inventory=args.inventory,
        magnum_delay=args.magnum_delay,
        mig_delay=args.mig_delay,
        poll_interval=args.poll_interval,
        magnum_port=args.magnum_port,
    )
    try:
        sb.start()
    except BaseException as exc:
        _log("start failed: %s: %s" % (type(exc).__name__, exc))
        return 1
    state = {
        "ready": True,
        "pid": os.getpid(),
        "state_dir": str(sdir),
        "server": sb.server,
        "kubeconfig": str(sb.kubeconfig),
        "controlplane_workdir": str(sb.cp.workdir),
        "controlplane_pids": sb.cp.pids,
        "ports": dict(sb.cp.ports, magnum=sb.magnum.port),
        "magnum_url": sb.magnum.url,
        "clouds_yaml": str(sb.clouds_yaml),
        "cloud_name": sb.magnum.cloud_name,
        "cluster": sb.cluster_name,
        "inventory": str(args.inventory) if args.inventory else None,
        "mig_config_map": "%s/%s" % (sb.mig_namespace, sb.mig_config_map),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "start_seconds": sb.start_seconds,
    }
    _write_json(sdir / "state.json", state)
    try:
        while not stop.wait(2.0):
            try:
                _write_json(sdir / "status.json", sb.status())
            except Exception as exc:  # status is informative only
                _log("status not written: %s" % exc)
    finally:
        _log("stopping ...")
        sb.stop()
        for name in ("state.json", "status.json"):
            (sdir / name).unlink(missing_ok=True)
        _log("stopped")
    return 0


def cmd_up(args) -> int:
    sdir = Path(args.state)
    state = _read_state(sdir)
    if state and _pid_alive(state["pid"], str(sdir)):
        print("already up: export KUBECONFIG=%s" % state["kubeconfig"])
        return 0
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / "state.json").unlink(missing_ok=True)
    log_path = sdir / "sandbox.log"
    env = dict(os.environ)
    paths = [str(ROOT / ".build" / "collections"), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    argv = [
        sys.executable,
        "-m",
        "testbed.sandbox",
        "run",
        "--state",
        str(sdir),
        "--magnum-delay",
        str(args.magnum_delay),
        "--mig-delay",
        str(args.mig_delay),
        "--poll-interval",
        str(args.poll_interval),
        "--magnum-port",
        str(args.magnum_port),
        "--inventory",
        str(args.inventory or ""),
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
    _log("starting (pid %d, log %s) ..." % (proc.pid, log_path))
    seen, deadline = 0, time.monotonic() + args.timeout
    while True:
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        lines = text.splitlines()
        for line in lines[seen:]:
            print("  " + line, file=sys.stderr, flush=True)
        seen = len(lines)
        state = _read_state(sdir)
        if state and state.get("ready"):
            break
        if proc.poll() is not None:
            _log("the sandbox process exited with status %s; see %s" % (proc.returncode, log_path))
            return 1
        if time.monotonic() > deadline:
            _log("not ready after %ss; stopping it" % args.timeout)
            _stop(sdir, {"pid": proc.pid})
            return 1
        time.sleep(0.2)
    print("sandbox up (pid %d)" % state["pid"])
    print("export KUBECONFIG=%s" % state["kubeconfig"])
    print("export OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=%s" % (state["clouds_yaml"], state["cloud_name"]))
    if state.get("inventory"):
        print("inventory: %s" % state["inventory"])
    return 0


def _stop(sdir: Path, state: dict, timeout: float = 30.0) -> bool:
    """SIGTERM the sandbox process (only if its command line is ours), SIGKILL after `timeout`."""
    pid = state.get("pid")
    if not pid or not _pid_alive(pid, str(sdir)):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid, str(sdir)) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if _pid_alive(pid, str(sdir)):
        os.kill(pid, signal.SIGKILL)
    return True


def cmd_down(args) -> int:
    sdir = Path(args.state)
    state = _read_state(sdir) or {}
    stopped = _stop(sdir, state)
    # If the process had to be killed, its control plane is stopped by pid here (normally the
    # sandbox stops it itself, and PR_SET_PDEATHSIG kills it with the process anyway).
    workdir = state.get("controlplane_workdir")
    if workdir and Path(workdir, "state.json").exists():
        from testbed.controlplane import ControlPlane

        ControlPlane.attach(workdir).stop()
    inventory = Path(state["inventory"]) if state.get("inventory") else Path(args.inventory) if args.inventory else None
    if inventory is not None and (inventory / INVENTORY_MARKER).exists():
        shutil.rmtree(inventory)
    for name in ("state.json", "status.json", "clouds.yaml"):
        (sdir / name).unlink(missing_ok=True)
    print("sandbox stopped" if stopped else "sandbox was not running")
    return 0


def cmd_status(args) -> int:
    sdir = Path(args.state)
    state = _read_state(sdir)
    if not state or not _pid_alive(state["pid"], str(sdir)):
        print(json.dumps({"up": False}))
        return 1
    out = dict(state, up=True)
    try:
        out["status"] = json.loads((sdir / "status.json").read_text())
    except (OSError, ValueError):
        pass
    print(json.dumps(out, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m testbed.sandbox",
        description="The sandbox: a simulated GPU cloud (real kube-apiserver, Magnum "
        "emulator, node/DRA driver/MIG manager simulators).",
    )
    ap.add_argument("command", choices=["up", "down", "status", "run"])
    ap.add_argument("--state", default=str(state_dir()), help="state directory (default %(default)s)")
    ap.add_argument(
        "--inventory",
        default=str(DEFAULT_INVENTORY),
        help="where `up` writes the sandbox inventory; '' for none (default %(default)s)",
    )
    ap.add_argument("--magnum-delay", type=float, default=2.0, help="seconds a Magnum operation stays IN_PROGRESS")
    ap.add_argument("--mig-delay", type=float, default=2.0, help="seconds a MIG config stays pending")
    ap.add_argument("--poll-interval", type=float, default=0.5, help="simulator poll interval (s)")
    ap.add_argument("--magnum-port", type=int, default=0, help="Magnum emulator port (0: a free one)")
    ap.add_argument("--timeout", type=float, default=180.0, help="how long `up` waits for readiness")
    args = ap.parse_args(argv)
    args.inventory = args.inventory or None
    return {"up": cmd_up, "down": cmd_down, "status": cmd_status, "run": cmd_run}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
