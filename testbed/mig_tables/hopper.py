"""Hopper MIG tables (H100 80GB, H100 NVL, H100 96GB, H200, GH200 144GB) for the simulators.

All share the 8-memory-slice, 7-compute-slice geometry and the profile IDs 19/20/15/14/9/5/0 that every
published Hopper -lgip shows; -lgipp is published for H100 80GB and H100 NVL only. Columns: records.py.
"""

from __future__ import annotations

from testbed.mig_tables.records import NVML_INDEX, Engines, Gpu, Mig, Profile, estimate, gib

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

ALL7 = (0, 1, 2, 3, 4, 5, 6)
# (name suffix position, id, kind, compute, memory slices, max, starts) of the Hopper profiles.
SHAPES = (
    (19, "1_SLICE", 1, 1, 7, ALL7),
    (20, "1_SLICE_REV1", 1, 1, 1, ALL7),
    (15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6)),
    (14, "2_SLICE", 2, 2, 3, (0, 2, 4)),
    (9, "3_SLICE", 3, 4, 2, (0, 4)),
    (5, "4_SLICE", 4, 4, 1, (0,)),
    (0, "7_SLICE", 7, 8, 1, (0,)),
)
# SMs and engines (CE, DEC, ENC, JPEG, OFA) per shape as every published Hopper -lgip shows them.
HOPPER_SM = (16, 16, 26, 32, 60, 64, 132)
HOPPER_ENGINES = ((1, 1, 0, 1, 0), (1, 1, 0, 1, 1), (1, 1, 0, 1, 0), (2, 2, 0, 2, 0), (3, 3, 0, 3, 0),
                  (4, 4, 0, 4, 0), (8, 7, 0, 7, 1))
HOPPER_TOTAL = Engines(8, 7, 0, 7, 1)


def _profiles(names, memory_mib, published, source):
    """Rows from names, MiB and published flags, each in SHAPES order."""
    rows = []
    for name, (pid, kind, comp, mem, max_n, starts), mib, sm, eng, pub in zip(
            names, SHAPES, memory_mib, HOPPER_SM, HOPPER_ENGINES, published):
        rows.append(Profile(name, pid, NVML_INDEX[kind], comp, mem, max_n, starts, mib, sm, Engines(*eng), pub,
                            source))
    return tuple(rows)


ALL = (True,) * 7

H100_80GB = Gpu(
    "H100-80GB", ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H800", "NVIDIA H800 PCIe"),
    ("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"), "Hopper", "9.0", 81559, 132, False, False,
    Mig(8, 7, _profiles(
        ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        (gib(9.75), gib(9.75), gib(19.62), gib(19.62), gib(39.50), gib(39.50), gib(79.25)), ALL,
        "lgip-h100-80gb"), HOPPER_TOTAL, "observed", "lgip-h100-80gb"),
    "dra-driver-published")

H100_NVL_94GB = Gpu(
    "H100-NVL-94GB", ("NVIDIA H100 NVL",), ("0x232110DE", "0x233A10DE"), "Hopper", "9.0", 95830, 132, False, False,
    Mig(8, 7, _profiles(
        ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
        (gib(10.75), gib(10.75), gib(21.62), gib(21.62), gib(46.38), gib(46.38), gib(93.12)), ALL,
        "lgip-h100-nvl"), HOPPER_TOTAL, "observed", "lgip-h100-nvl"),
    "lgip-h100-nvl")

# GH200 96GB publishes "NVIDIA GH200 480GB" (the DRA driver reference); mig-parted groups H100 96GB,
# PG506-96GB and H20 under the same profile names.
H100_96GB = Gpu(
    "H100-96GB", ("NVIDIA GH200 480GB", "NVIDIA H100 96GB HBM3", "NVIDIA H20"),
    ("0x234210DE", "0x233D10DE", "0x20B610DE", "0x232910DE"), "Hopper", "9.0", 98304, 132, False, False,
    Mig(8, 7, _profiles(
        ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
        (gib(11.00), gib(11.00), gib(23.00), gib(23.00), gib(46.50), gib(46.50), gib(93.00)), ALL,
        "lgip-gh200-96gb"), HOPPER_TOTAL, "inferred", "mig-parted-default"),
    "mig-guide-gpus")

H200_141GB = Gpu(
    "H200-141GB", ("NVIDIA H200", "NVIDIA H200 NVL"), ("0x233510DE", "0x233B10DE"), "Hopper", "9.0", 143771, 132,
    False, False,
    Mig(8, 7, _profiles(
        ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
        (gib(16.00), gib(16.00), gib(32.25), gib(32.25), gib(69.50), gib(69.50), gib(139.75)), ALL,
        "lgip-h200"), HOPPER_TOTAL, "inferred", "lgip-h200"),
    "lgip-h200")

# GH200 144G HBM3e: -lgip published for the four smaller profiles; 3g/4g/7g memory estimated from
# 2g.36gb's MiB per memory slice, their SMs and engines follow the Hopper pattern.
_GH200_SLICE = gib(35.25) / 2
GH200_144GB = Gpu(
    "GH200-144GB", ("NVIDIA GH200 144G HBM3e",), ("0x234810DE",), "Hopper", "9.0", 147456, 132, False, False,
    Mig(8, 7, _profiles(
        ("1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
        (gib(17.50), gib(17.50), gib(35.25), gib(35.25), estimate(4, _GH200_SLICE), estimate(4, _GH200_SLICE),
         estimate(8, _GH200_SLICE)), (True, True, True, True, False, False, False),
        "lgip-gh200-144gb"), HOPPER_TOTAL, "inferred", "lgip-gh200-144gb"),
    "mig-parted-default")

GPUS = (H100_80GB, H100_NVL_94GB, H100_96GB, H200_141GB, GH200_144GB)
# fmt: on
