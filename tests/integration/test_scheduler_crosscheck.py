"""gpupool's pool report against the REAL kube-scheduler (issue #25): what the report says is allocatable now is what
the scheduler allocates, no more and no fewer; every DeviceClass gpupool publishes gets a device of its pool and profile.

Nothing here allocates: tenants' pods name gpupool's ResourceClaimTemplates, the real resourceclaim controller makes
their ResourceClaims and the real scheduler's DynamicResources plugin allocates them (claim status.allocation,
pod spec.nodeName) from the slices the DRA driver simulator publishes for the nodes where the kubelet plugin's real
DaemonSet pod runs. A pod the scheduler cannot serve stays Pending with its own reason (PodScheduled=False).

The pools, on nodes the node simulator registers (one kind each): whole T4s (2 nodes), a static-MIG A100 x2
(3g.20gb + 2 x 2g.10gb per GPU; also the `matchAttribute` template: two 2g.10gb under one pcieRoot), time-sliced
T4, MPS A100. Tenants' pods tolerate the GPU pools' taint and select their pool's nodes by its label, as
docs/operations.md tells users to; that also keeps them off other tests' nodes on the shared control plane.
"""

from __future__ import annotations

import functools
import time
import uuid

import pytest

from testbed import demo_tenant, dra_api
from testbed.simulator_client import Kube, KubeError
from tests.integration import k8s_helpers as h

# resource.k8s.io claims and slices: version sensitive (v1beta1 on 1.32), run on every release of the matrix.
pytestmark = [pytest.mark.sandbox, pytest.mark.dra_api]
NG_LABEL = "magnum.openstack.org/nodegroup"
POOL_LABEL = "gpupool.io/pool"
NS = "xc-tenant"  # the templates of the count checks
CLASSES_NS = "xc-classes"  # one template per DeviceClass (the tenants' default)
WHOLE, MIG, TS, MPS = "xc-whole", "xc-mig", "xc-ts", "xc-mps"
NODES = {
    WHOLE: [("xc-whole-0", "g2.xlarge"), ("xc-whole-1", "g2.xlarge")],
    MIG: [("xc-mig-0", "g4.p2.40g")],
    TS: [("xc-ts-0", "g2.xlarge")],
    MPS: [("xc-mps-0", "g4.p1.40g")],
}
LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
ROOT = "resource.kubernetes.io/pcieRoot"
# template -> (pool, unit of the report's "allocatable now" or None for a template's own count)
TEMPLATES = [
    {"name": "whole", "pool": WHOLE},
    {"name": "mig-3g", "pool": MIG, "mig_profile": "3g.20gb"},
    {"name": "mig-2g", "pool": MIG, "mig_profile": "2g.10gb"},
    {"name": "mig-2g-pair", "pool": MIG, "mig_profile": "2g.10gb", "count": 2, "match_attribute": ROOT},
    {"name": "ts", "pool": TS, "sharing": {"time_slicing": {"interval": "Long"}}},
    {"name": "mps", "pool": MPS, "sharing": {"mps": {"active_thread_percentage": 50}}},
]


def cluster_data(sandbox) -> dict:
    return {
        "name": "xcheck",
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": "unused", "cluster": "unused"},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace},
        "pools": [
            {
                "name": WHOLE,
                "nodegroup": {"flavor": "g2.xlarge", "node_count": 2},
                "gpu": {"model": "T4"},
                "device_classes": {
                    "extra": [
                        {
                            "name": "xc-whole-turing",
                            "selectors": ["device.attributes['gpu.nvidia.com'].architecture == 'Turing'"],
                        }
                    ]
                },
            },
            {
                "name": MIG,
                "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": dict(LAYOUT)},
                "device_classes": {"extra": [{"name": "xc-mig-big", "mig_profile": "3g.20gb", "min_memory": "16Gi"}]},
            },
            {
                "name": TS,
                "nodegroup": {"flavor": "g2.xlarge", "node_count": 1},
                "gpu": {"model": "T4"},
                "sharing": {"time_slicing": {"interval": "Long"}},
            },
            {
                "name": MPS,
                "nodegroup": {"flavor": "g4.p1.40g", "node_count": 1},
                "gpu": {"model": "A100-40GB"},
                "sharing": {"mps": {"active_thread_percentage": 50}},
            },
        ],
        "tenants": [{"namespace": NS, "templates": TEMPLATES}, {"namespace": CLASSES_NS}],
    }


