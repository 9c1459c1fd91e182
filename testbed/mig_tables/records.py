"""Record types and the source list of the test bed's own MIG tables (SIMULATOR data).

These tables are a second, independent transcription of NVIDIA's public MIG facts. The simulators
(fake libnvidia-ml, MIG manager, DRA driver) read them instead of the collection's catalog, so a
wrong catalog entry makes a test fail instead of being mirrored by every stand-in. Nothing here
imports from plugins/.

Every profile row names the source its numbers come from (a key of SOURCES) and says whether its
memory, SM and engine numbers were published for that GPU (``published``) or are an estimate.
"""

from __future__ import annotations

from collections import namedtuple

# Data tables, one row per line: kept out of the formatter so every row stays readable.
# fmt: off

Engines = namedtuple("Engines", "copy decoders encoders jpeg ofa")
Engines.__doc__ = "Engine counts of a GPU instance (nvidia-smi -lgip columns CE, DEC, ENC, JPEG, OFA)."

Profile = namedtuple(
    "Profile",
    "name profile_id nvml_index compute_slices memory_slices max_instances starts memory_mib "
    "multiprocessors engines published source",
)
Profile.__doc__ = """One GPU-instance profile as NVML reports it.

profile_id: what nvidia-smi shows and create calls take; nvml_index: the NVML_GPU_INSTANCE_PROFILE_*
value used to look the profile up. memory_slices and starts are in NVML placement units (start, size of
nvmlGpuInstancePlacement_t). published: memory_mib, multiprocessors and engines come from a published
`nvidia-smi mig -lgip` of this GPU; otherwise they are estimates (see ESTIMATE_RULE).
"""

Mig = namedtuple("Mig", "memory_slices compute_slices profiles engines placements source")
Mig.__doc__ = """MIG geometry of one GPU.

engines: what the whole GPU has (the full-GPU profile's counts); instances together never use more
(NVML refuses, e.g. two +me instances on A30, or +me.all next to anything but -me profiles).
placements: "observed" (a real -lgipp output is published) or "inferred".
"""

Gpu = namedtuple(
    "Gpu",
    "key product_names pci_device_ids architecture compute_capability memory_mib sm_count "
    "multinode_nvlink mig_mode_needs_reset mig source",
)
Gpu.__doc__ = """A GPU model as the simulated node reports it (NVML identity plus MIG geometry, or mig=None)."""

# NVML_GPU_INSTANCE_PROFILE_* values (go-nvml pkg/nvml/const.go, nvml.h at tag v0.13.3-0).
NVML_INDEX = {
    "1_SLICE": 0, "2_SLICE": 1, "3_SLICE": 2, "4_SLICE": 3, "7_SLICE": 4, "8_SLICE": 5, "6_SLICE": 6,
    "1_SLICE_REV1": 7, "2_SLICE_REV1": 8, "1_SLICE_REV2": 9, "1_SLICE_GFX": 10, "2_SLICE_GFX": 11,
    "4_SLICE_GFX": 12, "1_SLICE_NO_ME": 13, "2_SLICE_NO_ME": 14, "1_SLICE_ALL_ME": 15, "2_SLICE_ALL_ME": 16,
    "3_SLICE_GFX": 17,
}

ESTIMATE_RULE = ("estimate: memory = the GPU's largest published profile's MiB per placement unit times the "
                 "profile's units (or the GPU memory shared out evenly when nothing is published), rounded down "
                 "to 64 MiB; SMs and engines follow the sibling GPUs' published pattern")

