"""MIG placement planner: pure tests over the catalog geometry."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import mig_parted as mig_mig_parted
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mig_placement

# Valid A100-40GB combinations from NVIDIA's MIG user guide ("A100 MIG Profiles"
# figure: the supported GPU-instance combinations, read as multisets of profiles).
GUIDE_A100_40GB = [
    {"7g.40gb": 1},
    {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1},
    {"4g.20gb": 1, "1g.5gb": 3},
    {"3g.20gb": 2},
    {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1},
    {"3g.20gb": 1, "1g.5gb": 3},
    {"3g.20gb": 1, "2g.10gb": 2},
    {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2},
    {"3g.20gb": 1, "1g.5gb": 4},
    {"2g.10gb": 3, "1g.5gb": 1},
    {"2g.10gb": 2, "1g.5gb": 3},
    {"2g.10gb": 1, "1g.5gb": 5},
    {"1g.5gb": 7},
]


def occupied(instances):
    slices = []
    for inst in instances:
        slices.extend(range(inst.start, inst.start + inst.size))
    return slices


@pytest.mark.parametrize(
    "layout", GUIDE_A100_40GB, ids=lambda lay: "+".join("%sx%d" % kv for kv in sorted(lay.items()))
)
def test_every_guide_combination_plans(layout):
    placed = mig_placement.plan("A100-40GB", layout)
    assert sorted(i.profile for i in placed) == sorted(n for n, c in layout.items() for dummy in range(c))
    assert len(set(occupied(placed))) == len(occupied(placed)), "instances overlap"


def test_cern_layout_needs_search_3g_at_start_4():
    placed = mig_placement.plan("A100-40GB", {"3g.20gb": 1, "2g.10gb": 2})
    starts = {(i.profile, i.start) for i in placed}
    assert ("3g.20gb", 4) in starts
    assert {s for p, s in starts if p == "2g.10gb"} == {0, 2}


def test_one_slice_pairs_need_search_not_first_fit():
    # First-fit would put the three 1g.10gb at 0,2,4 and leave 6-7, where a
    # 1g.5gb may start at 6 but never at 7.
    placed = mig_placement.plan("A100-40GB", {"1g.10gb": 3, "1g.5gb": 2})
    assert sorted(i.start for i in placed if i.profile == "1g.10gb") != [0, 2, 4]
    assert all(i.start in (0, 1, 2, 3, 4, 5, 6) for i in placed if i.profile == "1g.5gb")
    assert len(set(occupied(placed))) == 8


@pytest.mark.parametrize(
    "layout, words",
    [
        ({"3g.20gb": 2, "1g.5gb": 1}, ["9 memory slices", "has 8"]),
        ({"4g.20gb": 1, "2g.10gb": 2}, ["8 compute slices", "has 7"]),
        ({"3g.20gb": 3}, ["at most 2 x 3g.20gb", "asks for 3"]),
        ({"1g.5gb+me": 2}, ["at most 1 x 1g.5gb+me"]),
        ({"7g.40gb": 1, "1g.5gb": 1}, ["8 compute slices"]),
    ],
)
def test_infeasible_layouts_say_why(layout, words):
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        mig_placement.plan("A100-40GB", layout)
    for word in words:
        assert word in err.value.reason


def test_unknown_profile_names_the_right_one_for_this_gpu():
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        mig_placement.plan("A100-40GB", {"3g.40gb": 1})
    assert "belongs to A100-80GB" in err.value.reason and "3g.20gb" in err.value.reason


def test_typo_profile_gets_did_you_mean():
    with pytest.raises(mig_placement.InfeasibleLayout, match="did you mean '3g.20gb'"):
        mig_placement.plan("A100-40GB", {"3g.2gb": 1})


@pytest.mark.parametrize("gpu", ["T4", "L4", "V100", "A10", "L40S"])
def test_gpus_without_mig_are_refused(gpu):
    with pytest.raises(mig_placement.InfeasibleLayout, match="does not support MIG"):
        mig_placement.plan(gpu, {"1g.5gb": 1})


def test_unknown_gpu_is_refused():
    with pytest.raises(mig_placement.InfeasibleLayout, match="not in the MIG catalog"):
        mig_placement.plan("Radeon", {"1g.5gb": 1})


def test_suggestions_are_feasible_subsets():
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        mig_placement.plan("A100-40GB", {"3g.20gb": 2, "2g.10gb": 1})
    assert err.value.suggestions
    for sug in err.value.suggestions:
        assert mig_placement.fits("A100-40GB", sug)
        assert all(sug[n] <= {"3g.20gb": 2, "2g.10gb": 1}[n] for n in sug)


def test_placement_failure_is_explained_with_slices():
    # A made-up geometry where sums fit but placement cannot: a 2-slice profile
    # that may only start at 0 twice.
    geo = cat.MigGeometry(
        4,
        4,
        (
            cat.MigProfile("2g.x", 1, 1, 2, 2, 2, (0,), 0, 0),
            cat.MigProfile("1g.x", 2, 0, 1, 1, 4, (0, 1, 2, 3), 0, 0),
        ),
        "inferred",
    )
    gpu = cat.CATALOG["A30"]._replace(key="TOY", mig=geo)
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        mig_placement.plan(gpu, {"2g.x": 2})
    assert "compete for memory slices" in err.value.reason and "2g.x" in err.value.reason


def test_maximal_layouts_are_maximal_and_feasible():
    layouts = mig_placement.maximal_layouts("A100-40GB")
    assert {"7g.40gb": 1} in layouts and {"3g.20gb": 2} in layouts
    assert {"3g.20gb": 1, "2g.10gb": 2} in layouts
    for lay in layouts:
        assert mig_placement.fits("A100-40GB", lay)
        for prof in cat.get_gpu("A100-40GB").mig.profiles:
            grown = dict(lay)
            grown[prof.name] = grown.get(prof.name, 0) + 1
            assert not mig_placement.fits("A100-40GB", grown)


def test_a30_geometry_has_four_slices():
    assert mig_placement.plan("A30", {"2g.12gb": 2})[1].start == 2
    assert not mig_placement.fits("A30", {"2g.12gb": 2, "1g.6gb": 1})


def test_mig_parted_config_groups_identical_gpus():
    cfg = mig_mig_parted.mig_parted_config(
        {
            "gpupool-a": [("all", {"3g.20gb": 1, "2g.10gb": 2})],
            "gpupool-b": [([0], {"7g.40gb": 1}), ([1], {"7g.40gb": 1}), ([2], None)],
        }
    )
    assert cfg["version"] == "v1"
    assert cfg["mig-configs"]["gpupool-a"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"2g.10gb": 2, "3g.20gb": 1}}
    ]
    assert cfg["mig-configs"]["gpupool-b"] == [
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"7g.40gb": 1}},
        {"devices": [2], "mig-enabled": False},
    ]
    assert cfg["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]


MIG_GPUS = cat.mig_capable_keys()


@st.composite
def gpu_and_layout(draw):
    key = draw(st.sampled_from(MIG_GPUS))
    gpu = cat.get_gpu(key)
    layout = {}
    for prof in gpu.mig.profiles:
        n = draw(st.integers(0, prof.max_instances + 1))
        if n:
            layout[prof.name] = n
    return gpu, layout


@settings(max_examples=400, deadline=None)
@given(gpu_and_layout())
def test_any_returned_placement_is_legal(case):
    gpu, layout = case
    try:
        placed = mig_placement.plan(gpu, layout)
    except mig_placement.InfeasibleLayout as exc:
        assert exc.reason
        return
    slices = occupied(placed)
    assert len(slices) == len(set(slices)), "overlap"
    assert all(0 <= s < gpu.mig.memory_slices for s in slices)
    assert sum(i.compute_slices for i in placed) <= gpu.mig.compute_slices
    for inst in placed:
        prof = cat.profile_by_name(gpu, inst.profile)
        assert inst.start in prof.starts
        assert inst.size == prof.memory_slices and inst.profile_id == prof.profile_id
    for name, count in layout.items():
        assert sum(1 for i in placed if i.profile == name) == count <= cat.profile_by_name(gpu, name).max_instances


@settings(max_examples=200, deadline=None)
@given(gpu_and_layout())
def test_planner_agrees_with_brute_force(case):
    """Search is complete: if any assignment of allowed starts works, plan() finds one."""
    import itertools

    gpu, layout = case
    profs = [cat.profile_by_name(gpu, n) for n, c in layout.items() for dummy in range(c)]
    counts_ok = all(c <= cat.profile_by_name(gpu, n).max_instances for n, c in layout.items())
    engines_ok = all(
        sum(getattr(p.engines, f) for p in profs) <= getattr(gpu.mig.engines, f) for f in cat.Engines._fields
    )
    brute = (
        counts_ok
        and engines_ok
        and sum(p.compute_slices for p in profs) <= gpu.mig.compute_slices
        and any(
            len({s for p, st0 in zip(profs, starts) for s in range(st0, st0 + p.memory_slices)})
            == sum(p.memory_slices for p in profs)
            and all(st0 + p.memory_slices <= gpu.mig.memory_slices for p, st0 in zip(profs, starts))
            for starts in itertools.product(*(p.starts for p in profs))
        )
    )
    assert mig_placement.fits(gpu, layout) == bool(brute)


def test_a30_media_engines_allow_one_me_instance():
    """A30 has one JPEG/OFA unit; each +me profile takes it (MIG guide A30 table, -lgip)."""
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        mig_placement.plan("A30", {"1g.6gb+me": 1, "2g.12gb+me": 1})
    assert "JPEG" in err.value.reason and "A30 has 1" in err.value.reason
    assert mig_placement.fits("A30", {"1g.6gb+me": 1, "2g.12gb": 1, "1g.6gb": 1})
    assert all(not (lay.get("1g.6gb+me") and lay.get("2g.12gb+me")) for lay in mig_placement.maximal_layouts("A30"))
    assert {"1g.6gb+me": 1, "2g.12gb+me": 1} not in mig_placement.suggest(
        "A30", {"1g.6gb+me": 1, "2g.12gb+me": 1, "1g.6gb": 1}
    )


def test_rtx_pro_6000_me_all_leaves_only_no_me_profiles():
    """nvml.h: an *_ALL_ME instance prevents every profile but the *_NO_ME ones."""
    assert mig_placement.fits("RTX-PRO-6000", {"1g.24gb+me.all": 1, "1g.24gb-me": 3})
    assert mig_placement.fits("RTX-PRO-6000", {"2g.48gb+me.all": 1, "2g.48gb-me": 1})
    for other in ("1g.24gb", "1g.24gb+gfx", "1g.24gb+me"):
        assert not mig_placement.fits("RTX-PRO-6000", {"1g.24gb+me.all": 1, other: 1}), other
    placed = mig_placement.plan("RTX-PRO-6000", {"2g.48gb": 1, "1g.24gb": 2})
    assert sorted((i.start, i.size) for i in placed) == [(0, 6), (6, 3), (9, 3)]


def test_names_mean_different_slices_on_different_gpus():
    """1g.35gb: the double-memory 1g on H200 (up to 4), the plain 1g on GB300 (up to 7)."""
    assert mig_placement.fits("GB300", {"1g.35gb": 7}) and not mig_placement.fits("H200-141GB", {"1g.35gb": 7})
    assert mig_placement.fits("H200-141GB", {"1g.35gb": 4})
    with pytest.raises(mig_placement.InfeasibleLayout, match="did you mean"):
        mig_placement.plan("A100", {"1g.5gb": 1})
