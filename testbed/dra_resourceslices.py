"""ResourceSlices as the NVIDIA DRA driver's kubelet plugin publishes them (SIMULATOR builders).

Models the v0.4/v0.5 driver (reference nvidia-dra-mig-imex.md §1.5-1.6, §1.9 and
nvidia-dra-driver-published.md):

- driver ``gpu.nvidia.com``, one pool per node named after the node, ``spec.nodeName`` set;
- a GPU with MIG off is one device ``gpu-<minor>`` - the /dev/nvidiaN minor number, which need not be
  the NVML index (driver issue #563) - with the unqualified attributes ``type`` (gpu), ``uuid``,
  ``productName``, ``brand``, ``architecture``, the versions ``cudaComputeCapability``,
  ``driverVersion``, ``cudaDriverVersion``, the standard ``resource.kubernetes.io/pciBusID`` and
  ``resource.kubernetes.io/pcieRoot``, and the capacity ``memory``; no ``index`` attribute (gone
  since v25.8.0);
- a GPU in MIG mode publishes its MIG devices instead (none when MIG is on without instances),
  named ``gpu-<minor>-mig-<rfc1123(profile without dots)>-<GI profile id>-<placement start>``
  (``gpu-0-mig-3g20gb-9-4``; ``1g.10gb+me`` becomes ``gpu-0-mig-1g10gb-me-20-0``) with ``type`` mig,
  ``parentUUID``, ``profile`` and the capacities ``multiprocessors``, ``copyEngines``, ``decoders``,
  ``encoders``, ``jpegEngines``, ``ofaEngines``, ``memory`` and ``memorySlice<N>`` = 1 per placement
  unit the instance covers;
- driver ``compute-domain.nvidia.com`` publishes ``channel-0`` and ``daemon-0`` (attributes ``type``
  and ``id``) on every node where its plugin runs, NVLink fabric or not.

MIG geometry, memory, SMs and engine counts come from the test bed's own tables (testbed/mig_tables,
NVIDIA's published -lgip data or marked estimates), never from the collection's catalog.
Simplifications (say so wherever it matters): one channel (id 0) and one daemon device are what the
real plugin publishes too (it enumerates 2048 channels internally); UUIDs and PCI addresses are
deterministic fakes; the slice name is ``<node>-<driver>`` where the real plugin uses generateName
``<node>-<driver>-``; DynamicMIG (partitionable devices with shared counters) and PassthroughSupport
(vfio devices) are not built. Pure functions: the DRA driver simulator writes the result.
"""

from __future__ import annotations

import re
import uuid

from testbed.gpu_flavors import CUDA_DRIVER_VERSION, DRIVER_VERSION, gpus_of
from testbed.mig_tables import placed

GPU_DRIVER = "gpu.nvidia.com"
CD_DRIVER = "compute-domain.nvidia.com"
SIMULATED_LABEL = "testbed.gpupool.io/simulated"
API_VERSION = "resource.k8s.io/v1"


def _ver(text):
    parts = [str(int(p)) for p in text.split(".")] + ["0", "0"]
    return ".".join(parts[:3])


def gpu_uuid(node, index):
    return "GPU-%s" % uuid.uuid5(uuid.NAMESPACE_DNS, "%s/gpu/%d" % (node, index))


def mig_uuid(node, index, profile, start):
    return "MIG-%s" % uuid.uuid5(uuid.NAMESPACE_DNS, "%s/gpu/%d/mig/%s/%d" % (node, index, profile, start))


def pci_bus_id(index):
    return "0000:%02x:00.0" % (0x41 + index * 0x10)


def mig_device_name(minor, profile, profile_id, start):
    """The driver's name of a static MIG device: gpu-<minor>-mig-<rfc1123(profile sans dots)>-<GI id>-<start>.

    rfc1123 lowercases and turns every character outside [a-z0-9-.] into '-' (mig.go ToCanonicalName)."""
    return "gpu-%d-mig-%s-%d-%d" % (
        minor,
        re.sub(r"[^a-z0-9.-]", "-", profile.replace(".", "").lower()),
        profile_id,
        start,
    )


def _common(gpu, index):
    return {
        "productName": {"string": gpu.product_names[0]},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": gpu.architecture},
        "cudaComputeCapability": {"version": _ver(gpu.compute_capability)},
        "driverVersion": {"version": _ver(DRIVER_VERSION)},
        "cudaDriverVersion": {"version": _ver(CUDA_DRIVER_VERSION)},
        "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(index)},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % (0x40 + index * 0x10)},
    }


