"""The catalog and planner held against the test bed's own MIG tables: two independent witnesses.

testbed/mig_tables is a second transcription of NVIDIA's published MIG facts with its own placement
logic (enumerating start combinations, not the planner's backtracking search). Wherever the two
disagree, one of them is wrong - and which one, the tables' cited source says.
"""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mp
from testbed import mig_tables

MIG_KEYS = cat.mig_capable_keys()
# Beyond this many count vectors the full box is too slow for a unit test (RTX PRO 6000's 11 profiles
# make 3.4 million); such GPUs get the boundary set below instead.
FULL_BOX_LIMIT = 50000


def test_same_gpus_on_both_sides():
    assert set(MIG_KEYS) == {k for k, g in mig_tables.GPUS.items() if g.mig}
    assert set(cat.gpu_keys()) == set(mig_tables.GPUS)


@pytest.mark.parametrize("key", cat.gpu_keys())
def test_same_identity(key):
    gpu, table = cat.get_gpu(key), mig_tables.get(key)
    assert gpu.product_names == table.product_names
    assert gpu.pci_device_ids == table.pci_device_ids
    assert (gpu.architecture, gpu.compute_capability, gpu.memory_mib, gpu.sm_count) == (
        table.architecture,
        table.compute_capability,
        table.memory_mib,
        table.sm_count,
    )
    assert (gpu.multinode_nvlink, gpu.mig_mode_needs_reset, bool(gpu.mig)) == (
        table.multinode_nvlink,
        table.mig_mode_needs_reset,
        bool(table.mig),
    )


@pytest.mark.parametrize("key", MIG_KEYS)
def test_same_profiles(key):
    """Ids, NVML kinds, slices, counts, starts, engines; -lgip numbers wherever both call them published."""
    geo, table = cat.get_gpu(key).mig, mig_tables.get(key).mig
    assert (geo.memory_slices, geo.compute_slices, geo.placements) == (
        table.memory_slices,
        table.compute_slices,
        table.placements,
    )
    assert tuple(geo.engines) == tuple(table.engines)
    assert [p.name for p in geo.profiles] == [p.name for p in table.profiles]
    for prof, row in zip(geo.profiles, table.profiles):
        assert (
            prof.profile_id,
            prof.nvml_index,
            prof.compute_slices,
            prof.memory_slices,
            prof.max_instances,
            tuple(prof.starts),
        ) == (
            row.profile_id,
            row.nvml_index,
            row.compute_slices,
            row.memory_slices,
            row.max_instances,
            tuple(row.starts),
        ), prof.name
        assert prof.measured == row.published, prof.name
        if prof.measured:
            assert (prof.memory_mib, prof.multiprocessors, tuple(prof.engines)) == (
                row.memory_mib,
                row.multiprocessors,
                tuple(row.engines),
            ), prof.name
        assert cat.profile_kind(prof) == _suffix(prof.name), prof.name


def _suffix(name):
    """The kind a name announces: the part after the memory size ('1g.24gb+me.all' -> '+me.all')."""
    rest = name.split(".", 1)[1]
    for mark in ("+", "-"):
        if mark in rest:
            return mark + rest.split(mark, 1)[1]
    return ""


def _box(profiles):
    """Every count vector with each count from 0 to its max + 1."""
    return itertools.product(*(range(p.max_instances + 2) for p in profiles))


def _boundary(profiles, compute_slices):
    """Count vectors (each count <= max) that fit the compute slices, and each of them plus one instance
    of any profile. Holds every layout that can fit and every minimal refusal: any other vector of the
    box contains a minimal refusal, and adding instances never makes a refused layout fit."""
    fitting = [
        c
        for c in itertools.product(*(range(p.max_instances + 1) for p in profiles))
        if sum(p.compute_slices * n for p, n in zip(profiles, c)) <= compute_slices
    ]
    out = set(fitting)
    for counts in fitting:
        for i in range(len(profiles)):
            after = i + 1
            out.add(counts[:i] + (counts[i] + 1,) + counts[after:])
    return sorted(out)


def _box_size(profiles):
    size = 1
    for p in profiles:
        size *= p.max_instances + 2
    return size


def _check_placement(table, layout, instances):
    """The planner's placement is one the tables allow: table ids, starts, sizes, no shared unit."""
    taken = set()
    assert sorted(i.profile for i in instances) == sorted(n for n, c in layout.items() for _unused in range(c))
    for inst in instances:
        row = mig_tables.profile(table, inst.profile)
        assert inst.profile_id == row.profile_id and inst.size == row.memory_slices
        assert inst.start in row.starts
        units = set(range(inst.start, inst.start + inst.size))
        assert not units & taken and max(units) < table.mig.memory_slices
        taken |= units


@pytest.mark.parametrize("key", MIG_KEYS)
def test_every_count_vector_agrees(key, record_property):
    """fits()/plan() and the tables agree on every count vector (0 .. max + 1 per profile); where the
    catalog accepts, its placement is valid by the tables."""
    gpu, table = cat.get_gpu(key), mig_tables.get(key)
    profiles = gpu.mig.profiles
    full = _box_size(profiles) <= FULL_BOX_LIMIT
    vectors = list(_box(profiles)) if full else _boundary(profiles, gpu.mig.compute_slices)
    disagreements, accepted = [], 0
    for counts in vectors:
        layout = {p.name: n for p, n in zip(profiles, counts) if n}
        ours, theirs = mp.fits(gpu, layout), mig_tables.feasible(table, layout)
        if ours != theirs:
            disagreements.append((layout, ours, mig_tables.refusal(table, layout)))
        elif ours:
            accepted += 1
            _check_placement(table, layout, mp.plan(gpu, layout))
    record_property("count_vectors", len(vectors))
    assert not disagreements[:5], "%d disagreements, e.g. (layout, catalog fits, tables' refusal)" % len(disagreements)
    assert accepted > 0 and len(vectors) > accepted
    if full:
        assert len(vectors) == _box_size(profiles)


@pytest.mark.parametrize("key", MIG_KEYS)
def test_maximal_layouts_are_maximal_by_the_tables(key):
    table = mig_tables.get(key)
    layouts = mp.maximal_layouts(key)
    assert layouts
    for layout in layouts:
        assert mig_tables.feasible(table, layout), layout
        for row in table.mig.profiles:
            grown = dict(layout, **{row.name: layout.get(row.name, 0) + 1})
            assert not mig_tables.feasible(table, grown), (layout, row.name)


def test_count_vectors_covered():
    """How many count vectors the differential test walks (reported in the brief's summary)."""
    total = 0
    for key in MIG_KEYS:
        gpu = cat.get_gpu(key)
        size = _box_size(gpu.mig.profiles)
        total += size if size <= FULL_BOX_LIMIT else len(_boundary(gpu.mig.profiles, gpu.mig.compute_slices))
    assert total > 300000
