"""validate refuses MIG groups (mig.groups) as it refuses a pool's layout: each refusal's key path, pool and fix."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    device_class_names,
    pool_has_full_gpus,
    pool_mig_profiles,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import cluster_mig_parted_config

AT = "gpupool_cluster.pools[0] (gpu-a100)"

BASE = {
    "name": "c1",
    "magnum": {"cloud": "openstack", "cluster": "k8s"},
    "pools": [
        {
            "name": "gpu-a100",
            "nodegroup": {"flavor": "g4.p2.40g", "node_count": 4},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {
                "mode": "static",
                "layout": {"3g.20gb": 1, "2g.10gb": 2},
                "groups": [{"nodes": 1, "layout": {"1g.5gb": 7}}],
            },
        },
        {
            "name": "gpu-h100",
            "nodegroup": {"flavor": "g5.h100", "node_count": 2},
            "gpu": {"model": "H100-80GB", "per_node": 1},
            "mig": {"mode": "static", "layout": {"7g.80gb": 1}},
        },
    ],
}


def load(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def problems(mutate):
    with pytest.raises(model_errors.Problems) as err:
        load(mutate)
    return err.value.problems


def group(data, k=0):
    return data["pools"][0]["mig"]["groups"][k]


def test_a_valid_group_loads_and_gets_its_own_config():
    cluster = load()
    configs = cluster_mig_parted_config(cluster)["mig-configs"]
    assert configs["gpupool-gpu-a100-g1"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    assert configs["gpupool-gpu-a100"][0]["mig-devices"] == {"2g.10gb": 2, "3g.20gb": 1}


def test_an_infeasible_group_layout_is_refused_at_its_key():
    found = problems(lambda d: group(d).update(layout={"4g.20gb": 1, "3g.20gb": 2}))
    assert [p for p, _m in found] == [AT + ".mig.groups[0].layout"]
    assert "needs 10 compute slices but A100-40GB has 7" in found[0][1]


def test_a_profile_the_gpu_lacks_is_refused_at_the_profile():
    found = problems(lambda d: group(d).update(layout={"1g.20gb": 1}))
    assert found[0][0] == AT + ".mig.groups[0].layout['1g.20gb']"
    assert "1g.20gb" in found[0][1]


def test_a_gpu_index_that_does_not_exist_is_refused():
    def mutate(d):
        group(d).pop("layout")
        group(d)["layouts"] = {0: {"7g.40gb": 1}, 2: {"7g.40gb": 1}}

    found = problems(mutate)
    assert found == [
        (
            AT + ".mig.groups[0].layouts[2]",
            "GPU index 2 does not exist: the pool's nodes have 2 GPU(s) (indices 0..1); set gpu.per_node or remove "
            "this index",
        )
    ]


def test_both_or_neither_layout_and_layouts_is_refused():
    both = problems(lambda d: group(d).update(layouts={0: {"7g.40gb": 1}}))
    neither = problems(lambda d: group(d).pop("layout"))
    for found in (both, neither):
        assert [p for p, _m in found] == [AT + ".mig.groups[0]"]
        assert "exactly one of 'layout'" in found[0][1]


def test_groups_need_static_mode():
    def mutate(d):
        d["pools"][0]["mig"] = {"mode": "off", "groups": [{"nodes": 1, "layout": {"1g.5gb": 7}}]}

    found = problems(mutate)
    assert [p for p, _m in found] == [AT + ".mig.groups"]
    assert "mig.mode is 'off'; set mig.mode: static" in found[0][1]


def test_group_names_are_unique_counting_default_names():
    def mutate(d):
        d["pools"][0]["mig"]["groups"] = [
            {"nodes": 1, "layout": {"1g.5gb": 7}},
            {"name": "g1", "nodes": 1, "layout": {"7g.40gb": 1}},
        ]

    found = problems(mutate)
    assert [p for p, _m in found] == [AT + ".mig.groups[1].name"]
    assert "also the name of mig.groups[0]" in found[0][1]


def test_a_group_name_must_fit_the_label_value():
    bad = problems(lambda d: group(d).update(name="small one"))
    assert [p for p, _m in bad] == [AT + ".mig.groups[0].name"]
    assert "cannot name a MIG group" in bad[0][1]
    long = problems(lambda d: group(d).update(name="x" * 50))
    assert [p for p, _m in long] == [AT + ".mig.groups[0].name"]
    assert "'gpupool-gpu-a100-%s' (67 characters)" % ("x" * 50) in long[0][1]


def test_a_group_config_may_not_clash_with_another_pools_config():
    def mutate(d):
        d["pools"][1]["mig"]["config_name"] = "gpupool-gpu-a100-g1"

    found = problems(mutate)
    assert len(found) == 1
    assert found[0][0] in (AT + ".mig.groups[0].name", "gpupool_cluster.pools[1] (gpu-h100).mig.config_name")
    assert "rename the group or give one pool its own mig.config_name" in found[0][1]


def test_groups_may_not_ask_for_more_nodes_than_the_nodegroup_has():
    def mutate(d):
        d["pools"][0]["mig"]["groups"].append({"name": "big", "nodes": 4, "layout": {"7g.40gb": 1}})

    found = problems(mutate)
    assert found == [
        (
            AT + ".mig.groups",
            "the MIG groups ask for 5 node(s) but the nodegroup has node_count 4; lower the groups' nodes or raise "
            "nodegroup.node_count (the nodes no group takes carry mig.layout)",
        )
    ]


def test_prefer_entries_must_be_node_names():
    found = problems(lambda d: group(d).update(prefer=["node-1", "Node_2"]))
    assert [p for p, _m in found] == [AT + ".mig.groups[0].prefer[1]"]


def test_every_message_line_is_at_most_200_characters():
    def mutate(d):
        group(d).update(name="x" * 50, layout={"4g.20gb": 1, "3g.20gb": 2}, prefer=["Bad_Name"])
        d["pools"][0]["mig"]["groups"].append({"nodes": 9, "layout": {"7g.40gb": 1}, "layouts": {0: {}}})

    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(data)
    assert len(err.value.problems) >= 4
    rendered = err.value.render()
    assert max(len(line) for line in rendered.splitlines()) <= 200, rendered


def test_device_classes_cover_the_groups_profiles():
    pool = load().pools[0]
    assert pool_mig_profiles(pool) == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert [c.profile for c in device_class_names(pool) if c.role == "mig"] == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert not pool_has_full_gpus(pool)


def test_a_group_keeping_a_gpu_whole_gives_the_pool_a_full_gpu_class():
    def mutate(d):
        group(d).pop("layout")
        group(d)["layouts"] = {0: {"1g.5gb": 7}}

    pool = load(mutate).pools[0]
    assert pool_has_full_gpus(pool)
    assert [c.role for c in device_class_names(pool)][0] == "gpu"


def test_a_pool_without_groups_is_unchanged():
    def mutate(d):
        d["pools"][0]["mig"].pop("groups")

    cluster = load(mutate)
    assert pool_mig_profiles(cluster.pools[0]) == ["3g.20gb", "2g.10gb"]
    assert sorted(cluster_mig_parted_config(cluster)["mig-configs"]) == [
        "all-disabled",
        "gpupool-gpu-a100",
        "gpupool-gpu-h100",
    ]