def devices(node, gpu, count, layouts=None, minors=None):
    """Devices of one node with `count` GPUs of table model `gpu` (testbed.mig_tables).

    layouts: {gpu index: None (MIG off) or {profile: count} (MIG on, possibly no instances)};
    a missing index means MIG off. minors: the /dev/nvidiaN minor of each GPU index (default: the
    index). Raises mig_tables.LayoutRefused for a layout the GPU refuses.
    """
    out = []
    for index in range(count):
        minor = minors[index] if minors else index
        layout = (layouts or {}).get(index)
        attrs = _common(gpu, index)
        if layout is None:
            attrs.update({"type": {"string": "gpu"}, "uuid": {"string": gpu_uuid(node, index)}})
            out.append(
                {
                    "name": "gpu-%d" % minor,
                    "attributes": attrs,
                    "capacity": {"memory": {"value": "%dMi" % gpu.memory_mib}},
                }
            )
            continue
        for prof, start in sorted(placed(gpu, layout) if layout else [], key=lambda item: item[1]):
            mattrs = dict(attrs)
            mattrs.update(
                {
                    "type": {"string": "mig"},
                    "uuid": {"string": mig_uuid(node, index, prof.name, start)},
                    "parentUUID": {"string": gpu_uuid(node, index)},
                    "profile": {"string": prof.name},
                }
            )
            eng = prof.engines
            capacity = {
                "memory": {"value": "%dMi" % prof.memory_mib},
                "multiprocessors": {"value": str(prof.multiprocessors)},
                "copyEngines": {"value": str(eng.copy)},
                "decoders": {"value": str(eng.decoders)},
                "encoders": {"value": str(eng.encoders)},
                "jpegEngines": {"value": str(eng.jpeg)},
                "ofaEngines": {"value": str(eng.ofa)},
            }
            for sl in range(start, start + prof.memory_slices):
                capacity["memorySlice%d" % sl] = {"value": "1"}
            out.append(
                {
                    "name": mig_device_name(minor, prof.name, prof.profile_id, start),
                    "attributes": mattrs,
                    "capacity": capacity,
                }
            )
    return out


def gpu_devices(node, flavor, layouts=None):
    """Devices of one node of a flavor (see devices())."""
    gpu, count = gpus_of(flavor)
    return devices(node, gpu, count, layouts) if gpu else []


def compute_domain_devices():
    """The compute-domain driver's devices: channel-0 and daemon-0, what the real plugin publishes."""
    return [
        {"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}},
        {"name": "daemon-0", "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}}},
    ]


def node_slices(node, gpu, count, layouts=None, generation=1, owner=None, drivers=(GPU_DRIVER, CD_DRIVER), minors=None):
    """ResourceSlice objects (resource.k8s.io/v1) the driver publishes for `node`.

    owner: the Node's {"name", "uid"} for the ownerReference the kubelet plugin sets (the Node owns
    its slices; with a garbage collector they go when the Node goes). drivers: which kubelet-plugin
    containers run (gpus -> gpu.nvidia.com, compute-domains -> compute-domain.nvidia.com)."""
    if not gpu or not count:
        return []
    slices = []
    if GPU_DRIVER in drivers:
        slices.append(_slice(node, GPU_DRIVER, devices(node, gpu, count, layouts, minors), generation, owner))
    if CD_DRIVER in drivers:  # on every GPU node: the plugin does not fail without an NVLink fabric
        slices.append(_slice(node, CD_DRIVER, compute_domain_devices(), generation, owner))
    return slices


def resource_slices(node, flavor, layouts=None, generation=1, owner=None):
    """ResourceSlices for a node of a flavor (see node_slices())."""
    gpu, count = gpus_of(flavor)
    return node_slices(node, gpu, count, layouts, generation, owner)


def slice_name(node, driver):
    return "%s-%s" % (node, driver)


def _slice(node, driver, devs, generation, owner):
    meta = {"name": slice_name(node, driver), "labels": {SIMULATED_LABEL: "true"}}
    if owner and owner.get("uid"):
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": owner["name"], "uid": owner["uid"], "controller": True}
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": meta,
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devs,
        },
    }
