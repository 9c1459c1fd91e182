"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-scheduler, kube-controller-manager.

What is real: the binaries of one release (v1.37, or an older one of the compatibility matrix:
testbed/k8s_releases.py, GPUPOOL_K8S_VERSION). The apiserver's validation (DRA CEL selectors, OpenAPI),
server-side apply and field ownership, resourceVersion conflicts, RBAC (Node,RBAC), admission, the audit
log. The scheduler with its default profile: it places pods and allocates their ResourceClaims
(DynamicResources plugin). The controller manager with the controllers of CONTROLLERS: ResourceClaims made
from templates, DaemonSet pods, PodDisruptionBudget status, garbage collection, default ServiceAccounts,
namespace deletion. What is not started: kubelet (the sandbox's node simulator plays it), and the
controllers left out of CONTROLLERS (why, each: docs/testbed.md).

    cp = ControlPlane().start()          # or: python -m testbed.controlplane up|down|status
    cp = ControlPlane(version="1.32").start()   # an older release (default: $GPUPOOL_K8S_VERSION, else 1.37)
    api = cp.api_client()                # kubernetes Python client, admin (system:masters)
    kc = cp.mint_kubeconfig("alice", ["gpu-admins"])   # restricted: RBAC decides
    mark = cp.audit.mark(); ...; cp.audit.since(mark).writes(user="alice")
    cp.stop()
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from testbed import binaries, k8s_releases, pki
from testbed.audit import AuditLog

ROOT = Path(__file__).resolve().parent.parent
ADMIN_USER, ADMIN_GROUP = "gpupool-admin", "system:masters"
SERVICE_CIDR = "10.96.0.0/16"
# DRA API versions beyond the GA resource.k8s.io/v1 on the base release; dropped one by one if the server refuses
# them. An older release starts with exactly what it needs instead (k8s_releases.Release.runtime_config).
RUNTIME_CONFIG = ("resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3")
# DRA feature gates the sandbox relies on. 1.37's --help no longer lists the GA ones
# (DRAExtendedResource, DRADeviceTaints, DRAPrioritizedList, DRAAdminAccess,
# DRAResourceClaimDeviceStatus): they are on. A gate name the server does not know makes it exit,
# so only gates that --help lists as off by default are set (see feature_gates()); in 1.37 that
# is none of these - the rest are beta and on by default.
DRA_GATES = (
    "DRAExtendedResource",
    "DRADeviceTaints",
    "DRAPartitionableDevices",
    "DRAPrioritizedList",
    "DRAAdminAccess",
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRAResourceClaimDeviceStatus",
)
# The kube-controller-manager controllers that run (--controllers). Each is one GPU claims or drains meet;
# the rest stay off because nothing here needs them and some would act on what tests build by hand: the node
# lifecycle controller would taint every Node no simulated kubelet heartbeats (unreachable:NoExecute), the pod
# garbage collector would delete pods a test binds to a Node it never created, the taint eviction controller
# would evict pods from the NoExecute-tainted GPU nodes of the taint tests, and the deployment and replicaset
# controllers would race the DRA driver simulator, which plays the driver's controller Deployment (its pod would
# need a control-plane node to run on). docs/testbed.md has the table.
CONTROLLERS = (
    "resourceclaim-controller",  # a pod's ResourceClaim from its ResourceClaimTemplate; reserved-for cleanup
    "daemonset-controller",  # the DRA driver's kubelet-plugin pods, one per node its placement admits
    "disruption-controller",  # PodDisruptionBudget status: what an eviction during a drain is held to
    "garbage-collector-controller",  # owner references: a DaemonSet's pods, a pod's generated claims
    "serviceaccount-controller",  # the `default` ServiceAccount a tenant's pod runs as
    "namespace-controller",  # a deleted namespace's objects removed, then the namespace itself
)
SCHEDULER_USER, CONTROLLER_MANAGER_USER = "system:kube-scheduler", "system:kube-controller-manager"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # Metadata for everything, all stages kept: RequestReceived lets the audit reader
    # know which requests are still in flight. Deletes at Request level: a DELETE
    # with a DeleteOptions body ignores ?dryRun= in the URI, so only the logged
    # body says whether it really deleted. Node patches at Request level: tests read
    # what one write carried (mig_layout's cordon with the config label and the
    # cordon ledger's reason in the same patch).
    "rules": [
        {"level": "Request", "verbs": ["delete", "deletecollection"]},
        {"level": "Request", "verbs": ["patch"], "resources": [{"group": "", "resources": ["nodes"]}]},
        {"level": "Metadata"},
    ],
}


