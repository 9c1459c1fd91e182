"""Blackwell MIG tables (B200, GB200, B300, GB300, RTX PRO 6000 Blackwell) for the simulators.

B200/GB200/B300/GB300 use the Hopper geometry (8 memory slices, 7 compute slices, IDs 19/20/15/14/9/5/0);
no -lgipp is published for any of them, so their placements are inferred. The RTX PRO 6000 is different:
4 compute slices on 12 placement units, and profile kinds the data-center parts lack (+gfx, -me, +me.all).
Columns: records.py.
"""

from __future__ import annotations

from testbed.mig_tables.records import NVML_INDEX, Engines, Gpu, Mig, Profile, estimate, gib

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

ALL7 = (0, 1, 2, 3, 4, 5, 6)
SHAPES = (
    (19, "1_SLICE", 1, 1, 7, ALL7),
    (20, "1_SLICE_REV1", 1, 1, 1, ALL7),
    (15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6)),
    (14, "2_SLICE", 2, 2, 3, (0, 2, 4)),
    (9, "3_SLICE", 3, 4, 2, (0, 4)),
    (5, "4_SLICE", 4, 4, 1, (0,)),
    (0, "7_SLICE", 7, 8, 1, (0,)),
)
# CE, DEC, ENC, JPEG, OFA: the first four from the B200/GB200 -lgip, copy engines of 3g/4g/7g from the
# MIG guide's B200 table (6, 8, 16), decoders/JPEG of the larger ones from the Hopper pattern (estimate).
ENGINES = ((2, 1, 0, 1, 0), (2, 1, 0, 1, 1), (2, 1, 0, 1, 0), (4, 2, 0, 2, 0), (6, 3, 0, 3, 0), (8, 4, 0, 4, 0),
           (16, 7, 0, 7, 1))
TOTAL = Engines(16, 7, 0, 7, 1)
FIRST_FOUR = (True, True, True, True, False, False, False)
NONE = (False,) * 7


def _profiles(names, memory_mib, sms, published, source):
    return tuple(
        Profile(name, pid, NVML_INDEX[kind], comp, mem, max_n, starts, mib, sm, Engines(*eng), pub, source)
        for name, (pid, kind, comp, mem, max_n, starts), mib, sm, eng, pub in zip(
            names, SHAPES, memory_mib, sms, ENGINES, published))


def _estimated_memory(per_slice, published_first=()):
    """MiB per shape: the published values first, the rest from MiB per memory slice."""
    sizes = [shape[3] for shape in SHAPES]
    return tuple(list(published_first) + [estimate(m, per_slice) for m in sizes[len(published_first):]])


