"""Every layout NVIDIA ships (mig-parted's example and default config, the GPU Operator's default
ConfigMap) is accepted, with valid placements, on every GPU it is meant for - by the catalog and planner
and by the test bed's independent tables."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mp
from testbed import mig_tables

from .nvidia_mig_configs import GPU_OPERATOR_DEFAULT, MIG_PARTED_DEFAULT, MIG_PARTED_EXAMPLE

SOURCES = {
    "mig-parted examples/config.yaml": MIG_PARTED_EXAMPLE,
    "mig-parted config-default.yaml": MIG_PARTED_DEFAULT,
    "gpu-operator default-mig-parted-config": GPU_OPERATOR_DEFAULT,
}
# Profile names in NVIDIA's configs that no production GPU has: GB200's pre-production names (gpu-operator
# PR #1303 -lgip: 1g.24gb, 3g.95gb; mig-parted ebab1f77 moved production boards to 1g.23gb/3g.93gb).
PRE_PRODUCTION = {"3g.95gb", "4g.95gb", "7g.189gb"}


def _targets(device_filter, layout):
    """(catalog GPU, where from) pairs an entry is meant for: each filtered PCI device ID's GPU, or for an
    unfiltered entry every GPU that has all its profiles (mig-parted applies it to every GPU)."""
    if device_filter:
        return [(cat.by_pci_device_id(d), d) for d in device_filter]
    return [
        (g, "no device-filter")
        for g in map(cat.get_gpu, cat.mig_capable_keys())
        if all(cat.profile_by_name(g, n) for n in layout)
    ]


def _entries():
    for source, rows in SOURCES.items():
        for name, device_filter, _devices, layout in rows:
            if layout is not None:
                yield source, name, device_filter, layout


def test_every_filtered_device_id_is_a_catalog_gpu():
    unknown = sorted({d for _s, _n, flt, _l in _entries() for d in flt or () if cat.by_pci_device_id(d) is None})
    assert unknown == []


def test_every_nvidia_layout_fits_every_gpu_it_names(record_property):
    checked, failures, orphans = 0, [], set()
    for source, name, device_filter, layout in _entries():
        targets = _targets(device_filter, layout)
        if not targets and layout:
            orphans.update(
                n
                for n in layout
                if not any(cat.profile_by_name(g, n) for g in map(cat.get_gpu, cat.mig_capable_keys()))
            )
            continue
        for gpu, why in targets:
            checked += 1
            try:
                placed = mp.plan(gpu, layout)
            except mp.InfeasibleLayout as exc:
                failures.append((source, name, gpu.key, why, exc.reason))
                continue
            table = mig_tables.get(gpu.key)
            if not mig_tables.feasible(table, layout):
                failures.append((source, name, gpu.key, why, "tables: " + mig_tables.refusal(table, layout)))
            for inst in placed:
                assert inst.start in cat.profile_by_name(gpu, inst.profile).starts
    record_property("layouts_checked", checked)
    assert failures == []
    assert orphans == PRE_PRODUCTION
    assert checked >= 200


@pytest.mark.parametrize(
    "device_id, key",
    [
        ("0x20F310DE", "A100-80GB"),
        ("0x20F510DE", "A100-80GB"),  # A800 80GB
        ("0x232410DE", "H100-80GB"),  # H800
        ("0x20B610DE", "H100-96GB"),
        ("0x232910DE", "H100-96GB"),  # PG506-96GB, H20
        ("0x318210DE", "B300"),
        ("0x31C210DE", "GB300"),
        ("0x2BB510DE", "RTX-PRO-6000"),
    ],
)
def test_device_ids_from_nvidias_filters(device_id, key):
    assert cat.by_pci_device_id(device_id).key == key
    assert cat.by_pci_device_id(int(device_id, 16)).key == key


def test_balanced_layout_per_gpu_uses_that_gpus_names():
    """all-balanced is one config with a device filter per GPU: each GPU gets its own names."""
    by_key = {}
    for _s, name, device_filter, layout in _entries():
        if name == "all-balanced":
            for gpu, _why in _targets(device_filter, layout):
                by_key[gpu.key] = layout
    assert by_key["GB300"] == {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1}
    assert by_key["H200-141GB"] == {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert set(by_key) == set(cat.mig_capable_keys())  # every MIG GPU of the catalog has NVIDIA's balanced layout
