"""The test bed's own MIG tables: per GPU, what NVML reports (SIMULATOR data, independent of plugins/).

    from testbed import mig_tables
    gpu = mig_tables.get("A100-40GB")          # or an NVML product name, or GFD's dashed form of it
    mig_tables.feasible(gpu, {"3g.20gb": 1, "2g.10gb": 2})
    mig_tables.place(gpu, {"3g.20gb": 1, "2g.10gb": 2})   # [(profile row, start), ...] or None

The rows come from NVIDIA's published data (records.SOURCES) and are kept apart from the collection's
catalog on purpose: the differential test holds the catalog and planner against them.
"""

from __future__ import annotations

from testbed.mig_tables import ampere, blackwell, hopper, without_mig
from testbed.mig_tables.placement import LayoutRefused, feasible, place, placed, refusal
from testbed.mig_tables.records import ESTIMATE_RULE, SOURCES, Engines, Gpu, Mig, Profile

__all__ = [
    "GPUS",
    "get",
    "find",
    "by_pci_device_id",
    "profile",
    "feasible",
    "place",
    "placed",
    "refusal",
    "LayoutRefused",
    "Engines",
    "Gpu",
    "Mig",
    "Profile",
    "SOURCES",
    "ESTIMATE_RULE",
]

GPUS = {g.key: g for g in ampere.GPUS + hopper.GPUS + blackwell.GPUS + without_mig.GPUS}


def find(name: str):
    """Table of a GPU by key, NVML product name, or GFD's nvidia.com/gpu.product form (spaces as dashes)."""
    if name in GPUS:
        return GPUS[name]
    for gpu in GPUS.values():
        if name in gpu.product_names or name in (p.replace(" ", "-") for p in gpu.product_names):
            return gpu
    return None


def get(name: str):
    gpu = find(name)
    if gpu is None:
        raise KeyError("the test bed has no table for GPU %r (tables: %s)" % (name, ", ".join(sorted(GPUS))))
    return gpu


def by_pci_device_id(device_id: str):
    wanted = device_id.lower()
    for gpu in GPUS.values():
        if wanted in (d.lower() for d in gpu.pci_device_ids):
            return gpu
    return None


def profile(gpu, name: str):
    """The profile row of `gpu` called `name`, or None (names are per GPU: 1g.35gb differs on H200 and GB300)."""
    for row in gpu.mig.profiles if gpu.mig else ():
        if row.name == name:
            return row
    return None