SOURCES = {
    "go-nvml-const": "NVIDIA/go-nvml pkg/nvml/const.go and nvml.h (tag v0.13.3-0): GPU_INSTANCE_PROFILE_* indices, "
                     "incl. 1_SLICE_GFX=10 .. 2_SLICE_ALL_ME=16; ALL_ME 'prevents allocation of all but _NO_ME "
                     "profiles'",
    "go-nvlib-names": "NVIDIA/go-nvlib pkg/nvlib/device/mig_profile.go (3c161560): profile index -> name suffix "
                      "(+me for *_REV1, +me.all for *_ALL_ME, +gfx for *_GFX, -me for *_NO_ME)",
    "mig-parted-default": "NVIDIA/mig-parted deployments/systemd/config-default.yaml (v0.15.0, bd7160f4): profile "
                          "names, max counts (all-<profile> entries) and PCI device IDs per GPU",
    "gpu-operator-default": "NVIDIA/gpu-operator assets/state-mig-manager/0400_configmap.yaml (a22dbf67): "
                            "default-mig-parted-config, same entries as mig-parted's",
    "mig-guide-lgip-a100": "NVIDIA MIG User Guide, Getting Started: `nvidia-smi mig -lgip` and `-lgipp` on "
                           "A100-SXM4-40GB (reference nvidia-dra-mig-imex.md §3.2)",
    "mig-guide-profiles": "NVIDIA MIG User Guide, Supported MIG Profiles (v580): tables 6-11 (A30, A100, H100, "
                          "H200, B200, RTX PRO 6000): fractions, engine counts, instance counts",
    "mig-guide-gpus": "NVIDIA MIG User Guide, Supported GPUs (v580): product designations, memory, max instances",
    "lgip-h100-80gb": "public `nvidia-smi mig -i 0 -lgip` / `-lgipp` on an 'NVIDIA H100 80GB HBM3' (user notes "
                      "found through the code index; -lgipp identical to the MIG guide's)",
    "lgip-h100-nvl": "NVIDIA/gpu-operator PR #900 `-lgip` on H100 NVL; the same table and -lgipp on an Azure "
                     "'NVIDIA H100 NVL' VM (Microsoft tech-community walkthrough)",
    "lgip-gh200-96gb": "kf-cuanschutz/NVIDIA_Grace_Hopper_benchmarking_logs_: `nvidia-smi mig -lgip` on a GH200 "
                       "(96GB HBM3)",
    "lgip-h200": "NVIDIA/mig-parted issue #120 (NVIDIA maintainer): `nvidia-smi mig -lgip` on 8x H200",
    "lgip-gh200-144gb": "NVIDIA/mig-parted PR #139 and NVIDIA/gpu-operator PR #1057: `-lgip` on GH200 144G HBM3e "
                        "(rows 1g.18gb .. 2g.36gb)",
    "lgip-b200": "NVIDIA/mig-parted PR #187 and NVIDIA/gpu-operator PR #1351 (2025-03): `-lgip` on B200 "
                 "(rows 1g.23gb .. 2g.45gb); MIG guide table 9 for copy engines of 3g/4g/7g",
    "lgip-gb200": "NVIDIA/mig-parted issue #227 (production GB200, 2025-08) and NVIDIA/gpu-operator PR #1303 "
                  "(pre-production): `-lgip` rows 1g.23gb .. 2g.47gb",
    "gb300-playbook": "NVIDIA DGX Station playbook 'MIG on DGX Station' (GB300 Ultra): `-lgip` profile IDs "
                      "19/20/15/14/9/5/0 for 1g.35gb .. 7g.278gb, product name 'NVIDIA GB300'",
    "lgip-rtx-pro-6000": "GoogleCloudPlatform/container-engine-accelerators PR #564 and bigstack-oss/cubecos issue "
                         "#312: `-lgip` on RTX PRO 6000 Blackwell Server Edition (IDs 14/21/47/65/67/5/35/64/66/0/"
                         "32); MIG guide table 11",
    "lgipp-rtx-pro-6000": "public `nvidia-smi mig -i 0 -lgipp` on an RTX PRO 6000 host (gpu-rtxpro6000-8): "
                          "1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12 (found through the code index)",
    "rtx-pro-6000-memory": "public host log: 'RTX PRO 6000 Blackwell Server Edition ... 97,887 MiB total'",
    "lgip-a30": "public `nvidia-smi mig -lgip` on an A30 (user notes found through the code index; values as in "
                "reference nvidia-dra-mig-imex.md §3.3)",
    "go-nvml-a30-mock": "NVIDIA/go-nvml pkg/nvml/mock/gpus/a30.go placements (no real A30 -lgipp is published)",
    "dra-driver-published": "reference nvidia-dra-driver-published.md: productName values the driver publishes "
                            "(e.g. 'NVIDIA H100 80GB HBM3', 'Tesla T4', 'NVIDIA GH200 480GB'), H100 80GB = 81559 MiB",
    "catalog-v1": "values the collection's first catalog carried for GPUs without MIG (product name, memory, SMs "
                  "as nvidia-smi reports them); kept as the simulated identity, not MIG facts",
}


def gib(value: float) -> int:
    """MiB from the GiB that nvidia-smi -lgip prints with two decimals.

    NVML sizes are whole multiples of 1/16 GiB (64 MiB) in every published table (4.75, 19.62 = 19.625,
    5.81 = 5.8125), so the printed value is snapped back to that grid."""
    return int(round(value * 16)) * 64


def estimate(units: int, per_unit_mib: float) -> int:
    return int(units * per_unit_mib) // 64 * 64
# fmt: on