def _log(msg: str) -> None:
    print(f"[controlplane] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def feature_gates(apiserver: Path, wanted=DRA_GATES) -> dict[str, bool]:
    """Gates from `wanted` that this kube-apiserver knows and that are off by default."""
    help_text = subprocess.run([str(apiserver), "--help"], capture_output=True, text=True).stdout
    known = dict(re.findall(r"kube:(\w+)=true\|false \([A-Z]+ - default=(true|false)\)", help_text))
    return {g: True for g in wanted if known.get(g) == "false"}


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: if the test process dies hard, its etcd/apiserver do not linger.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def _pid_is(pid: int, marker: str) -> bool:
    """True when pid is alive and its command line holds `marker` (our binary + our workdir)."""
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False


def _stop_pid(pid: int, marker: str, timeout: float = 15) -> None:
    if not _pid_is(pid, marker):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_is(pid, marker) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.05)
    if _pid_is(pid, marker):
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child (started by `up` in another process): init reaps it


class ControlPlane:
    def __init__(
        self,
        workdir: str | os.PathLike | None = None,
        *,
        detach: bool = False,
        extra_gates: dict[str, bool] | None = None,
        version: str | None = None,
        dra: bool = True,
        controllers: bool = True,
    ):
        """workdir: where certs, etcd data and logs go (a fresh temp dir, made by start(), by default).
        detach: keep the processes running after this Python process exits (the CLI `up`).
        version: the Kubernetes release ("1.32", "v1.33.13"; k8s_releases.release), default $GPUPOOL_K8S_VERSION,
        else the base release 1.37.
        dra=False: an older release as it comes, without the DRA gate and runtime config it needs (on 1.32/1.33 it
        then serves no resource.k8s.io: a cluster that has not switched DRA on).
        controllers=False: etcd and kube-apiserver only (nothing schedules or reconciles)."""
        self.controllers = controllers
        self.release = k8s_releases.release(version)
        self.dra = dra
        self.workdir = Path(workdir) if workdir else None
        self.detach = detach
        self.extra_gates = extra_gates or {}
        self.pids: dict[str, int] = {}
        self.bins: dict[str, str] = {}
        self.server = ""
        self.ports: dict[str, int] = {}
        self.runtime_config: list[str] = []
        self.gates: dict[str, bool] = {}
        self.start_seconds = 0.0

    # ---- paths everyone else uses ----------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (client cert in group system:masters)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def audit(self) -> AuditLog:
        return AuditLog(self.workdir / "audit.log")

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "ControlPlane":
        t0 = time.monotonic()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="gpupool-cp-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            components = binaries.CONTROL_PLANE if self.controllers else ("kube-apiserver",)
            bins = {
                "etcd": binaries.find("etcd", allow_fetch=False),
                **{c: binaries.find(c, allow_fetch=False, version=self.release.version) for c in components},
            }
            self.bins.update({n: str(b.path) for n, b in bins.items()})
            self._write_pki()
            self._start_etcd()
            self._start_apiserver()
            if self.controllers:
                self._start_controllers()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        self.save_state()
        also = ", kube-scheduler, kube-controller-manager" if self.controllers else ""
        _log(
            f"up in {self.start_seconds:.1f}s: {self.server} (kube-apiserver {bins['kube-apiserver'].version}{also}, "
            f"etcd {bins['etcd'].version}), workdir {self.workdir}"
        )
        return self

    def stop(self, remove: bool = True) -> None:
        """Stop what this control plane started (by pid, its clients first, etcd last), then remove its data."""
        for name in ("kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"):
            if name in self.pids:
                _stop_pid(self.pids.pop(name), self._marker)
        if remove and self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill_apiserver(self) -> None:
        """SIGKILL kube-apiserver, as a crash would (fault tests); etcd and the data stay."""
        pid = self.pids.pop("kube-apiserver")
        if _pid_is(pid, self._marker):
            os.kill(pid, signal.SIGKILL)
            while _pid_is(pid, self._marker):
                _reap(pid)
                time.sleep(0.02)
        self.save_state()

    def restart_apiserver(self) -> None:
        """Start kube-apiserver again after kill_apiserver(), on the same port with the same settings:
        kubeconfigs minted before still work, the audit log goes on in the same file."""
        self._start_apiserver(port=self.ports["apiserver"])
        self.save_state()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "ab")
        proc = subprocess.Popen(
            [self.bins[name], *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.workdir,
            preexec_fn=None if self.detach else _die_with_parent,
        )
        log.close()
        self.pids[name] = proc.pid
        return proc

    def _wait(self, proc: subprocess.Popen, name: str, ready, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pids.pop(name, None)
                raise ProcessExited(name, proc.returncode, self.log_tail(name))
            if ready():
                return
            time.sleep(0.1)
        raise TimeoutError(f"{name} not ready after {timeout}s:\n{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.workdir / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # ---- pieces ------------------------------------------------------------------------------
    def _write_pki(self) -> None:
        d = self.workdir / "pki"
        d.mkdir(exist_ok=True)
        ca = pki.new_ca()
        ca.write(d, "ca")
        pki.issue(
            ca,
            "kube-apiserver",
            server=True,
            ips=["127.0.0.1", "10.96.0.1"],
            dns=[
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
        ).write(d, "apiserver")
        pki.service_account_keys(d)
        self._ca = ca

    def _start_etcd(self) -> None:
        for _attempt in range(3):
            shutil.rmtree(self.workdir / "etcd", ignore_errors=True)  # a failed attempt's member data
            client, peer = free_port(), free_port()
            self.ports.update(etcd=client, etcd_peer=peer)
            url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
            # Plain HTTP on loopback only; no fsync: test data is thrown away (speed over durability).
            proc = self._spawn(
                "etcd",
                [
                    "--name=default",
                    f"--data-dir={self.workdir / 'etcd'}",
                    f"--listen-client-urls={url}",
                    f"--advertise-client-urls={url}",
                    f"--listen-peer-urls={peer_url}",
                    f"--initial-advertise-peer-urls={peer_url}",
                    f"--initial-cluster=default={peer_url}",
                    "--unsafe-no-fsync",
                    "--log-level=warn",
                ],
            )

            def healthy():
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                        return json.load(r).get("health") == "true"
                except (OSError, ValueError):
                    return False

            try:
                return self._wait(proc, "etcd", healthy)
            except ProcessExited as e:
                if "address already in use" not in e.log:  # a port race: take other ports
                    raise
        raise RuntimeError("etcd did not start, see " + str(self.workdir / "etcd.log"))

    def _start_apiserver(self, port: int | None = None) -> None:
        """port: reuse this port (a restart: clients keep their kubeconfigs); None picks a free one."""
        d = self.workdir / "pki"
        (self.workdir / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        if self.release.base:
            self.gates = {**feature_gates(Path(self.bins["kube-apiserver"])), **self.extra_gates}
            self.runtime_config = list(RUNTIME_CONFIG)
        else:  # what a site running this release sets for DRA, nothing more (k8s_releases.py)
            self.gates = {**(self.release.feature_gates if self.dra else {}), **self.extra_gates}
            self.runtime_config = list(self.release.runtime_config if self.dra else ())
        fixed = port
        for _attempt in range(len(RUNTIME_CONFIG) + 3):
            port = fixed if fixed is not None else free_port()
            self.ports["apiserver"] = port
            self.server = f"https://127.0.0.1:{port}"
            self._write_kubeconfig(self.kubeconfig, ADMIN_USER, [ADMIN_GROUP])
            args = [
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                # The endpoint reconciler refuses a loopback address; nothing here needs the
                # default/kubernetes Endpoints (no pods run), so it is switched off.
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={d / 'apiserver.crt'}",
                f"--tls-private-key-file={d / 'apiserver.key'}",
                f"--client-ca-file={self.ca_file}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true",  # as kubeadm sets it: driver DaemonSets run privileged
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                f"--audit-policy-file={self.workdir / 'audit-policy.yaml'}",
                f"--audit-log-path={self.workdir / 'audit.log'}",
                # blocking: each event is written before the request goes on (the audit reader
                # relies on it); maxsize large so the file is never rotated under a reader's mark.
                "--audit-log-mode=blocking",
                "--audit-log-maxsize=10240",
                "--audit-log-maxbackup=1",
                "--profiling=false",
            ]
            if self.runtime_config:
                args.append("--runtime-config=" + ",".join(f"{gv}=true" for gv in self.runtime_config))
            if self.gates:
                args.append("--feature-gates=" + ",".join(f"{g}={str(v).lower()}" for g, v in self.gates.items()))
            proc = self._spawn("kube-apiserver", args)
            try:
                self._wait(proc, "kube-apiserver", self._apiserver_ready)
                return
            except ProcessExited as e:
                errors = "\n".join(ln for ln in e.log.splitlines() if "command failed" in ln or "runtime-config" in ln)
                refused = [gv for gv in self.runtime_config if gv in errors]
                if refused:  # an API version this release no longer serves: drop it, try again
                    _log(f"kube-apiserver refused --runtime-config {refused[0]}; retrying without it")
                    self.runtime_config.remove(refused[0])
                elif "address already in use" not in e.log:  # a port race: take another port
                    raise
                elif fixed is not None:  # a restart: the old socket is still closing
                    time.sleep(0.5)
        raise RuntimeError("kube-apiserver did not start, see " + str(self.workdir / "kube-apiserver.log"))

    def _start_controllers(self) -> None:
        """kube-scheduler and kube-controller-manager, each with its own identity (the bootstrap RBAC roles
        system:kube-scheduler and system:kube-controller-manager), the apiserver's feature gates, no leader
        election (one of each) and its health endpoint on a loopback port."""
        gates = ",".join(f"{g}={str(v).lower()}" for g, v in self.gates.items())
        d = self.workdir / "pki"
        common = ["--bind-address=127.0.0.1", "--leader-elect=false", "--v=1"]
        common += [f"--feature-gates={gates}"] if gates else []
        procs = {}
        for name, user, extra in (
            ("kube-scheduler", SCHEDULER_USER, []),
            (
                "kube-controller-manager",
                CONTROLLER_MANAGER_USER,
                [
                    "--controllers=" + ",".join(CONTROLLERS),
                    # As kubeadm runs it: each controller acts as its own ServiceAccount in kube-system, so the
                    # audit log names the controller, and RBAC holds each to its bootstrap role.
                    "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={d / 'sa.key'}",
                    f"--root-ca-file={self.ca_file}",
                ],
            ),
        ):
            kubeconfig = self._write_kubeconfig(self.workdir / f"{name}.kubeconfig", user, [])
            port = free_port()
            self.ports[name] = port
            procs[name] = self._spawn(
                name,
                [
                    f"--kubeconfig={kubeconfig}",
                    f"--secure-port={port}",
                    f"--cert-dir={self.workdir / name}",
                    *common,
                    *extra,
                ],
            )
        for name, proc in procs.items():
            self._wait(proc, name, lambda n=name: self._healthy(n))

    def _healthy(self, name: str) -> bool:
        """A component's /healthz on its loopback port (self-signed serving certificate; health needs no auth)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.ports[name]}/healthz", context=ctx, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def _apiserver_ready(self) -> bool:
        # readyz covers etcd and RBAC bootstrap; the "default" namespace comes a moment later.
        return self._get("/readyz") == 200 and self._get("/api/v1/namespaces/default") == 200

    def _get(self, path: str) -> int:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(self.workdir / "admin.crt", self.workdir / "admin.key")
        try:
            with urllib.request.urlopen(self.server + path, context=ctx, timeout=2) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    # ---- credentials -------------------------------------------------------------------------
    def _write_kubeconfig(self, path: Path, user: str, groups) -> Path:
        ca = getattr(self, "_ca", None) or pki.KeyPair(
            self.ca_file.read_bytes(), (self.workdir / "pki" / "ca.key").read_bytes()
        )
        client = pki.issue(ca, user, orgs=groups)
        client.write(path.parent, path.name.removesuffix(".kubeconfig"))  # admin.crt: used by _get

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "gpupool-testbed",
            "clusters": [
                {
                    "name": "gpupool-testbed",
                    "cluster": {"server": self.server, "certificate-authority-data": b64(self.ca_file.read_bytes())},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate-data": b64(client.cert_pem), "client-key-data": b64(client.key_pem)},
                }
            ],
            "contexts": [{"name": "gpupool-testbed", "context": {"cluster": "gpupool-testbed", "user": user}}],
        }
        path.write_text(yaml.safe_dump(cfg))
        path.chmod(0o600)
        return path

    def mint_kubeconfig(self, user: str, groups=()) -> Path:
        """Kubeconfig for `user` in `groups` (client cert signed by this run's CA); RBAC applies."""
        users = self.workdir / "users"
        users.mkdir(exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", user)
        return self._write_kubeconfig(users / f"{safe}.kubeconfig", user, groups)

    def api_client(self, kubeconfig: str | os.PathLike | None = None):
        """A kubernetes.client.ApiClient for the admin (or the given) kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    # ---- the real CLIs -----------------------------------------------------------------------
    def env(self, kubeconfig: str | os.PathLike | None = None) -> dict[str, str]:
        """Environment for kubectl/helm/ansible: KUBECONFIG set, helm state kept in the workdir."""
        helm = self.workdir / "helm"
        return dict(
            os.environ,
            KUBECONFIG=str(kubeconfig or self.kubeconfig),
            HELM_CACHE_HOME=str(helm / "cache"),
            HELM_CONFIG_HOME=str(helm / "config"),
            HELM_DATA_HOME=str(helm / "data"),
        )

    def bin(self, name: str) -> str:
        """Path of etcd, kube-apiserver, kubectl or helm (the latter two are looked up on first use)."""
        if name not in self.bins:
            self.bins[name] = str(binaries.find(name, allow_fetch=False).path)
        return self.bins[name]

    def kubectl(self, *args: str, kubeconfig=None, check: bool = True, input: str | None = None):
        return subprocess.run(
            [self.bin("kubectl"), *args],
            env=self.env(kubeconfig),
            input=input,
            capture_output=True,
            text=True,
            check=check,
        )

    def helm(self, *args: str, kubeconfig=None, check: bool = True):
        return subprocess.run(
            [self.bin("helm"), *args], env=self.env(kubeconfig), capture_output=True, text=True, check=check
        )

    # ---- state for the CLI (and for other processes that attach to a running control plane) --
    def save_state(self) -> None:
        state = {
            k: getattr(self, k) for k in ("server", "pids", "ports", "bins", "runtime_config", "gates", "start_seconds")
        }
        state["version"] = self.release.version
        state.update(workdir=str(self.workdir), kubeconfig=str(self.kubeconfig), ca_file=str(self.ca_file))
        (self.workdir / "state.json").write_text(json.dumps(state, indent=2))

    @classmethod
    def attach(cls, workdir: str | os.PathLike) -> "ControlPlane":
        """The control plane whose data is in `workdir` (started by another process)."""
        state = json.loads((Path(workdir) / "state.json").read_text())
        cp = cls(state["workdir"], detach=True, version=state.get("version") or None)
        for k in ("server", "pids", "ports", "bins", "runtime_config", "gates", "start_seconds"):
            setattr(cp, k, state[k])
        return cp

    def running(self) -> bool:
        return bool(self.pids) and all(_pid_is(pid, self._marker) for pid in self.pids.values())

    @property
    def _marker(self) -> str:
        # Every process we start has paths under workdir on its command line: a pid whose command
        # line lacks it is not ours (exited, and the pid reused), so it is never signalled.
        return f"{self.workdir}/"


class ProcessExited(RuntimeError):
    def __init__(self, name: str, code: int, log: str):
        super().__init__(f"{name} exited with status {code}:\n{log}")
        self.log = log


# ---- CLI ------------------------------------------------------------------------------------------
def state_dir() -> Path:
    return Path(os.environ.get("GPUPOOL_STATE") or ROOT / ".build") / "controlplane"


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else ""
    link = state_dir() / "workdir"  # symlink to the running control plane's temp dir
    if cmd == "up":
        if link.exists() and ControlPlane.attach(link).running():
            print(f"already up: export KUBECONFIG={link / 'admin.kubeconfig'}")
            return 0
        cp = ControlPlane(detach=True).start()
        state_dir().mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(cp.workdir)
        print(f"export KUBECONFIG={link / 'admin.kubeconfig'}")
        return 0
    if cmd == "down":
        if link.exists():
            ControlPlane.attach(link).stop()
            print("control plane stopped")
        link.unlink(missing_ok=True)
        return 0
    if cmd == "status":
        if not link.exists():
            print("down")
            return 1
        cp = ControlPlane.attach(link)
        up = cp.running() and cp._get("/readyz") == 200
        print(
            json.dumps(
                {
                    "up": up,
                    "server": cp.server,
                    "kubeconfig": str(link / "admin.kubeconfig"),
                    "pids": cp.pids,
                    "workdir": str(cp.workdir),
                },
                indent=2,
            )
        )
        return 0 if up else 1
    print("usage: python -m testbed.controlplane up|down|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
