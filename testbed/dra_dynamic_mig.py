"""ResourceSlices of the NVIDIA DRA driver with the DynamicMIG gate on (SIMULATOR builders, pure).

Models (reference nvidia-dra-driver-published.md "With DynamicMIG", read from partitions.go at v0.4.1
and main; nvidia-dra-mig-imex.md §1.6, §1.8, §1.11 point 5):

- start-up destroys every MIG device the plugin did not create (DestroyUnknownMIGDevices): static
  layouts are wiped - on Hopper and later MIG mode is turned off, on Ampere (a mode change needs a
  GPU reset) the pre-set mode stays and only the instances go (`wiped_layouts`);
- per MIG-capable GPU a counter set ``gpu-<minor>-counter-set`` with the counters ``multiprocessors``,
  ``copy-engines``, ``decoders``, ``encoders``, ``jpeg-engines``, ``ofa-engines``, ``memory`` and
  ``memory-slice-<N>``; the full GPU ``gpu-<minor>`` consumes all of them (not published on Ampere
  with MIG already on) and one device per profile and placement start
  (``gpu-<minor>-mig-<profile>-<GI id>-<start>``, no ``uuid``, no ``memorySlice`` capacities)
  consumes its share plus the memory slices it covers;
- the slice shape follows the API server's version, as the driver reads it at start-up (driver.go
  shouldUseSplitResourceSlices; KEP-4815 forbids shared counters and devices in one slice from 1.35): on
  Kubernetes >= 1.35 G+1 slices per node - one with only the shared counters, one per GPU with its devices
  (generateSplitResourceSlices); before 1.35 G slices, each GPU's counter set beside its devices
  (generateCombinedResourceSlices);
- a GPU without MIG publishes nothing (issue #1092: DynamicMIG on an L4 publishes no slice).

Engine counts, memory and SMs come from the test bed's own MIG tables (testbed/mig_tables), as for the
static builder: the counter set holds the whole GPU's engines (mig.engines), its memory, and as
multiprocessors the most any profile can use at its maximum count. `gpu` is the node's table entry
as the node simulator holds it.
"""

from __future__ import annotations

from testbed import dra_resourceslices as static

COUNTERS = ("multiprocessors", "copy-engines", "decoders", "encoders", "jpeg-engines", "ofa-engines")
CAPACITY_NAMES = {
    "multiprocessors": "multiprocessors",
    "copy-engines": "copyEngines",
    "decoders": "decoders",
    "encoders": "encoders",
    "jpeg-engines": "jpegEngines",
    "ofa-engines": "ofaEngines",
}


def wiped_layouts(gpu, layouts: dict) -> dict:
    """Layouts after the plugin's start-up clean-up: MIG off on Hopper+, no instances on Ampere."""
    out = {}
    for index, layout in layouts.items():
        if layout is None or not gpu.mig:
            out[index] = None
        else:
            out[index] = {} if gpu.architecture == "Ampere" else None
    return out


def _counts(multiprocessors, engines) -> dict:
    return {
        "multiprocessors": multiprocessors,
        "copy-engines": engines.copy,
        "decoders": engines.decoders,
        "encoders": engines.encoders,
        "jpeg-engines": engines.jpeg,
        "ofa-engines": engines.ofa,
    }


def _engines(profile) -> dict:
    return _counts(profile.multiprocessors, profile.engines)


def counter_totals(gpu) -> dict:
    sms = max([p.multiprocessors * p.max_instances for p in gpu.mig.profiles] + [gpu.sm_count or 0])
    totals = _counts(sms, gpu.mig.engines)
    totals["memory"] = gpu.memory_mib
    return totals


def counter_set(index: int) -> str:
    return "gpu-%d-counter-set" % index


def _quantity(name: str, value: int) -> dict:
    return {"value": "%dMi" % value if name == "memory" else str(value)}


