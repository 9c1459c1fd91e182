"""The GPUs of one mig_config run (plan/mig/node_gpus.py): pure, GPU facts made by hand as nvml/facts.read_gpu
shapes them."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import node_gpus
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_apply import GpuPlan, plan_gpu

A100 = cat.get_gpu("A100-40GB")
BALANCED = {"3g.20gb": 1, "2g.10gb": 2}


def instance(gi, profile, start):
    size = cat.profile_by_name(A100, profile).memory_slices
    return {
        "gpu_instance_id": gi,
        "profile": profile,
        "start": start,
        "size": size,
        "compute_instances": [{"compute_instance_id": 0, "full": True}],
    }


def gpu(index=0, name="NVIDIA A100-SXM4-40GB", current=True, pending=None, instances=(), processes=(), capable=True):
    pending = current if pending is None else pending
    return {
        "index": index,
        "name": name,
        "uuid": "GPU-%d" % index,
        "pci_device_id": None,
        "_profiles": [],
        "mig": {
            "capable": capable,
            "current": current,
            "pending": pending,
            "mode_change_pending": capable and current != pending,
            "instances": list(instances),
        },
        "processes": [{"pid": pid} for pid in processes],
    }


def test_targets_for_every_gpu_and_for_named_ones():
    spec = (True, BALANCED)
    assert node_gpus.gpu_targets({"all": spec}, 3) == {0: spec, 1: spec, 2: spec}
    assert node_gpus.gpu_targets({1: spec}, 2) == {1: spec}
    assert node_gpus.gpu_targets({}, 2) == {}


@pytest.mark.parametrize(
    "targets,count,text",
    [
        ({2: None, 5: None}, 2, "GPU index 2, 5 does not exist on this host: it has 2 GPU(s), indices 0-1."),
        ({-1: None}, 1, "GPU index -1 does not exist on this host: it has 1 GPU(s), indices 0-0."),
    ],
)
def test_targets_refuse_gpus_the_host_lacks(targets, count, text):
    with pytest.raises(Problems) as err:
        node_gpus.gpu_targets(targets, count)
    assert text in str(err.value) and "No change made." in str(err.value)


def test_gpus_to_read():
    assert node_gpus.gpus_to_read({2: None, 0: None}, 4, export=False) == [0, 2]
    assert node_gpus.gpus_to_read({2: None}, 4, export=True) == [0, 1, 2, 3]
    assert node_gpus.gpus_to_read({}, 0, export=True) == []


def test_observed_state_and_summary_of_a_gpu():
    g = gpu(instances=[instance(2, "3g.20gb", 4), instance(1, "2g.10gb", 0)])
    assert node_gpus.observed_state(g) == {
        "mig_capable": True,
        "mig_current": True,
        "mig_pending": True,
        "instances": g["mig"]["instances"],
    }
    assert node_gpus.summary(g) == {"mig_enabled": True, "instances": ["2g.10gb@0", "3g.20gb@4"]}
    assert node_gpus.summary(gpu(current=False, pending=True)) == {
        "mig_enabled": False,
        "instances": [],
        "mig_pending": True,
    }


def test_plan_gpus_plans_each_target_in_index_order():
    facts = {1: gpu(1), 0: gpu(0, instances=[instance(1, "7g.40gb", 0)])}
    plans, warnings, errors = node_gpus.plan_gpus({1: (True, BALANCED), 0: (True, {"7g.40gb": 1})}, facts)
    assert list(plans) == [0, 1] and warnings == [] and errors == []
    assert not plans[0].changed  # already so
    assert [a["action"] for a in plans[1].actions] == ["create_gpu_instance"] * 3


def test_plan_gpus_names_every_gpu_that_cannot_take_its_layout():
    facts = {0: gpu(0), 1: gpu(1), 2: gpu(2, name="NVIDIA Mystery GPU")}
    targets = {0: (True, {"3g.40gb": 1}), 1: (True, {"3g.20gb": 2, "2g.10gb": 1}), 2: (True, BALANCED)}
    plans, warnings, errors = node_gpus.plan_gpus(targets, facts)
    assert plans == {}
    assert errors[0].startswith("GPU 0 (NVIDIA A100-SXM4-40GB): ") and "has no MIG profile '3g.40gb'" in errors[0]
    assert errors[1] == (
        "GPU 1 (NVIDIA A100-SXM4-40GB): 2g.10gb + 3g.20gb x2 needs 8 compute slices but A100-40GB has 7 (2g.10gb "
        "uses 2 each, 3g.20gb uses 3 each). Layouts that fit: 3g.20gb x2."
    )
    assert errors[2] == (
        "GPU 2 (NVIDIA Mystery GPU) reports no MIG profiles and is not in the MIG catalog: the layout cannot be planned"
    )
    refusal = node_gpus.refusal(errors)
    assert isinstance(refusal, GpupoolError)
    assert refusal.describe() == "MIG layout refused, no change made: " + " ".join(errors)
    assert refusal.details == {"errors": errors}


def test_plan_gpus_uses_the_gpus_profile_names_with_a_warning():
    reported = [
        {
            "index": p.nvml_index,
            "id": p.profile_id,
            "name": "3g.19gb" if p.name == "3g.20gb" else p.name,
            "compute_slices": p.compute_slices,
            "memory_slices": p.memory_slices,
            "max_instances": p.max_instances,
            "starts": list(p.starts),
            "memory_mib": p.memory_mib,
            "multiprocessors": p.multiprocessors,
        }
        for p in A100.mig.profiles
    ]
    facts = {0: dict(gpu(0), _profiles=reported)}
    plans, warnings, errors = node_gpus.plan_gpus({0: (True, BALANCED)}, facts)
    assert errors == []
    assert any("3g.19gb" in w and "catalog: 3g.20gb" in w for w in warnings)
    assert any("the layout's 3g.20gb is applied as 3g.19gb" in w for w in warnings)
    assert sorted(a["profile"] for a in plans[0].actions) == ["2g.10gb", "2g.10gb", "3g.19gb"]


def test_infeasible_without_suggestions_has_no_hint():
    with pytest.raises(InfeasibleLayout) as err:
        plan_gpu(0, A100, node_gpus.observed_state(gpu()), True, {"1g.5gb": 8})
    assert node_gpus.infeasible("GPU 0 (x)", err.value) == (
        "GPU 0 (x): A100-40GB allows at most 7 x 1g.5gb, the layout asks for 8."
    )


def test_busy_gpus_are_only_those_a_plan_changes():
    changed, unchanged = GpuPlan(0), GpuPlan(1)
    changed.actions.append({"action": "set_mig_mode", "enabled": True})
    facts = {0: gpu(0, processes=[11, 12]), 1: gpu(1, processes=[13])}
    busy = node_gpus.busy_gpus({1: unchanged, 0: changed}, facts)
    assert busy == ["GPU 0 (NVIDIA A100-SXM4-40GB) runs 2 compute process(es), pid 11, 12"]
    assert node_gpus.busy_gpus({0: changed}, {0: gpu(0)}) == []
    refusal = node_gpus.busy_refusal(busy + ["GPU 3 (x) runs 1 compute process(es), pid 9"])
    assert refusal.describe() == (
        "MIG change refused, no change made: GPU 0 (NVIDIA A100-SXM4-40GB) runs 2 compute process(es), pid 11, "
        "12; GPU 3 (x) runs 1 compute process(es), pid 9. Changing MIG would disrupt them: stop those processes "
        "(drain the node) and run again, or set force: true."
    )
    assert refusal.details["busy"][0] == busy[0]


def test_entry_of_a_gpu_planned_but_not_run():
    g = gpu(0)
    gp = node_gpus.plan_gpus({0: (True, BALANCED)}, {0: g})[0][0]
    entry = node_gpus.gpu_entry(0, g, gp)
    assert entry == {
        "index": 0,
        "name": "NVIDIA A100-SXM4-40GB",
        "uuid": "GPU-0",
        "catalog_model": "A100-40GB",
        "before": {"mig_enabled": True, "instances": []},
        "kept_gpu_instances": [],
        "reset_required": False,
    }
    node_gpus.planned(entry, gp, g)
    assert entry["actions"] == gp.actions and entry["actions"] is not gp.actions
    assert entry["after"] == gp.after == {"mig_enabled": True, "instances": ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}
    assert node_gpus.gpu_entry(0, gpu(0, name="NVIDIA Mystery GPU"), gp)["catalog_model"] is None


def test_entry_of_an_unchanged_gpu_still_waiting_for_its_reset():
    g = gpu(0, current=False, pending=True)  # MIG enabled, effective after a GPU reset (A100)
    gp = node_gpus.plan_gpus({0: (True, None)}, {0: g})[0][0]
    entry = node_gpus.gpu_entry(0, g, gp)
    node_gpus.planned(entry, gp, g)
    assert entry["actions"] == [] and entry["after"] == entry["before"]
    assert entry["reset_required"] is True


def test_entry_of_a_gpu_whose_plan_ran():
    before = gpu(0, instances=[instance(1, "7g.40gb", 0)])
    gp = node_gpus.plan_gpus({0: (True, BALANCED)}, {0: before})[0][0]
    entry = node_gpus.gpu_entry(0, before, gp)
    after = gpu(0, instances=[instance(2, "2g.10gb", 0), instance(3, "2g.10gb", 2), instance(4, "3g.20gb", 4)])
    done = [{"action": "destroy_gpu_instance", "gpu_instance_id": 1}]
    node_gpus.applied(entry, {"done": done, "reset_required": False, "activation_status": None}, after)
    assert entry["actions"] == done and "activation_status" not in entry
    assert entry["after"] == {"mig_enabled": True, "instances": ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}
    assert entry["reset_required"] is False
    pending = gpu(0, current=False, pending=True)
    node_gpus.applied(entry, {"done": [], "reset_required": True, "activation_status": "NVML_ERROR_IN_USE"}, pending)
    assert entry["reset_required"] is True and entry["activation_status"] == "NVML_ERROR_IN_USE"
    node_gpus.applied(entry, {"done": [], "reset_required": False, "activation_status": None}, pending)
    assert entry["reset_required"] is True  # the GPU read back still waits for a reset


def test_export_config_leaves_out_gpus_without_mig():
    gpus = [
        gpu(0, instances=[instance(1, "3g.20gb", 4), instance(2, "2g.10gb", 0), instance(3, "2g.10gb", 2)]),
        gpu(1, current=False),
        gpu(2, name="Tesla T4", capable=False, current=False),
    ]
    doc = node_gpus.export_config("node-a", gpus)
    assert doc["version"] == "v1"
    assert doc["mig-configs"]["node-a"] == [
        {"devices": [0], "mig-enabled": True, "mig-devices": {"2g.10gb": 2, "3g.20gb": 1}},
        {"devices": [1], "mig-enabled": False},
    ]
    assert "node-a" not in node_gpus.export_config("node-a", [gpus[2]])["mig-configs"]


def test_node_result():
    results = [
        {"index": 0, "actions": [], "reset_required": False, "before": {"b": 0}, "after": {"a": 0}},
        {"index": 1, "actions": [{"action": "x"}], "reset_required": True, "before": {"b": 1}, "after": {"a": 1}},
    ]
    out = node_gpus.node_result(results, None, diff_mode=True)
    assert out == {
        "changed": True,
        "reset_required": True,
        "gpus": results,
        "diff": {"before": {"gpu0": {"b": 0}, "gpu1": {"b": 1}}, "after": {"gpu0": {"a": 0}, "gpu1": {"a": 1}}},
    }
    out = node_gpus.node_result(results[:1], {"version": "v1"}, diff_mode=False)
    assert out == {
        "changed": False,
        "reset_required": False,
        "gpus": results[:1],
        "mig_parted_config": {"version": "v1"},
    }
