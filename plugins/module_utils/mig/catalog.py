# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU catalog: the one source of truth for MIG geometry.

Every consumer reads this table: inventory validation, the placement planner,
mig-parted rendering, DeviceClass generation, the DRA driver simulator and the
fake libnvidia-ml (which gets its profile tables from `fake_nvml_profiles`).

Facts come from ../shared/reference/nvidia-dra-mig-imex.md §3 (MIG user guide
`-lgipp` outputs, mig-parted v0.15.0 `config-default.yaml`). Each GPU records
how its placements are known: ``observed`` (a real `nvidia-smi mig -lgipp`
output is published) or ``inferred`` (same profile IDs and max counts as the
observed GPUs, no placement output published). Keep those marks.

Pure data and pure functions: no I/O, no third-party imports, so modules can
ship it to any host.
"""
from __future__ import annotations

from collections import namedtuple

__all__ = [
    "GpuModel", "MigGeometry", "MigProfile", "CATALOG", "get_gpu", "find_gpu",
    "gpu_keys", "mig_capable_keys", "fake_nvml_profiles",
]

# NVML_GPU_INSTANCE_PROFILE_* indices (go-nvml const.go); the *id* (what
# nvidia-smi shows and what create calls take) is a different number.
NVML_INDEX = {
    "1_SLICE": 0, "2_SLICE": 1, "3_SLICE": 2, "4_SLICE": 3, "7_SLICE": 4,
    "8_SLICE": 5, "6_SLICE": 6, "1_SLICE_REV1": 7, "2_SLICE_REV1": 8,
    "1_SLICE_REV2": 9,
}

MigProfile = namedtuple(
    "MigProfile",
    "name profile_id nvml_index compute_slices memory_slices max_instances starts memory_mib multiprocessors",
)
MigProfile.__doc__ = """One GPU-instance profile.

