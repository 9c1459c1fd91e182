"""GPU-pool model: validation paths and messages, defaults, derived gates."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import gates as model_gates
from ansible_collections.gpupool.core.plugins.module_utils.model import inventory as model_inventory
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import normalized_result

BASE = {
    "name": "c1",
    "magnum": {"cloud": "openstack", "cluster": "k8s"},
    "pools": [
        {
            "name": "t4",
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2, "min_node_count": 1, "max_node_count": 4},
            "gpu": {"model": "T4"},
            "sharing": {"time_slicing": {"interval": "Medium"}},
        },
        {
            "name": "a100",
            "nodegroup": {"flavor": "g4.p2.40g"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "gb200",
            "nodegroup": {"flavor": "g6.gb200x4"},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain"},
        },
    ],
}


def broken(mutate):
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(data)
    merged = {}
    for path, msg in err.value.problems:
        merged[path] = merged[path] + " | " + msg if path in merged else msg
    broken.text = str(err.value)
    return merged


def test_valid_inventory_fills_defaults():
    cluster = model_load.load_cluster(copy.deepcopy(BASE))
    t4 = cluster.pool("t4")
    assert t4.all_taints == [model_names.GPU_TAINT]
    assert t4.nodegroup.merge_labels is True and t4.nodegroup.role == "worker"
    assert cluster.pool("a100").mig_config_name == "gpupool-a100"
    assert cluster.dra_driver.chart == model_inventory.DRA_CHART
    assert model_gates.effective_gates(cluster) == {"TimeSlicingSettings": True}


def test_normalized_result_has_placements_and_mig_parted():
    res = normalized_result(model_load.load_cluster(copy.deepcopy(BASE)))
    assert res["pools"] == ["t4", "a100", "gb200"]
    place = res["mig_placements"]["a100"]
    assert set(place) == {"0", "1"}
    assert {(i["profile"], i["start"]) for i in place["0"]} == {("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)}
    assert res["mig_parted_config"]["mig-configs"]["gpupool-a100"][0]["devices"] == "all"
    assert res["cluster"]["pools"][0]["taints_effective"][0]["key"] == "node-role.kubernetes.io/gpu"
    assert res["mig_group_placements"] == {}  # no pool has MIG groups


def test_normalized_result_places_each_mig_group():
    data = copy.deepcopy(BASE)
    data["pools"][1]["mig"]["groups"] = [{"name": "small", "nodes": 1, "layout": {"1g.5gb": 7}}]
    res = normalized_result(model_load.load_cluster(data))
    small = res["mig_group_placements"]["a100"]["small"]
    assert set(small) == {"0", "1"}
    assert sorted(i["start"] for i in small["1"]) == list(range(7))
    assert {i["profile"] for i in small["0"]} == {"1g.5gb"}
    assert {i["profile"] for i in res["mig_placements"]["a100"]["0"]} == {"3g.20gb", "2g.10gb"}  # the other nodes


def test_typo_key_names_path_and_suggests():
    probs = broken(lambda d: d["pools"][0]["nodegroup"].update(node_cout=3))
    assert probs["gpupool_cluster.pools[0] (t4).nodegroup.node_cout"].startswith(
        "unknown key 'node_cout'; did you mean 'node_count'?"
    )


def test_typo_at_top_level_and_pool_level():
    probs = broken(lambda d: (d.update(pool=[]), d["pools"][1].update(mig_layout={})))
    assert "did you mean 'pools'" in probs["gpupool_cluster.pool"]
    assert "gpupool_cluster.pools[1] (a100).mig_layout" in probs


def test_min_greater_than_node_count_and_max():
    probs = broken(lambda d: d["pools"][0]["nodegroup"].update(min_node_count=5))
    assert "greater than node_count 2" in probs["gpupool_cluster.pools[0] (t4).nodegroup.min_node_count"]


def test_node_count_above_max():
    probs = broken(lambda d: d["pools"][0]["nodegroup"].update(node_count=9))
    assert "greater than max_node_count 4" in probs["gpupool_cluster.pools[0] (t4).nodegroup.node_count"]


def test_negative_node_count_is_a_type_problem():
    probs = broken(lambda d: d["pools"][0]["nodegroup"].update(node_count=-1))
    assert probs["gpupool_cluster.pools[0] (t4).nodegroup.node_count"] == "must be 0 or more; got a whole number -1"


@pytest.mark.parametrize("name", ["GPU_T4", "-t4", "t4-", "x" * 64, "t4.a"])
def test_pool_names_must_be_dns_labels(name):
    probs = broken(lambda d: d["pools"][0].update(name=name))
    assert "not a DNS label" in probs["gpupool_cluster.pools[0] (%s).name" % name]


def test_duplicate_pool_names():
    probs = broken(lambda d: d["pools"][2].update(name="t4"))
    assert "duplicate pool name 't4' (also pools[0])" in probs["gpupool_cluster.pools[2] (t4).name"]


def test_profile_not_on_this_gpu():
    probs = broken(lambda d: d["pools"][1]["mig"].update(layout={"3g.40gb": 1}))
    assert "belongs to A100-80GB" in probs["gpupool_cluster.pools[1] (a100).mig.layout['3g.40gb']"]


def test_layout_that_does_not_fit_names_slices_and_nearest():
    probs = broken(lambda d: d["pools"][1]["mig"].update(layout={"3g.20gb": 2, "2g.10gb": 1}))
    msg = probs["gpupool_cluster.pools[1] (a100).mig.layout"]
    assert "compute slices" in msg and "nearest valid layout" in msg


def test_per_gpu_layouts_check_index_and_fit():
    def mutate(d):
        d["pools"][1]["mig"] = {"mode": "static", "layouts": {0: {"7g.40gb": 1}, 1: {"4g.20gb": 2}, 2: {"7g.40gb": 1}}}

    probs = broken(mutate)
    assert "at most 1 x 4g.20gb" in probs["gpupool_cluster.pools[1] (a100).mig.layouts[1]"]
    assert "GPU index 2 does not exist" in probs["gpupool_cluster.pools[1] (a100).mig.layouts[2]"]


def test_static_needs_exactly_one_layout_form():
    probs = broken(lambda d: d["pools"][1]["mig"].update(layouts={0: {"7g.40gb": 1}}))
    assert "exactly one of 'layout'" in probs["gpupool_cluster.pools[1] (a100).mig"]


@pytest.mark.parametrize("model", ["T4", "L4", "V100", "A10"])
def test_mig_on_gpu_without_mig(model):
    probs = broken(lambda d: d["pools"][1]["gpu"].update(model=model))
    assert "has no MIG" in probs["gpupool_cluster.pools[1] (a100).mig.mode"]


def test_mig_on_a_gpu_declared_not_in_catalog():
    probs = broken(lambda d: d["pools"][1]["gpu"].update(model="Some Future GPU", not_in_catalog=True))
    assert "MIG needs a GPU model from the catalog" in probs["gpupool_cluster.pools[1] (a100).gpu.model"]


def test_product_name_outside_the_catalog_needs_not_in_catalog():
    data = copy.deepcopy(BASE)
    data["pools"][0]["gpu"]["model"] = "NVIDIA RTX PRO 6000"
    with pytest.raises(model_errors.Problems):
        model_load.load_cluster(copy.deepcopy(data))
    data["pools"][0]["gpu"]["not_in_catalog"] = True
    assert model_load.load_cluster(data).pool("t4").catalog_gpu is None


def test_product_names_resolve_to_catalog():
    data = copy.deepcopy(BASE)
    data["pools"][1]["gpu"]["model"] = "NVIDIA A100-SXM4-40GB"
    assert model_load.load_cluster(data).pool("a100").catalog_gpu.key == "A100-40GB"


def test_layout_without_static_mode():
    probs = broken(lambda d: d["pools"][1]["mig"].update(mode="dynamic"))
    assert "mig.mode is 'dynamic'" in probs["gpupool_cluster.pools[1] (a100).mig.mode"]


def test_time_slicing_and_mps_together():
    probs = broken(lambda d: d["pools"][0]["sharing"].update(mps={"active_thread_percentage": 50}))
    assert "cannot be used together" in probs["gpupool_cluster.pools[0] (t4).sharing"]


def test_mps_with_dynamic_mig_in_same_pool():
    def mutate(d):
        d["pools"][1]["mig"] = {"mode": "dynamic"}
        d["pools"][1]["sharing"] = {"mps": {}}

    probs = broken(mutate)
    assert "MPS cannot be combined with dynamic MIG" in probs["gpupool_cluster.pools[1] (a100).sharing.mps"]


def test_gate_conflict_across_pools_names_both():
    def mutate(d):
        d["pools"][0]["sharing"] = {"mps": {}}
        d["pools"][1]["mig"] = {"mode": "dynamic"}

    probs = broken(mutate)
    msg = probs["gpupool_cluster.dra_driver.feature_gates"]
    assert "pools[1] (a100).mig.mode" in msg and "pools[0] (t4).sharing.mps" in msg


def test_passthrough_with_dynamic_mig():
    def mutate(d):
        d["pools"][1]["mig"] = {"mode": "dynamic"}
        d["pools"][1]["passthrough"] = True

    probs = broken(mutate)
    assert "gpupool_cluster.pools[1] (a100).passthrough" in probs


def test_explicit_gate_override_conflicts():
    gates = {"PassthroughSupport": True, "NVMLDeviceHealthCheck": True}
    probs = broken(lambda d: d.update(dra_driver={"feature_gates": gates}))
    assert "PassthroughSupport" in probs["gpupool_cluster.dra_driver.feature_gates"]


def test_disabling_a_needed_gate():
    probs = broken(lambda d: d.update(dra_driver={"feature_gates": {"TimeSlicingSettings": False}}))
    assert "pools[0] (t4).sharing.time_slicing" in probs["gpupool_cluster.dra_driver.feature_gates.TimeSlicingSettings"]


def test_nvlink_on_gpu_without_mnnvl():
    probs = broken(lambda d: d["pools"][1].update(nvlink={"mode": "compute_domain"}))
    assert "no multi-node NVLink" in probs["gpupool_cluster.pools[1] (a100).nvlink.mode"]


def test_host_imex_needs_nodes_and_sets_gate():
    probs = broken(lambda d: d["pools"][2].update(nvlink={"mode": "host_imex"}))
    assert "gpupool_cluster.pools[2] (gb200).nvlink.imex_nodes" in probs
    data = copy.deepcopy(BASE)
    data["pools"][2]["nvlink"] = {"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]}
    assert model_gates.effective_gates(model_load.load_cluster(data))["HostManagedIMEXDaemon"] is True


def test_bad_enum_value():
    probs = broken(lambda d: d["pools"][0]["sharing"]["time_slicing"].update(interval="Fast"))
    assert "'Fast' is not allowed" in probs["gpupool_cluster.pools[0] (t4).sharing.time_slicing.interval"]


def test_bad_label_and_quantity():
    def mutate(d):
        d["pools"][0]["node_labels"] = {"bad key!": "x"}
        d["pools"][0]["sharing"] = {"mps": {"pinned_memory_limit": "10 GB"}}

    probs = broken(mutate)
    assert "not a valid Kubernetes label key" in probs["gpupool_cluster.pools[0] (t4).node_labels"]
    assert "not a Kubernetes quantity" in probs["gpupool_cluster.pools[0] (t4).sharing.mps.pinned_memory_limit"]


def test_magnum_pool_without_nodegroup_or_selector():
    probs = broken(lambda d: d["pools"][0].pop("nodegroup"))
    assert "neither a nodegroup nor a node_selector" in probs["gpupool_cluster.pools[0] (t4).node_selector"]


def test_nodegroup_without_magnum_cluster():
    probs = broken(lambda d: d.pop("magnum"))
    assert "needs gpupool_cluster.magnum" in probs["gpupool_cluster.pools[0] (t4).nodegroup"]


def test_all_problems_reported_at_once_and_rendered():
    def mutate(d):
        d["pools"][0]["nodegroup"]["min_node_count"] = 7
        d["pools"][2]["name"] = "t4"

    probs = broken(mutate)
    assert len(probs) >= 2 and broken.text.startswith("3 problem(s)") and "nothing was changed" in broken.text


def test_not_a_mapping():
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(["x"])
    assert err.value.problems == [
        (
            "gpupool_cluster",
            "must be a mapping with name and pools, e.g. "
            "`gpupool_cluster: {name: cern-gpu, pools: [...]}`; got a list ['x']",
        )
    ]


def test_gpu_taint_can_be_switched_off_and_extra_taints_kept():
    data = copy.deepcopy(BASE)
    data["pools"][0]["gpu_taint"] = False
    data["pools"][0]["taints"] = [{"key": "example.com/team", "value": "ml", "effect": "NoExecute"}]
    assert model_load.load_cluster(data).pool("t4").all_taints == [
        {"key": "example.com/team", "value": "ml", "effect": "NoExecute"}
    ]


def test_extra_device_class_compute_capability():
    data = copy.deepcopy(BASE)
    data["pools"][1]["device_classes"] = {"extra": [{"name": "hopper-up", "min_compute_capability": "9.0"}]}
    assert model_load.load_cluster(data).pool("a100").device_classes.extra[0].min_compute_capability == "9.0"
    probs = broken(
        lambda d: d["pools"][1].update(device_classes={"extra": [{"name": "x", "min_compute_capability": "nine"}]})
    )
    assert (
        "not a compute capability"
        in probs["gpupool_cluster.pools[1] (a100).device_classes.extra[0].min_compute_capability"]
    )
