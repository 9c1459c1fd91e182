# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU catalog: the collection's MIG geometry, GPU identities and the names people use for them.

Every consumer in plugins/ reads this table: inventory validation, the placement planner, mig-parted
rendering, DeviceClass generation. The test bed does NOT: its simulators have their own tables
(testbed/mig_tables), and a differential test holds this catalog against them, so the two are
independent witnesses of NVIDIA's published facts.

Sources (reference nvidia-dra-mig-imex.md §2-§5, nvidia-dra-driver-published.md): NVIDIA's MIG user
guide (supported GPUs and profile tables, -lgip/-lgipp examples), mig-parted v0.15.0
`config-default.yaml` and the GPU Operator's `default-mig-parted-config` (names, counts, PCI device
IDs), `nvidia-smi mig -lgip` outputs posted in mig-parted/gpu-operator issues and PRs, go-nvml's
GPU_INSTANCE_PROFILE_* constants and go-nvlib's profile naming (+me, +me.all, +gfx, -me).

Marks kept with the data:
- a GPU's placements are ``observed`` (a real `nvidia-smi mig -lgipp` is published) or ``inferred``;
- a profile's memory, SMs and engines are ``measured`` (a published -lgip of that GPU) or estimates;
- a product name is ``observed`` (seen in a published nvidia-smi/NVML output) or inferred.

Pure data and pure functions: no I/O, no third-party imports, so modules can ship it to any host.
"""

from __future__ import annotations

import difflib
from collections import namedtuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

__all__ = [
    "GpuModel", "MigGeometry", "MigProfile", "Engines", "CATALOG", "UnknownGpu", "get_gpu", "find_gpu",
    "resolve_gpu", "gpu_candidates", "gpu_keys", "mig_capable_keys", "profile_by_name", "engine_shortfall",
    "profile_kind",
]

# NVML_GPU_INSTANCE_PROFILE_* indices (go-nvml pkg/nvml/const.go); the *id* (what nvidia-smi shows and
# what create calls take) is a different number.
NVML_INDEX = {
    "1_SLICE": 0, "2_SLICE": 1, "3_SLICE": 2, "4_SLICE": 3, "7_SLICE": 4, "8_SLICE": 5, "6_SLICE": 6,
    "1_SLICE_REV1": 7, "2_SLICE_REV1": 8, "1_SLICE_REV2": 9, "1_SLICE_GFX": 10, "2_SLICE_GFX": 11,
    "4_SLICE_GFX": 12, "1_SLICE_NO_ME": 13, "2_SLICE_NO_ME": 14, "1_SLICE_ALL_ME": 15, "2_SLICE_ALL_ME": 16,
    "3_SLICE_GFX": 17,
}
# What each kind adds to the name (go-nvlib mig_profile.go): *_REV1 "+me", *_ALL_ME "+me.all", *_GFX
# "+gfx", *_NO_ME "-me"; *_REV2 (a 1g with twice the memory) adds nothing.
KIND_SUFFIX = {7: "+me", 8: "+me", 15: "+me.all", 16: "+me.all", 10: "+gfx", 11: "+gfx", 12: "+gfx", 17: "+gfx",
               13: "-me", 14: "-me"}

Engines = namedtuple("Engines", "copy decoders encoders jpeg ofa")
Engines.__doc__ = """Copy engines, video decoders, encoders, JPEG decoders, optical-flow accelerators."""

MigProfile = namedtuple(
    "MigProfile",
    "name profile_id nvml_index compute_slices memory_slices max_instances starts memory_mib multiprocessors "
    "engines measured",
    defaults=(None, False),
)
MigProfile.__doc__ = """One GPU-instance profile.

