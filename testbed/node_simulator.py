"""Node SIMULATOR: the machines of Magnum nodegroups, registered as Nodes in the real kube-apiserver.

There is no kubelet, no cloud-controller-manager and no GPU Feature Discovery here. When the Magnum
emulator reports a nodegroup change (its ``on_nodegroup_change`` hook: CREATE_COMPLETE, resize,
update, delete), this simulator does what those components do for each server of the nodegroup:

- **kubelet** registers the Node (create, then ``status`` through the status subresource): the
  Ready condition (and the pressure conditions False), capacity/allocatable cpu, memory and pods
  from the flavor, addresses, ``nodeInfo`` with the kubeletVersion of the control plane's release (a
  kubelet is never newer than its API server), the labels kubelet sets
  itself (``kubernetes.io/hostname``, ``kubernetes.io/os``, ``kubernetes.io/arch``) and the ones
  Magnum passes with ``--node-labels``: ``magnum.openstack.org/nodegroup``,
  ``magnum.openstack.org/role`` (reference magnum-nodegroups.md §3), plus the nodegroup's
  ``node_labels``/``node_taints`` (microversion 1.14, §1);
- **the OpenStack cloud provider** sets ``spec.providerID`` (``openstack:///<server id>``) and
  ``node.kubernetes.io/instance-type`` = the flavor;
- **NFD and GFD** add ``feature.node.kubernetes.io/pci-10de.present``, ``nvidia.com/gpu.present``,
  ``nvidia.com/gpu.product``, ``gpu.count``, ``gpu.memory``, ``mig.capable`` ... from the flavor
  table (testbed/gpu_flavors.py), and ``nvidia.com/gpu.clique=<clusterUUID>.<cliqueID>`` on NVLink
  nodes (one cluster UUID per nodegroup, 18 nodes per clique as in a GB200 NVL72 rack);
- when servers go away (resize down, delete), the Node is deleted, as the cloud provider's node
  lifecycle controller does.

It also keeps the simulated hardware of every node (``GpuInventory``: GPU model, count, clique and
the current MIG layout per GPU), which the DRA driver and MIG manager simulators share.

- **kubelet, pod part** (``tick(nodes, pods)``, one pass per sandbox poll, on the one pod LIST of that
  poll): for a pod bound (``spec.nodeName``) to a Node this simulator manages - one it registered or a
  machine of its GpuInventory, never a Node a test made by hand - a Pending pod gets, through the
  ``pods/status`` subresource and only when it changes, phase Running, the conditions
  PodReadyToStartContainers/Initialized/ContainersReady/Ready/PodScheduled True, a running
  containerStatus per container (init containers terminated Completed), hostIP/podIP and startTime.
  A readiness hook (``set_readiness``: the DRA driver simulator's, for its kubelet-plugin pods) can say
  "these containers refuse to start, because ...": Ready/ContainersReady False and a waiting
  ``CrashLoopBackOff`` containerStatus with that message. A bound pod with a deletionTimestamp is
  finalized as the kubelet does once its containers stopped (they exit ``exit_seconds`` after the
  delete, or when the grace period ends if that is sooner): DELETE with gracePeriodSeconds=0 and a uid
  precondition.

Not simulated: heartbeats and lease renewal (no Lease objects in kube-node-lease, and nothing marks a
Node NotReady: no node lifecycle controller runs, so none is needed), probes, images, volumes, pod
resource accounting beyond the scheduler's, GFD's MIG labels (``nvidia.com/mig-<profile>.count``, mig.strategy), image and
volume status, kubelet restarts. Labels set later by others (the collection) are never touched again;
node_labels/node_taints of an *updated* nodegroup are merged into its existing Nodes (an assumption:
the reference does not say how Magnum propagates them).
"""

from __future__ import annotations

import copy
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from testbed import gpu_flavors, k8s_releases
from testbed.simulator_client import Kube, KubeError, node_path

IDENTITY = "testbed:node-simulator"
SIMULATED_ANNOTATION = "testbed.gpupool.io/simulated-by"
NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"
ROLE_LABEL = "magnum.openstack.org/role"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
# What a readiness hook returns when it cannot decide yet (e.g. the owner of a pod was not listed yet):
# the pod is left as it is and asked about again on the next poll.
NOT_YET = object()


def _log(msg: str) -> None:
    print("[node-simulator] %s" % msg, file=sys.stderr, flush=True)


