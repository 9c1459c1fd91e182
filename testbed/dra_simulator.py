"""DRA driver SIMULATOR: what the NVIDIA DRA driver's binaries would do inside their real pods.

The REAL DaemonSet controller (kube-controller-manager) makes the kubelet-plugin pods of the driver's DaemonSet
and writes its status; the REAL kube-scheduler binds them (the chart's affinity and tolerations against the GPU
nodes' labels and taints); the node simulator (the kubelet's part) reports a bound pod Running and Ready, unless
this simulator's readiness hook (``pod_readiness``) says its containers exit at start-up. Nothing here places a pod
or writes a DaemonSet's status. Once a DaemonSet that looks like the driver's kubelet plugin exists (label
``app.kubernetes.io/name`` = ``dra-driver-nvidia-gpu``/``nvidia-dra-driver-gpu`` or a name ending in
``-kubelet-plugin``), this simulator plays, on every poll (one DaemonSet LIST; nodes and pods come from the
sandbox's one LIST of each):

- **the Deployment + ReplicaSet controllers** for the release's Deployments (the ComputeDomain
  controller, the optional webhook): a ReplicaSet owned by the Deployment with its pod template,
  both with ready status, which is what helm's readiness check looks for (the deployment and replicaset
  controllers do not run: their pod would need a node that runs control-plane pods);
- **the kubelet plugin**: ResourceSlices for each node where a plugin pod of the DaemonSet is bound, Running and
  Ready (so not refused), in the newest ``resource.k8s.io`` version the
  API server serves and in that version's shape (testbed/dra_api.py: v1, v1beta2, or v1beta1 on 1.32, where
  attributes and capacity sit under ``basic:``), exactly as the driver publishes them (testbed/dra_resourceslices.py: driver ``gpu.nvidia.com``, pool = node
  name, ``gpu-<minor>`` or the node's current MIG devices; ``compute-domain.nvidia.com`` channel
  and daemon devices on every GPU node), only for the drivers whose container is in the pod template
  (``gpus``, ``compute-domains``). The pool generation is bumped whenever a node's devices change
  (e.g. after the MIG manager simulator applied a new layout). The slices are written to the real
  apiserver, so its validation applies. A node whose plugin pod is gone loses its slices on the next poll;
- **the garbage collector's part** for what it owns: slices of nodes without a running plugin pod and, when the
  DaemonSet is gone, all of its slices; ReplicaSets of deleted Deployments.

Feature gates (the ``FEATURE_GATES`` env the chart renders) and, on 0.5, ``IMEX_MODE`` are read
the way the driver's binaries read them (testbed/dra_driver_rules.py, the simulator's own table):

- a gate the driver version (the DaemonSet's ``app.kubernetes.io/version`` label) does not know, a
  ValidateFeatureGates conflict or an invalid IMEX mode (read from each pod's own containers): every container
  exits at start-up - the readiness hook tells the node simulator, which reports the plugin pod's containers in
  CrashLoopBackOff with the driver's message; it publishes nothing, and the release's Deployments never become
  ready (``status()`` says why under ``error``). A plugin pod on a node without GPUs is refused the same way (NVML
  finds none). Note the real chart's DaemonSet has maxUnavailable 100%, so ``helm --wait`` passes on the
  DaemonSet anyway; the controller Deployment is what fails it.
- DynamicMIG: at the plugin's start on a node (once per plugin pod), static MIG layouts are wiped (testbed/dra_dynamic_mig.py)
  and every MIG placement is published as a partitionable device with shared counters: in a slice of their own
  from Kubernetes 1.35 (the server's /version, read once), beside each GPU's devices before;
- claim "prepare": a ResourceClaim allocated (``status.allocation``, written by the real scheduler's
  DynamicResources plugin, or by a test) on a node where the plugin runs gets ``status.devices[].conditions`` Ready=True, or
  Ready=False with the driver's message when its GpuConfig/MigDeviceConfig asks for TimeSlicing or
  MPS and that gate is off. The real driver reports a failed prepare as a kubelet event on the pod,
  not in the claim: the claim's device status is simply where a test without kubelets can read it.

Not simulated: PassthroughSupport (vfio devices; the slices stay as without it), CDI, a failed prepare holding
the pod in ContainerCreating (the claim's device status says it instead), the ComputeDomain controller's objects,
health checks.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time

from testbed import dra_api, dra_driver_rules, dra_dynamic_mig
from testbed import dra_resourceslices as slices_mod
from testbed.node_simulator import NOT_YET
from testbed.simulator_client import Kube, KubeError

IDENTITY = "testbed:dra-driver-simulator"
PLUGIN_NAMES = ("dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu")
CONTENT_ANNOTATION = "testbed.gpupool.io/content-hash"
NOT_SIMULATED_GATES = ("PassthroughSupport",)
# Tolerations the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util).
DAEMONSET_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
CONTAINER_DRIVERS = {"gpus": slices_mod.GPU_DRIVER, "compute-domains": slices_mod.CD_DRIVER}


def _log(msg: str) -> None:
    print("[dra-simulator] %s" % msg, file=sys.stderr, flush=True)


# ---- placement predicates (pure) --------------------------------------------------------------------
# The simulator no longer places anything (the real DaemonSet controller and scheduler do): these answer, for the
# static chart checks (test_dra_chart_rules.py, test_dra_resourceslices.py), where a rendered pod template would run.
def _expr_matches(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: dict, node: dict) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no objects
    labels = node["metadata"].get("labels") or {}
    if not all(_expr_matches(e, labels) for e in exprs):
        return False
    return all(
        _expr_matches(dict(f, key="metadata.name"), {"metadata.name": node["metadata"]["name"]})
        for f in fields
        if f.get("key") == "metadata.name"
    )


def tolerates(tolerations, taint: dict) -> bool:
    """Does one of these tolerations tolerate the taint (the scheduler's rule: an empty effect matches
    every effect, Exists with no key matches every taint, Equal compares the value)?"""
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        op = tol.get("operator") or "Equal"
        if op == "Exists" and (not tol.get("key") or tol["key"] == taint.get("key")):
            return True
        same_value = (tol.get("value") or "") == (taint.get("value") or "")
        if op == "Equal" and tol.get("key") == taint.get("key") and same_value:
            return True
    return False


def schedules_on(pod_spec: dict, node: dict) -> bool:
    """Would the DaemonSet controller place this pod template on the node (for checks of rendered charts)?"""
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None and not any(_term_matches(t, node) for t in required.get("nodeSelectorTerms") or []):
        return False
    tolerations = list(pod_spec.get("tolerations") or []) + list(DAEMONSET_TOLERATIONS)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return False
    return True


def is_kubelet_plugin(ds: dict) -> bool:
    """The driver's kubelet-plugin DaemonSet: the chart's name label, or a name ending -kubelet-plugin."""
    labels = ds["metadata"].get("labels") or {}
    return labels.get("app.kubernetes.io/name") in PLUGIN_NAMES or ds["metadata"]["name"].endswith("-kubelet-plugin")


def _containers(obj: dict) -> list:
    """The containers of a Pod, or of the pod template of a DaemonSet/Deployment."""
    spec = obj.get("spec") or {}
    if "template" in spec:
        spec = (spec.get("template") or {}).get("spec") or {}
    return spec.get("containers") or []


def _owned_by(pod: dict, ds: dict) -> bool:
    return any(
        o.get("controller") and o.get("uid") == ds["metadata"]["uid"]
        for o in pod["metadata"].get("ownerReferences") or []
    )


def pod_ready(pod: dict) -> bool:
    """Running with the Ready condition True, as the node simulator (the kubelet) reports it."""
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def feature_gates(ds: dict) -> dict:
    """FEATURE_GATES of the plugin's containers ("K=V,K=V," as the chart renders it)."""
    gates = {}
    for c in _containers(ds):
        for env in c.get("env") or []:
            if env.get("name") == "FEATURE_GATES" and env.get("value"):
                for item in env["value"].split(","):
                    if "=" in item:
                        k, v = item.split("=", 1)
                        gates[k.strip()] = v.strip().lower() == "true"
    return gates