CLUSTER = "{{ gpupool_cluster }}"
CONVERGE = [
    ("gpupool.core.node_pool", {"cluster": CLUSTER}),
    ("gpupool.core.mig_layout", {"cluster": CLUSTER, "pools": [MIG], "wait_sleep": 0.2, "wait_timeout": 60}),
    ("gpupool.core.device_class", {"cluster": CLUSTER}),
    ("gpupool.core.resource_claim_template", {"cluster": CLUSTER}),
]
INFO = ("gpupool.core.pool_info", {"cluster": CLUSTER})


wait_for = functools.partial(h.wait_for, timeout=120.0, interval=0.3)


def kubelet_plugin(cp) -> None:
    """The DRA driver's kubelet plugin as the chart makes it: the real DaemonSet controller and scheduler place its
    pods on the pools' nodes (it tolerates their taints), the DRA driver simulator publishes slices where they run."""
    from kubernetes import client

    term = {"matchExpressions": [{"key": NG_LABEL, "operator": "In", "values": list(NODES)}]}
    client.AppsV1Api(cp.api_client()).create_namespaced_daemon_set(
        NS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "xc-kubelet-plugin"},
            "spec": {
                "selector": {"matchLabels": {"app": "xc-plugin"}},
                "template": {
                    "metadata": {"labels": {"app": "xc-plugin"}},
                    "spec": {
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                            }
                        },
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "gpus", "image": "registry.example/dra:v0.5.1"}],
                    },
                },
            },
        },
    )