# ---- simulated hardware -------------------------------------------------------------------------
@dataclass
class Machine:
    """The simulated hardware of one node: its GPUs and their current MIG layout."""

    name: str
    gpu: object  # testbed.mig_tables Gpu record
    count: int
    flavor: str | None = None
    clique: str | None = None
    # GPU index -> None (MIG off) or {profile: count} (MIG on); a missing index is MIG off.
    layouts: dict = field(default_factory=dict)

    @property
    def mig_capable(self) -> bool:
        return bool(self.gpu is not None and self.gpu.mig)


class GpuInventory:
    """Simulated hardware per node name, shared by the node, DRA driver and MIG manager simulators."""

    def __init__(self, adopt_foreign: bool = True):
        """adopt_foreign: also give hardware to Nodes this simulator did not register (recognised by
        their labels, see for_node); off in the pytest fixture, whose apiserver other tests share."""
        self.adopt_foreign = adopt_foreign
        self._lock = threading.RLock()
        self._machines: dict[str, Machine] = {}
        self._missing: dict[str, int] = {}

    def register(self, name: str, gpu, count: int, flavor: str | None = None, clique: str | None = None) -> Machine:
        with self._lock:
            old = self._machines.get(name)
            machine = Machine(
                name,
                gpu,
                count,
                flavor,
                clique,
                dict(old.layouts) if old and old.gpu == gpu and old.count == count else {},
            )
            self._machines[name] = machine
            return machine

    def forget(self, name: str) -> None:
        with self._lock:
            self._machines.pop(name, None)

    def get(self, name: str) -> Machine | None:
        with self._lock:
            return self._machines.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._machines)

    def for_node(self, node: dict) -> Machine | None:
        """The machine behind a Node object; a Node this simulator did not register is recognised by
        its instance-type (flavor) label or its GFD product/count labels, else it has no GPU."""
        name = node["metadata"]["name"]
        with self._lock:
            if name in self._machines:
                return self._machines[name]
            if not self.adopt_foreign:
                return None
            labels = node["metadata"].get("labels") or {}
            gpu, count, flavor = gpu_flavors.gpus_from_labels(labels)
            if gpu is None:
                return None
            return self.register(name, gpu, count, flavor, labels.get(CLIQUE_LABEL))

    def layouts(self, name: str) -> dict:
        """{GPU index: None (MIG off) or {profile: count}} for every GPU of the node."""
        with self._lock:
            m = self._machines.get(name)
            return {} if m is None else {i: copy.deepcopy(m.layouts.get(i)) for i in range(m.count)}

    def set_layouts(self, name: str, layouts: dict) -> None:
        with self._lock:
            m = self._machines[name]
            m.layouts = {i: copy.deepcopy(layouts.get(i)) for i in range(m.count)}

    def prune(self, existing: set[str], misses: int = 2) -> None:
        """Forget machines whose Node was missing from `misses` consecutive node lists (one miss can
        be a list taken just before the Node was created)."""
        with self._lock:
            for name in list(self._machines):
                if name in existing:
                    self._missing.pop(name, None)
                    continue
                self._missing[name] = self._missing.get(name, 0) + 1
                if self._missing[name] >= misses:
                    del self._machines[name]
                    del self._missing[name]


# ---- Node objects ---------------------------------------------------------------------------------
def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def clique_id(cluster_uuid: str, nodegroup_uuid: str, node_name: str) -> str:
    """`<clusterUUID>.<cliqueID>` as GFD writes it: one NVLink cluster UUID per nodegroup."""
    fabric = uuid.uuid5(uuid.NAMESPACE_URL, "nvlink/%s/%s" % (cluster_uuid, nodegroup_uuid))
    match = re.search(r"(\d+)$", node_name)
    index = int(match.group(1)) if match else 0
    return "%s.%d" % (fabric, 1 + index // gpu_flavors.NODES_PER_CLIQUE)


def node_object(
    name: str,
    *,
    flavor: str | None,
    role: str = "worker",
    nodegroup: str | None = None,
    provider_id: str | None = None,
    clique: str | None = None,
    extra_labels: dict | None = None,
    taints: list | None = None,
    region: str = "RegionOne",
    zone: str = "nova",
) -> dict:
    """The Node as kubelet + cloud provider + NFD/GFD leave it (metadata and spec)."""
    fl = gpu_flavors.flavor(flavor) if flavor else None
    arch = fl.arch if fl else "amd64"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
    }
    if flavor:
        labels["node.kubernetes.io/instance-type"] = flavor
        labels["beta.kubernetes.io/instance-type"] = flavor
    if nodegroup:
        labels[NODEGROUP_LABEL] = nodegroup
        labels[ROLE_LABEL] = role
    if role == "master":
        labels["node-role.kubernetes.io/master"] = ""
        labels["node-role.kubernetes.io/control-plane"] = ""
    labels.update(gpu_flavors.gfd_labels(flavor, clique) if flavor else {})
    labels.update(extra_labels or {})
    spec = {}
    if provider_id:
        spec["providerID"] = provider_id
    all_taints = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}] if role == "master" else []
    all_taints += [
        {k: v for k, v in t.items() if k in ("key", "value", "effect") and v not in (None, "")} for t in (taints or [])
    ]
    if all_taints:
        spec["taints"] = all_taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {SIMULATED_ANNOTATION: "node-simulator", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
    }


