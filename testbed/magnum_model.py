"""State and rules of the Magnum API EMULATOR (the HTTP side is in testbed/magnum_emulator.py).

This is an emulator, not Magnum: it keeps clusters and nodegroups in memory and applies the rules
of Magnum's API controllers and conductor as written down in
/work/shared/reference/magnum-nodegroups.md ("the reference", section numbers below refer to it):

- nodegroup create/PATCH/DELETE rules of ``magnum/api/controllers/v1/nodegroup.py`` (reference §1
  "What post does", "PATCH: what can be changed", "DELETE"): 409 on a duplicate name, 409 on
  inconsistent min/node_count/max, 400 for role=master, labels vs merge_labels, only min/max (and
  node_labels/node_taints from 1.14) patchable, the default nodegroup not deletable;
- the cluster resize action of ``cluster_actions.py`` (reference §1 "Cluster resize"): bounds
  checked against min/max (400 NGResizeOutBounds), node_count 0 only from 1.10;
- microversions (reference §1 "Microversions"): nodegroups need >= 1.9, 0 nodes >= 1.10,
  node_labels/node_taints >= 1.14; the maximum per Magnum release;
- the conductor's asynchronous status flow (reference §1 "Status flow"): *_IN_PROGRESS, then
  *_COMPLETE or *_FAILED with status_reason after a configurable delay; after a delete the row is
  gone (404).

What it does not model: Heat/CAPI drivers, Nova (flavors and images are strings; a flavor list can
be given to get FlavorNotFound), policy (every token is a project member), quotas, the
cluster create/upgrade API, certificates. Node names imitate the Heat driver:
``<cluster>-<nodegroup>-<random>-node-<i>`` (``-master-<i>`` for masters).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import datetime as _dt
import heapq
import logging
import random
import re
import threading
import time
import uuid as _uuid
from typing import Any, Callable

LOG = logging.getLogger("testbed.magnum_emulator")

# Reference §1 "Microversions": CURRENT_MAX_VER per branch, and whether the service-type aliases
# (commit a44de555, master and stable/2026.1 only) are accepted in OpenStack-API-Version.
RELEASES: dict[str, dict[str, Any]] = {
    "2025.1": {"max_version": "1.11", "aliases": False},
    "2025.2": {"max_version": "1.12", "aliases": False},
    "2026.1": {"max_version": "1.12", "aliases": True},
    "master": {"max_version": "1.14", "aliases": True},
}
MIN_VERSION = "1.1"
SERVICE = "container-infra"
SERVICE_ALIASES = ("container-infrastructure-management", "container-infrastructure")

# Reference §1 "Status values".
ALLOWED_NODEGROUP_STATES = {
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_IN_PROGRESS",
    "UPDATE_FAILED",
    "RESUME_COMPLETE",
    "RESTORE_COMPLETE",
    "ROLLBACK_COMPLETE",
    "SNAPSHOT_COMPLETE",
    "CHECK_COMPLETE",
    "ADOPT_COMPLETE",
}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Reference §1 "PATCH": blocked paths (base + NodeGroupPatchType.internal_attrs()).
PATCH_BLOCKED = {
    "/created_at",
    "/id",
    "/links",
    "/updated_at",
    "/uuid",
    "/project_id",
    "/user_id",
    "/name",
    "/cluster_id",
    "/docker_volume_size",
    "/labels",
    "/flavor_id",
    "/image_id",
    "/node_addresses",
    "/node_count",
    "/role",
    "/is_default",
    "/stack_id",
    "/status",
    "/status_reason",
    "/version",
}
PATCH_PATH = re.compile(r"^(/[\w-]+)+$")
# Kubelet may set these label prefixes itself; other kubernetes.io / k8s.io keys are refused.
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_LABELS = {
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
}
# Output fields of a nodegroup in a list call (reference §1 "List output").
LIST_FIELDS = ("uuid", "name", "flavor_id", "node_count", "role", "is_default", "image_id", "status", "stack_id")

Version = tuple  # (major, minor)


def parse_version(text: str) -> Version:
    major, minor = text.split(".")
    return int(major), int(minor)


def vstr(v: Version) -> str:
    return "%d.%d" % v


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


class ApiError(Exception):
    """An error the API answers with; rendered as Magnum's {"errors": [...]} body (reference §1)."""

    def __init__(self, status: int, detail: str, code: str = "client", **extra: Any):
        super().__init__(detail)
        self.status, self.detail, self.code, self.extra = status, detail, code, extra


def microversion_error(requested: str, min_v: str, max_v: str, what: str) -> ApiError:
    return ApiError(
        406, what, code="magnum.microversion-unsupported", min_version=min_v, max_version=max_v, requested=requested
    )


