"""MIG apply plan: pure tests (no NVML, no test bed) of observed state + layout => actions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig import placement as mig_placement
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import node_apply as ap

A100 = cat.get_gpu("A100-40GB")
H100 = cat.get_gpu("H100-80GB")


def reported(model, renames=None, drop=(), **changes):
    """Profiles as nvml_facts.read_profiles returns them, built from the catalog."""
    renames = renames or {}
    out = []
    for p in model.mig.profiles:
        if p.name in drop:
            continue
        row = {
            "index": p.nvml_index,
            "id": p.profile_id,
            "name": renames.get(p.name, p.name),
            "compute_slices": p.compute_slices,
            "memory_slices": p.memory_slices,
            "max_instances": p.max_instances,
            "starts": list(p.starts),
            "memory_mib": p.memory_mib,
            "multiprocessors": p.multiprocessors,
        }
        row.update(changes.get(p.name, {}))
        out.append(row)
    return out


def inst(gi, profile, start, cis="full"):
    size = cat.profile_by_name(A100, profile).memory_slices if cat.profile_by_name(A100, profile) else 0
    if cis == "full":
        cis = [{"compute_instance_id": 0, "full": True}]
    return {"gpu_instance_id": gi, "profile": profile, "start": start, "size": size, "compute_instances": cis}


def observed(current=True, pending=None, instances=(), capable=True):
    return {
        "mig_capable": capable,
        "mig_current": current,
        "mig_pending": current if pending is None else pending,
        "instances": list(instances),
    }


def kinds(gp):
    return [a["action"] for a in gp.actions]


# ---- effective model: the GPU's reported profiles win over the catalog ----


def test_effective_model_without_reported_profiles_is_the_catalog():
    model, aliases, warnings = ap.effective_model("NVIDIA A100-SXM4-40GB", [])
    assert model is A100 and aliases == {} and warnings == []


def test_effective_model_matching_catalog_has_no_warnings():
    model, aliases, warnings = ap.effective_model("NVIDIA A100-SXM4-40GB", reported(A100))
    assert warnings == [] and aliases == {}
    assert model.key == "A100-40GB"
    assert model.mig.placements == "reported by NVML"
    assert mig_placement.plan(model, {"3g.20gb": 1, "2g.10gb": 2}) == mig_placement.plan(
        A100, {"3g.20gb": 1, "2g.10gb": 2}
    )


def test_effective_model_renamed_profile_wins_with_warning():
    model, aliases, warnings = ap.effective_model(
        "NVIDIA A100-SXM4-40GB", reported(A100, renames={"3g.20gb": "3g.19gb"})
    )
    assert aliases == {"3g.20gb": "3g.19gb"}
    assert [p.name for p in model.mig.profiles if p.profile_id == 9] == ["3g.19gb"]
    assert len(warnings) == 1 and "3g.19gb" in warnings[0] and "catalog: 3g.20gb" in warnings[0]
    assert "using what the GPU reports" in warnings[0]


def test_effective_model_reported_geometry_wins():
    model, dummy, warnings = ap.effective_model("NVIDIA A100-SXM4-40GB", reported(A100, **{"3g.20gb": {"starts": [4]}}))
    assert cat.profile_by_name(model, "3g.20gb").starts == (4,)
    assert "placement starts [4] (catalog: [0, 4])" in warnings[0]
    with pytest.raises(mig_placement.InfeasibleLayout):
        mig_placement.plan(model, {"3g.20gb": 2})


def test_effective_model_missing_profile_warns():
    model, dummy, warnings = ap.effective_model("NVIDIA A100-SXM4-40GB", reported(A100, drop=("1g.10gb",)))
    assert cat.profile_by_name(model, "1g.10gb") is None
    assert any("does not offer MIG profile 1g.10gb" in w and "older driver" in w for w in warnings)


def test_effective_model_extra_profile_warns():
    extra = reported(A100) + [
        {
            "index": 10,
            "id": 30,
            "name": "1g.5gb+gfx",
            "compute_slices": 1,
            "memory_slices": 1,
            "max_instances": 1,
            "starts": [0],
            "memory_mib": 5000,
            "multiprocessors": 14,
        }
    ]
    model, dummy, warnings = ap.effective_model("NVIDIA A100-SXM4-40GB", extra)
    assert cat.profile_by_name(model, "1g.5gb+gfx") is not None
    assert any("does not list" in w for w in warnings)


def test_effective_model_unknown_gpu_is_planned_from_reported_profiles():
    model, dummy, warnings = ap.effective_model("NVIDIA Future GPU", reported(H100))
    assert model.key == "NVIDIA Future GPU"
    assert model.mig.memory_slices == 8 and model.mig.compute_slices == 7
    assert any("not in the MIG catalog" in w for w in warnings)
    assert [i.start for i in mig_placement.plan(model, {"3g.40gb": 1, "2g.20gb": 2})] == [0, 2, 4]


def test_catalog_lookup_by_pci_device_id():
    assert ap.catalog_model_for("NVIDIA Renamed Board", "0x20B010DE").key == "A100-40GB"
    assert ap.catalog_model_for("NVIDIA Renamed Board", 0x233010DE).key == "H100-80GB"
    assert ap.catalog_model_for("NVIDIA Renamed Board", "0xFFFF10DE") is None


def test_translate_layout_uses_the_gpus_names():
    model, aliases, dummy = ap.effective_model("NVIDIA A100-SXM4-40GB", reported(A100, renames={"3g.20gb": "3g.19gb"}))
    layout, warnings = ap.translate_layout(model, {"3g.20gb": 1, "2g.10gb": 2}, aliases, "GPU 0")
    assert layout == {"3g.19gb": 1, "2g.10gb": 2}
    assert warnings and "applied as 3g.19gb" in warnings[0]
    same, none = ap.translate_layout(model, {"3g.19gb": 1}, aliases, "GPU 0")
    assert same == {"3g.19gb": 1} and none == []


# ---- plans ----


def test_ampere_enable_goes_pending_and_plans_after_reset():
    gp = ap.plan_gpu(0, A100, observed(current=False), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert gp.actions == [{"action": "set_mig_mode", "enabled": True}]
    assert gp.reset_required
    assert gp.after["mig_enabled"] is False and gp.after["mig_pending"] is True
    assert gp.after["planned_instances"] == ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]


def test_ampere_pending_enable_is_not_set_again():
    gp = ap.plan_gpu(0, A100, observed(current=False, pending=True), True, {"7g.40gb": 1})
    assert gp.actions == [] and gp.reset_required and not gp.changed


def test_hopper_enable_is_immediate_and_creates_in_the_same_plan():
    gp = ap.plan_gpu(0, H100, observed(current=False), True, {"3g.40gb": 1, "2g.20gb": 2})
    assert kinds(gp) == ["set_mig_mode", "create_gpu_instance", "create_gpu_instance", "create_gpu_instance"]
    assert not gp.reset_required
    assert [(a["profile"], a["start"]) for a in gp.actions[1:]] == [("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)]
    assert all(a["compute_instance"] == "full" for a in gp.actions[1:])


def test_layout_change_7g_to_3g_plus_two_2g():
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(0, "7g.40gb", 0)]), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert kinds(gp) == [
        "destroy_compute_instance",
        "destroy_gpu_instance",
        "create_gpu_instance",
        "create_gpu_instance",
        "create_gpu_instance",
    ]
    creates = [
        (a["profile"], a["profile_id"], a["start"], a["size"])
        for a in gp.actions
        if a["action"] == "create_gpu_instance"
    ]
    assert creates == [("2g.10gb", 14, 0, 2), ("2g.10gb", 14, 2, 2), ("3g.20gb", 9, 4, 4)]
    assert gp.after == {"mig_enabled": True, "instances": ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}


def test_applied_layout_gives_no_actions():
    now = [inst(1, "2g.10gb", 0), inst(2, "2g.10gb", 2), inst(3, "3g.20gb", 4)]
    gp = ap.plan_gpu(0, A100, observed(instances=now), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert gp.actions == [] and not gp.changed
    assert sorted(k["gpu_instance_id"] for k in gp.kept) == [1, 2, 3]


def test_instance_at_a_valid_place_is_kept():
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(5, "3g.20gb", 4)]), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert [k["gpu_instance_id"] for k in gp.kept] == [5]
    assert kinds(gp) == ["create_gpu_instance", "create_gpu_instance"]


def test_instance_at_a_place_that_blocks_the_layout_is_moved():
    # 3g.20gb at slice 0 leaves room for one 2g.10gb only: it must be recreated at 4.
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(1, "3g.20gb", 0)]), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert gp.kept == []
    assert kinds(gp)[:2] == ["destroy_compute_instance", "destroy_gpu_instance"]
    assert gp.after["instances"] == ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]


def test_plan_keeps_as_many_as_possible():
    # 1g.5gb at 0..3 and a 3g.20gb at 4; desired 3g + 4 x 1g: all five stay.
    now = [inst(i + 1, "1g.5gb", i) for i in range(4)] + [inst(9, "3g.20gb", 4)]
    gp = ap.plan_gpu(0, A100, observed(instances=now), True, {"3g.20gb": 1, "1g.5gb": 4})
    assert gp.actions == []
    # Desired 3g + 2 x 2g: the 3g at 4 stays, the 1g's go.
    gp = ap.plan_gpu(0, A100, observed(instances=now), True, {"3g.20gb": 1, "2g.10gb": 2})
    assert [k["gpu_instance_id"] for k in gp.kept] == [9]
    assert kinds(gp).count("destroy_gpu_instance") == 4


def test_kept_instance_gets_its_full_compute_instance():
    partial = [{"compute_instance_id": 0, "full": False}, {"compute_instance_id": 1, "full": False}]
    now = [inst(1, "7g.40gb", 0, cis=partial)]
    gp = ap.plan_gpu(0, A100, observed(instances=now), True, {"7g.40gb": 1})
    assert kinds(gp) == ["destroy_compute_instance", "destroy_compute_instance", "create_compute_instance"]
    missing = ap.plan_gpu(0, A100, observed(instances=[inst(1, "7g.40gb", 0, cis=[])]), True, {"7g.40gb": 1})
    assert missing.actions == [{"action": "create_compute_instance", "gpu_instance_id": 1, "profile": "7g.40gb"}]


def test_empty_layout_destroys_everything_and_keeps_mig_on():
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(0, "7g.40gb", 0)]), True, {})
    assert kinds(gp) == ["destroy_compute_instance", "destroy_gpu_instance"]
    assert gp.after == {"mig_enabled": True, "instances": []}


def test_mode_only_leaves_instances_alone():
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(0, "7g.40gb", 0)]), True, None)
    assert gp.actions == []


def test_cancel_pending_disable():
    gp = ap.plan_gpu(
        0, A100, observed(current=True, pending=False, instances=[inst(0, "7g.40gb", 0)]), True, {"7g.40gb": 1}
    )
    assert gp.actions == [{"action": "set_mig_mode", "enabled": True}]


def test_disable_destroys_then_sets_mode_pending_on_ampere():
    gp = ap.plan_gpu(0, A100, observed(instances=[inst(1, "3g.20gb", 4), inst(2, "2g.10gb", 0)]), False, None)
    assert kinds(gp) == [
        "destroy_compute_instance",
        "destroy_gpu_instance",
        "destroy_compute_instance",
        "destroy_gpu_instance",
        "set_mig_mode",
    ]
    assert gp.actions[-1] == {"action": "set_mig_mode", "enabled": False}
    assert gp.reset_required
    hopper = ap.plan_gpu(0, H100, observed(), False, None)
    assert hopper.actions == [{"action": "set_mig_mode", "enabled": False}] and not hopper.reset_required


def test_disabled_gpu_stays_disabled_without_actions():
    assert ap.plan_gpu(0, A100, observed(current=False), False, None).actions == []
    gp = ap.plan_gpu(0, A100, observed(current=False, pending=True), False, None)
    assert gp.actions == [{"action": "set_mig_mode", "enabled": False}]


def test_infeasible_layout_raises_with_the_planners_sentence():
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        ap.plan_gpu(0, A100, observed(instances=[inst(0, "7g.40gb", 0)]), True, {"3g.20gb": 2, "2g.10gb": 1})
    assert "A100-40GB has 7" in err.value.reason and "compute slices" in err.value.reason
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        ap.plan_gpu(0, A100, observed(current=False), True, {"3g.40gb": 1})  # another GPU's name
    assert "has no MIG profile '3g.40gb'" in err.value.reason
    with pytest.raises(mig_placement.InfeasibleLayout):  # even before a pending mode change
        ap.plan_gpu(0, A100, observed(current=False), True, {"1g.5gb": 8})


def test_gpu_without_mig():
    t4 = cat.get_gpu("T4")
    with pytest.raises(mig_placement.InfeasibleLayout) as err:
        ap.plan_gpu(2, t4, observed(current=False, capable=False), True, {"1g.5gb": 1})
    assert "does not support MIG" in err.value.reason
    assert ap.plan_gpu(2, t4, observed(current=False, capable=False), False, None).actions == []


def test_layout_with_mig_disabled_is_refused():
    with pytest.raises(mig_placement.InfeasibleLayout):
        ap.plan_gpu(0, A100, observed(), False, {"7g.40gb": 1})


def test_layout_summary_and_current_layout():
    now = [inst(3, "3g.20gb", 4), inst(1, "2g.10gb", 0), inst(2, "2g.10gb", 2)]
    assert ap.current_layout(now) == {"3g.20gb": 1, "2g.10gb": 2}
    assert ap.layout_summary(True, now) == {"mig_enabled": True, "instances": ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}
    assert ap.layout_summary(False, [], pending=True) == {"mig_enabled": False, "instances": [], "mig_pending": True}


# ---- properties: valid result, idempotence, maximal keeping (brute force) ----


def apply_actions(model, obs, gp):
    """Pure simulation of the plan on the observed instances (what nvml_mig.execute does through NVML)."""
    instances = {
        i["gpu_instance_id"]: dict(i, compute_instances=list(i["compute_instances"])) for i in obs["instances"]
    }
    next_id = 100
    for a in gp.actions:
        if a["action"] == "destroy_compute_instance":
            gi = instances[a["gpu_instance_id"]]
            gi["compute_instances"] = [
                c for c in gi["compute_instances"] if c["compute_instance_id"] != a["compute_instance_id"]
            ]
        elif a["action"] == "destroy_gpu_instance":
            assert not instances[a["gpu_instance_id"]]["compute_instances"], "GI destroyed with CIs"
            del instances[a["gpu_instance_id"]]
        elif a["action"] == "create_compute_instance":
            instances[a["gpu_instance_id"]]["compute_instances"] = [{"compute_instance_id": 0, "full": True}]
        elif a["action"] == "create_gpu_instance":
            prof = cat.profile_by_name(model, a["profile"])
            assert a["start"] in prof.starts and a["size"] == prof.memory_slices
            instances[next_id] = {
                "gpu_instance_id": next_id,
                "profile": a["profile"],
                "start": a["start"],
                "size": a["size"],
                "compute_instances": [{"compute_instance_id": 0, "full": True}],
            }
            next_id += 1
    return list(instances.values())


def all_placements(model, layout):
    """Every valid placement of layout, as a set of (profile, start) multisets (brute force)."""
    profs = [cat.profile_by_name(model, n) for n, c in sorted(layout.items()) for dummy in range(c)]
    found = set()
    for starts in itertools.product(*(p.starts for p in profs)):
        occ, ok = 0, True
        for p, s in zip(profs, starts):
            m = ((1 << p.memory_slices) - 1) << s
            if s + p.memory_slices > model.mig.memory_slices or occ & m:
                ok = False
                break
            occ |= m
        if ok:
            found.add(tuple(sorted((p.name, s) for p, s in zip(profs, starts))))
    return found


def max_keepable(model, layout, existing):
    best = 0
    have = [(i["profile"], i["start"]) for i in existing]
    for placement in all_placements(model, layout):
        pool = list(placement)
        n = 0
        for h in have:
            if h in pool:
                pool.remove(h)
                n += 1
        best = max(best, n)
    return best


A100_PROFILES = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
layouts = st.dictionaries(st.sampled_from(A100_PROFILES), st.integers(min_value=1, max_value=4), max_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(existing_layout=layouts, desired=layouts)
def test_plan_properties_on_a100(existing_layout, desired):
    if not mig_placement.fits(A100, existing_layout) or not mig_placement.fits(A100, desired):
        return
    existing = [inst(n + 1, i.profile, i.start) for n, i in enumerate(mig_placement.plan(A100, existing_layout))]
    obs = observed(instances=existing)
    gp = ap.plan_gpu(0, A100, obs, True, desired)
    result = apply_actions(A100, obs, gp)
    # The result is the desired layout, non-overlapping, at allowed starts, one full CI each.
    assert ap.current_layout(result) == {n: c for n, c in desired.items() if c}
    occ = 0
    for r in result:
        m = ((1 << r["size"]) - 1) << r["start"]
        assert not occ & m
        occ |= m
        assert r["start"] in cat.profile_by_name(A100, r["profile"]).starts
        assert r["compute_instances"] == [{"compute_instance_id": 0, "full": True}]
    # Kept instances are existing ones, untouched; as many as any valid placement allows.
    assert {k["gpu_instance_id"] for k in gp.kept} <= {e["gpu_instance_id"] for e in existing}
    assert len(gp.kept) == max_keepable(A100, desired, existing)
    # Idempotent: planning again on the result changes nothing.
    again = ap.plan_gpu(0, A100, observed(instances=result), True, desired)
    assert again.actions == []
    assert gp.after["instances"] == ap.layout_summary(True, result)["instances"]


@pytest.mark.parametrize("key", cat.mig_capable_keys())
def test_every_catalog_gpu_plans_its_maximal_layouts_from_scratch(key):
    model = cat.get_gpu(key)
    for layout in mig_placement.maximal_layouts(model)[:10]:
        gp = ap.plan_gpu(0, model, observed(), True, layout)
        assert ap.current_layout(apply_actions(model, observed(), gp)) == layout