_B200_SLICE = gib(44.25) / 2
B200 = Gpu(
    "B200", ("NVIDIA B200",), ("0x290110DE",), "Blackwell", "10.0", 183359, 148, False, False,
    Mig(8, 7, _profiles(
        ("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
        _estimated_memory(_B200_SLICE, (gib(20.50), gib(20.50), gib(44.25), gib(44.25))),
        (18, 18, 30, 36, 54, 72, 148), FIRST_FOUR, "lgip-b200"), TOTAL, "inferred", "lgip-b200"),
    "mig-parted-default")

_GB200_SLICE = gib(45.50) / 2
GB200 = Gpu(
    "GB200", ("NVIDIA GB200",), ("0x294110DE",), "Blackwell", "10.0", 189471, 152, True, False,
    Mig(8, 7, _profiles(
        ("1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
        _estimated_memory(_GB200_SLICE, (gib(22.00), gib(22.00), gib(45.50), gib(45.50))),
        (18, 18, 32, 38, 57, 76, 152), FIRST_FOUR, "lgip-gb200"), TOTAL, "inferred", "lgip-gb200"),
    "mig-parted-default")

# B300 (HGX, 0x3182): names and counts from the GPU Operator/mig-parted config only; the profile IDs are
# GB300's published ones (same Blackwell Ultra die); memory from the 7g.269gb name, SMs from B200.
_B300_MEMORY = 269 * 1024
B300 = Gpu(
    "B300", ("NVIDIA B300 SXM6 AC",), ("0x318210DE",), "Blackwell", "10.3", _B300_MEMORY, 148, False, False,
    Mig(8, 7, _profiles(
        ("1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"),
        _estimated_memory(_B300_MEMORY / 8), (18, 18, 30, 36, 54, 72, 148), NONE, "mig-parted-default"),
        TOTAL, "inferred", "mig-parted-default"),
    "mig-parted-default")

# GB300: profile IDs published (DGX Station playbook); 1g.35gb is the plain 1g here (ID 19, one memory
# slice, up to 7), unlike H200's 1g.35gb (ID 15, two slices, up to 4).
_GB300_MEMORY = 278 * 1024
GB300 = Gpu(
    "GB300", ("NVIDIA GB300",), ("0x31C210DE",), "Blackwell", "10.3", _GB300_MEMORY, 152, True, False,
    Mig(8, 7, _profiles(
        ("1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"),
        _estimated_memory(_GB300_MEMORY / 8), (18, 18, 32, 38, 57, 76, 152), NONE, "gb300-playbook"),
        TOTAL, "inferred", "gb300-playbook"),
    "gpu-operator-default")


def _rtx(name, pid, kind, comp, units, max_n, starts, memory, sm, engines):
    return Profile(name, pid, NVML_INDEX[kind], comp, units, max_n, starts, gib(memory), sm, Engines(*engines), True,
                   "lgip-rtx-pro-6000")


_Q = (0, 3, 6, 9)
# Placement units: -lgipp shows 12 units, a 1g instance takes 3, a 2g 6, a 4g all 12.
RTX_PRO_6000 = Gpu(
    "RTX-PRO-6000", ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                     "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
    ("0x2BB510DE",), "Blackwell", "12.0", 97887, 188, False, False,
    Mig(12, 4, (
        #    name               id  kind               c  u  max starts  GiB    SM   CE DEC ENC JPG OFA
        _rtx("1g.24gb", 14, "1_SLICE", 1, 3, 4, _Q, 23.62, 46, (1, 1, 1, 1, 0)),
        _rtx("1g.24gb+me", 21, "1_SLICE_REV1", 1, 3, 1, _Q, 23.62, 46, (1, 1, 1, 1, 1)),
        _rtx("1g.24gb+gfx", 47, "1_SLICE_GFX", 1, 3, 4, _Q, 23.62, 46, (1, 1, 1, 1, 0)),
        _rtx("1g.24gb+me.all", 65, "1_SLICE_ALL_ME", 1, 3, 1, _Q, 23.62, 46, (1, 4, 4, 4, 1)),
        _rtx("1g.24gb-me", 67, "1_SLICE_NO_ME", 1, 3, 4, _Q, 23.62, 46, (1, 0, 0, 0, 0)),
        _rtx("2g.48gb", 5, "2_SLICE", 2, 6, 2, (0, 6), 47.38, 94, (2, 2, 2, 2, 0)),
        _rtx("2g.48gb+gfx", 35, "2_SLICE_GFX", 2, 6, 2, (0, 6), 47.38, 94, (2, 2, 2, 2, 0)),
        _rtx("2g.48gb+me.all", 64, "2_SLICE_ALL_ME", 2, 6, 1, (0, 6), 47.38, 94, (2, 4, 4, 4, 1)),
        _rtx("2g.48gb-me", 66, "2_SLICE_NO_ME", 2, 6, 2, (0, 6), 47.38, 94, (2, 0, 0, 0, 0)),
        _rtx("4g.96gb", 0, "4_SLICE", 4, 12, 1, (0,), 95.00, 188, (4, 4, 4, 4, 1)),
        _rtx("4g.96gb+gfx", 32, "4_SLICE_GFX", 4, 12, 1, (0,), 95.00, 188, (4, 4, 4, 4, 1)),
    ), Engines(4, 4, 4, 4, 1), "observed", "lgipp-rtx-pro-6000"),
    "rtx-pro-6000-memory")

GPUS = (B200, GB200, B300, GB300, RTX_PRO_6000)
# fmt: on