@dataclasses.dataclass(frozen=True)
class Node:
    """A server of a nodegroup, named like Magnum's Heat driver names it."""

    name: str
    server_id: str
    address: str
    role: str
    cluster: str
    nodegroup: str

    @property
    def provider_id(self) -> str:
        """spec.providerID the OpenStack cloud provider gives such a Node."""
        return "openstack:///" + self.server_id

    @property
    def labels(self) -> dict[str, str]:
        """Node labels Magnum's drivers put on the Kubernetes Node."""
        return {"magnum.openstack.org/nodegroup": self.nodegroup, "magnum.openstack.org/role": self.role}


@dataclasses.dataclass
class NodegroupEvent:
    """What happened to a nodegroup; passed as ``event`` to on_nodegroup_change callbacks.

    kind: ``existing`` (replayed at registration), ``created``, ``resized``, ``updated``,
    ``deleted`` or ``failed``. ``nodes`` is the node list after the change, ``added``/``removed`` the
    difference. Callbacks run before the new status is visible through the API.
    """

    kind: str
    nodes: list[Node]
    added: list[Node]
    removed: list[Node]
    status: str
    status_reason: str | None = None

    def __str__(self) -> str:
        return self.kind


@dataclasses.dataclass
class Faults:
    """Fault injection, per test: set through MagnumEmulator.set_faults() or POST /_emulator/faults.

    error_count: the next N matching requests get ``error_status``; error_rate: the fraction of
    matching requests that do (seeded random); latency: seconds added to every matching request;
    match: regex searched in "METHOD /path" (default: the Magnum API, not Keystone);
    failures: operations that end in *_FAILED, each {"operation": create|update|resize|delete,
    "nodegroup": name or null for any, "reason": status_reason, "count": how many (default 1)}.
    """

    error_count: int = 0
    error_rate: float = 0.0
    error_status: int = 503
    latency: float = 0.0
    match: str = r" /v1(/|$)"
    failures: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def default_seed() -> list[dict[str, Any]]:
    """One cluster with a default-master and a default-worker nodegroup and CERN-like labels
    (reference §3: labels from a public CERN cluster-template script)."""
    return [
        {
            "name": "k8s",
            "labels": {
                "kube_tag": "v1.29.2",
                "container_infra_prefix": "registry.example.org/magnum/",
                "cern_enabled": "true",
                "nvidia_gpu_enabled": "false",
                "monitoring_enabled": "true",
            },
            "master_count": 1,
            "node_count": 2,
            "flavor_id": "m2.large",
            "master_flavor_id": "m2.medium",
            "image_id": "fedora-coreos-40",
            "docker_volume_size": 50,
        }
    ]


