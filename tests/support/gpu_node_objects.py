"""Hand-made objects of one GPU node as the API returns them (resource.k8s.io/v1 ResourceSlices shaped as the real
NVIDIA DRA driver publishes them, ResourceClaims, Pods), for the per-GPU MIG rollout's planners (issue #35).

The driver's shape (reference nvidia-dra-driver-published.md): one pool per node named after it; a MIG device
``gpu-<minor>-mig-<profile>-<giProfileID>-<start>`` with ``type``, ``parentUUID``, ``profile`` and the parent's
``resource.kubernetes.io/pciBusID``; a full GPU ``gpu-<minor>`` with ``type`` and ``uuid``; no GPU index. The
minor is not the NVML index (driver issue #563): here GPU i has minor 7 - i and bus 0000:<10*(i+1)>:00.0, so a
reader that takes the minor for the index fails.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

DRIVER = "gpu.nvidia.com"


def bus(index: int) -> str:
    return "0000:%02x:00.0" % (0x10 * (index + 1))


def minor(index: int) -> int:
    return 7 - index


def mig_device(index: int, start: int, profile: str = "1g.10gb", **extra: int) -> dict:
    attrs = {
        "type": {"string": "mig"},
        "parentUUID": {"string": "GPU-%d" % index},
        "profile": {"string": profile},
        "resource.kubernetes.io/pciBusID": {"string": bus(index)},
    }
    attrs.update((k, {"int": v}) for k, v in extra.items())
    return {"name": "gpu-%d-mig-%s-19-%d" % (minor(index), profile.replace(".", ""), start), "attributes": attrs}


def full_device(index: int, **extra: int) -> dict:
    attrs = {
        "type": {"string": "gpu"},
        "uuid": {"string": "GPU-%d" % index},
        "resource.kubernetes.io/pciBusID": {"string": bus(index)},
    }
    attrs.update((k, {"int": v}) for k, v in extra.items())
    return {"name": "gpu-%d" % minor(index), "attributes": attrs}


def resource_slice(node: str, devices: Sequence[dict], generation: int = 1) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "%s-gpu.nvidia.com-%d" % (node, generation)},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": list(devices),
        },
    }


def claim(namespace: str, name: str, node: str, devices: Sequence[str], pods: Sequence[str] = ()) -> dict:
    """An allocated claim holding `devices` of `node`'s pool, reserved for `pods` (uid = "uid-<pod>")."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": namespace, "name": name},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": d} for d in devices]
                }
            },
            "reservedFor": [{"resource": "pods", "name": p, "uid": "uid-" + p} for p in pods],
        },
    }


def pod(
    namespace: str,
    name: str,
    node: str,
    claims: Dict[str, str],
    phase: str = "Running",
    extended: Optional[str] = None,
) -> dict:
    """A pod on `node` whose claims {pod's claim name: ResourceClaim name} came from templates."""
    status: dict = {
        "phase": phase,
        "resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in claims.items()],
    }
    if extended:
        status["extendedResourceClaimStatus"] = {"resourceClaimName": extended, "requestMappings": []}
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": "uid-" + name},
        "spec": {"nodeName": node, "resourceClaims": [{"name": k} for k in claims]},
        "status": status,
    }


def eight_gpu_node(node: str = "node-1", per_gpu: int = 1) -> List[dict]:
    """The devices of an 8-GPU node, every GPU in MIG mode with `per_gpu` 1g.10gb instances."""
    return [mig_device(i, s) for i in range(8) for s in range(per_gpu)]
