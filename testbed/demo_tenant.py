"""`make demo`'s last step: a tenant's pod asks for a GPU through gpupool's ResourceClaimTemplate and gets one.

What a user of the example inventory would do after the converge: a pod in ``ml-training`` whose
``resourceClaims[]`` name the ``a100-3g`` template, tolerating the GPU pools' taint. Nothing here allocates or
binds: the REAL resourceclaim controller makes the pod's ResourceClaim from the template, and the REAL
kube-scheduler (DynamicResources plugin) allocates a device from the ResourceSlices the DRA driver simulator
published and binds the pod (testbed/controlplane.py starts both). This module only creates the pod, waits
(bounded) and reads back what Kubernetes decided: the claim, the node, the device and the device's ``profile``
attribute from its ResourceSlice. A pod the scheduler leaves Pending is reported with the scheduler's own
reason (the pod's PodScheduled condition).

The test bed never imports gpupool's plugins: the taint and the label are spelled here as a user would
(docs/operations.md: every pool node carries ``node-role.kubernetes.io/gpu=true:NoSchedule`` and the
``gpupool.io/pool`` label).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from testbed import dra_api
from testbed.simulator_client import Kube

NAMESPACE = "ml-training"
TEMPLATE = "a100-3g"
POD = "a100-3g-demo"
CLAIM_REF = "gpu"  # the pod's resourceClaims[].name
GPU_TAINT_KEY = "node-role.kubernetes.io/gpu"
POOL_LABEL = "gpupool.io/pool"
# Never pulled: the sandbox has no kubelet or container runtime; the pod only has to be valid and scheduled.
IMAGE = "registry.k8s.io/pause:3.10"


@dataclass
class Allocation:
    """Where the scheduler put the pod's claim."""

    pod: str
    claim: str
    node: str
    pool: str | None  # the node's gpupool.io/pool label
    driver: str
    device: str
    profile: str | None  # the device's `profile` attribute in its ResourceSlice (MIG devices have one)
    seconds: float

    def line(self) -> str:
        return "claim %s allocated in %.1fs: node %s (pool %s), device %s of %s, profile %s" % (
            self.claim,
            self.seconds,
            self.node,
            self.pool or "-",
            self.device,
            self.driver,
            self.profile or "-",
        )


class StillPending(RuntimeError):
    """The pod was not scheduled with its claim allocated within the timeout; the message says why."""


def pod_manifest(
    name: str = POD, namespace: str = NAMESPACE, template: str = TEMPLATE, toleration_key: str = GPU_TAINT_KEY
) -> dict:
    """A tenant's pod that uses one ResourceClaimTemplate and tolerates the GPU pools' NoSchedule taint."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "gpupool-demo"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "tolerations": [{"key": toleration_key, "operator": "Exists", "effect": "NoSchedule"}],
            "resourceClaims": [{"name": CLAIM_REF, "resourceClaimTemplateName": template}],
            "containers": [
                {
                    "name": "train",
                    "image": IMAGE,
                    "resources": {"claims": [{"name": CLAIM_REF}]},
                }
            ],
        },
    }


def create_pod(kube: Kube, manifest: dict) -> None:
    """Create the pod (a leftover of an earlier run of a long-lived sandbox is replaced)."""
    meta = manifest["metadata"]
    path = "/api/v1/namespaces/%s/pods" % meta["namespace"]
    if kube.get("%s/%s" % (path, meta["name"])) is not None:
        kube.delete("%s/%s" % (path, meta["name"]))
        deadline = time.monotonic() + 30
        while kube.get("%s/%s" % (path, meta["name"])) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
    kube.create(path, manifest)


def pending_reason(pod: dict | None, claim: dict | None) -> str:
    """Why the pod is not (yet) placed with its device: the scheduler's words where it said any."""
    if pod is None:
        return "the pod is gone"
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            return "PodScheduled=%s, %s: %s" % (cond.get("status"), cond.get("reason"), cond.get("message"))
    if not _claim_name(pod):
        return "no ResourceClaim was made from the pod's template (is the resourceclaim controller running?)"
    if (pod.get("spec") or {}).get("nodeName") and not _results(claim):
        return "bound to %s but its claim has no allocation" % pod["spec"]["nodeName"]
    return "the scheduler has not reported on the pod yet (no PodScheduled condition)"


def wait_for_allocation(
    kube: Kube, namespace: str, name: str, timeout: float = 60.0, interval: float = 0.5
) -> Allocation:
    """Wait until the pod is bound and its claim allocated; StillPending with the reason after `timeout`."""
    version = dra_api.served_version(kube)
    t0 = time.monotonic()
    pod = claim = None
    while True:
        pod = kube.get("/api/v1/namespaces/%s/pods/%s" % (namespace, name))
        claim_name = _claim_name(pod) if pod else None
        claim = kube.get(dra_api.path(version, "resourceclaims", namespace, claim_name)) if claim_name else None
        node = ((pod or {}).get("spec") or {}).get("nodeName")
        if node and _results(claim):
            return _describe(kube, version, pod, claim, time.monotonic() - t0)
        if time.monotonic() - t0 > timeout:
            raise StillPending(
                "pod %s/%s still Pending after %.0fs: %s" % (namespace, name, timeout, pending_reason(pod, claim))
            )
        time.sleep(interval)


def _claim_name(pod: dict) -> str | None:
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if st.get("name") == CLAIM_REF and st.get("resourceClaimName"):
            return st["resourceClaimName"]
    return None


def _results(claim: dict | None) -> list:
    return ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []


def _describe(kube: Kube, version: str, pod: dict, claim: dict, seconds: float) -> Allocation:
    result = _results(claim)[0]
    node_name = pod["spec"]["nodeName"]
    node = kube.get("/api/v1/nodes/" + node_name) or {}
    profile = None
    for raw in kube.list(dra_api.path(version, "resourceslices"), field_selector="spec.driver=" + result["driver"]):
        sl = dra_api.slice_from(version, raw)
        if sl["spec"]["pool"]["name"] != result["pool"]:
            continue
        for dev in sl["spec"].get("devices") or []:
            if dev["name"] == result["device"]:
                profile = ((dev.get("attributes") or {}).get("profile") or {}).get("string")
    return Allocation(
        pod="%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]),
        claim=claim["metadata"]["name"],
        node=node_name,
        pool=((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL),
        driver=result["driver"],
        device=result["device"],
        profile=profile,
        seconds=seconds,
    )


def run(kubeconfig: str, say=print, timeout: float = 60.0) -> Allocation:
    """The demo's step: create the tenant's pod, wait, say which device it got. StillPending when it stays Pending."""
    kube = Kube(kubeconfig, "gpupool-demo")
    manifest = pod_manifest()
    say(
        "a tenant's pod: %s/%s with ResourceClaimTemplate %s, tolerating %s (the real scheduler places it)"
        % (NAMESPACE, POD, TEMPLATE, GPU_TAINT_KEY)
    )
    create_pod(kube, manifest)
    allocation = wait_for_allocation(kube, NAMESPACE, POD, timeout=timeout)
    say(allocation.line())
    return allocation