class Tenant:
    """Pods of a tenant over gpupool's templates, and what Kubernetes made of them."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.version = dra_api.served_version(kube)
        self.names: list = []

    def pod(self, template: str, pool: str, tag: str) -> str:
        name = "%s-%s" % (tag, uuid.uuid4().hex[:6])
        manifest = demo_tenant.pod_manifest(name, self.namespace, template)
        manifest["metadata"]["labels"] = {"xcheck": tag}
        manifest["spec"]["nodeSelector"] = {POOL_LABEL: pool}  # the pool's nodes, as docs/operations.md says
        self.kube.create("/api/v1/namespaces/%s/pods" % self.namespace, manifest)
        self.names.append(name)
        return name

    def _pod(self, name: str) -> str:
        return "/api/v1/namespaces/%s/pods/%s" % (self.namespace, name)

    def read(self, name: str) -> dict:
        """{"node", "results" (the claim's allocation results), "pending" (PodScheduled=False condition or None)}."""
        pod = self.kube.get("/api/v1/namespaces/%s/pods/%s" % (self.namespace, name)) or {}
        claims = [
            self.kube.get(dra_api.path(self.version, "resourceclaims", self.namespace, st["resourceClaimName"]))
            for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if st.get("resourceClaimName")
        ]
        results = [
            r
            for c in claims
            for r in (((c or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        ]
        pending = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled" and c.get("status") == "False"
            ),
            None,
        )
        reserved = [r for c in claims for r in ((c or {}).get("status") or {}).get("reservedFor") or []]
        return {
            "node": (pod.get("spec") or {}).get("nodeName"),
            "results": results,
            "pending": pending,
            "reserved": reserved,
            "claims": claims,
        }

    def settled(self, names: list, expected: int):
        """The pods once `expected` of them are bound with allocated claims and every other one was found
        unschedulable by the scheduler (None before that)."""
        states = {n: self.read(n) for n in names}
        bound = [n for n, s in states.items() if s["node"] and s["results"]]
        unschedulable = [n for n, s in states.items() if not s["node"] and s["pending"]]
        if len(bound) == expected and len(bound) + len(unschedulable) == len(names):
            return states
        return None

    def clean(self) -> None:
        """Delete the pods now (grace 0: no kubelet has to stop anything) and wait until their claims are gone."""
        # The Pending pods first: a device freed by a bound pod's deletion would otherwise go to a Pending pod that
        # is deleted while the scheduler binds it (on 1.32 its claim then stayed allocated, with a deletionTimestamp,
        # no reservedFor and the delete-protection finalizer: the device leaked).
        bound = {n for n in self.names if (self.kube.get(self._pod(n)) or {}).get("spec", {}).get("nodeName")}
        for wave in ([n for n in self.names if n not in bound], sorted(bound)):
            for name in wave:
                try:
                    self.kube.request(
                        "DELETE",
                        self._pod(name),
                        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                    )
                except KubeError as exc:
                    if exc.status != 404:
                        raise
            wait_for("the pods gone", lambda w=wave: not [n for n in w if self.kube.get(self._pod(n))])
        gone = set(self.names)

        def left():
            """What is left of the test's claims (name, finalizers, deletionTimestamp, reservedFor, allocated) and pods."""
            claims = [
                (
                    c["metadata"]["name"],
                    c["metadata"].get("finalizers"),
                    c["metadata"].get("deletionTimestamp"),
                    (c.get("status") or {}).get("reservedFor"),
                    bool((c.get("status") or {}).get("allocation")),
                )
                for c in self.kube.list(dra_api.path(self.version, "resourceclaims", self.namespace))
                if any(o.get("name") in gone for o in c["metadata"].get("ownerReferences") or [])
            ]
            pods = [
                (n, (p.get("metadata") or {}).get("finalizers"), (p.get("metadata") or {}).get("deletionTimestamp"))
                for n, p in ((n, self.kube.get("/api/v1/namespaces/%s/pods/%s" % (self.namespace, n))) for n in gone)
                if p
            ]
            return claims + pods

        deadline = time.monotonic() + 60
        while left():
            assert time.monotonic() < deadline, "the test's pods and their claims are not gone: %r" % (left(),)
            time.sleep(0.3)
        self.names = []


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    cp = sandbox.cp
    for namespace in (NS, CLASSES_NS):
        h.ensure_namespace(cp, namespace)
        h.wait_for_default_service_account(h.core(cp), namespace)
    kubelet_plugin(cp)
    for pool, nodes in NODES.items():
        for name, flavor in nodes:
            sandbox.nodes.register_node(name, flavor, nodegroup=pool)
    play = h.GpupoolPlay(cp, tmp_path_factory.mktemp("xcheck"), cluster_data(sandbox))
    try:
        results, _res, _window = play.run(CONVERGE)
        for result in results:
            assert not result.get("failed"), result.get("msg")
        kube = Kube(sandbox.kubeconfig, "test-scheduler-crosscheck")
        version = dra_api.served_version(kube)

        def published():
            slices = [dra_api.slice_from(version, s) for s in kube.list(dra_api.path(version, "resourceslices"))]
            return {
                s["spec"].get("nodeName"): len(s["spec"].get("devices") or [])
                for s in slices
                if s["spec"]["driver"] == "gpu.nvidia.com"
            }

        # every node's devices, the A100's MIG layout among them (2 x (3g.20gb + 2 x 2g.10gb))
        wanted = {"xc-whole-0": 1, "xc-whole-1": 1, "xc-mig-0": 6, "xc-ts-0": 1, "xc-mps-0": 1}
        wait_for("the pools' slices", lambda: all(published().get(n) == c for n, c in wanted.items()))
        yield {"cp": cp, "play": play, "kube": kube, "classes": list(results[2]["objects"])}
    finally:
        for nodes in NODES.values():
            for name, _flavor in nodes:
                try:
                    sandbox.nodes.remove_node(name)
                except Exception:  # noqa: BLE001 - cleanup goes on
                    pass
        cp.kubectl(
            "delete", "deviceclass", "-l", "%s in (%s)" % (POOL_LABEL, ",".join(NODES)), "--wait=false", check=False
        )
        for namespace in (NS, CLASSES_NS):
            cp.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def report(bed) -> dict:
    (info,), _res, _window = bed["play"].run([INFO])
    assert not info.get("failed"), info.get("msg")
    return info["pools"]


def template_allocatable(pools: dict, pool: str, name: str) -> int:
    (row,) = [t for t in pools[pool]["capacity"]["templates"] if t["namespace"] == NS and t["name"] == name]
    return row["allocatable"]


CASES = [
    # (test id, template, pool, the report's count: ("unit", u) of capacity.allocatable or ("template", name))
    ("whole-gpus", "whole", WHOLE, ("unit", "gpu")),
    ("static-mig-3g.20gb", "mig-3g", MIG, ("unit", "3g.20gb")),
    ("static-mig-2g.10gb", "mig-2g", MIG, ("unit", "2g.10gb")),
    ("time-slicing", "ts", TS, ("unit", "gpu")),
    ("mps", "mps", MPS, ("unit", "gpu")),
    ("match-attribute", "mig-2g-pair", MIG, ("template", "mig-2g-pair")),
]


@pytest.mark.parametrize("template,pool,count", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_scheduler_allocates_exactly_what_the_report_says_is_allocatable_now(bed, template, pool, count):
    def allocatable(pools):
        return (
            pools[pool]["capacity"]["allocatable"][count[1]]
            if count[0] == "unit"
            else template_allocatable(pools, pool, count[1])
        )

    before = allocatable(report(bed))
    assert before > 0, "the pool must offer something for the check to mean anything"
    tenant = Tenant(bed["kube"], NS)
    try:
        names = [tenant.pod(template, pool, template) for _ in range(before + 2)]
        states = wait_for(
            "%d of %d pods bound by the scheduler, the others unschedulable" % (before, len(names)),
            lambda: tenant.settled(names, before),
        )
        bound = {n: s for n, s in states.items() if s["node"]}
        for name, state in states.items():
            if name in bound:
                assert state["pending"] is None
                # allocated by the scheduler for this pod, on a node of the pool
                assert [r["name"] for r in state["reserved"]] == [name]
                assert state["node"] in {n for n, _f in NODES[pool]}
                assert {r["pool"] for r in state["results"]} == {state["node"]}
            else:
                cond = state["pending"]
                assert cond["reason"] == "Unschedulable"
                assert "cannot allocate all claims" in cond["message"], cond["message"]
        # no device twice
        devices = [(r["pool"], r["device"]) for s in bound.values() for r in s["results"]]
        assert len(devices) == len(set(devices))
        # the report now agrees that nothing more is allocatable, and the scheduler has not placed more meanwhile
        assert allocatable(report(bed)) == 0
        assert len([n for n in names if tenant.read(n)["node"]]) == before
    finally:
        tenant.clean()
    # and once the pods are gone, the report counts the devices free again
    assert allocatable(report(bed)) == before


def test_every_device_class_gets_a_device_of_its_pool_and_profile(bed):
    """The tenants' default templates: one per DeviceClass gpupool publishes, named like it."""
    kube = bed["kube"]
    version = dra_api.served_version(kube)
    classes = {o["name"]: o["pool"] for o in bed["classes"] if o["action"] != "deleted"}
    assert sorted(classes) == sorted(
        [WHOLE, "xc-whole-turing", MIG + "-3g.20gb", MIG + "-2g.10gb", "xc-mig-big", TS, MPS]
    )
    wanted = {  # what each class promises of its device
        WHOLE: ("gpu", None, "Tesla T4"),
        "xc-whole-turing": ("gpu", None, "Tesla T4"),
        MIG + "-3g.20gb": ("mig", "3g.20gb", None),
        MIG + "-2g.10gb": ("mig", "2g.10gb", None),
        "xc-mig-big": ("mig", "3g.20gb", None),
        TS: ("gpu", None, "Tesla T4"),
        MPS: ("gpu", None, None),
    }
    tenant = Tenant(kube, CLASSES_NS)
    try:
        pods = {c: tenant.pod(c, pool, "class") for c, pool in classes.items()}
        states = wait_for("every class's pod bound", lambda: tenant.settled(list(pods.values()), len(pods)))
        slices = [dra_api.slice_from(version, s) for s in kube.list(dra_api.path(version, "resourceslices"))]
        by_device = {(s["spec"]["pool"]["name"], d["name"]): d for s in slices for d in s["spec"].get("devices") or []}
        for device_class, pod in pods.items():
            state = states[pod]
            (result,) = state["results"]
            node = kube.get("/api/v1/nodes/" + state["node"])
            assert node["metadata"]["labels"][POOL_LABEL] == classes[device_class], device_class
            attrs = by_device[(result["pool"], result["device"])]["attributes"]
            kind, profile, product = wanted[device_class]
            assert attrs["type"]["string"] == kind, (device_class, result)
            assert (attrs.get("profile") or {}).get("string") == profile, (device_class, result)
            if product:
                assert attrs["productName"]["string"] == product, (device_class, result)
            # the claim names the class (made from the template named like it)
            (claim,) = state["claims"]
            (request,) = dra_api.claim_from(version, claim)["spec"]["devices"]["requests"]
            assert request["exactly"]["deviceClassName"] == device_class
    finally:
        tenant.clean()
