"""Tenants in the model: gpupool_cluster.tenants validated with key paths and fixes, and built into templates.

Every refusal starts from a valid inventory and breaks one thing; the builder (plan/objects/claim_templates.py) is fed
from the same model entries, so what validate accepts is what the role converges.
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import gates as model_gates
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import tenants as model_tenants
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import claim_templates as plan_claim_templates

BASE = {
    "name": "c1",
    "pools": [
        {"name": "gpu-t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {
            "name": "gpu-a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "gpu-h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB", "per_node": 4},
            "device_classes": {"extra": [{"name": "h100-big", "min_memory": "79Gi"}]},
        },
    ],
    "tenants": [
        {
            "namespace": "team-a",
            "templates": [
                {"name": "one-t4", "pool": "gpu-t4"},
                {"name": "a100-slice", "pool": "gpu-a100", "mig_profile": "3g.20gb", "sharing": {"time_slicing": {}}},
                {
                    "name": "two-h100",
                    "pool": "gpu-h100",
                    "count": 2,
                    "match_attribute": "resource.kubernetes.io/pcieRoot",
                },
                {"name": "big-h100", "pool": "gpu-h100", "device_class": "h100-big"},
            ],
        },
        {"namespace": "team-b"},
    ],
}
A = "gpupool_cluster.tenants[0] (team-a)"


def load(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def problems(mutate):
    with pytest.raises(model_errors.Problems) as err:
        load(mutate)
    return err.value.problems


def template(index, **changes):
    def mutate(data):
        data["tenants"][0]["templates"][index].update(changes)

    return mutate


def test_valid_tenants_build_one_template_each_and_defaults_per_class():
    cluster = load()
    built = plan_claim_templates.tenant_claim_templates(cluster)
    names = [(d.obj["metadata"]["namespace"], d.obj["metadata"]["name"]) for d in built]
    assert names == [
        ("team-a", "one-t4"),
        ("team-a", "a100-slice"),
        ("team-a", "two-h100"),
        ("team-a", "big-h100"),
        # team-b: no templates key, so one per DeviceClass of every present pool
        ("team-b", "gpu-t4"),
        ("team-b", "gpu-a100-3g.20gb"),
        ("team-b", "gpu-a100-2g.10gb"),
        ("team-b", "gpu-h100"),
        ("team-b", "h100-big"),
    ]
    by_name = {d.obj["metadata"]["name"]: d for d in built if d.obj["metadata"]["namespace"] == "team-a"}
    two = by_name["two-h100"].obj["spec"]["spec"]["devices"]
    assert two["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu-h100", "allocationMode": "ExactCount", "count": 2}}
    ]
    assert two["constraints"] == [{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    slice_config = by_name["a100-slice"].obj["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert slice_config == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "MigDeviceConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }
    assert by_name["big-h100"].obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "h100-big"
    assert by_name["one-t4"].origin == A + ".templates[0] (one-t4)"
    assert by_name["one-t4"].obj["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpupool",
        "gpupool.io/pool": "gpu-t4",
        "gpupool.io/owner": "c1",
    }


def test_pool_scope_limits_what_is_built():
    built = plan_claim_templates.tenant_claim_templates(load(), ["gpu-t4"])
    assert [(d.obj["metadata"]["namespace"], d.obj["metadata"]["name"]) for d in built] == [
        ("team-a", "one-t4"),
        ("team-b", "gpu-t4"),
    ]


def test_no_tenants_key_builds_nothing_and_empty_list_is_declared():
    assert load(lambda d: d.pop("tenants")).tenants is None
    assert plan_claim_templates.tenant_claim_templates(load(lambda d: d.pop("tenants"))) == []
    cluster = load(lambda d: d.update(tenants=[]))
    assert cluster.tenants == [] and plan_claim_templates.tenant_claim_templates(cluster) == []
    assert (
        plan_claim_templates.tenant_claim_templates(load(lambda d: d["tenants"][0].update(templates=[])))[0].obj[
            "metadata"
        ]["namespace"]
        == "team-b"
    )


@pytest.mark.parametrize(
    "mutate, path, message",
    [
        (
            template(0, pool="gpu-v100"),
            A + ".templates[0] (one-t4).pool",
            "pool 'gpu-v100' not in gpupool_cluster.pools; known pools: gpu-a100, gpu-h100, gpu-t4",  # closest first
        ),
        (
            template(1, mig_profile="1g.5gb"),
            A + ".templates[1] (a100-slice).mig_profile",
            "pool gpu-a100 publishes no DeviceClass for MIG profile '1g.5gb' (its MIG mode is static); add the profile to "
            "the pool's mig.layout or name a device_class",
        ),
        (
            template(1, mig_profile="3g.40gb"),
            A + ".templates[1] (a100-slice).mig_profile",
            "pool gpu-a100: A100-40GB has no MIG profile '3g.40gb' (that name belongs to A100-80GB, H100-80GB; here "
            "the same slice count is 3g.20gb); it has 3g.20gb, 7g.40gb, 1g.10gb, 2g.10gb, 4g.20gb, 1g.5gb, 1g.5gb+me",
        ),
        (
            template(3, device_class="gpu-t4"),
            A + ".templates[3] (big-h100).device_class",
            "pool gpu-h100 publishes no DeviceClass 'gpu-t4'; its classes: gpu-h100, h100-big",
        ),
        (
            template(3, mig_profile="1g.10gb"),
            A + ".templates[3] (big-h100)",
            "give device_class or mig_profile, not both",
        ),
        (
            template(1, mig_profile=None),
            A + ".templates[1] (a100-slice)",
            "pool gpu-a100 publishes no full-GPU DeviceClass (MIG layout on every GPU, or device_classes.defaults: false); "
            "give mig_profile or device_class",
        ),
        (
            template(0, name="One_T4"),
            A + ".templates[0] (One_T4).name",
            "'One_T4' is not a valid ResourceClaimTemplate name (at most 253 characters of lowercase letters, digits, '-' "
            "and '.', each dot-separated part starting and ending with a letter or digit)",
        ),
        (
            template(3, name="two-h100"),
            A + ".templates[3] (two-h100).name",
            "template team-a/two-h100 is also defined by %s.templates[2] (two-h100); template names are unique in a "
            "namespace, rename one" % A,
        ),
        (
            template(1, sharing={"time_slicing": {"interval": "Long"}}),
            A + ".templates[1] (a100-slice).sharing.time_slicing.interval",
            "interval 'Long' cannot apply to MIG devices (class gpu-a100-3g.20gb): the DRA driver's MigDeviceConfig has no "
            "timeSlicingConfig, so it would be dropped silently; remove interval",
        ),
        (
            template(0, sharing={"time_slicing": {}, "mps": {}}),
            A + ".templates[0] (one-t4).sharing",
            "time_slicing and mps cannot be used together; keep one",
        ),
        (
            template(2, allocation_mode="All"),
            A + ".templates[2] (two-h100).count",
            "count applies to allocation_mode ExactCount; with All the claim gets every matching device of the node: remove "
            "count or use ExactCount",
        ),
        (
            lambda d: d["pools"][0].update(state="absent"),
            A + ".templates[0] (one-t4).pool",
            "pool gpu-t4 is absent (state: absent), so its DeviceClasses are deleted and no claim from this template could "
            "be allocated; remove the template or move it to another pool",
        ),
        (
            lambda d: d["tenants"][1].update(namespace="Team_B"),
            "gpupool_cluster.tenants[1] (Team_B).namespace",
            "'Team_B' is not a valid namespace name (at most 63 lowercase letters, digits and '-', starting and ending with "
            "a letter or digit)",
        ),
        (
            lambda d: d["tenants"][1].update(namespace="team-a"),
            "gpupool_cluster.tenants[1] (team-a).namespace",
            "namespace team-a is also %s; list its templates under one entry" % A,
        ),
    ],
)
def test_each_tenant_problem_has_its_path_and_a_fix(mutate, path, message):
    assert problems(mutate) == [(path, message)]


@pytest.mark.parametrize(
    "mutate, path, start",
    [
        (template(0, count=0), A + ".templates[0] (one-t4).count", "must be 1 or more; got a whole number 0"),
        (template(0, counts=2), A + ".templates[0] (one-t4).counts", "unknown key 'counts'; did you mean 'count'?"),
        (
            template(0, match_attribute="not a key!"),
            A + ".templates[0] (one-t4).match_attribute",
            "'not a key!' is not a qualified attribute name such as resource.kubernetes.io/pcieRoot",
        ),
        (
            lambda d: d["tenants"][0]["templates"][0].pop("pool"),
            A + ".templates[0] (one-t4).pool",
            "required key is missing",
        ),
        (
            lambda d: d["tenants"].append({"templates": []}),
            "gpupool_cluster.tenants[2].namespace",
            "required key is missing",
        ),
        (
            lambda d: d.update(tenants={"team-a": []}),
            "gpupool_cluster.tenants",
            "must be a list, e.g. `tenants: [{namespace: team-a, templates: [{name: one-t4, pool: gpu-t4}]}]`",
        ),
    ],
)
def test_shape_problems_name_the_template(mutate, path, start):
    (found,) = problems(mutate)
    assert found[0] == path and found[1].startswith(start), found


def test_template_sharing_needs_the_driver_gates_and_they_conflict_with_dynamic_mig():
    gates = model_gates.derived_gates(load(template(0, sharing={"mps": {}})))
    assert gates["MPSSupport"] == ["tenants[0] (team-a).templates[0] (one-t4).sharing.mps"]
    assert gates["TimeSlicingSettings"] == ["tenants[0] (team-a).templates[1] (a100-slice).sharing.time_slicing"]

    def dynamic(data):
        data["pools"][1]["mig"] = {"mode": "dynamic"}
        data["pools"][2]["gpu"]["model"] = "L4"  # no MIG: dynamic MIG on the A100s may live beside it
        data["tenants"][0]["templates"][0]["sharing"] = {"mps": {}}
        data["tenants"][0]["templates"][1]["sharing"] = None
        data["tenants"][0]["templates"][2:] = []

    (found,) = problems(dynamic)
    assert found[0] == "gpupool_cluster.dra_driver.feature_gates"
    assert "MPSSupport (from tenants[0] (team-a).templates[0] (one-t4).sharing.mps)" in found[1]
    assert "DynamicMIG (from pools[1] (gpu-a100).mig.mode)" in found[1]


def test_module_options_become_the_same_entries():
    cluster = load()
    entries, problems_found = model_tenants.option_entries(
        cluster,
        ["ns-a", "ns-b"],
        [
            {"name": "x", "pool": "gpu-t4", "count": 2, "mig_profile": None},
            {"name": "y", "pool": "gpu-h100", "namespaces": ["ns-c"]},
        ],
    )
    assert problems_found == []
    assert [(e.namespace, e.template.name, e.template.count, e.at) for e in entries] == [
        ("ns-a", "x", 2, "templates[0]"),
        ("ns-b", "x", 2, "templates[0]"),
        ("ns-c", "y", 1, "templates[1]"),
    ]
    _entries, problems_found = model_tenants.option_entries(
        cluster, ["Bad_NS"], [{"name": "x", "pool": "gpu-t4", "cuont": 1}]
    )
    assert problems_found[0][0] == "namespaces" and "'Bad_NS' is not a valid namespace name" in problems_found[0][1]
    assert problems_found[1] == (
        "templates[0].cuont",
        "unknown key 'cuont'; did you mean 'count'? Allowed here: count, allocation_mode, match_attribute and 5 more "
        "below.\nkeys allowed here (8, closest first): count, allocation_mode, match_attribute, name, pool, sharing, "
        "mig_profile,\ndevice_class",
    )


def test_a_broken_pool_is_one_problem_not_a_second_one_for_its_tenants():
    """A pool that fails validation is reported once, at its own key; the tenants' templates that name it are not
    also told that the pool is unknown (it is declared, only broken)."""
    data = copy.deepcopy(BASE)
    data["pools"][0]["gpu"] = "T4"
    with pytest.raises(model_errors.Problems) as caught:
        model_load.load_cluster(data)
    assert [path for path, _message in caught.value.problems] == ["gpupool_cluster.pools[0] (gpu-t4).gpu"]