def node_status(name: str, *, flavor: str | None, address: str | None = None, ready: bool = True) -> dict:
    """Node status as kubelet posts it."""
    fl = gpu_flavors.flavor(flavor) if flavor else None
    vcpus, ram = (fl.vcpus, fl.ram_mib) if fl else (2, 4096)
    arch = fl.arch if fl else "amd64"
    now = _now()
    uid = uuid.uuid5(uuid.NAMESPACE_DNS, "node/" + name)

    def cond(ctype, status, reason, message):
        return {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    capacity = {
        "cpu": str(vcpus),
        "memory": "%dMi" % ram,
        "pods": "110",
        "ephemeral-storage": "104857600Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    allocatable = dict(
        capacity,
        cpu="%dm" % (vcpus * 1000 - 100),
        memory="%dMi" % max(ram - 512, 256),
        **{"ephemeral-storage": "96636764Ki"},
    )
    addresses = ([{"type": "InternalIP", "address": address}] if address else []) + [
        {"type": "Hostname", "address": name}
    ]
    return {
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                cond(
                    "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
                ),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond(
                    "Ready",
                    "True" if ready else "False",
                    "KubeletReady" if ready else "KubeletNotReady",
                    "kubelet is posting ready status (node simulator)" if ready else "simulated NotReady",
                ),
            ],
            "addresses": addresses,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": uid.hex,
                "systemUUID": str(uid),
                "bootID": str(uuid.uuid5(uid, "boot")),
                "kernelVersion": "6.8.5-301.fc40.%s" % ("aarch64" if arch == "arm64" else "x86_64"),
                "osImage": "Fedora CoreOS 40.20240504.3.0",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kubeletVersion": k8s_releases.release().version,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": arch,
            },
        }
    }