starts: allowed placement starts, in NVML placement units (memory slices on the 8-slice GPUs, 12 units
on RTX PRO 6000); an instance occupies units [start, start + memory_slices). engines: what an instance
gets (Engines) or None when unknown. measured: memory_mib, multiprocessors and engines come from a
published -lgip of this GPU; otherwise they are estimates and NVML reports the real ones at run time.
"""

MigGeometry = namedtuple("MigGeometry", "memory_slices compute_slices profiles placements engines",
                         defaults=(None,))
MigGeometry.__doc__ = """engines: what the whole GPU has; instances together never get more (None: unknown)."""

GpuModel = namedtuple(
    "GpuModel",
    "key product_names pci_device_ids architecture compute_capability memory_mib "
    "mig multinode_nvlink mig_mode_needs_reset sm_count notes aliases observed_names",
    defaults=((), ()),
)
GpuModel.__doc__ = """A GPU model.

product_names: what nvmlDeviceGetName returns (and the DRA driver publishes as productName), first the
most common; observed_names: those of them seen in a published output (the others are inferred);
aliases: other designations people write (MIG guide, mig-parted comments, nvidia-smi without vendor).
mig_mode_needs_reset: a MIG mode toggle stays pending until the GPU is reset (Ampere: A100, A30); Hopper and later
toggle at once (reference nvidia-dra-mig-imex.md §1.8 DynamicMIG and §1.11 item 5, DRA driver PR #1018). A change
that toggles it needs the node's other GPUs quiet (plan/mig/gpu_changes.py).
"""

ALL7 = (0, 1, 2, 3, 4, 5, 6)
# The shapes of the 8-memory-slice, 7-compute-slice GPUs (A100, H100, H200, B200, GB200, B300, GB300):
# (kind, nvidia-smi id, compute slices, memory slices, max instances, starts); MIG guide -lgipp.
_EIGHT = (
    ("1_SLICE", 19, 1, 1, 7, ALL7),
    ("1_SLICE_REV1", 20, 1, 1, 1, ALL7),
    ("1_SLICE_REV2", 15, 1, 2, 4, (0, 2, 4, 6)),
    ("2_SLICE", 14, 2, 2, 3, (0, 2, 4)),
    ("3_SLICE", 9, 3, 4, 2, (0, 4)),
    ("4_SLICE", 5, 4, 4, 1, (0,)),
    ("7_SLICE", 0, 7, 8, 1, (0,)),
)
# SMs and engines (CE, DEC, ENC, JPEG, OFA) of the Hopper shapes in every published Hopper -lgip
# (H100 80GB, H100 NVL, GH200 96GB, H200, GH200 144GB).
_HOPPER = ((16, (1, 1, 0, 1, 0)), (16, (1, 1, 0, 1, 1)), (26, (1, 1, 0, 1, 0)), (32, (2, 2, 0, 2, 0)),
           (60, (3, 3, 0, 3, 0)), (64, (4, 4, 0, 4, 0)), (132, (8, 7, 0, 7, 1)))
# Blackwell data-center parts: B200/GB200 -lgip for the first four shapes, the MIG guide's B200 table for
# the copy engines of 3g/4g/7g; the rest follows the Hopper pattern (estimates).
_BLACKWELL_ENGINES = ((2, 1, 0, 1, 0), (2, 1, 0, 1, 1), (2, 1, 0, 1, 0), (4, 2, 0, 2, 0), (6, 3, 0, 3, 0),
                      (8, 4, 0, 4, 0), (16, 7, 0, 7, 1))


def _eight(names, memory_mib, sms, engines, measured, placements):
    """A 7-profile geometry in _EIGHT order. memory_mib/sms/engines/measured: one entry per shape."""
    profiles = tuple(
        MigProfile(name, pid, NVML_INDEX[kind], comp, mem, max_n, starts, mib, sm, Engines(*eng), meas)
        for name, (kind, pid, comp, mem, max_n, starts), mib, sm, eng, meas in zip(
            names, _EIGHT, memory_mib, sms, engines, measured))
    return MigGeometry(8, 7, profiles, placements, profiles[-1].engines)


def _hopper(names, memory_mib, measured=(True,) * 7, placements="inferred"):
    return _eight(names, memory_mib, [sm for sm, _e in _HOPPER], [e for _s, e in _HOPPER], measured, placements)


def _share(units, per_unit):
    """Estimated MiB of an instance over `units` placement units (rounded down to 64 MiB)."""
    return int(units * per_unit) // 64 * 64


def _estimated(published, per_unit):
    """MiB per _EIGHT shape: the published values first, estimates for the rest."""
    return tuple(list(published) + [_share(shape[3], per_unit) for shape in _EIGHT[len(published):]])


MEASURED_4 = (True, True, True, True, False, False, False)
ESTIMATED = (False,) * 7


def _profiles(rows):
    """Rows (name, id, kind, compute, units, max, starts, MiB, SMs, engines, measured) -> MigProfiles."""
    return tuple(MigProfile(n, pid, NVML_INDEX[kind], c, u, m, s, mib, sm, Engines(*eng), meas)
                 for n, pid, kind, c, u, m, s, mib, sm, eng, meas in rows)


def _gpu(key, names, pci, arch, cc, mem, mig=None, nvlink=False, sm=None, notes="", aliases=(), observed=()):
    return GpuModel(key, tuple(names), tuple(pci), arch, cc, mem, mig, nvlink, arch == "Ampere" and mig is not None, sm, notes,
                    tuple(aliases), tuple(observed))


_A100_40GB = MigGeometry(8, 7, _profiles((
    # A100-SXM4-40GB -lgip/-lgipp in the MIG guide; its -lgip lacks 1g.10gb (R525+): memory estimated as
    # 2g.10gb's (both two memory slices), engines from the guide's profile table.
    ("1g.5gb", 19, "1_SLICE", 1, 1, 7, ALL7, 4864, 14, (1, 0, 0, 0, 0), True),
    ("1g.5gb+me", 20, "1_SLICE_REV1", 1, 1, 1, ALL7, 4864, 14, (1, 1, 0, 1, 1), True),
    ("1g.10gb", 15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6), 9984, 14, (1, 1, 0, 0, 0), False),
    ("2g.10gb", 14, "2_SLICE", 2, 2, 3, (0, 2, 4), 9984, 28, (2, 1, 0, 0, 0), True),
    ("3g.20gb", 9, "3_SLICE", 3, 4, 2, (0, 4), 20096, 42, (3, 2, 0, 0, 0), True),
    ("4g.20gb", 5, "4_SLICE", 4, 4, 1, (0,), 20096, 56, (4, 2, 0, 0, 0), True),
    ("7g.40gb", 0, "7_SLICE", 7, 8, 1, (0,), 40448, 98, (7, 5, 0, 1, 1), True),
)), "observed", Engines(7, 5, 0, 1, 1))

# A100 80GB: same die; no -lgip published, so memory is a share of 80 GiB and SMs/engines are A100-40GB's.
_A100_80_UNIT = 81920 / 8
_A100_80GB = MigGeometry(8, 7, _profiles((
    ("1g.10gb", 19, "1_SLICE", 1, 1, 7, ALL7, _share(1, _A100_80_UNIT), 14, (1, 0, 0, 0, 0), False),
    ("1g.10gb+me", 20, "1_SLICE_REV1", 1, 1, 1, ALL7, _share(1, _A100_80_UNIT), 14, (1, 1, 0, 1, 1), False),
    ("1g.20gb", 15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6), _share(2, _A100_80_UNIT), 14, (1, 1, 0, 0, 0), False),
    ("2g.20gb", 14, "2_SLICE", 2, 2, 3, (0, 2, 4), _share(2, _A100_80_UNIT), 28, (2, 1, 0, 0, 0), False),
    ("3g.40gb", 9, "3_SLICE", 3, 4, 2, (0, 4), _share(4, _A100_80_UNIT), 42, (3, 2, 0, 0, 0), False),
    ("4g.40gb", 5, "4_SLICE", 4, 4, 1, (0,), _share(4, _A100_80_UNIT), 56, (4, 2, 0, 0, 0), False),
    ("7g.80gb", 0, "7_SLICE", 7, 8, 1, (0,), _share(8, _A100_80_UNIT), 98, (7, 5, 0, 1, 1), False),
)), "inferred", Engines(7, 5, 0, 1, 1))

# A30: 4 memory and 4 compute slices. -lgip published; placements from go-nvml's A30 mock (no -lgipp).
# The GPU has one JPEG and one OFA unit: each +me profile takes them, so two +me cannot coexist.
_A30 = MigGeometry(4, 4, _profiles((
    ("1g.6gb", 14, "1_SLICE", 1, 1, 4, (0, 1, 2, 3), 5952, 14, (1, 1, 0, 0, 0), True),
    ("1g.6gb+me", 21, "1_SLICE_REV1", 1, 1, 1, (0, 1, 2, 3), 5952, 14, (1, 1, 0, 1, 1), True),
    ("2g.12gb", 5, "2_SLICE", 2, 2, 2, (0, 2), 11968, 28, (2, 2, 0, 0, 0), True),
    ("2g.12gb+me", 6, "2_SLICE_REV1", 2, 2, 1, (0, 2), 11968, 28, (2, 2, 0, 1, 1), True),
    ("4g.24gb", 0, "4_SLICE", 4, 4, 1, (0,), 24000, 56, (4, 4, 0, 1, 1), True),
)), "inferred", Engines(4, 4, 0, 1, 1))

# RTX PRO 6000 Blackwell: -lgip (IDs, MiB, SMs, engines) and -lgipp published. 4 compute slices on 12
# placement units (1g = 3 units at 0/3/6/9, 2g = 6 at 0/6, 4g = all 12). Media engines: 4 NVDEC, 4 NVENC,
# 4 NVJPG, 1 OFA; +me.all takes them all, so only -me profiles can join it (nvml.h, *_ALL_ME).
_QUARTERS = (0, 3, 6, 9)
_RTX_PRO_6000 = MigGeometry(12, 4, _profiles((
    ("1g.24gb", 14, "1_SLICE", 1, 3, 4, _QUARTERS, 24192, 46, (1, 1, 1, 1, 0), True),
    ("1g.24gb+me", 21, "1_SLICE_REV1", 1, 3, 1, _QUARTERS, 24192, 46, (1, 1, 1, 1, 1), True),
    ("1g.24gb+gfx", 47, "1_SLICE_GFX", 1, 3, 4, _QUARTERS, 24192, 46, (1, 1, 1, 1, 0), True),
    ("1g.24gb+me.all", 65, "1_SLICE_ALL_ME", 1, 3, 1, _QUARTERS, 24192, 46, (1, 4, 4, 4, 1), True),
    ("1g.24gb-me", 67, "1_SLICE_NO_ME", 1, 3, 4, _QUARTERS, 24192, 46, (1, 0, 0, 0, 0), True),
    ("2g.48gb", 5, "2_SLICE", 2, 6, 2, (0, 6), 48512, 94, (2, 2, 2, 2, 0), True),
    ("2g.48gb+gfx", 35, "2_SLICE_GFX", 2, 6, 2, (0, 6), 48512, 94, (2, 2, 2, 2, 0), True),
    ("2g.48gb+me.all", 64, "2_SLICE_ALL_ME", 2, 6, 1, (0, 6), 48512, 94, (2, 4, 4, 4, 1), True),
    ("2g.48gb-me", 66, "2_SLICE_NO_ME", 2, 6, 2, (0, 6), 48512, 94, (2, 0, 0, 0, 0), True),
    ("4g.96gb", 0, "4_SLICE", 4, 12, 1, (0,), 97280, 188, (4, 4, 4, 4, 1), True),
    ("4g.96gb+gfx", 32, "4_SLICE_GFX", 4, 12, 1, (0,), 97280, 188, (4, 4, 4, 4, 1), True),
)), "observed", Engines(4, 4, 4, 4, 1))

_B200_UNIT = 45312 / 2      # 1g.45gb / 2g.45gb: 44.25 GiB over two memory slices
_GB200_UNIT = 46592 / 2     # 1g.47gb / 2g.47gb: 45.50 GiB
_GH200_144_UNIT = 36096 / 2  # 1g.36gb / 2g.36gb: 35.25 GiB
_B300_MEMORY = 269 * 1024   # the 7g.269gb name; no -lgip published
_GB300_MEMORY = 278 * 1024  # the 7g.278gb name

CATALOG = {g.key: g for g in (
    _gpu("A100-40GB", ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"],
         ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"], "Ampere", "8.0", 40960, _A100_40GB, sm=108,
         notes="1g.10gb needs driver R525+, 1g.5gb+me R470+ (MIG user guide). 0x20F1/0x20F6 are A800 40GB "
               "boards (mig-parted device filter).",
         aliases=["A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB", "A800-40GB", "A800 40GB PCIe"],
         observed=["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"]),
    _gpu("A100-80GB", ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A800-SXM4-80GB",
                       "NVIDIA A800 80GB PCIe"],
         ["0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"], "Ampere", "8.0", 81920, _A100_80GB, sm=108,
         notes="Here 1g.10gb is the plain 1g (ID 19); on A100-40GB the same name is the double-memory 1g "
               "(ID 15). A800 80GB: 0x20F3 (SXM4), 0x20F5 (PCIe) per mig-parted's device filter.",
         aliases=["A100-SXM4-80GB", "A100-PCIE-80GB", "A100 80GB", "A800-80GB", "A800-SXM4-80GB"],
         observed=["NVIDIA A100-SXM4-80GB"]),
    _gpu("A30", ["NVIDIA A30"], ["0x20B710DE"], "Ampere", "8.0", 24576, _A30, sm=56,
         notes="Placements from go-nvml's A30 mock; no real -lgipp output published. One JPEG/OFA unit: at "
               "most one +me instance.",
         aliases=["A30-24GB", "A30 24GB"]),
    _gpu("H100-80GB", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H800", "NVIDIA H800 PCIe"],
         ["0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"], "Hopper", "9.0", 81559,
         _hopper(("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                 (9984, 9984, 20096, 20096, 40448, 40448, 81152), placements="observed"), sm=132,
         notes="SM counts are the SXM5 part's (H100 PCIe has fewer SMs; NVML reports them). H800: 0x2324.",
         aliases=["H100-SXM5-80GB", "H100-PCIE-80GB", "H100 80GB", "H100 SXM5 80GB", "H800-80GB"],
         observed=["NVIDIA H100 80GB HBM3"]),
    _gpu("H100-NVL-94GB", ["NVIDIA H100 NVL"], ["0x232110DE", "0x233A10DE"], "Hopper", "9.0", 95830,
         _hopper(("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
                 (11008, 11008, 22144, 22144, 47488, 47488, 95360), placements="observed"), sm=132,
         aliases=["H100 NVL", "H100-SXM5-94GB", "H100-PCIE-94GB", "H100 94GB", "H800 NVL"],
         observed=["NVIDIA H100 NVL"]),
    _gpu("H100-96GB", ["NVIDIA GH200 480GB", "NVIDIA H100 96GB HBM3", "NVIDIA H20"],
         ["0x234210DE", "0x233D10DE", "0x20B610DE", "0x232910DE"], "Hopper", "9.0", 98304,
         _hopper(("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
                 (11264, 11264, 23552, 23552, 47616, 47616, 95232)), sm=132,
         notes="H100 on GH200 (96GB HBM3; the DRA driver publishes its productName as 'NVIDIA GH200 480GB'), "
               "H100 96GB, PG506-96GB (0x20B6) and H20 (0x2329, fewer SMs) share these profiles in mig-parted's "
               "config. -lgip published for a GH200.",
         aliases=["H100 on GH200", "GH200 96GB", "H100 96GB", "H20 96GB", "H20", "PG506-96GB"],
         observed=["NVIDIA GH200 480GB"]),
    _gpu("H200-141GB", ["NVIDIA H200", "NVIDIA H200 NVL"], ["0x233510DE", "0x233B10DE"], "Hopper", "9.0", 143771,
         _hopper(("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
                 (16384, 16384, 33024, 33024, 71168, 71168, 143104)), sm=132,
         notes="Placements inferred: same profile IDs and counts as H100; -lgip published (mig-parted #120). "
               "Here 1g.35gb is the double-memory 1g (ID 15, up to 4); on GB300 the same name is the plain 1g.",
         aliases=["H200-SXM5-141GB", "H200 141GB", "H200", "H200 NVL"]),
    _gpu("GH200-144GB", ["NVIDIA GH200 144G HBM3e"], ["0x234810DE"], "Hopper", "9.0", 147456,
         _hopper(("1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
                 _estimated((17920, 17920, 36096, 36096), _GH200_144_UNIT), MEASURED_4), sm=132,
         notes="-lgip published for 1g.18gb .. 2g.36gb (mig-parted #139); 3g/4g/7g memory estimated.",
         aliases=["GH200 144G HBM3e", "GH200 144GB", "GH200-144G"]),
    _gpu("B200", ["NVIDIA B200"], ["0x290110DE"], "Blackwell", "10.0", 183359,
         _eight(("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
                _estimated((20992, 20992, 45312, 45312), _B200_UNIT), (18, 18, 30, 36, 54, 72, 148),
                _BLACKWELL_ENGINES, MEASURED_4, "inferred"), sm=148,
         notes="-lgip published for 1g.23gb .. 2g.45gb (mig-parted #187); 3g/4g/7g memory and SMs estimated.",
         aliases=["B200-180GB", "B200 180GB", "HGX B200"]),
    _gpu("GB200", ["NVIDIA GB200"], ["0x294110DE"], "Blackwell", "10.0", 189471,
         _eight(("1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
                _estimated((22528, 22528, 46592, 46592), _GB200_UNIT), (18, 18, 32, 38, 57, 76, 152),
                _BLACKWELL_ENGINES, MEASURED_4, "inferred"), nvlink=True, sm=152,
         notes="Production names (mig-parted ebab1f77, issue #227); pre-production boards said 1g.24gb/3g.95gb. "
               "Multi-node NVLink (NVL72): ComputeDomains/IMEX.",
         aliases=["GB200-186GB", "GB200 HGX", "GB200 NVL72"]),
    _gpu("B300", ["NVIDIA B300 SXM6 AC"], ["0x318210DE"], "Blackwell", "10.3", _B300_MEMORY,
         _eight(("1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"),
                _estimated((), _B300_MEMORY / 8), (18, 18, 30, 36, 54, 72, 148), _BLACKWELL_ENGINES, ESTIMATED,
                "inferred"), sm=148,
         notes="Names and counts from the GPU Operator/mig-parted config (0x3182); profile IDs, memory, SMs, "
               "compute capability and the product name are inferred (GB300's published IDs, the 7g.269gb name).",
         aliases=["HGX B300", "B300-269GB", "B300 SXM6"]),
    _gpu("GB300", ["NVIDIA GB300"], ["0x31C210DE"], "Blackwell", "10.3", _GB300_MEMORY,
         _eight(("1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"),
                _estimated((), _GB300_MEMORY / 8), (18, 18, 32, 38, 57, 76, 152), _BLACKWELL_ENGINES, ESTIMATED,
                "inferred"), nvlink=True, sm=152,
         notes="Profile IDs 19/20/15/14/9/5/0 published (NVIDIA's DGX Station MIG playbook); names and counts "
               "from the GPU Operator config (0x31C2). Here 1g.35gb is the plain 1g (ID 19, up to 7), not "
               "H200's double-memory 1g.35gb. Memory/SMs estimated.",
         aliases=["GB300 NVL72", "GB300 Ultra", "GB300-278GB"], observed=["NVIDIA GB300"]),
    _gpu("RTX-PRO-6000", ["NVIDIA RTX PRO 6000 Blackwell Server Edition",
                          "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                          "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"],
         ["0x2BB510DE"], "Blackwell", "12.0", 97887, _RTX_PRO_6000, sm=188,
         notes="Universal MIG: +gfx profiles run graphics, -me ones have no media engines, +me.all takes them "
               "all (then only -me profiles fit beside it). 4 compute slices on 12 placement units. Only the "
               "Server Edition's PCI device ID (0x2BB5) is in mig-parted's config; the others resolve by name.",
         aliases=["RTX PRO 6000 Blackwell", "RTX PRO 6000", "RTX-PRO-6000-96GB",
                  "RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell Workstation Edition",
                  "RTX PRO 6000 Blackwell Max-Q Workstation Edition"],
         observed=["NVIDIA RTX PRO 6000 Blackwell Server Edition",
                   "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"]),
    # GPUs without MIG: listed so the model can say "T4 has no MIG" precisely.
    _gpu("T4", ["Tesla T4"], ["0x1EB810DE"], "Turing", "7.5", 15360, sm=40, aliases=["T4 16GB"],
         observed=["Tesla T4"]),
    _gpu("L4", ["NVIDIA L4"], ["0x27B810DE"], "Ada Lovelace", "8.9", 23034, sm=58),
    _gpu("L40S", ["NVIDIA L40S"], ["0x26B910DE"], "Ada Lovelace", "8.9", 46068, sm=142),
    _gpu("A10", ["NVIDIA A10"], ["0x223610DE"], "Ampere", "8.6", 23028, sm=72),
    _gpu("V100", ["Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB"], ["0x1DB110DE", "0x1DB410DE"],
         "Volta", "7.0", 16384, sm=80, aliases=["V100-SXM2-16GB", "V100-PCIE-16GB"]),
    _gpu("V100S", ["Tesla V100S-PCIE-32GB"], ["0x1DF610DE"], "Volta", "7.0", 32768, sm=80,
         aliases=["V100S-PCIE-32GB"]),
)}


def gpu_keys():
    return sorted(CATALOG)


def mig_capable_keys():
    return sorted(k for k, g in CATALOG.items() if g.mig)


# ---- names ----------------------------------------------------------------------------------------------

def _norm(text):
    """Lowercase letters and digits only: 'A100-SXM4-40GB', 'a100 sxm4 40gb' and 'A100_SXM4_40GB' match."""
    return "".join(ch for ch in str(text).lower() if ch.isalnum())


def _spellings(gpu):
    """Every normalised name of a GPU: key, aliases, product names with and without the vendor word."""
    out = {_norm(gpu.key)}
    for name in gpu.aliases + gpu.product_names:
        out.add(_norm(name))
        for vendor in ("nvidia", "tesla"):
            if _norm(name).startswith(vendor) and len(_norm(name)) > len(vendor):
                out.add(_norm(name)[len(vendor):])
    return out


def _index():
    index = {}
    for gpu in CATALOG.values():
        for spelling in _spellings(gpu):
            index.setdefault(spelling, set()).add(gpu.key)
    return index


_NAMES = _index()


class UnknownGpu(KeyError):
    """A GPU name no catalog entry answers to; `candidates` lists the nearest catalog keys."""

    def __init__(self, name, candidates):
        self.name, self.candidates = name, list(candidates)
        hint = ("did you mean %s?" % " or ".join(self.candidates)) if self.candidates else \
            "catalog keys: %s%s" % (inline(name, gpu_keys()), below("catalog keys", name, gpu_keys()))
        super().__init__("unknown GPU model %r; %s" % (name, hint))

    def __str__(self):
        return self.args[0]


def gpu_candidates(name, limit=5):
    """Catalog keys whose names are close to `name` (ambiguous or misspelt input), best first: names that
    contain it ('A100' -> A100-40GB, A100-80GB), else names it contains or that are spelt alike."""
    wanted = _norm(name)
    if not wanted:
        return []
    found = [key for spelling, keys in sorted(_NAMES.items()) if wanted in spelling for key in sorted(keys)]
    if not found:
        for spelling in difflib.get_close_matches(wanted, list(_NAMES), n=limit, cutoff=0.75):
            found.extend(sorted(_NAMES[spelling]))
        found += [key for spelling, keys in sorted(_NAMES.items(), key=lambda kv: -len(kv[0]))
                  if len(spelling) >= 3 and spelling in wanted for key in sorted(keys)]
    out = []
    for key in found:
        if key not in out:
            out.append(key)
    return out[:limit]


def find_gpu(name):
    """Catalog entry for a catalog key, a designation or an NVML product name, else None.

    Matching ignores case, punctuation and a leading vendor word, so 'A100-40GB', 'A100-SXM4-40GB',
    'NVIDIA A100-SXM4-40GB', 'NVIDIA H100 80GB HBM3', 'Tesla T4' and 'T4' all resolve. A name that
    fits two entries (e.g. 'A100') resolves to none; resolve_gpu() says which it could be.
    """
    if name in CATALOG:
        return CATALOG[name]
    keys = _NAMES.get(_norm(name), set())
    return CATALOG[next(iter(keys))] if len(keys) == 1 else None


def resolve_gpu(name):
    """Catalog entry for `name` (see find_gpu), or raises UnknownGpu with the candidates."""
    gpu = find_gpu(name)
    if gpu is None:
        raise UnknownGpu(name, gpu_candidates(name))
    return gpu


def get_gpu(name):
    return resolve_gpu(name)


def by_pci_device_id(device_id):
    """Catalog entry for a PCI device ID in mig-parted's 0xDDDDVVVV form (int or text), else None."""
    wanted = ("%#010x" % device_id if isinstance(device_id, int) else str(device_id)).lower()
    for gpu in CATALOG.values():
        if wanted in (p.lower() for p in gpu.pci_device_ids):
            return gpu
    return None


# ---- profiles -------------------------------------------------------------------------------------------

def profile_by_name(gpu, name):
    """The profile of `gpu` called `name`, or None. Names are per GPU: '1g.35gb' is a double-memory 1g on
    H200 and the plain 1g on GB300."""
    if gpu.mig:
        for prof in gpu.mig.profiles:
            if prof.name == name:
                return prof
    return None


def profile_kind(prof):
    """'+me', '+me.all', '+gfx', '-me' or '' (plain) from the NVML profile index (go-nvlib's naming)."""
    return KIND_SUFFIX.get(prof.nvml_index, "")


def engine_shortfall(gpu, layout):
    """The first engine the layout's instances need more of than the GPU has, as (engine field, needed, has),
    or None. A GPU or profile with unknown engines never falls short."""
    geo = gpu.mig
    if geo is None or geo.engines is None:
        return None
    profs = [(profile_by_name(gpu, n), c) for n, c in layout.items() if c]
    if any(p is None or p.engines is None for p, _c in profs):
        return None
    for field in Engines._fields:
        need = sum(getattr(p.engines, field) * c for p, c in profs)
        if need > getattr(geo.engines, field):
            return field, need, getattr(geo.engines, field)
    return None
# fmt: on
