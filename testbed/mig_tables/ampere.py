"""Ampere MIG tables (A100-40GB, A100-80GB, A30) for the simulators. See records.py for the columns."""

from __future__ import annotations

from testbed.mig_tables.records import NVML_INDEX, Engines, Gpu, Mig, Profile, estimate, gib

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

ALL7 = (0, 1, 2, 3, 4, 5, 6)


def _row(name, pid, kind, comp, mem, max_n, starts, mib, sm, engines, published, source):
    return Profile(name, pid, NVML_INDEX[kind], comp, mem, max_n, tuple(starts), mib, sm, Engines(*engines),
                   published, source)


# A100-SXM4-40GB: -lgip and -lgipp in the MIG guide; 1g.10gb (ID 15, R525+) is missing from that -lgip,
# so its memory is an estimate; its engines are the guide's table 6 row.
A100_40GB = Gpu(
    "A100-40GB", ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"),
    ("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"), "Ampere", "8.0", 40960, 108, False, True,
    Mig(8, 7, (
        #    name          id  kind            c  m  max starts       memory MiB   SM  CE DEC ENC JPG OFA
        _row("1g.5gb", 19, "1_SLICE", 1, 1, 7, ALL7, gib(4.75), 14, (1, 0, 0, 0, 0), True, "mig-guide-lgip-a100"),
        _row("1g.5gb+me", 20, "1_SLICE_REV1", 1, 1, 1, ALL7, gib(4.75), 14, (1, 1, 0, 1, 1), True,
             "mig-guide-lgip-a100"),
        _row("1g.10gb", 15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6), gib(9.75), 14, (1, 1, 0, 0, 0), False,
             "mig-guide-profiles"),
        _row("2g.10gb", 14, "2_SLICE", 2, 2, 3, (0, 2, 4), gib(9.75), 28, (2, 1, 0, 0, 0), True,
             "mig-guide-lgip-a100"),
        _row("3g.20gb", 9, "3_SLICE", 3, 4, 2, (0, 4), gib(19.62), 42, (3, 2, 0, 0, 0), True, "mig-guide-lgip-a100"),
        _row("4g.20gb", 5, "4_SLICE", 4, 4, 1, (0,), gib(19.62), 56, (4, 2, 0, 0, 0), True, "mig-guide-lgip-a100"),
        _row("7g.40gb", 0, "7_SLICE", 7, 8, 1, (0,), gib(39.50), 98, (7, 5, 0, 1, 1), True, "mig-guide-lgip-a100"),
    ), Engines(7, 5, 0, 1, 1), "observed", "mig-guide-lgip-a100"),
    "mig-parted-default")

# A100 80GB: same GA100 die and profile IDs; the names change with the memory (MIG guide note under
# table 6) and so do the IDs' meaning: here 1g.10gb is ID 19, the plain 1g. No -lgip is published.
_A100_80_SLICE = 81920 / 8
A100_80GB = Gpu(
    "A100-80GB", ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A800-SXM4-80GB", "NVIDIA A800 80GB PCIe"),
    ("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"), "Ampere", "8.0", 81920, 108, False, True,
    Mig(8, 7, (
        _row("1g.10gb", 19, "1_SLICE", 1, 1, 7, ALL7, estimate(1, _A100_80_SLICE), 14, (1, 0, 0, 0, 0), False,
             "mig-guide-profiles"),
        _row("1g.10gb+me", 20, "1_SLICE_REV1", 1, 1, 1, ALL7, estimate(1, _A100_80_SLICE), 14, (1, 1, 0, 1, 1),
             False, "mig-guide-profiles"),
        _row("1g.20gb", 15, "1_SLICE_REV2", 1, 2, 4, (0, 2, 4, 6), estimate(2, _A100_80_SLICE), 14, (1, 1, 0, 0, 0),
             False, "mig-guide-profiles"),
        _row("2g.20gb", 14, "2_SLICE", 2, 2, 3, (0, 2, 4), estimate(2, _A100_80_SLICE), 28, (2, 1, 0, 0, 0), False,
             "mig-guide-profiles"),
        _row("3g.40gb", 9, "3_SLICE", 3, 4, 2, (0, 4), estimate(4, _A100_80_SLICE), 42, (3, 2, 0, 0, 0), False,
             "mig-guide-profiles"),
        _row("4g.40gb", 5, "4_SLICE", 4, 4, 1, (0,), estimate(4, _A100_80_SLICE), 56, (4, 2, 0, 0, 0), False,
             "mig-guide-profiles"),
        _row("7g.80gb", 0, "7_SLICE", 7, 8, 1, (0,), estimate(8, _A100_80_SLICE), 98, (7, 5, 0, 1, 1), False,
             "mig-guide-profiles"),
    ), Engines(7, 5, 0, 1, 1), "inferred", "mig-parted-default"),
    "mig-parted-default")

# A30-24GB: 4 memory and 4 compute slices. -lgip published; placements only from go-nvml's mock.
# The one JPEG/OFA unit goes to whichever +me instance exists, so two +me instances cannot coexist.
A30 = Gpu(
    "A30", ("NVIDIA A30",), ("0x20B710DE",), "Ampere", "8.0", 24576, 56, False, True,
    Mig(4, 4, (
        _row("1g.6gb", 14, "1_SLICE", 1, 1, 4, (0, 1, 2, 3), gib(5.81), 14, (1, 1, 0, 0, 0), True, "lgip-a30"),
        _row("1g.6gb+me", 21, "1_SLICE_REV1", 1, 1, 1, (0, 1, 2, 3), gib(5.81), 14, (1, 1, 0, 1, 1), True,
             "lgip-a30"),
        _row("2g.12gb", 5, "2_SLICE", 2, 2, 2, (0, 2), gib(11.69), 28, (2, 2, 0, 0, 0), True, "lgip-a30"),
        _row("2g.12gb+me", 6, "2_SLICE_REV1", 2, 2, 1, (0, 2), gib(11.69), 28, (2, 2, 0, 1, 1), True, "lgip-a30"),
        _row("4g.24gb", 0, "4_SLICE", 4, 4, 1, (0,), gib(23.44), 56, (4, 4, 0, 1, 1), True, "lgip-a30"),
    ), Engines(4, 4, 0, 1, 1), "inferred", "go-nvml-a30-mock"),
    "mig-parted-default")

GPUS = (A100_40GB, A100_80GB, A30)
# fmt: on