class NodeSimulator:
    """Registers/removes Nodes for Magnum emulator nodegroup changes (see the module docstring)."""

    def __init__(
        self,
        kube: Kube,
        inventory: GpuInventory | None = None,
        clusters=None,
        log=_log,
        *,
        pod_kube: Kube | None = None,
        exit_seconds: float = 1.0,
    ):
        """clusters: Magnum cluster names (or uuids) whose nodes go to this apiserver; None: all.
        pod_kube: the client of the thread that calls tick() (kube is the Magnum hook's thread's).
        exit_seconds: how long a deleted pod's simulated containers take to stop (capped by its grace)."""
        self.kube = kube
        self.pod_kube = pod_kube or kube
        self.exit_seconds = exit_seconds
        self._readiness = None
        self.pod_writes = 0
        self.inventory = inventory or GpuInventory()
        self.clusters = set(clusters) if clusters else None
        self.log = log
        self._lock = threading.RLock()
        self._nodes: dict[str, dict] = {}  # name -> {"cluster", "nodegroup", "flavor"}
        self.errors: list[str] = []
        self.events: list[tuple[str, str, str]] = []  # (nodegroup, event kind, summary)

    # ---- wiring -------------------------------------------------------------------------------------
    def attach(self, emulator) -> "NodeSimulator":
        """Register with the Magnum emulator (existing complete nodegroups are replayed)."""
        emulator.on_nodegroup_change(self.on_nodegroup_change, replay=True)
        return self

    def nodes(self, nodegroup: str | None = None) -> list[str]:
        with self._lock:
            return sorted(n for n, info in self._nodes.items() if nodegroup in (None, info["nodegroup"]))

    # ---- the hook ------------------------------------------------------------------------------------
    def on_nodegroup_change(self, cluster: dict, nodegroup: dict, event) -> None:
        """Magnum emulator hook: callback(cluster view, nodegroup view, NodegroupEvent)."""
        if self.clusters is not None and not ({cluster.get("name"), cluster.get("uuid")} & self.clusters):
            return
        kind = getattr(event, "kind", str(event))
        wanted = list(getattr(event, "nodes", []) or [])
        removed = list(getattr(event, "removed", []) or [])
        ng_name = nodegroup["name"]
        with self._lock:
            mine = {
                n
                for n, info in self._nodes.items()
                if info["nodegroup"] == ng_name and info["cluster"] == cluster["uuid"]
            }
        wanted_names = {n.name for n in wanted}
        gone = sorted({n.name for n in removed} | (mine - wanted_names)) if kind != "failed" else []
        added = [n for n in wanted if n.name not in mine] if kind != "deleted" else []
        for node in added:
            self._register(cluster, nodegroup, node)
        if kind == "updated":
            for name in sorted(mine & wanted_names):
                self._update_labels_taints(name, nodegroup)
        for name in gone:
            self._remove(name)
        summary = "+%d -%d" % (len(added), len(gone))
        self.events.append((ng_name, kind, summary))
        if added or gone:
            self.log(
                "%s/%s %s: %s nodes (flavor %s)" % (cluster["name"], ng_name, kind, summary, nodegroup.get("flavor_id"))
            )

    # ---- Node writes -----------------------------------------------------------------------------------
    def register_node(
        self,
        name: str,
        flavor: str | None,
        *,
        cluster_uuid: str = "standalone",
        nodegroup: str | None = None,
        nodegroup_uuid: str | None = None,
        role: str = "worker",
        address: str | None = None,
        provider_id: str | None = None,
        labels: dict | None = None,
        taints: list | None = None,
    ) -> dict:
        """Register one Node directly (without the Magnum emulator)."""
        gpu, count = gpu_flavors.gpus_of(flavor)
        clique = None
        if gpu is not None and gpu.multinode_nvlink:
            clique = clique_id(cluster_uuid, nodegroup_uuid or nodegroup or "none", name)
        body = node_object(
            name,
            flavor=flavor,
            role=role,
            nodegroup=nodegroup,
            provider_id=provider_id,
            clique=clique,
            extra_labels=labels,
            taints=taints,
        )
        try:
            self.kube.create(node_path(), body)
        except KubeError as exc:
            if exc.status != 409:
                raise
            # Already there (a re-registered kubelet): its labels and taints are refreshed.
            self.kube.patch(node_path(name), {"metadata": {"labels": body["metadata"]["labels"]}, "spec": body["spec"]})
        self.kube.patch(node_path(name) + "/status", node_status(name, flavor=flavor, address=address))
        self._clear_condition_taints(name)
        if gpu is not None and count:
            self.inventory.register(name, gpu, count, flavor, clique)
        with self._lock:
            self._nodes[name] = {"cluster": cluster_uuid, "nodegroup": nodegroup, "flavor": flavor}
        return body

    def _clear_condition_taints(self, name: str) -> None:
        """The node lifecycle controller's part: the apiserver's TaintNodesByCondition admission gives a
        new Node ``node.kubernetes.io/not-ready:NoSchedule``; once the Node is Ready the controller
        removes it (no controller-manager runs here, so the simulator does)."""
        for _attempt in range(5):
            node = self.kube.get(node_path(name))
            if node is None:
                return
            taints = (node.get("spec") or {}).get("taints") or []
            keep = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
            if keep == taints:
                return
            try:
                self.kube.patch(
                    node_path(name),
                    {
                        "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                        "spec": {"taints": keep or None},
                    },
                )
                return
            except KubeError as exc:
                if exc.status != 409:
                    raise

    def _register(self, cluster: dict, nodegroup: dict, node) -> None:
        try:
            self.register_node(
                node.name,
                nodegroup.get("flavor_id"),
                cluster_uuid=cluster["uuid"],
                nodegroup=nodegroup["name"],
                nodegroup_uuid=nodegroup.get("uuid"),
                role=getattr(node, "role", nodegroup.get("role", "worker")),
                address=getattr(node, "address", None),
                provider_id=getattr(node, "provider_id", None),
                labels=nodegroup.get("node_labels") or {},
                taints=nodegroup.get("node_taints") or [],
            )
        except Exception as exc:  # reported, never raised into the emulator's conductor
            self.errors.append("register %s: %s" % (node.name, exc))
            self.log("cannot register %s: %s" % (node.name, exc))

    def _update_labels_taints(self, name: str, nodegroup: dict) -> None:
        labels = nodegroup.get("node_labels") or {}
        taints = nodegroup.get("node_taints") or []
        try:
            current = self.kube.get(node_path(name))
            if current is None:
                return
            patch = {"metadata": {"labels": labels}} if labels else {}
            if taints:
                have = current.get("spec", {}).get("taints") or []
                keys = {(t["key"], t.get("effect")) for t in have}
                merged = have + [
                    {k: v for k, v in t.items() if k in ("key", "value", "effect") and v not in (None, "")}
                    for t in taints
                    if (t["key"], t.get("effect")) not in keys
                ]
                patch["spec"] = {"taints": merged}
            if patch:
                self.kube.patch(node_path(name), patch)
        except Exception as exc:
            self.errors.append("update %s: %s" % (name, exc))

    def remove_node(self, name: str) -> None:
        """Delete the Node (the server is gone) and forget its hardware."""
        self.kube.delete(node_path(name))
        self.inventory.forget(name)
        with self._lock:
            self._nodes.pop(name, None)

    def _remove(self, name: str) -> None:
        try:
            self.remove_node(name)
        except Exception as exc:
            self.errors.append("remove %s: %s" % (name, exc))
            self.log("cannot remove %s: %s" % (name, exc))

    def remove_all(self) -> None:
        for name in self.nodes():
            self._remove(name)

    # ---- kubelet, pod part -----------------------------------------------------------------------------
    def set_readiness(self, hook) -> None:
        """hook(pod, node) -> None (the containers start), a sentence (they refuse to start: why) or NOT_YET."""
        self._readiness = hook

    def managed(self) -> set[str]:
        """The Nodes whose kubelet this simulator plays: those it registered and the machines of its inventory."""
        with self._lock:
            return set(self._nodes) | set(self.inventory.names())

    def tick(self, nodes: list[dict], pods: list[dict]) -> list[dict]:
        """One kubelet pass over this poll's pod LIST; returns the pods as they are after it (status written)."""
        managed = self.managed()
        by_name = {n["metadata"]["name"]: n for n in nodes}
        out = []
        for pod in pods:
            node = by_name.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is None or node["metadata"]["name"] not in managed:
                out.append(pod)
                continue
            try:
                if pod["metadata"].get("deletionTimestamp"):
                    self._finalize(pod)
                    out.append(pod)
                else:
                    out.append(self._run(pod, node))
            except KubeError as exc:
                if exc.status not in (404, 409):  # gone or changed meanwhile: the next poll sees it again
                    msg = "pod %s/%s: %s" % (pod["metadata"]["namespace"], pod["metadata"]["name"], exc)
                    if msg not in self.errors:
                        self.log(msg)
                        self.errors = (self.errors + [msg])[-20:]
                out.append(pod)
        return out

    def _finalize(self, pod: dict) -> None:
        meta = pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds") or 0
        if grace == 0:
            return  # already finalized (only finalizers hold it now): asked once, not on every poll
        deadline = _parse_time(meta["deletionTimestamp"])
        if time.time() < min(deadline, deadline - grace + self.exit_seconds):
            return
        body = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        self.pod_kube.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (meta["namespace"], meta["name"]), body=body)
        self.log(
            "pod %s/%s on %s: containers stopped, deleted" % (meta["namespace"], meta["name"], pod["spec"]["nodeName"])
        )

    def _run(self, pod: dict, node: dict) -> dict:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Pending", "Running"):
            return pod  # Succeeded/Failed: a kubelet never restarts the pod
        refusal = self._readiness(pod, node) if self._readiness else None
        if refusal is NOT_YET:
            return pod
        want = pod_status(pod, node, refusal)
        if _status_key(status) == _status_key(want):
            return pod
        meta = pod["metadata"]
        written = self.pod_kube.patch(
            "/api/v1/namespaces/%s/pods/%s/status" % (meta["namespace"], meta["name"]),
            {"metadata": {"uid": meta["uid"]}, "status": want},
        )
        self.pod_writes += 1
        self.log(
            "pod %s/%s on %s: %s"
            % (meta["namespace"], meta["name"], node["metadata"]["name"], "Ready" if not refusal else refusal)
        )
        return written