def container_env(ds: dict, name: str, container: str = "compute-domains") -> str:
    """An env value of one plugin container ("" when absent)."""
    for c in _containers(ds):
        if c.get("name") == container:
            for env in c.get("env") or []:
                if env.get("name") == name:
                    return str(env.get("value") or "")
    return ""


def driver_version(ds: dict) -> str:
    """The driver version of the DaemonSet: the chart's app.kubernetes.io/version label."""
    return (ds["metadata"].get("labels") or {}).get("app.kubernetes.io/version", "")


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _apps(kind: str, namespace: str, name: str = "") -> str:
    return "/apis/apps/v1/namespaces/%s/%s%s" % (namespace, kind, "/" + name if name else "")


class DraDriverSimulator:
    """See the module docstring. Call tick(nodes) from one thread (the sandbox loop)."""

    def __init__(self, kube: Kube, inventory, log=_log):
        self.kube = kube
        self.inventory = inventory
        self.log = log
        self.plugins: dict[str, dict] = {}  # "ns/name" -> {"nodes": [...], "ready": [...], "gates": {...}}
        self.errors: list[str] = []
        self._warned: set[str] = set()
        self._had_slices = True  # check once at start for leftovers
        self._rs_namespaces: set[str] = set()  # where we created ReplicaSets (for the garbage collector)
        self._started: set[str] = set()  # uids of the plugin pods whose start-up was played (DynamicMIG)
        self._daemonsets: dict[str, dict] = {}  # uid -> every DaemonSet of the last pass (pod_readiness)
        self.prepared: dict[str, list] = {}  # "ns/claim" -> [{"device", "ready", "message"}]
        self.publishes = 0
        self.api_version = ""  # the resource.k8s.io version spoken: discovered on the first pass (dra_api)
        self.server_minor: tuple | None = None  # the API server's (major, minor), read on first need; () unknown

    # ---- the kubelet's question: do this pod's containers start? ------------------------------------------
    def pod_readiness(self, pod: dict, node: dict):
        """The node simulator's readiness hook: a sentence when this kubelet-plugin pod's containers exit at
        start-up (the driver refuses its FEATURE_GATES/IMEX env, read from the pod's own containers, or the node
        has no GPU for NVML), None when they run, NOT_YET when its DaemonSet was not listed yet."""
        owner = next((o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
        if owner is None or owner.get("kind") != "DaemonSet":
            return None
        ds = self._daemonsets.get(owner.get("uid"))
        if ds is None:
            return NOT_YET
        if not is_kubelet_plugin(ds):
            return None
        crash = dra_driver_rules.startup_error(
            driver_version(ds),
            feature_gates(pod),
            container_env(pod, "IMEX_MODE"),
            container_env(pod, "IMEX_ISOLATION"),
        )
        if crash:
            return crash
        if self.inventory.for_node(node) is None:
            return "NVML: no NVIDIA GPU on node %s (nvmlInit failed)" % node["metadata"]["name"]
        return None

    # ---- one reconcile pass ---------------------------------------------------------------------------
    def tick(self, nodes: list[dict] | None = None, pods: list[dict] | None = None) -> None:
        """One pass on this poll's node and pod LISTs (listed here when not given: the MIG manager's republish)."""
        if nodes is None:
            nodes = self.kube.list("/api/v1/nodes")
        if pods is None:
            pods = self.kube.list("/api/v1/pods")
        every = self.kube.list("/apis/apps/v1/daemonsets")
        self._daemonsets = {ds["metadata"]["uid"]: ds for ds in every}
        daemonsets = [ds for ds in every if is_kubelet_plugin(ds)]
        by_name = {n["metadata"]["name"]: n for n in nodes}
        desired: dict[str, dict] = {}
        plugins = {}
        for ds in daemonsets:
            key = "%s/%s" % (ds["metadata"]["namespace"], ds["metadata"]["name"])
            drivers = tuple(CONTAINER_DRIVERS[c["name"]] for c in _containers(ds) if c.get("name") in CONTAINER_DRIVERS)
            gates = feature_gates(ds)
            version = driver_version(ds)
            crash = dra_driver_rules.startup_error(
                version, gates, container_env(ds, "IMEX_MODE"), container_env(ds, "IMEX_ISOLATION")
            )
            for gate in NOT_SIMULATED_GATES:
                if gates.get(gate) and key + gate not in self._warned:
                    self._warned.add(key + gate)
                    self.log("%s: feature gate %s is on - NOT simulated, slices stay static" % (key, gate))
            if crash and key + crash not in self._warned:
                self._warned.add(key + crash)
                self.log("%s: every driver container exits at start-up: %s" % (key, crash))
            # The plugin runs where the DaemonSet controller made a pod, the scheduler bound it and the kubelet
            # (node simulator) reports it Running and Ready: nothing here decides placement any more.
            scheduled, ready = [], []
            for pod in pods:
                meta, node_name = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
                if not node_name or meta.get("deletionTimestamp") or not _owned_by(pod, ds):
                    continue
                scheduled.append(node_name)
                node = by_name.get(node_name)
                machine = self.inventory.for_node(node) if node else None
                if machine is None or not pod_ready(pod):
                    continue
                ready.append(node_name)
                for sl in self._node_slices(pod, node, machine, drivers, feature_gates(pod)):
                    desired[sl["metadata"]["name"]] = sl
            plugins[key] = {
                "nodes": sorted(scheduled),
                "ready": sorted(ready),
                "gates": gates,
                "drivers": list(drivers),
                "version": version,
                "error": crash,
            }
            if not crash:  # the controller (and webhook) exit on the same flags: never ready then
                self._deployments(ds)
        self.plugins = plugins
        if self._discover():
            self._sync_slices(desired, active=bool(daemonsets))
            self._prepare_claims(daemonsets)
        for ns in sorted(self._rs_namespaces - {ds["metadata"]["namespace"] for ds in daemonsets}):
            if not self._collect_replicasets(ns, self._live_deployments(ns)):
                self._rs_namespaces.discard(ns)

    def _node_slices(self, pod: dict, node: dict, machine, drivers: tuple, gates: dict) -> list:
        """The slices the plugin pod publishes on its node; with DynamicMIG, its start-up first wipes the
        node's static MIG layouts (once per plugin pod, as its start does)."""
        name = node["metadata"]["name"]
        owner = {"name": name, "uid": node["metadata"].get("uid")}
        if not (gates.get("DynamicMIG") and slices_mod.GPU_DRIVER in drivers):
            return slices_mod.node_slices(
                machine.name, machine.gpu, machine.count, dict(machine.layouts), owner=owner, drivers=drivers
            )
        start = pod["metadata"]["uid"]
        if start not in self._started:
            self._started.add(start)
            before = self.inventory.layouts(name)
            after = dra_dynamic_mig.wiped_layouts(machine.gpu, before)
            if after != before:
                self.inventory.set_layouts(name, after)
                self.log("%s: DynamicMIG start-up destroyed the MIG devices it did not create" % name)
        out = dra_dynamic_mig.node_slices(
            machine.name,
            machine.gpu,
            machine.count,
            self.inventory.layouts(name),
            owner=owner,
            split=dra_dynamic_mig.split_counters(self._server_minor()),
        )
        others = tuple(d for d in drivers if d != slices_mod.GPU_DRIVER)
        return out + slices_mod.node_slices(machine.name, machine.gpu, machine.count, {}, owner=owner, drivers=others)

    def _server_minor(self) -> tuple | None:
        """(major, minor) of the API server, read once (GET /version), as the driver's start-up reads it to choose
        the slice shape of dynamic MIG (testbed/dra_dynamic_mig.py); None when it cannot be read."""
        if self.server_minor is None:
            try:
                git = str((self.kube.get("/version") or {}).get("gitVersion") or "")
            except KubeError:
                git = ""
            m = re.match(r"v?(\d+)\.(\d+)", git)
            self.server_minor = (int(m.group(1)), int(m.group(2))) if m else ()
        return self.server_minor or None

    def _discover(self) -> bool:
        """The resource.k8s.io version to speak, as the real plugin's client discovers it; False when none is served
        (a 1.32/1.33 server without the DRA gate): nothing is published then, and status() says why."""
        if not self.api_version:
            try:
                self.api_version = dra_api.served_version(self.kube)
            except dra_api.NoDraApi as exc:
                msg = "no ResourceSlices: %s" % exc
                if msg not in self.errors:
                    self.log(msg)
                    self.errors = (self.errors + [msg])[-20:]
                return False
            self.log("speaking resource.k8s.io/%s" % self.api_version)
        return True

    # ---- claim prepare ----------------------------------------------------------------------------------
    def _prepare_claims(self, daemonsets: list) -> None:
        """Play NodePrepareResources for allocated claims on nodes where a plugin is ready."""
        served = {}  # node -> (gates, version)
        for ds in daemonsets:
            info = self.plugins.get("%s/%s" % (ds["metadata"]["namespace"], ds["metadata"]["name"])) or {}
            if slices_mod.GPU_DRIVER in info.get("drivers", ()):
                for node in info.get("ready", ()):
                    served[node] = (info["gates"], info["version"])
        if not served and not self.prepared:
            return
        prepared = {}
        for claim in self.kube.list(dra_api.path(self.api_version, "resourceclaims")):
            allocation = (claim.get("status") or {}).get("allocation") or {}
            results = [
                r
                for r in (allocation.get("devices") or {}).get("results") or []
                if r.get("driver") == slices_mod.GPU_DRIVER and r.get("pool") in served
            ]
            if not results:
                continue
            configs = [
                c
                for c in (allocation.get("devices") or {}).get("config") or []
                if ((c.get("opaque") or {}).get("driver")) == slices_mod.GPU_DRIVER
            ]
            devices, record = [], []
            for res in results:
                gates, version = served[res["pool"]]
                error = None
                for cfg in configs:
                    if not cfg.get("requests") or res.get("request") in cfg["requests"]:
                        error = error or dra_driver_rules.prepare_error(
                            gates, version, cfg["opaque"].get("parameters") or {}
                        )
                condition = {
                    "type": "Ready",
                    "status": "False" if error else "True",
                    "reason": "PrepareFailed" if error else "Prepared",
                    "message": error or "prepared by the DRA driver simulator",
                }
                devices.append(
                    {"driver": res["driver"], "pool": res["pool"], "device": res["device"], "conditions": [condition]}
                )
                record.append({"device": res["device"], "ready": not error, "message": condition["message"]})
            meta = claim["metadata"]
            prepared["%s/%s" % (meta["namespace"], meta["name"])] = record
            self._write_claim_status(claim, devices)
        self.prepared = prepared

    def _write_claim_status(self, claim: dict, devices: list) -> None:
        def strip(devs):
            return [
                dict(
                    d,
                    conditions=[
                        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in d.get("conditions") or []
                    ],
                )
                for d in devs or []
            ]

        have = (claim.get("status") or {}).get("devices") or []
        if strip(have) == strip(devices):
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for d in devices:
            for c in d["conditions"]:
                c["lastTransitionTime"] = now
        meta = claim["metadata"]
        path = dra_api.path(self.api_version, "resourceclaims", meta["namespace"], meta["name"], "status")
        try:
            self.kube.patch(path, {"status": {"devices": devices}})
            self.log(
                "ResourceClaim %s/%s: %s"
                % (
                    meta["namespace"],
                    meta["name"],
                    "; ".join("%s %s" % (d["device"], d["conditions"][0]["reason"]) for d in devices),
                )
            )
        except KubeError as exc:
            if exc.status not in (404, 409):
                msg = "claim status %s/%s refused: %s" % (meta["namespace"], meta["name"], exc)
                if msg not in self.errors:
                    self.log(msg)
                    self.errors = (self.errors + [msg])[-20:]

    # ---- the driver's controller Deployment (no deployment/replicaset controller runs) ------------------------------------------------------------------
    def _deployments(self, ds: dict) -> None:
        ns = ds["metadata"]["namespace"]
        instance = (ds["metadata"].get("labels") or {}).get("app.kubernetes.io/instance")
        selector = "app.kubernetes.io/instance=%s" % instance if instance else None
        deployments = self.kube.list(_apps("deployments", ns), label_selector=selector)
        for dep in deployments:
            self._deployment(dep)
        if deployments or ns in self._rs_namespaces:
            self._collect_replicasets(
                ns, self._live_deployments(ns) if selector else {d["metadata"]["uid"] for d in deployments}
            )

    def _live_deployments(self, namespace: str) -> set:
        return {d["metadata"]["uid"] for d in self.kube.list(_apps("deployments", namespace))}

    def _deployment(self, dep: dict) -> None:
        meta, spec = dep["metadata"], dep["spec"]
        ns, name = meta["namespace"], meta["name"]
        replicas = spec.get("replicas", 1)
        template = json.loads(json.dumps(spec["template"]))
        pth = _hash(template)[:10]
        status = dep.get("status") or {}
        done = (
            status.get("observedGeneration") == meta.get("generation")
            and status.get("readyReplicas", 0) == status.get("updatedReplicas", 0) == replicas
            and status.get("replicas", 0) == replicas
        )
        rs_name = "%s-%s" % (name, pth)
        rs = self.kube.get(_apps("replicasets", ns, rs_name))
        if rs is not None and not any(
            o.get("uid") == meta["uid"] and o.get("controller") for o in rs["metadata"].get("ownerReferences") or []
        ):
            # Left from an earlier Deployment of the same name (no garbage collector ran): replaced.
            self.kube.delete(_apps("replicasets", ns, rs_name))
            rs = None
        rs_done = rs is not None and (rs.get("status") or {}).get("observedGeneration") == rs["metadata"].get(
            "generation"
        )
        if done and rs_done:
            return
        if rs is None:
            self._rs_namespaces.add(ns)
            template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pth
            match = dict((spec.get("selector") or {}).get("matchLabels") or {}, **{"pod-template-hash": pth})
            rs = self.kube.create(
                _apps("replicasets", ns),
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": rs_name,
                        "namespace": ns,
                        "labels": dict(template["metadata"]["labels"], **{slices_mod.SIMULATED_LABEL: "true"}),
                        "annotations": {
                            "deployment.kubernetes.io/revision": "1",
                            "deployment.kubernetes.io/desired-replicas": str(replicas),
                        },
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": name,
                                "uid": meta["uid"],
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                    "spec": {"replicas": replicas, "selector": {"matchLabels": match}, "template": template},
                },
            )
        elif rs["spec"].get("replicas") != replicas:
            rs = self.kube.patch(_apps("replicasets", ns, rs_name), {"spec": {"replicas": replicas}})
        # Older ReplicaSets of this Deployment (an earlier template) are scaled to zero.
        for old in self.kube.list(_apps("replicasets", ns)):
            owners = old["metadata"].get("ownerReferences") or []
            if (
                old["metadata"]["name"] != rs_name
                and any(o.get("uid") == meta["uid"] for o in owners)
                and old["spec"].get("replicas")
            ):
                scaled = self.kube.patch(_apps("replicasets", ns, old["metadata"]["name"]), {"spec": {"replicas": 0}})
                self.kube.patch(
                    _apps("replicasets", ns, old["metadata"]["name"]) + "/status",
                    {
                        "status": {
                            # every count at once: the API server refuses fullyLabeledReplicas > replicas
                            "replicas": 0,
                            "fullyLabeledReplicas": 0,
                            "readyReplicas": 0,
                            "availableReplicas": 0,
                            "observedGeneration": scaled["metadata"].get("generation", 1),
                        }
                    },
                )
        self.kube.patch(
            _apps("replicasets", ns, rs_name) + "/status",
            {
                "status": {
                    "replicas": replicas,
                    "fullyLabeledReplicas": replicas,
                    "readyReplicas": replicas,
                    "availableReplicas": replicas,
                    "observedGeneration": rs["metadata"].get("generation", 1),
                }
            },
        )
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.kube.patch(
            _apps("deployments", ns, name) + "/status",
            {
                "status": {
                    "observedGeneration": meta.get("generation", 1),
                    "replicas": replicas,
                    "updatedReplicas": replicas,
                    "readyReplicas": replicas,
                    "availableReplicas": replicas,
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "reason": "MinimumReplicasAvailable",
                            "message": "Deployment has minimum availability (DRA driver simulator).",
                            "lastUpdateTime": now,
                            "lastTransitionTime": now,
                        },
                        {
                            "type": "Progressing",
                            "status": "True",
                            "reason": "NewReplicaSetAvailable",
                            "message": 'ReplicaSet "%s" has successfully progressed.' % rs_name,
                            "lastUpdateTime": now,
                            "lastTransitionTime": now,
                        },
                    ],
                }
            },
        )
        self.log("Deployment %s/%s: %d/%d ready (ReplicaSet %s)" % (ns, name, replicas, replicas, rs_name))

    def _collect_replicasets(self, namespace: str, live_uids: set) -> int:
        """Garbage collector: our ReplicaSets whose Deployment is gone are deleted; returns how many remain."""
        left = 0
        for rs in self.kube.list(_apps("replicasets", namespace), label_selector=slices_mod.SIMULATED_LABEL + "=true"):
            owners = rs["metadata"].get("ownerReferences") or []
            if owners and not any(o.get("uid") in live_uids for o in owners):
                self.kube.delete(_apps("replicasets", namespace, rs["metadata"]["name"]))
            else:
                left += 1
        return left

    # ---- ResourceSlices ---------------------------------------------------------------------------------
    def _sync_slices(self, desired: dict, active: bool) -> None:
        if not active and not self._had_slices:
            return
        slices = dra_api.path(self.api_version, "resourceslices")
        current = {
            s["metadata"]["name"]: dra_api.slice_from(self.api_version, s)
            for s in self.kube.list(slices, label_selector=slices_mod.SIMULATED_LABEL + "=true")
        }
        for name, sl in desired.items():
            digest = _hash({k: v for k, v in sl["spec"].items() if k != "pool"})  # devices, counters
            sl["metadata"].setdefault("annotations", {})[CONTENT_ANNOTATION] = digest
            have = current.get(name)
            if have is None:
                self._write("create", slices, sl)
                continue
            owners = have["metadata"].get("ownerReferences") or []
            owner_changed = owners != (sl["metadata"].get("ownerReferences") or [])
            if (have["metadata"].get("annotations") or {}).get(CONTENT_ANNOTATION) == digest and not owner_changed:
                continue
            # The devices changed (MIG layout): a new pool generation, as the driver publishes it.
            sl["spec"]["pool"]["generation"] = have["spec"]["pool"].get("generation", 0) + 1
            sl["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
            if self._write("replace", slices + "/" + name, sl):
                self.log("ResourceSlice %s: pool generation %d" % (name, sl["spec"]["pool"]["generation"]))
        for name in set(current) - set(desired):
            self.kube.delete(slices + "/" + name)
        self._had_slices = bool(desired)

    def _write(self, verb: str, path: str, body: dict) -> bool:
        """Create or replace one slice; a refusal is recorded (and logged once), not raised, so one bad
        slice does not stop the others. A conflict is retried on the next poll."""
        try:
            getattr(self.kube, verb)(path, dra_api.slice_to(self.api_version, body))
            self.publishes += 1
            return True
        except KubeError as exc:
            if exc.status == 409:
                return False
            msg = "%s ResourceSlice %s refused: %s" % (verb, body["metadata"]["name"], exc)
            if msg not in self.errors:
                self.log(msg)
                self.errors = (self.errors + [msg])[-20:]
            return False

    # ---- for tests --------------------------------------------------------------------------------------
    def status(self) -> dict:
        return {
            "plugins": self.plugins,
            "publishes": self.publishes,
            "errors": list(self.errors),
            "prepared": dict(self.prepared),
            "api_version": self.api_version,
        }
