"""Flavor -> machine table of the simulated cloud (SIMULATOR data, not a real cloud's API).

CERN's documented GPU flavors (webinar "Adding and managing GPUs on Kubernetes",
../shared/seeds/002_*.txt: GPU, RAM and vCPUs per flavor) plus flavors for the other example
pools (H100, H200, GB200: not CERN's, sizes illustrative) and plain CPU flavors. The node simulator
reads it to size each Node (capacity) and to give it the labels GPU Feature Discovery (GFD) and
Node Feature Discovery (NFD) would set; the DRA driver simulator reads it to publish one device per
GPU. GPU facts (product names, memory, MIG geometry) come from the test bed's own MIG tables
(testbed/mig_tables), never from the collection's catalog.

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from collections import namedtuple

from testbed import mig_tables

Flavor = namedtuple("Flavor", "name gpu gpus vcpus ram_mib arch source")
Flavor.__doc__ = (
    """A Nova flavor: GPU key of testbed/mig_tables (or None), GPUs per server, vCPUs, RAM, CPU architecture."""
)

_GB = 1024


def _f(name, gpu, gpus, vcpus, ram_gb, arch="amd64", source="CERN"):
    return Flavor(name, gpu, gpus, vcpus, int(ram_gb * _GB), arch, source)


FLAVOR_TABLE = {
    f.name: f
    for f in (
        # CERN (webinar table; "AMD CPUs" for g4.*). g1/g2.xlarge are deprecated there.
        _f("g1.xlarge", "V100", 1, 4, 16),
        _f("g1.4xlarge", "V100", 4, 16, 64),
        _f("g2.xlarge", "T4", 1, 4, 16),
        _f("g2.5xlarge", "T4", 1, 28, 168),
        _f("g3.xlarge", "V100S", 1, 4, 16),
        _f("g3.4xlarge", "V100S", 4, 16, 64),
        _f("g4.p1.40g", "A100-40GB", 1, 16, 120),
        _f("g4.p2.40g", "A100-40GB", 2, 32, 240),
        _f("g4.p4.40g", "A100-40GB", 4, 64, 480),
        # Not CERN's: flavors for the example's H100, H200 and GB200 pools (sizes illustrative).
        _f("g5.h100x4", "H100-80GB", 4, 96, 960, source="sandbox"),
        _f("g5.h200x8", "H200-141GB", 8, 192, 1920, source="sandbox"),
        # A GB200 NVL72 compute tray: 2 Grace CPUs (arm64) and 4 Blackwell GPUs on multi-node NVLink.
        _f("g6.gb200x4", "GB200", 4, 144, 880, arch="arm64", source="sandbox"),
        # Plain CPU flavors for masters and default workers.
        _f("m2.medium", None, 0, 2, 4, source="sandbox"),
        _f("m2.large", None, 0, 4, 8, source="sandbox"),
        _f("m1.medium", None, 0, 2, 4, source="sandbox"),
    )
}

# flavor: (GPU key, GPUs per node) - the short view most callers want.
FLAVORS = {name: (f.gpu, f.gpus) for name, f in FLAVOR_TABLE.items()}

# What the simulated nodes run (the DRA driver needs >= 570.158.01 for ComputeDomains, ref §1.2).
DRIVER_VERSION = "570.158.01"
CUDA_DRIVER_VERSION = "12.8"
# Max nodes per NVLink clique: a GB200 NVL72 rack holds 18 compute trays of 4 GPUs.
NODES_PER_CLIQUE = 18

# GFD's nvidia.com/gpu.family values per architecture.
_FAMILY = {
    "Volta": "volta",
    "Turing": "turing",
    "Ampere": "ampere",
    "Ada Lovelace": "ada-lovelace",
    "Hopper": "hopper",
    "Blackwell": "blackwell",
}


def flavor(name):
    """Flavor record, or None for a flavor the table does not know."""
    return FLAVOR_TABLE.get(name)


def gpus_of(flavor_name):
    """(GPU table or None, count) of a flavor; unknown flavors have no GPU."""
    key, count = FLAVORS.get(flavor_name, (None, 0))
    return (mig_tables.get(key) if key else None), count


def gpu_label_value(gpu):
    """GFD's nvidia.com/gpu.product value: the NVML product name with spaces replaced by dashes."""
    return gpu.product_names[0].replace(" ", "-")


def gfd_labels(flavor_name, clique=None):
    """Labels GFD and NFD put on a node with this flavor (what the real daemons would write).

    NFD: feature.node.kubernetes.io/pci-10de.present (vendor-only PCI labels, as the GPU Operator
    configures NFD). GFD: product, count, memory (MiB), family, compute capability, driver version,
    mig.capable, gpu.present, and gpu.clique on multi-node NVLink GPUs (ref §1.2, §1.9)."""
    gpu, count = gpus_of(flavor_name)
    if not gpu:
        return {}
    major, minor = gpu.compute_capability.split(".")
    drv = DRIVER_VERSION.split(".")
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": gpu_label_value(gpu),
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(gpu.memory_mib),
        "nvidia.com/gpu.family": _FAMILY.get(gpu.architecture, gpu.architecture.lower()),
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
        "nvidia.com/gpu.machine": "OpenStack-Nova",
        "nvidia.com/mig.capable": "true" if gpu.mig else "false",
        "nvidia.com/cuda.driver.major": drv[0],
        "nvidia.com/cuda.driver.minor": drv[1],
        "nvidia.com/cuda.driver.rev": drv[2],
    }
    if gpu.multinode_nvlink and clique:
        labels["nvidia.com/gpu.clique"] = clique
    return labels


def gpus_from_labels(labels):
    """(GPU table, count, flavor name or None) for a Node's labels, or (None, 0, None).

    The flavor comes from node.kubernetes.io/instance-type (set by the OpenStack cloud provider);
    without a known flavor, GFD's nvidia.com/gpu.product and gpu.count labels are used."""
    labels = labels or {}
    name = labels.get("node.kubernetes.io/instance-type")
    gpu, count = gpus_of(name) if name in FLAVORS else (None, 0)
    if gpu:
        return gpu, count, name
    product = labels.get("nvidia.com/gpu.product", "")
    gpu = mig_tables.find(product) if product else None  # GFD's value: the product name, spaces as dashes
    try:
        count = int(labels.get("nvidia.com/gpu.count", "0"))
    except ValueError:
        count = 0
    if gpu and count > 0:
        return gpu, count, None
    return None, 0, None
