"""GPUs without MIG that the simulated clouds offer (identity only: what NVML reports). Columns: records.py."""

from __future__ import annotations

from testbed.mig_tables.records import Gpu

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

GPUS = (
    Gpu("T4", ("Tesla T4",), ("0x1EB810DE",), "Turing", "7.5", 15360, 40, False, False, None, "dra-driver-published"),
    Gpu("L4", ("NVIDIA L4",), ("0x27B810DE",), "Ada Lovelace", "8.9", 23034, 58, False, False, None, "catalog-v1"),
    Gpu("L40S", ("NVIDIA L40S",), ("0x26B910DE",), "Ada Lovelace", "8.9", 46068, 142, False, False, None,
        "catalog-v1"),
    Gpu("A10", ("NVIDIA A10",), ("0x223610DE",), "Ampere", "8.6", 23028, 72, False, False, None, "catalog-v1"),
    Gpu("V100", ("Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB"), ("0x1DB110DE", "0x1DB410DE"), "Volta", "7.0",
        16384, 80, False, False, None, "catalog-v1"),
    Gpu("V100S", ("Tesla V100S-PCIE-32GB",), ("0x1DF610DE",), "Volta", "7.0", 32768, 80, False, False, None,
        "catalog-v1"),
)
# fmt: on