class Cloud:
    """In-memory Magnum: clusters, nodegroups, nodes, the conductor's scheduled transitions."""

    def __init__(
        self,
        *,
        delay: float = 0.3,
        conductor_lag: float = 0.05,
        release: str = "master",
        max_version: str | None = None,
        seed: int = 0,
        project_id: str | None = None,
        flavors: list[str] | None = None,
        clusters: list[dict[str, Any]] | None = None,
    ):
        if release not in RELEASES:
            raise ValueError("release must be one of %s" % ", ".join(RELEASES))
        self.release = release
        self.max_version = max_version or RELEASES[release]["max_version"]
        self.accept_aliases = RELEASES[release]["aliases"]
        # Reference §1: older Magnum answers "container-infra 1.x"; master sends the new service string.
        self.header_service = "container-infrastructure-management" if self.accept_aliases else SERVICE
        self.delay = delay
        self.conductor_lag = conductor_lag
        self.flavors = flavors
        self.rng = random.Random(seed)
        self.project_id = project_id or self.uuid().replace("-", "")
        self.lock = threading.RLock()
        self.clusters: dict[str, dict[str, Any]] = {}
        self.faults = Faults()
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self._cond = threading.Condition(self.lock)
        self._hooks: list[Callable[[dict, dict, NodegroupEvent], Any]] = []
        self._pending_hooks: list[tuple[dict, dict, NodegroupEvent]] = []
        self._pending_commits: list[Callable[[], None]] = []
        self.hook_errors: list[str] = []
        self._next_ip = 10
        for spec in default_seed() if clusters is None else clusters:
            self.add_cluster(**spec)

    # ------------------------------------------------------------------ helpers
    def uuid(self) -> str:
        return str(_uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))

    @staticmethod
    def _dns(text: str) -> str:
        return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "x"

    def _new_node(self, cluster: dict, ng: dict, index: int) -> Node:
        kind = "master" if ng["role"] == "master" else "node"
        self._next_ip += 1
        addr = "10.0.%d.%d" % (self._next_ip // 250, self._next_ip % 250 + 2)
        name = "%s-%s-%s-%s-%d" % (self._dns(cluster["name"]), self._dns(ng["name"]), ng["_suffix"], kind, index)
        return Node(
            name=name,
            server_id=self.uuid(),
            address=addr,
            role=ng["role"],
            cluster=cluster["name"],
            nodegroup=ng["name"],
        )

    def _grow(self, cluster: dict, ng: dict, count: int) -> list[Node]:
        added = []
        while len(ng["_nodes"]) < count:
            ng["_index"] += 1
            node = self._new_node(cluster, ng, ng["_index"])
            ng["_nodes"].append(node)
            added.append(node)
        return added

    # ------------------------------------------------------------------ seeding
    def add_cluster(
        self,
        name: str,
        *,
        labels: dict | None = None,
        master_count: int = 1,
        node_count: int = 1,
        flavor_id: str = "m1.medium",
        master_flavor_id: str | None = None,
        image_id: str = "fedora-coreos-40",
        docker_volume_size: int | None = None,
        api_address: str | None = "auto",
        cluster_template_id: str | None = None,
        status: str = "CREATE_COMPLETE",
        uuid: str | None = None,
    ) -> dict:
        """Add a cluster in CREATE_COMPLETE with its default-master and default-worker nodegroups."""
        with self.lock:
            cid = uuid or self.uuid()
            if api_address == "auto":
                api_address = "https://10.0.0.%d:6443" % (len(self.clusters) + 5)
            cluster = {
                "uuid": cid,
                "name": name,
                "status": status,
                "status_reason": None,
                "labels": dict((labels or {}).items()),
                "cluster_template_id": cluster_template_id or self.uuid(),
                "image_id": image_id,
                "flavor_id": flavor_id,
                "master_flavor_id": master_flavor_id or flavor_id,
                "docker_volume_size": docker_volume_size,
                "api_address": api_address,
                "keypair": "default",
                "coe_version": (labels or {}).get("kube_tag", "v1.29.2"),
                "stack_id": self.uuid(),
                "create_timeout": 60,
                "discovery_url": None,
                "project_id": self.project_id,
                "user_id": self.uuid().replace("-", ""),
                "health_status": "HEALTHY",
                "created_at": _now_iso(),
                "updated_at": None,
                "nodegroups": {},
            }
            self.clusters[cid] = cluster
            for ng_name, role, count, flavor in (
                ("default-master", "master", master_count, cluster["master_flavor_id"]),
                ("default-worker", "worker", node_count, flavor_id),
            ):
                ng = self._new_ng(
                    cluster,
                    {
                        "name": ng_name,
                        "role": role,
                        "node_count": count,
                        "flavor_id": flavor,
                        "image_id": image_id,
                        "min_node_count": 0 if role == "worker" else count,
                        "max_node_count": None,
                        "docker_volume_size": docker_volume_size,
                        "labels": dict(cluster["labels"]),
                    },
                    is_default=True,
                )
                ng["status"] = status
                self._grow(cluster, ng, count)
                cluster["nodegroups"][ng["uuid"]] = ng
            return self.cluster_view(cluster)

    def _new_ng(self, cluster: dict, body: dict, is_default: bool = False) -> dict:
        return {
            "uuid": self.uuid(),
            "name": body["name"],
            "cluster_id": cluster["uuid"],
            "project_id": self.project_id,
            "docker_volume_size": body.get("docker_volume_size"),
            "labels": body.get("labels") or {},
            "flavor_id": body.get("flavor_id"),
            "image_id": body.get("image_id"),
            "node_count": body.get("node_count", 1),
            "role": body.get("role") or "worker",
            "min_node_count": body.get("min_node_count", 0),
            "max_node_count": body.get("max_node_count"),
            "is_default": is_default,
            "stack_id": self.uuid(),
            "status": "CREATE_IN_PROGRESS",
            "status_reason": None,
            "version": None,
            "merge_labels": bool(body.get("merge_labels", False)),
            "node_labels": body.get("node_labels") or {},
            "node_taints": body.get("node_taints") or [],
            "created_at": _now_iso(),
            "updated_at": None,
            "_suffix": self._suffix(),
            "_index": -1,
            "_nodes": [],
            "_visible": True,
            "_busy": None,
        }

    # ------------------------------------------------------------------ microversions
    def negotiate(self, header: str | None) -> Version:
        """Parse OpenStack-API-Version like magnum.api.controllers.base.Version (reference §1)."""
        min_v, max_v = MIN_VERSION, self.max_version
        hdr = header if header else "%s %s" % (SERVICE, MIN_VERSION)  # no header means 1.1
        parts = hdr.split()
        if len(parts) != 2:
            raise microversion_error(hdr, min_v, max_v, "Invalid service type for OpenStack-API-Version header")
        service, ver = parts
        accepted = (SERVICE,) + (SERVICE_ALIASES if self.accept_aliases else ())
        if service not in accepted:
            raise microversion_error(hdr, min_v, max_v, "Invalid service type for OpenStack-API-Version header")
        if ver.lower() == "latest":
            ver = max_v
        try:
            version = parse_version(ver)
        except ValueError:
            raise microversion_error(hdr, min_v, max_v, "Invalid value for OpenStack-API-Version header")
        if version[0] != 1 or not parse_version(min_v) <= version <= parse_version(max_v):
            raise microversion_error(
                hdr,
                min_v,
                max_v,
                "Version %s was requested but the minor version is not supported by this service. "
                "The supported version range is: [%s, %s]." % (ver, min_v, max_v),
            )
        return version

    def require(self, version: Version, minimum: str, what: str) -> None:
        if version < parse_version(minimum):
            raise microversion_error(
                vstr(version),
                MIN_VERSION,
                self.max_version,
                "%s needs microversion %s or later, %s was requested." % (what, minimum, vstr(version)),
            )

    # ------------------------------------------------------------------ lookups
    def find_cluster(self, ident: str) -> dict:
        if ident in self.clusters:
            return self.clusters[ident]
        named = [c for c in self.clusters.values() if c["name"] == ident]
        if len(named) > 1:
            raise ApiError(409, "Multiple clusters exist with same name. Please use the cluster uuid instead.")
        if not named:
            raise ApiError(404, "Cluster %s could not be found." % ident)
        return named[0]

    def find_ng(self, cluster: dict, ident: str) -> dict:
        for ng in cluster["nodegroups"].values():
            if ng["_visible"] and (ng["uuid"] == ident or ng["name"] == ident):
                return ng
        raise ApiError(404, "Nodegroup %s could not be found." % ident)

    # ------------------------------------------------------------------ views
    def cluster_view(self, c: dict, expand: bool = True) -> dict:
        ngs = [n for n in c["nodegroups"].values() if n["_visible"]]
        masters = [n for n in ngs if n["role"] == "master"]
        workers = [n for n in ngs if n["role"] != "master"]
        view = {k: v for k, v in c.items() if k != "nodegroups"}
        view.update(
            {
                "master_count": sum(n["node_count"] for n in masters),
                "node_count": sum(n["node_count"] for n in workers),
                "master_addresses": [x.address for n in masters for x in n["_nodes"]],
                "node_addresses": [x.address for n in workers for x in n["_nodes"]],
                "links": [{"href": "/v1/clusters/%s" % c["uuid"], "rel": "self"}],
            }
        )
        if not expand:
            view = {
                k: view[k]
                for k in (
                    "uuid",
                    "name",
                    "keypair",
                    "node_count",
                    "master_count",
                    "status",
                    "stack_id",
                    "create_timeout",
                    "health_status",
                    "labels",
                    "links",
                )
            }
        return copy.deepcopy(view)

    def ng_view(self, cluster: dict, ng: dict, version: Version, expand: bool = True) -> dict:
        view = {k: v for k, v in ng.items() if not k.startswith("_")}
        view["node_addresses"] = [n.address for n in ng["_nodes"]] if ng["status"] != "CREATE_IN_PROGRESS" else []
        if version < (1, 14):
            view.pop("node_labels", None)
            view.pop("node_taints", None)
        if not expand:
            return copy.deepcopy({k: view.get(k) for k in LIST_FIELDS})
        parent, labels = cluster["labels"], ng["labels"] or {}
        # api_utils.get_labels_diff: compared with the cluster's labels.
        view["labels_overridden"] = {k: v for k, v in parent.items() if k in labels and labels[k] != v}
        view["labels_added"] = {k: v for k, v in labels.items() if k not in parent}
        view["labels_skipped"] = {k: v for k, v in parent.items() if k not in labels}
        view["links"] = [{"href": "/v1/clusters/%s/nodegroups/%s" % (cluster["uuid"], ng["uuid"]), "rel": "self"}]
        return copy.deepcopy(view)

    # ------------------------------------------------------------------ validation (reference §1)
    @staticmethod
    def _validate_node_count(ng: dict) -> None:
        name, mn, mx, cnt = ng["name"], ng["min_node_count"], ng["max_node_count"], ng["node_count"]
        if mx is not None:
            if mx < mn:
                raise ApiError(
                    409,
                    "Nodegroup %s: Invalid input for max_node_count: min_node_count (%s) should be "
                    "less or equal to max_node_count (%s)" % (name, mn, mx),
                )
            if cnt > mx:
                raise ApiError(
                    409,
                    "Nodegroup %s: Invalid input for max_node_count: node_count (%s) should be less "
                    "or equal to max_node_count (%s)" % (name, cnt, mx),
                )
        if mn > cnt:
            raise ApiError(
                409,
                "Nodegroup %s: Invalid input for min_node_count: min_node_count (%s) should be less "
                "or equal to node_count (%s)" % (name, mn, cnt),
            )

    @staticmethod
    def _validate_node_labels_taints(ng: dict) -> None:
        labels, taints = ng.get("node_labels") or {}, ng.get("node_taints") or []
        if (labels or taints) and ng["role"] == "master":
            raise ApiError(400, "node_labels and node_taints are not allowed on master nodegroups.")
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise ApiError(
                400,
                "Invalid input for field/attribute node_labels. Value: %r. A dict of strings is expected." % (labels,),
            )
        for key in labels:
            prefix = key.split("/", 1)[0] if "/" in key else ""
            restricted = prefix.endswith("kubernetes.io") or prefix.endswith("k8s.io")
            if restricted and key not in KUBELET_LABELS and not prefix.endswith(KUBELET_LABEL_NAMESPACES):
                raise ApiError(400, "Node label %s is in a restricted namespace (kubernetes.io, k8s.io)." % key)
        if not isinstance(taints, list):
            raise ApiError(400, "Invalid input for field/attribute node_taints: a list is expected.")
        for t in taints:
            if not isinstance(t, dict) or "key" not in t or t.get("effect") not in TAINT_EFFECTS:
                raise ApiError(
                    400, "Invalid taint %r: key and effect (one of %s) are required." % (t, ", ".join(TAINT_EFFECTS))
                )

    # ------------------------------------------------------------------ scheduling
    def _schedule(self, after: float, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time.monotonic() + max(0.0, after), self._seq, fn))
        self._cond.notify_all()

    def _take_failure(self, operation: str, ng_name: str) -> str | None:
        for f in self.faults.failures:
            if f.get("operation", operation) == operation and f.get("nodegroup") in (None, ng_name):
                f["count"] = f.get("count", 1) - 1
                if f["count"] <= 0:
                    self.faults.failures.remove(f)
                return f.get("reason") or "%s of nodegroup %s failed (injected fault)" % (operation, ng_name)
        return None

    def _start_op(
        self,
        cluster: dict,
        ng: dict,
        op: str,
        in_progress: str,
        complete: str,
        failed: str,
        apply: Callable[[], tuple[str, list[Node], list[Node]]],
        on_pickup: Callable[[], None] | None = None,
    ) -> None:
        """Conductor: after conductor_lag the op is picked up (``on_pickup`` saves the new values, the
        status becomes *_IN_PROGRESS), after ``delay`` it ends. ``apply`` runs at the end and returns
        (event kind, added, removed); the hooks run before the final status is visible."""
        failure = self._take_failure(op, ng["name"])
        ng["_busy"] = op

        def pick_up() -> None:
            if on_pickup:
                on_pickup()
            ng["status"], ng["status_reason"], ng["_visible"] = in_progress, None, True
            ng["updated_at"] = _now_iso()
            cluster["status"] = "UPDATE_IN_PROGRESS"
            self._schedule(self.delay, finish)

        def finish() -> None:
            if failure:
                event = NodegroupEvent("failed", list(ng["_nodes"]), [], [], failed, failure)
                final = (failed, failure, "UPDATE_FAILED")
            else:
                kind, added, removed = apply()
                event = NodegroupEvent(kind, list(ng["_nodes"]), added, removed, complete)
                final = (complete, "Stack %s completed successfully" % op.upper(), "UPDATE_COMPLETE")
            self._fire(cluster, ng, event, final)

        self._schedule(self.conductor_lag, pick_up)

    def _fire(self, cluster: dict, ng: dict, event: NodegroupEvent, final: tuple[str, str, str]) -> None:
        status, reason, cluster_status = final
        if event.kind == "deleted":
            snapshot_ng = dict(self.ng_view(cluster, ng, (1, 99)), status=status)
        else:
            snapshot_ng = dict(
                self.ng_view(cluster, ng, (1, 99)),
                status=status,
                status_reason=reason,
                node_addresses=[n.address for n in ng["_nodes"]],
            )
        snapshot_cluster = self.cluster_view(cluster)
        self._pending_hooks.append((snapshot_cluster, snapshot_ng, event))

        def commit() -> None:
            ng["status"], ng["status_reason"], ng["_busy"] = status, reason, None
            cluster["status"] = cluster_status
            cluster["updated_at"] = _now_iso()
            if event.kind == "deleted":
                cluster["nodegroups"].pop(ng["uuid"], None)

        self._pending_commits.append(commit)

    # ------------------------------------------------------------------ conductor thread
    def run_due(self, stop: threading.Event) -> None:
        """Conductor loop: run due transitions; hooks run outside the lock, then the status commits."""
        while not stop.is_set():
            with self._cond:
                while not stop.is_set() and (not self._queue or self._queue[0][0] > time.monotonic()):
                    timeout = (self._queue[0][0] - time.monotonic()) if self._queue else None
                    self._cond.wait(timeout if timeout is None else max(0.0, timeout))
                if stop.is_set():
                    return
                _, _, fn = heapq.heappop(self._queue)
                self._pending_hooks, self._pending_commits = [], []
                fn()
                hooks, commits = self._pending_hooks, self._pending_commits
            for cluster, ng, event in hooks:
                self._run_hooks(cluster, ng, event)
            with self.lock:
                for commit in commits:
                    commit()

    def settle(self, timeout: float = 10.0) -> None:
        """Block until no transition is scheduled (for tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if not self._queue and not any(
                    ng["_busy"] for c in self.clusters.values() for ng in c["nodegroups"].values()
                ):
                    return
            time.sleep(0.01)
        raise TimeoutError("the Magnum emulator did not settle within %ss" % timeout)

    # ------------------------------------------------------------------ hooks
    def add_hook(self, callback: Callable[[dict, dict, NodegroupEvent], Any], replay: bool = True) -> None:
        with self.lock:
            self._hooks.append(callback)
            existing = [
                (self.cluster_view(c), self.ng_view(c, ng, (1, 99)), ng)
                for c in self.clusters.values()
                for ng in c["nodegroups"].values()
                if ng["_visible"] and ng["status"].endswith("_COMPLETE") and ng["_nodes"]
            ]
        if replay:
            for cluster, view, ng in existing:
                nodes = list(ng["_nodes"])
                self._call(callback, cluster, view, NodegroupEvent("existing", nodes, nodes, [], view["status"]))

    def _run_hooks(self, cluster: dict, ng: dict, event: NodegroupEvent) -> None:
        for cb in list(self._hooks):
            self._call(cb, cluster, ng, event)

    def _call(self, cb, cluster, ng, event) -> None:
        try:
            cb(copy.deepcopy(cluster), copy.deepcopy(ng), event)
        except Exception as exc:  # a broken hook must not stop the conductor
            LOG.exception("on_nodegroup_change hook failed")
            self.hook_errors.append("%s/%s %s: %r" % (cluster["name"], ng["name"], event.kind, exc))

    # ------------------------------------------------------------------ API operations
    def list_ngs(
        self,
        cluster_ident: str,
        version: Version,
        role: str | None,
        limit: int | None,
        marker: str | None,
        base_url: str,
    ) -> dict:
        self.require(version, "1.9", "The nodegroup API")
        cluster = self.find_cluster(cluster_ident)
        ngs = [n for n in cluster["nodegroups"].values() if n["_visible"] and (role is None or n["role"] == role)]
        if marker:
            uuids = [n["uuid"] for n in ngs]
            if marker not in uuids:
                raise ApiError(404, "Nodegroup %s could not be found." % marker)
            ngs = ngs[uuids.index(marker) + 1 :]
        nxt = None
        if limit is not None and limit > 0 and len(ngs) > limit:
            ngs = ngs[:limit]
            nxt = "%s/v1/clusters/%s/nodegroups?limit=%d&marker=%s" % (
                base_url,
                cluster["uuid"],
                limit,
                ngs[-1]["uuid"],
            )
        return {"nodegroups": [self.ng_view(cluster, n, version, expand=False) for n in ngs], "next": nxt}

    def show_ng(self, cluster_ident: str, ng_ident: str, version: Version) -> dict:
        self.require(version, "1.9", "The nodegroup API")
        cluster = self.find_cluster(cluster_ident)
        return self.ng_view(cluster, self.find_ng(cluster, ng_ident), version)

    def create_ng(self, cluster_ident: str, body: Any, version: Version) -> dict:
        self.require(version, "1.9", "The nodegroup API")
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid input: a JSON object is expected.")
        allowed = {
            "name",
            "docker_volume_size",
            "labels",
            "flavor_id",
            "image_id",
            "node_count",
            "role",
            "min_node_count",
            "max_node_count",
            "merge_labels",
            "project_id",
            "cluster_id",
        }
        if parse_version(self.max_version) >= (1, 14):  # older WSME types lack the attributes
            allowed |= {"node_labels", "node_taints"}
        unknown = sorted(set(body) - allowed - {"uuid", "status", "is_default"})
        if unknown:
            raise ApiError(400, "Unknown attribute for argument nodegroup: %s" % ", ".join(unknown))
        if ("node_labels" in body or "node_taints" in body) and version < (1, 14):
            self.require(version, "1.14", "node_labels and node_taints")
        name = body.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= 255:
            raise ApiError(400, "Invalid input for field/attribute name. Value: %r." % (name,))
        for field, minimum in (
            ("node_count", 0),
            ("min_node_count", 0),
            ("max_node_count", 0),
            ("docker_volume_size", 1),
        ):
            value = body.get(field)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
                raise ApiError(
                    400,
                    "Invalid input for field/attribute %s. Value: %r. Value should be greater or "
                    "equal to %d" % (field, value, minimum),
                )
        labels = body.get("labels")
        if labels is not None and not isinstance(labels, dict):
            raise ApiError(400, "Invalid input for field/attribute labels. Value: %r." % (labels,))
        with self.lock:
            cluster = self.find_cluster(cluster_ident)
            if not cluster.get("api_address"):
                raise ApiError(
                    409,
                    "The cluster %s does not have an api_address yet; "
                    "nodegroups can be created once the cluster is ready." % cluster["name"],
                )
            if any(n["name"] == name for n in cluster["nodegroups"].values()):
                raise ApiError(
                    409, "A node group with name %s already exists in the cluster %s." % (name, cluster["name"])
                )
            fields = {
                "name": name,
                "node_count": body.get("node_count", 1),
                "min_node_count": body.get("min_node_count", 0),
                "max_node_count": body.get("max_node_count"),
                "role": body.get("role") or "worker",
                "node_labels": body.get("node_labels"),
                "node_taints": body.get("node_taints"),
            }
            self._validate_node_count(fields)
            self._validate_node_labels_taints(fields)
            if fields["role"] == "master":
                raise ApiError(400, "Creating master nodegroups is currently not supported.")
            if fields["node_count"] == 0 and version < (1, 10):
                raise ApiError(400, "Resizing a nodegroup to zero is not supported in the provided microversion")
            flavor = body.get("flavor_id") or cluster["flavor_id"]
            if self.flavors is not None and flavor not in self.flavors:
                raise ApiError(404, "Flavor %s could not be found." % flavor)
            if labels is None:
                ng_labels = dict(cluster["labels"])
            elif body.get("merge_labels"):
                ng_labels = dict(cluster["labels"], **labels)
            else:
                ng_labels = dict(labels)
            ng = self._new_ng(
                cluster,
                dict(
                    body,
                    labels=ng_labels,
                    flavor_id=flavor,
                    image_id=body.get("image_id") or cluster["image_id"],
                    role=fields["role"],
                ),
            )
            ng["_visible"] = self.conductor_lag <= 0  # the conductor writes the row (reference §1)
            cluster["nodegroups"][ng["uuid"]] = ng

            def apply() -> tuple[str, list[Node], list[Node]]:
                return "created", self._grow(cluster, ng, ng["node_count"]), []

            self._start_op(cluster, ng, "create", "CREATE_IN_PROGRESS", "CREATE_COMPLETE", "CREATE_FAILED", apply)
            return self.ng_view(cluster, ng, version)

    def patch_ng(self, cluster_ident: str, ng_ident: str, patch: Any, version: Version) -> dict:
        self.require(version, "1.9", "The nodegroup API")
        if not isinstance(patch, list) or not patch:
            raise ApiError(400, "Invalid input: a JSON-patch list is expected.")
        with self.lock:
            cluster = self.find_cluster(cluster_ident)
            ng = self.find_ng(cluster, ng_ident)
            new = {k: copy.deepcopy(v) for k, v in ng.items() if not k.startswith("_")}
            for op in patch:
                if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove"):
                    raise ApiError(
                        400,
                        "Invalid input for field/attribute op. Value: %r. Value should be one of: "
                        "add, replace, remove" % (op.get("op") if isinstance(op, dict) else op,),
                    )
                path = op.get("path", "")
                if not isinstance(path, str) or not PATCH_PATH.match(path):
                    raise ApiError(400, "Invalid input for field/attribute path. Value: %r." % (path,))
                if path in PATCH_BLOCKED:
                    raise ApiError(400, "'%s' is an internal attribute and can not be updated" % path)
                field = path[1:]
                if field in ("node_labels", "node_taints"):
                    self.require(version, "1.14", "Updating %s" % field)
                elif field not in ("min_node_count", "max_node_count"):
                    raise ApiError(
                        400, "Couldn't apply patch '%s'. Reason: can't replace non-existent object '%s'" % (op, field)
                    )
                if op["op"] == "remove":
                    new[field] = {"min_node_count": 0, "max_node_count": None, "node_labels": {}, "node_taints": []}[
                        field
                    ]
                    continue
                if "value" not in op:
                    raise ApiError(400, "'add' and 'replace' operations need a value")
                value = op["value"]
                # JsonPatchType.value is MultiType(text, int): dicts/lists go as their str() form.
                if isinstance(value, bool) or not isinstance(value, (str, int)):
                    raise ApiError(
                        400,
                        "Invalid input for field/attribute value. Value: %r. "
                        "Wrong type. Expected '(str, int)'" % (value,),
                    )
                if field in ("node_labels", "node_taints"):
                    try:
                        value = ast.literal_eval(value) if isinstance(value, str) else value
                    except (ValueError, SyntaxError):
                        raise ApiError(400, "Couldn't apply patch '%s'. Reason: invalid literal" % (op,))
                elif not isinstance(value, int) or value < 0:
                    raise ApiError(400, "Invalid input for field/attribute %s. Value: %r." % (field, value))
                new[field] = value
            self._validate_node_count(new)
            self._validate_node_labels_taints(new)
            if ng["status"] not in ALLOWED_NODEGROUP_STATES:
                raise ApiError(400, "Updating a nodegroup in status %s is not supported." % ng["status"])
            changes = {k: new[k] for k in ("min_node_count", "max_node_count", "node_labels", "node_taints")}

            def apply() -> tuple[str, list[Node], list[Node]]:
                return "updated", [], []

            self._start_op(
                cluster,
                ng,
                "update",
                "UPDATE_IN_PROGRESS",
                "UPDATE_COMPLETE",
                "UPDATE_FAILED",
                apply,
                on_pickup=lambda: ng.update(changes),
            )
            return dict(
                self.ng_view(cluster, ng, version),
                **{k: v for k, v in changes.items() if version >= (1, 14) or k.endswith("_count")},
            )

    def delete_ng(self, cluster_ident: str, ng_ident: str, version: Version) -> None:
        self.require(version, "1.9", "The nodegroup API")
        with self.lock:
            cluster = self.find_cluster(cluster_ident)
            ng = self.find_ng(cluster, ng_ident)
            if ng["is_default"]:
                raise ApiError(400, "Deleting a default nodegroup is not supported.")

            def apply() -> tuple[str, list[Node], list[Node]]:
                removed, ng["_nodes"] = list(ng["_nodes"]), []
                return "deleted", [], removed

            self._start_op(cluster, ng, "delete", "DELETE_IN_PROGRESS", "DELETE_COMPLETE", "DELETE_FAILED", apply)

    def resize(self, cluster_ident: str, body: Any, version: Version) -> dict:
        self.require(version, "1.7", "The cluster resize action")
        if not isinstance(body, dict) or "node_count" not in body:
            raise ApiError(400, "Invalid input for field/attribute node_count. Mandatory field missing.")
        count, to_remove = body["node_count"], body.get("nodes_to_remove") or []
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ApiError(400, "Invalid input for field/attribute node_count. Value: %r." % (count,))
        if count == 0 and version < (1, 10):
            raise ApiError(400, "Resizing a nodegroup to zero is not supported in the provided microversion")
        with self.lock:
            cluster = self.find_cluster(cluster_ident)
            if body.get("nodegroup"):
                ng = self.find_ng(cluster, body["nodegroup"])
            else:
                ng = next(n for n in cluster["nodegroups"].values() if n["is_default"] and n["role"] != "master")
            if ng["role"] == "master":
                raise ApiError(400, "Resizing a master nodegroup is not supported.")
            mn, mx = ng["min_node_count"], ng["max_node_count"]
            if count < mn or (mx is not None and count > mx):
                raise ApiError(
                    400,
                    "Resizing %s outside the allowed range: min_node_count = %s, "
                    "max_node_count = %s" % (ng["name"], mn, mx),
                )
            if ng["status"] not in ALLOWED_NODEGROUP_STATES:
                raise ApiError(400, "Resizing a nodegroup in status %s is not supported." % ng["status"])
            names = {n.name: n for n in ng["_nodes"]}
            ids = {n.server_id: n for n in ng["_nodes"]}
            victims = []
            for ident in to_remove:
                node = ids.get(ident) or names.get(ident)
                if node is None:
                    raise ApiError(400, "Node %s is not part of nodegroup %s." % (ident, ng["name"]))
                victims.append(node)

            def apply() -> tuple[str, list[Node], list[Node]]:
                removed = []
                for node in victims:
                    if len(ng["_nodes"]) > count and node in ng["_nodes"]:
                        ng["_nodes"].remove(node)
                        removed.append(node)
                while len(ng["_nodes"]) > count:
                    removed.append(ng["_nodes"].pop())
                return "resized", self._grow(cluster, ng, count), removed

            # The conductor saves the new count when it picks the resize up.
            self._start_op(
                cluster,
                ng,
                "resize",
                "UPDATE_IN_PROGRESS",
                "UPDATE_COMPLETE",
                "UPDATE_FAILED",
                apply,
                on_pickup=lambda: ng.update(node_count=count),
            )
            return {"uuid": cluster["uuid"]}