def _parse_time(stamp: str) -> float:
    import calendar

    return calendar.timegm(time.strptime(stamp.replace(".000000", ""), "%Y-%m-%dT%H:%M:%SZ"))


def _fake_ip(prefix: str, key: str) -> str:
    digest = uuid.uuid5(uuid.NAMESPACE_DNS, key).bytes
    return "%s.%d.%d" % (prefix, digest[0], 1 + digest[1] % 254)


def pod_status(pod: dict, node: dict, refusal: str | None = None) -> dict:
    """The status a kubelet reports for a started pod: Running, Ready unless `refusal` says why its containers
    do not start (then CrashLoopBackOff with that message). Times already in the pod's status are kept."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    now = _now()
    start = status.get("startTime") or now
    addresses = (node.get("status") or {}).get("addresses") or []
    host_ip = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None)
    host_ip = host_ip or _fake_ip("10.0", "node/" + node["metadata"]["name"])
    pod_ip = host_ip if spec.get("hostNetwork") else _fake_ip("10.100", "pod/" + pod["metadata"]["uid"])
    names = [c["name"] for c in spec.get("containers") or []]
    old_conditions = {c.get("type"): c for c in status.get("conditions") or []}

    def cond(ctype: str, ok: bool, reason: str | None = None, message: str | None = None) -> dict:
        old = old_conditions.get(ctype) or {}
        same = old.get("status") == ("True" if ok else "False")
        out = {"type": ctype, "status": "True" if ok else "False", "lastProbeTime": None}
        out["lastTransitionTime"] = old.get("lastTransitionTime") if same and old.get("lastTransitionTime") else now
        if reason:
            out["reason"], out["message"] = reason, message
        return out

    unready = "containers with unready status: [%s]" % " ".join(names)
    conditions = [
        cond("PodReadyToStartContainers", True),
        cond("Initialized", True),
        cond("Ready", not refusal, None if not refusal else "ContainersNotReady", None if not refusal else unready),
        cond(
            "ContainersReady", not refusal, None if not refusal else "ContainersNotReady", unready if refusal else None
        ),
        old_conditions.get("PodScheduled") or cond("PodScheduled", True),
    ]
    old_cs = {c.get("name"): c for c in status.get("containerStatuses") or []}

    def container(c: dict, init: bool = False) -> dict:
        cid = "containerd://" + uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s" % (pod["metadata"]["uid"], c["name"])).hex
        base = {"name": c["name"], "image": c.get("image") or "", "imageID": "", "containerID": cid}
        if init:
            done = {"exitCode": 0, "reason": "Completed", "startedAt": start, "finishedAt": start, "containerID": cid}
            return dict(base, ready=True, restartCount=0, started=False, state={"terminated": done})
        if refusal:
            failed = {
                "exitCode": 1,
                "reason": "Error",
                "message": refusal,
                "startedAt": start,
                "finishedAt": start,
                "containerID": cid,
            }
            waiting = {
                "reason": "CrashLoopBackOff",
                "message": "back-off 10s restarting failed container=%s pod=%s: %s"
                % (c["name"], pod["metadata"]["name"], refusal),
            }
            return dict(
                base,
                ready=False,
                restartCount=1,
                started=False,
                state={"waiting": waiting},
                lastState={"terminated": failed},
            )
        running = (old_cs.get(c["name"]) or {}).get("state", {}).get("running") or {"startedAt": now}
        return dict(base, ready=True, restartCount=0, started=True, state={"running": running})

    out = {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start,
        "containerStatuses": [container(c) for c in spec.get("containers") or []],
    }
    if spec.get("initContainers"):
        out["initContainerStatuses"] = [container(c, init=True) for c in spec["initContainers"]]
    return out


def _status_key(status: dict) -> str:
    """What a kubelet compares before it writes a pod's status (times left out)."""
    return repr(
        (
            status.get("phase"),
            sorted((c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or []),
            [
                (
                    c.get("name"),
                    c.get("ready"),
                    sorted((c.get("state") or {}).keys()),
                    ((c.get("state") or {}).get("waiting") or {}).get("message"),
                )
                for c in status.get("containerStatuses") or []
            ],
            status.get("podIP"),
            status.get("hostIP"),
        )
    )