starts: allowed placement starts, in memory slices; an instance occupies
memory slices [start, start + memory_slices). memory_mib and multiprocessors
are approximate for inferred GPUs; NVML reports the exact numbers at run time.
"""

MigGeometry = namedtuple("MigGeometry", "memory_slices compute_slices profiles placements")
GpuModel = namedtuple(
    "GpuModel",
    "key product_names pci_device_ids architecture compute_capability memory_mib "
    "mig multinode_nvlink mig_mode_needs_reset sm_count notes",
)

# The 8-memory-slice, 7-compute-slice geometry shared by A100, H100, H200, B200,
# GB200 (reference §3.2): (kind, nvidia-smi id, compute, memory, max, starts).
_GEOMETRY_8 = (
    ("1_SLICE", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    ("1_SLICE_REV1", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),  # +me: media extensions
    ("1_SLICE_REV2", 15, 1, 2, 4, (0, 2, 4, 6)),
    ("2_SLICE", 14, 2, 2, 3, (0, 2, 4)),
    ("3_SLICE", 9, 3, 4, 2, (0, 4)),
    ("4_SLICE", 5, 4, 4, 1, (0,)),
    ("7_SLICE", 0, 7, 8, 1, (0,)),
)
# A30: 4 memory and 4 compute slices (reference §3.3; placements from go-nvml's
# a30 mock, matching the MIG guide's fractions: likely right, not observed).
_GEOMETRY_4 = (
    ("1_SLICE", 14, 1, 1, 4, (0, 1, 2, 3)),
    ("1_SLICE_REV1", 21, 1, 1, 1, (0, 1, 2, 3)),
    ("2_SLICE", 5, 2, 2, 2, (0, 2)),
    ("2_SLICE_REV1", 6, 2, 2, 1, (0, 2)),
    ("4_SLICE", 0, 4, 4, 1, (0,)),
)


def _mig(names, geometry, memory_slices, compute_slices, memory_mib, sm_per_slice, placements):
    profiles = []
    for name, (kind, pid, comp, mem, max_n, starts) in zip(names, geometry):
        if name is None:
            continue
        profiles.append(MigProfile(
            name=name, profile_id=pid, nvml_index=NVML_INDEX[kind], compute_slices=comp,
            memory_slices=mem, max_instances=max_n, starts=starts,
            # Approximate: proportional share; NVML gives the exact size.
            memory_mib=memory_mib * mem // memory_slices,
            multiprocessors=sm_per_slice * comp,
        ))
    return MigGeometry(memory_slices, compute_slices, tuple(profiles), placements)


def _eight(names, memory_mib, sm_per_slice, placements):
    return _mig(names, _GEOMETRY_8, 8, 7, memory_mib, sm_per_slice, placements)


def _gpu(key, names, pci, arch, cc, mem, mig=None, nvlink=False, sm=None, notes=""):
    return GpuModel(key, tuple(names), tuple(pci), arch, cc, mem, mig, nvlink,
                    arch == "Ampere", sm, notes)


# Profile names per GPU, in _GEOMETRY_8 order: 1g, 1g+me, 1g 2-mem, 2g, 3g, 4g, 7g
# (mig-parted v0.15.0 config-default.yaml, reference §3.2 table).
CATALOG = {g.key: g for g in (
    _gpu("A100-40GB", ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"],
         ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"], "Ampere", "8.0", 40960,
         _eight(["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
                40960, 14, "observed"), sm=108,
         notes="1g.10gb needs driver R525+, 1g.5gb+me R470+ (MIG user guide)."),
    _gpu("A100-80GB", ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"],
         ["0x20B210DE", "0x20B510DE"], "Ampere", "8.0", 81920,
         _eight(["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
                81920, 14, "observed"), sm=108),
    _gpu("A30", ["NVIDIA A30"], ["0x20B710DE"], "Ampere", "8.0", 24576,
         _mig(["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"], _GEOMETRY_4,
              4, 4, 24576, 14, "inferred"), sm=56,
         notes="Placements from go-nvml's A30 mock; no real -lgipp output published."),
    _gpu("H100-80GB", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"],
         ["0x233010DE", "0x233110DE", "0x232210DE"], "Hopper", "9.0", 81559,
         _eight(["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
                81559, 16, "observed"), sm=132),
    _gpu("H100-NVL-94GB", ["NVIDIA H100 NVL"], ["0x232110DE", "0x233A10DE"], "Hopper", "9.0", 95830,
         _eight(["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"],
                95830, 16, "observed"), sm=132),
    _gpu("H100-96GB", ["NVIDIA H100 96GB HBM3", "NVIDIA GH200 96GB HBM3", "NVIDIA H20"],
         ["0x234210DE", "0x233D10DE"], "Hopper", "9.0", 98304,
         _eight(["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"],
                98304, 16, "inferred"), sm=132,
         notes="Also GH200 96GB and H20. Product names inferred."),
    _gpu("H200-141GB", ["NVIDIA H200", "NVIDIA H200 NVL"], ["0x233510DE", "0x233B10DE"],
         "Hopper", "9.0", 143771,
         _eight(["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"],
                143771, 16, "inferred"), sm=132,
         notes="Placements inferred: same profile IDs and counts as H100; check with gpu_facts."),
    _gpu("GH200-144GB", ["NVIDIA GH200 144G HBM3e"], ["0x234810DE"], "Hopper", "9.0", 147456,
         _eight(["1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"],
                147456, 16, "inferred"), sm=132),
    _gpu("B200", ["NVIDIA B200"], ["0x290110DE"], "Blackwell", "10.0", 183359,
         _eight(["1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"],
                183359, 18, "inferred"), sm=148),
    _gpu("GB200", ["NVIDIA GB200"], ["0x294110DE"], "Blackwell", "10.0", 189471,
         _eight(["1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"],
                189471, 18, "inferred"), nvlink=True, sm=152,
         notes="Production names (mig-parted ebab1f77); pre-production boards said 1g.24gb/3g.95gb. "
               "Multi-node NVLink (NVL72): ComputeDomains/IMEX."),
    # GPUs without MIG: listed so the model can say "T4 has no MIG" precisely.
    _gpu("T4", ["Tesla T4"], ["0x1EB810DE"], "Turing", "7.5", 15360, sm=40),
    _gpu("L4", ["NVIDIA L4"], ["0x27B810DE"], "Ada Lovelace", "8.9", 23034, sm=58),
    _gpu("L40S", ["NVIDIA L40S"], ["0x26B910DE"], "Ada Lovelace", "8.9", 46068, sm=142),
    _gpu("A10", ["NVIDIA A10"], ["0x223610DE"], "Ampere", "8.6", 23028, sm=72),
    _gpu("V100", ["Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB"], ["0x1DB110DE", "0x1DB410DE"],
         "Volta", "7.0", 16384, sm=80),
    _gpu("V100S", ["Tesla V100S-PCIE-32GB"], ["0x1DF610DE"], "Volta", "7.0", 32768, sm=80),
)}


def gpu_keys():
    return sorted(CATALOG)


def mig_capable_keys():
    return sorted(k for k, g in CATALOG.items() if g.mig)


def _norm(text):
    return "".join(ch for ch in text.lower() if ch.isalnum())


def find_gpu(name):
    """Catalog entry for a catalog key or an NVML product name, else None.

    Matching ignores case and punctuation so 'a100-40gb', 'A100 40GB' and
    'NVIDIA A100-SXM4-40GB' all resolve.
    """
    if name in CATALOG:
        return CATALOG[name]
    wanted = _norm(name)
    for gpu in CATALOG.values():
        if wanted == _norm(gpu.key) or any(wanted == _norm(p) for p in gpu.product_names):
            return gpu
    return None


def get_gpu(name):
    gpu = find_gpu(name)
    if gpu is None:
        raise KeyError("unknown GPU model %r; known: %s" % (name, ", ".join(gpu_keys())))
    return gpu


def profile_by_name(gpu, name):
    if gpu.mig:
        for prof in gpu.mig.profiles:
            if prof.name == name:
                return prof
    return None


def fake_nvml_profiles(gpu):
    """Profile table in the shape the fake libnvidia-ml reads (one source of truth)."""
    if not gpu.mig:
        return []
    return [
        {"name": p.name, "id": p.profile_id, "index": p.nvml_index, "slices": p.compute_slices,
         "memory_slices": p.memory_slices, "instances": p.max_instances,
         "starts": list(p.starts), "memory_mib": p.memory_mib, "sm": p.multiprocessors}
        for p in gpu.mig.profiles
    ]
