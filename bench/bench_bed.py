"""The bench bed: one real control plane per generated cluster, its Nodes, a MIG manager, Magnum.

    bed = BenchBed(plans, workdir, magnum=True).start()
    bed.kubeconfig(cluster_name, "bench:gpupool")       # a client identity the audit log tells apart
    bed.write_inventory(directory, user="bench:gpupool")
    bed.stop()

What runs, per cluster: etcd + kube-apiserver (testbed/controlplane.py, audit log on); its Nodes
registered directly, as the node SIMULATOR's register_node does (create, status, the not-ready
taint cleared), many at once on a thread pool; the ComputeDomain CRD (from the simulation chart)
and the namespaces the inventory needs; the MIG manager SIMULATOR acting on nvidia.com/mig.config
(one LIST per poll of the nodes whose config is not answered yet, so a big cluster does not drown
its apiserver between runs). Optionally one
Magnum EMULATOR holding every cluster, whose nodegroups are created before any measured run by the
collection's own nodegroups role (see docs/performance.md for why).

No DRA driver simulator runs: no ResourceSlices are published, so the pool report reads empty
slice lists (its reads are still counted) and reports the pools as not yet published.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from bench.inventory_generator import ClusterPlan
from testbed.controlplane import ControlPlane
from testbed.mig_manager_simulator import IDENTITY as MIG_IDENTITY
from testbed.mig_manager_simulator import MigManagerSimulator
from testbed.node_simulator import IDENTITY as NODE_IDENTITY
from testbed.node_simulator import GpuInventory, NodeSimulator
from testbed.simulator_client import Kube, simulator_kubeconfig

ROOT = Path(__file__).resolve().parent.parent
CD_CRD = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu" / "crds" / "resource.nvidia.com_computedomains.yaml"
MIG_NAMESPACE = "gpu-operator"
MIG_CONFIG_MAP = "gpupool-mig-parted-config"
REGISTER_THREADS = 8


def _log(msg: str) -> None:
    print("[bench] %s" % msg, flush=True)


class ClusterBed:
    """One generated cluster on its own control plane."""

    def __init__(self, plan: ClusterPlan, workdir: Path, mig_delay: float, poll: float):
        self.plan = plan
        # No pods are made here: the scheduler and the controller manager would only add CPU noise on 2 cores.
        self.cp = ControlPlane(workdir, controllers=False)
        self.inventory = GpuInventory(adopt_foreign=False)
        self.mig_delay, self.poll = mig_delay, poll
        self.mig: MigManagerSimulator | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def start(self) -> None:
        self.cp.start()
        self.cp.kubectl("apply", "-f", str(CD_CRD))
        self.cp.kubectl(
            "wait", "--for=condition=Established", "crd/computedomains.resource.nvidia.com", "--timeout=60s"
        )
        for ns in sorted(
            {MIG_NAMESPACE}
            | {
                p.get("nvlink", {}).get("compute_domain", {}).get("namespace", "default")
                for p in self.plan.cluster["pools"]
            }
            - {"default"}
        ):
            self.cp.kubectl("create", "namespace", ns)
        self.register_nodes()
        mig_kube = Kube(simulator_kubeconfig(self.cp, MIG_IDENTITY), "nvidia-mig-manager-simulator")
        self.mig = MigManagerSimulator(
            mig_kube,
            self.inventory,
            config_map=MIG_CONFIG_MAP,
            namespace=MIG_NAMESPACE,
            delay=self.mig_delay,
            log=lambda _m: None,
        )
        self._loop_kube = Kube(simulator_kubeconfig(self.cp, MIG_IDENTITY), "nvidia-mig-manager-simulator")
        self._thread = threading.Thread(target=self._loop, name="bench-mig-%s" % self.plan.name, daemon=True)
        self._thread.start()

    def register_nodes(self) -> None:
        kubeconfig = simulator_kubeconfig(self.cp, NODE_IDENTITY)
        local = threading.local()

        def register(spec):
            if not hasattr(local, "sim"):  # one client per thread (Kube is not thread-safe)
                local.sim = NodeSimulator(Kube(kubeconfig, "node-simulator"), self.inventory, log=lambda _m: None)
            local.sim.register_node(
                spec.name, spec.flavor, cluster_uuid=self.plan.name, nodegroup=None, labels=spec.labels
            )

        with ThreadPoolExecutor(REGISTER_THREADS) as pool:
            list(pool.map(register, self.plan.nodes))

    def _loop(self) -> None:
        # Only nodes whose MIG config label is not answered yet need the manager: gpupool clears the state label
        # whenever it sets a config, so one label-selected LIST per poll returns just those (a full node LIST every
        # half second would load the shared 2 cores more than the runs being measured).
        while not self._stop.wait(self.poll):
            try:
                nodes = self._loop_kube.list(
                    "/api/v1/nodes", label_selector="nvidia.com/mig.config,nvidia.com/mig.config.state!=success"
                )
                self.mig.tick(nodes)
            except Exception as exc:  # the next poll retries (an apiserver restart, a slow response)
                self.errors = (self.errors + ["%s: %s" % (type(exc).__name__, exc)])[-20:]

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.cp.stop()


class BenchBed:
    def __init__(
        self,
        plans: list[ClusterPlan],
        workdir: str | os.PathLike,
        magnum: bool = False,
        mig_delay: float = 0.5,
        poll: float = 0.5,
    ):
        self.plans = plans
        self.workdir = Path(workdir)
        self.magnum_enabled = magnum
        self.clusters: dict[str, ClusterBed] = {}
        self.magnum = None
        self.mig_delay, self.poll = mig_delay, poll
        self._kubeconfigs: dict[tuple[str, str], Path] = {}

    def start(self) -> "BenchBed":
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            for plan in self.plans:
                bed = ClusterBed(plan, self.workdir / plan.name, self.mig_delay, self.poll)
                self.clusters[plan.name] = bed
                bed.start()
                _log("%s: control plane %s, %d nodes registered" % (plan.name, bed.cp.server, len(plan.nodes)))
            if self.magnum_enabled:
                self._start_magnum()
        except BaseException:
            self.stop()
            raise
        _log("bed up in %.0fs" % (time.monotonic() - t0))
        return self

    def _start_magnum(self) -> None:
        from testbed import gpu_flavors
        from testbed.magnum_emulator import MagnumEmulator

        seeds = [
            {
                "name": plan.name,
                "labels": {"nvidia_gpu_enabled": "true"},
                "master_count": 1,
                "node_count": 1,
                "flavor_id": "m2.large",
                "api_address": self.clusters[plan.name].cp.server,
            }
            for plan in self.plans
        ]
        self.magnum = MagnumEmulator(
            delay=0.05, conductor_lag=0.01, clusters=seeds, flavors=sorted(gpu_flavors.FLAVOR_TABLE)
        ).start()

    def stop(self) -> None:
        if self.magnum is not None:
            self.magnum.stop()
            self.magnum = None
        for bed in self.clusters.values():
            bed.stop()

    def __enter__(self) -> "BenchBed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- clients --------------------------------------------------------------------------------------
    def kubeconfig(self, cluster: str, user: str) -> Path:
        """A kubeconfig for `user` (group system:masters) on the cluster's apiserver."""
        key = (cluster, user)
        if key not in self._kubeconfigs:
            self._kubeconfigs[key] = self.clusters[cluster].cp.mint_kubeconfig(user, ["system:masters"])
        return self._kubeconfigs[key]

    def cluster_data(self, plan: ClusterPlan, user: str, cluster: dict | None = None) -> dict:
        data = json.loads(json.dumps(cluster or plan.cluster))
        data["kubeconfig"] = str(self.kubeconfig(plan.name, user))
        if "magnum" in data:
            data["magnum"]["cloud"] = self.magnum.cloud_config()
        return data

    def write_inventory(
        self,
        directory: str | os.PathLike,
        user: str,
        clusters: dict[str, dict] | None = None,
        extra_vars: dict | None = None,
    ) -> Path:
        """An Ansible inventory: one host per cluster, its gpupool_cluster in host_vars (as in inventories/)."""
        directory = Path(directory)
        (directory / "host_vars").mkdir(parents=True, exist_ok=True)
        hosts = {
            plan.name: {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
            for plan in self.plans
        }
        (directory / "hosts.yml").write_text(
            yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": hosts}}}}, sort_keys=False)
        )
        for plan in self.plans:
            host = directory / "host_vars" / plan.name
            host.mkdir(exist_ok=True)
            data = {"gpupool_cluster": self.cluster_data(plan, user, (clusters or {}).get(plan.name))}
            data.update(extra_vars or {})
            (host / "gpupool.yml").write_text(yaml.safe_dump(data, sort_keys=False))
        return directory