def gpu_devices(node: str, gpu, index: int, mig_on: bool) -> list:
    """The devices of one MIG-capable GPU under DynamicMIG."""
    totals = counter_totals(gpu)
    attrs = static._common(gpu, index)
    out = []
    if not (mig_on and gpu.architecture == "Ampere"):
        full_attrs = dict(attrs, type={"string": "gpu"}, uuid={"string": static.gpu_uuid(node, index)})
        consumes = {name: _quantity(name, value) for name, value in totals.items()}
        consumes.update({"memory-slice-%d" % s: {"value": "1"} for s in range(gpu.mig.memory_slices)})
        # Capacity: per dimension the largest any one MIG profile offers (partitions.go PartGetDevice).
        capacity = {CAPACITY_NAMES[n]: _quantity(n, max(_engines(p)[n] for p in gpu.mig.profiles)) for n in COUNTERS}
        capacity["memory"] = _quantity("memory", max(p.memory_mib for p in gpu.mig.profiles))
        out.append(
            {
                "name": "gpu-%d" % index,
                "attributes": full_attrs,
                "capacity": capacity,
                "consumesCounters": [{"counterSet": counter_set(index), "counters": consumes}],
            }
        )
    for prof in gpu.mig.profiles:
        engines = _engines(prof)
        for start in prof.starts:
            mattrs = dict(
                attrs,
                type={"string": "mig"},
                profile={"string": prof.name},
                parentUUID={"string": static.gpu_uuid(node, index)},
            )
            capacity = {CAPACITY_NAMES[n]: _quantity(n, v) for n, v in engines.items()}
            capacity["memory"] = _quantity("memory", prof.memory_mib)
            consumes = {n: _quantity(n, v) for n, v in engines.items()}
            consumes["memory"] = _quantity("memory", prof.memory_mib)
            consumes.update({"memory-slice-%d" % s: {"value": "1"} for s in range(start, start + prof.memory_slices)})
            out.append(
                {
                    "name": static.mig_device_name(index, prof.name, prof.profile_id, start),
                    "attributes": mattrs,
                    "capacity": capacity,
                    "consumesCounters": [{"counterSet": counter_set(index), "counters": consumes}],
                }
            )
    return out


def shared_counters(gpu, count: int) -> list:
    out = []
    for index in range(count):
        counters = {name: _quantity(name, value) for name, value in counter_totals(gpu).items()}
        counters.update({"memory-slice-%d" % s: {"value": "1"} for s in range(gpu.mig.memory_slices)})
        out.append({"name": counter_set(index), "counters": counters})
    return out


SPLIT_FROM = (1, 35)  # the first Kubernetes release whose slices hold either shared counters or devices


def split_counters(server_minor: tuple | None) -> bool:
    """Does the driver publish the shared counters in a slice of their own on this server ((1, 35) and later)?
    An unknown version counts as new, as the base release is."""
    return server_minor is None or tuple(server_minor) >= SPLIT_FROM


def node_slices(node: str, gpu, count: int, layouts: dict, owner=None, generation: int = 1, split: bool = True) -> list:
    """The gpu.nvidia.com slices of a node under DynamicMIG: G+1 with `split` (Kubernetes >= 1.35), else G with
    each GPU's counter set in its devices' slice; none without MIG."""
    if not gpu or not count or not gpu.mig:
        return []
    total = count + 1 if split else count
    slices = []
    if split:
        counters = _slice(node, "counters", owner, generation, total)
        counters["spec"]["sharedCounters"] = shared_counters(gpu, count)
        slices.append(counters)
    every_set = shared_counters(gpu, count)
    for index in range(count):
        sl = _slice(node, "gpu-%d" % index, owner, generation, total)
        if not split:
            sl["spec"]["sharedCounters"] = [every_set[index]]
        sl["spec"]["devices"] = gpu_devices(node, gpu, index, (layouts or {}).get(index) is not None)
        slices.append(sl)
    return slices


def _slice(node: str, suffix: str, owner, generation: int, total: int) -> dict:
    sl = static._slice(node, static.GPU_DRIVER, [], generation, owner)
    sl["metadata"]["name"] = "%s-%s-%s" % (node, static.GPU_DRIVER, suffix)
    sl["spec"]["pool"]["resourceSliceCount"] = total
    del sl["spec"]["devices"]
    return sl
