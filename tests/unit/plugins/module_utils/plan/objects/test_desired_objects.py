"""Pure builders (pool model -> Kubernetes objects) and the apply engine's pure comparison helpers.

No I/O and no test-bed import: runs under pytest and `ansible-test units`.
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s import apply_engine as k8s_apply_engine
from ansible_collections.gpupool.core.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, resolve_params
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import inventory as model_inventory
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model import pool_settings as model_pool_settings
from ansible_collections.gpupool.core.plugins.module_utils.plan import kinds as plan_kinds
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import pool_nodes as plan_nodes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import cel as plan_cel
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import claim_templates as plan_claim_templates
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import compute_domains as plan_compute_domains
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import device_classes as plan_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import driver_config as plan_driver_config
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import ownership as plan_ownership
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import ssa_compare as plan_ssa_compare

ATTR = "device.attributes['gpu.nvidia.com']"
BASE = {
    "name": "c1",
    "pools": [
        {
            "name": "t4",
            "node_selector": {"nvidia.com/gpu.product": "Tesla-T4"},
            "gpu": {"model": "T4"},
            "sharing": {"time_slicing": {"interval": "Medium"}},
        },
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB", "per_node": 4},
            "device_classes": {
                "extra": [
                    {
                        "name": "h100-big",
                        "min_memory": "80Gi",
                        "selectors": ["device.attributes['gpu.nvidia.com'].brand == 'Nvidia'"],
                    }
                ]
            },
        },
        {
            "name": "gb200",
            "node_selector": {"gpu": "gb200"},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"name": "gb200-domain", "namespace": "ml"}},
        },
    ],
}


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def pool(data):
    base = {"name": "p", "node_selector": {"a": "b"}, "gpu": {"model": "A100-40GB"}}
    base.update(data)
    # allow_empty: a lone absent pool is a cluster whose gpupool objects are all to be removed
    return model_load.load_cluster({"name": "c", "allow_empty": True, "pools": [base]}).pools[0]


def shape_only(data):
    """A cluster validated for shape only, as a module that skipped load_cluster's semantic checks would hold it."""
    return model_inventory.Cluster.model_validate(data)


def classes(c, pools=None, **kw):
    return {d.obj["metadata"]["name"]: d for d in plan_device_classes.cluster_device_classes(c, pools, **kw)}


def exprs(d):
    return [s["cel"]["expression"] for s in d.obj["spec"]["selectors"]]


# ---- DeviceClasses ------------------------------------------------------------------------------------


def test_full_gpu_class_with_time_slicing():
    d = classes(cluster())["t4"]
    assert d.obj["apiVersion"] == "resource.k8s.io/v1" and d.obj["kind"] == "DeviceClass"
    assert d.obj["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpupool",
        "gpupool.io/pool": "t4",
        "gpupool.io/owner": "c1",
    }
    assert exprs(d) == [
        "device.driver == 'gpu.nvidia.com' && %s.type == 'gpu' && %s.productName == 'Tesla T4'" % (ATTR, ATTR)
    ]
    assert d.obj["spec"]["config"] == [
        {
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "GpuConfig",
                    "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}},
                },
            }
        }
    ]
    assert "extendedResourceName" not in d.obj["spec"]
    assert d.info["role"] == "gpu" and d.pool == "t4" and d.origin == "gpupool_cluster.pools[0]"


def test_static_mig_classes_one_per_profile_and_no_full_gpu_class():
    got = classes(cluster(), ["a100"])
    assert sorted(got) == ["a100-2g.10gb", "a100-3g.20gb"]
    d = got["a100-3g.20gb"]
    assert exprs(d) == [
        "device.driver == 'gpu.nvidia.com' && %s.type == 'mig' && %s.profile == '3g.20gb' && "
        "%s.productName in ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-PCIE-40GB']" % (ATTR, ATTR, ATTR)
    ]
    assert "config" not in d.obj["spec"]
    assert d.info == {"role": "mig", "profile": "3g.20gb", "selector_origins": ["gpupool_cluster.pools[1].mig"]}


def test_per_gpu_layouts_union_profiles_and_full_gpu_for_gpus_without_layout():
    p = pool({"gpu": {"model": "A100-40GB", "per_node": 2}, "mig": {"mode": "static", "layouts": {0: {"1g.5gb": 7}}}})
    names = [d.obj["metadata"]["name"] for d in plan_device_classes.pool_device_classes(p)]
    assert names == ["p", "p-1g.5gb"]
    p = pool(
        {
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {
                "mode": "static",
                "layouts": {
                    0: {"1g.5gb": 7},
                    1: {
                        "7g.40gb": 1,
                    },
                },
            },
        }
    )
    assert [d.obj["metadata"]["name"] for d in plan_device_classes.pool_device_classes(p)] == ["p-1g.5gb", "p-7g.40gb"]


def test_dynamic_mig_has_every_profile_plus_full_gpus_and_plus_me_is_dns_safe():
    names = [
        d.obj["metadata"]["name"] for d in plan_device_classes.pool_device_classes(pool({"mig": {"mode": "dynamic"}}))
    ]
    assert names == ["p", "p-1g.5gb", "p-1g.5gb-me", "p-1g.10gb", "p-2g.10gb", "p-3g.20gb", "p-4g.20gb", "p-7g.40gb"]
    me = [
        d
        for d in plan_device_classes.pool_device_classes(pool({"mig": {"mode": "dynamic"}}))
        if d.info["profile"] == "1g.5gb+me"
    ][0]
    assert "profile == '1g.5gb+me'" in exprs(me)[0]


def test_mig_sharing_uses_mig_device_config_without_interval():
    p = pool({"mig": {"mode": "static", "layout": {"7g.40gb": 1}}, "sharing": {"time_slicing": {}}})
    (d,) = plan_device_classes.pool_device_classes(p)
    assert d.obj["spec"]["config"][0]["opaque"]["parameters"] == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "MigDeviceConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }


@pytest.mark.parametrize(
    "mps,expected",
    [
        ({}, {"strategy": "MPS"}),
        ({"active_thread_percentage": 50}, {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}),
        (
            {"active_thread_percentage": 0, "pinned_memory_limit": "10Gi"},
            {
                "strategy": "MPS",
                "mpsConfig": {"defaultActiveThreadPercentage": 0, "defaultPinnedDeviceMemoryLimit": "10Gi"},
            },
        ),
    ],
)
def test_mps_parameters(mps, expected):
    (d,) = plan_device_classes.pool_device_classes(pool({"gpu": {"model": "T4"}, "sharing": {"mps": mps}}))
    assert d.obj["spec"]["config"][0]["opaque"]["parameters"]["sharing"] == expected
    assert plan_driver_config.sharing_parameters(model_pool_settings.Sharing()) is None
    assert plan_driver_config.sharing_parameters(None) is None


def test_passthrough_adds_vfio_class():
    names = [
        d.obj["metadata"]["name"]
        for d in plan_device_classes.pool_device_classes(pool({"gpu": {"model": "L4"}, "passthrough": True}))
    ]
    assert names == ["p", "p-vfio"]
    vfio = plan_device_classes.pool_device_classes(pool({"gpu": {"model": "L4"}, "passthrough": True}))[1]
    assert "%s.type == 'vfio'" % ATTR in exprs(vfio)[0]


def test_extra_class_min_memory_and_user_selectors_with_origins():
    d = classes(cluster())["h100-big"]
    assert exprs(d)[1:] == [
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",
        "device.attributes['gpu.nvidia.com'].brand == 'Nvidia'",
    ]
    assert d.info["selector_origins"] == [
        "gpupool_cluster.pools[2].device_classes.extra[0]",
        "gpupool_cluster.pools[2].device_classes.extra[0].min_memory",
        "gpupool_cluster.pools[2].device_classes.extra[0].selectors[0]",
    ]
    assert "extendedResourceName" not in d.obj["spec"]


def test_extra_mig_class_and_extended_resource_name():
    p = pool(
        {
            "mig": {"mode": "static", "layout": {"3g.20gb": 2}},
            "device_classes": {
                "defaults": False,
                "extended_resource_names": True,
                "extra": [{"name": "mig3g", "mig_profile": "3g.20gb", "extended_resource_name": "example.com/mig-3g"}],
            },
        }
    )
    (d,) = plan_device_classes.pool_device_classes(p)
    assert d.obj["spec"]["extendedResourceName"] == "example.com/mig-3g"
    assert "%s.profile == '3g.20gb'" % ATTR in exprs(d)[0]


def test_generated_extended_resource_names():
    p = pool({"gpu": {"model": "T4"}, "device_classes": {"extended_resource_names": True}})
    (d,) = plan_device_classes.pool_device_classes(p)
    assert d.obj["spec"]["extendedResourceName"] == "gpupool.io/p"
    stripped = plan_device_classes.without_extended_resource_names([d])[0]
    assert "extendedResourceName" not in stripped.obj["spec"] and "extendedResourceName" in d.obj["spec"]


def test_unknown_gpu_model_uses_the_name_as_product():
    (d,) = plan_device_classes.pool_device_classes(
        pool({"gpu": {"model": "NVIDIA RTX 6000 Ada", "not_in_catalog": True}})
    )
    assert exprs(d)[0].endswith("productName == 'NVIDIA RTX 6000 Ada'")


def test_absent_pool_and_defaults_off_have_no_classes():
    assert plan_device_classes.pool_device_classes(pool({"state": "absent"})) == []
    assert plan_device_classes.pool_device_classes(pool({"device_classes": {"defaults": False}})) == []


def test_class_name_clash_across_pools_is_refused_by_the_model():
    """The builder trusts the model's check (it does not run it again): the model refuses the clash."""
    data = copy.deepcopy(BASE)
    data["pools"][2]["device_classes"]["extra"][0]["name"] = "t4"
    with pytest.raises(model_errors.Problems) as model_err:
        model_load.load_cluster(copy.deepcopy(data))
    assert model_err.value.problems == [
        (
            "gpupool_cluster.pools[2] (h100).device_classes.extra[0].name",
            "DeviceClass name 't4' is also generated by gpupool_cluster.pools[0] (t4); "
            "DeviceClass names are cluster-wide, rename one of them",
        )
    ]


def test_invalid_class_and_extended_resource_names():
    data = copy.deepcopy(BASE)
    data["pools"][2]["device_classes"]["extra"][0].update(name="Big_H100", extended_resource_name="kubernetes.io/x")
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(data)
    text = str(err.value)
    assert "'Big_H100' is not a valid DeviceClass name" in text
    assert "'kubernetes.io/x' is not a valid extended resource name" in text


def test_pool_scope_and_unknown_pool():
    assert sorted(classes(cluster(), ["t4", "h100"])) == ["h100", "h100-big", "t4"]
    with pytest.raises(model_errors.Problems) as err:
        plan_device_classes.cluster_device_classes(cluster(), ["nope"])
    assert "pool(s) 'nope' not in gpupool_cluster.pools; known pools: t4, a100, h100, gb200" in str(err.value)


def test_other_resource_api_versions():
    d = classes(cluster(), ["t4"], api_version="resource.k8s.io/v1beta1")["t4"]
    assert d.obj["apiVersion"] == "resource.k8s.io/v1beta1"


def test_cel_helpers():
    assert plan_cel.cel_string("it's a \\ test") == "'it\\'s a \\\\ test'"
    assert (
        plan_cel.semver("9.0") == "9.0.0" and plan_cel.semver("10") == "10.0.0" and plan_cel.semver("8.6.1") == "8.6.1"
    )
    with pytest.raises(model_errors.Problems) as err:  # the model refuses what semver() could not pad
        cluster(lambda d: d["pools"][2]["device_classes"]["extra"][0].update(min_compute_capability="nine"))
    assert "'nine' is not a compute capability such as 8.0 or 9.0" in str(err.value)
    assert plan_cel.cel_min_compute_capability("9.0") == (
        "%s.cudaComputeCapability.compareTo(semver('9.0.0')) >= 0" % ATTR
    )
    assert model_names.dns_safe("1g.5gb+me") == "1g.5gb-me"


# ---- ResourceClaimTemplates -------------------------------------------------------------------------------


def test_default_templates_one_per_class_per_namespace():
    out = plan_claim_templates.cluster_resource_claim_templates(cluster(), ["t4", "a100"], ["team-a", "team-b"])
    names = sorted((d.obj["metadata"]["namespace"], d.obj["metadata"]["name"]) for d in out)
    assert names == [(ns, n) for ns in ("team-a", "team-b") for n in ("a100-2g.10gb", "a100-3g.20gb", "t4")]
    t4 = [d for d in out if d.obj["metadata"]["name"] == "t4"][0].obj
    assert t4["spec"] == {
        "metadata": {"labels": {"gpupool.io/pool": "t4"}},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "t4", "allocationMode": "ExactCount", "count": 1}}
                ]
            }
        },
    }
    assert t4["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpupool"


def test_explicit_templates_count_constraint_sharing_and_mig_profile():
    templates = [
        {"name": "two", "pool": "h100", "count": 2, "match_attribute": "resource.kubernetes.io/pcieRoot"},
        {
            "name": "slice",
            "pool": "a100",
            "mig_profile": "3g.20gb",
            "sharing": {"time_slicing": {}},
            "namespaces": ["other"],
        },
        {"name": "all", "pool": "t4", "allocation_mode": "All", "sharing": {"mps": {"active_thread_percentage": 20}}},
    ]
    out = {
        d.obj["metadata"]["name"]: d.obj
        for d in plan_claim_templates.cluster_resource_claim_templates(cluster(), None, ["team-a"], templates)
    }
    two = out["two"]["spec"]["spec"]["devices"]
    assert two["requests"][0]["exactly"] == {"deviceClassName": "h100", "allocationMode": "ExactCount", "count": 2}
    assert two["constraints"] == [{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    sl = out["slice"]
    assert sl["metadata"]["namespace"] == "other"
    assert sl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "a100-3g.20gb"
    assert sl["spec"]["spec"]["devices"]["config"] == [
        {
            "requests": ["gpu"],
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "MigDeviceConfig",
                    "sharing": {"strategy": "TimeSlicing"},
                },
            },
        }
    ]
    alld = out["all"]["spec"]["spec"]["devices"]
    assert alld["requests"][0]["exactly"] == {"deviceClassName": "t4", "allocationMode": "All"}
    assert alld["config"][0]["opaque"]["parameters"]["kind"] == "GpuConfig"


def test_v1beta1_templates_are_flat():
    obj = plan_claim_templates.resource_claim_template("x", "ns", "p", "cls", "resource.k8s.io/v1beta1", count=3)
    assert obj["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "cls", "allocationMode": "ExactCount", "count": 3}
    ]
    obj = plan_claim_templates.resource_claim_template("x", "ns", "p", "cls", "resource.k8s.io/v1beta2")
    assert "exactly" in obj["spec"]["spec"]["devices"]["requests"][0]


def test_templates_built_once_are_spelled_as_the_served_version():
    """The step builds its templates once (v1) before any request, then spells them as discovery says."""
    built = [Desired(plan_claim_templates.resource_claim_template("x", "ns", "p", "cls", count=3), "p", "at", {})]
    flat = plan_claim_templates.in_served_version(built, "resource.k8s.io/v1beta1")
    assert flat[0].obj == plan_claim_templates.resource_claim_template(
        "x", "ns", "p", "cls", "resource.k8s.io/v1beta1", 3
    )
    assert plan_claim_templates.in_served_version(built, "resource.k8s.io/v1")[0].obj == built[0].obj
    assert "exactly" in built[0].obj["spec"]["spec"]["devices"]["requests"][0]  # the build itself is left as it was


@pytest.mark.parametrize(
    "template,message",
    [
        ({"name": "x", "pool": "nope"}, "pool 'nope' not in gpupool_cluster.pools"),
        ({"name": "x", "pool": "a100"}, "pool a100 publishes no full-GPU DeviceClass"),
        ({"name": "x", "pool": "a100", "mig_profile": "1g.5gb"}, "pool a100 publishes no DeviceClass for MIG profile"),
        ({"name": "x", "pool": "a100", "mig_profile": "9g.1tb"}, "has no MIG profile '9g.1tb'"),
        ({"name": "x", "pool": "t4", "sharing": {"time_slicing": {"interval": "Forever"}}}, "templates[0].sharing"),
        ({"name": "x", "pool": "t4", "sharing": {"time_slicing": {}, "mps": {}}}, "cannot be used together"),
        ({"name": "x", "pool": "t4", "match_attribute": "not a key!"}, "not a qualified attribute name"),
        ({"name": "x", "pool": "t4", "device_class": "a", "mig_profile": "b"}, "not both"),
    ],
)
def test_template_problems(template, message):
    with pytest.raises(model_errors.Problems) as err:
        plan_claim_templates.cluster_resource_claim_templates(cluster(), None, ["team-a"], [template])
    assert message in str(err.value)


def test_duplicate_template_and_missing_namespace():
    with pytest.raises(model_errors.Problems) as err:
        plan_claim_templates.cluster_resource_claim_templates(
            cluster(), None, ["a"], [{"name": "x", "pool": "t4"}, {"name": "x", "pool": "h100"}]
        )
    assert "template a/x is also defined by templates[0]" in str(err.value)
    with pytest.raises(model_errors.Problems) as err:
        plan_claim_templates.cluster_resource_claim_templates(cluster(), None, [], [{"name": "x", "pool": "t4"}])
    assert "no namespace" in str(err.value)
    with pytest.raises(model_errors.Problems):
        plan_claim_templates.cluster_resource_claim_templates(cluster(), None, ["Bad_NS"])


def test_templates_skip_pools_out_of_scope():
    out = plan_claim_templates.cluster_resource_claim_templates(
        cluster(), ["t4"], ["a"], [{"name": "x", "pool": "h100"}]
    )
    assert out == []


# ---- ComputeDomains --------------------------------------------------------------------------------------


def test_compute_domain():
    (d,) = plan_compute_domains.cluster_compute_domains(cluster())
    assert d.obj == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {
            "name": "gb200-domain",
            "namespace": "ml",
            "labels": {"app.kubernetes.io/managed-by": "gpupool", "gpupool.io/pool": "gb200", "gpupool.io/owner": "c1"},
        },
        "spec": {"channel": {"resourceClaimTemplate": {"name": "gb200-domain-channel"}, "allocationMode": "Single"}},
    }
    assert d.origin == "gpupool_cluster.pools[3].nvlink.compute_domain"
    assert plan_compute_domains.cluster_compute_domains(cluster(), ["t4"]) == []


def test_compute_domain_defaults_and_clash():
    def two(data):
        data["pools"][3]["nvlink"]["compute_domain"] = {"channel_template": "ch", "allocation_mode": "All"}
        extra = copy.deepcopy(data["pools"][3])
        extra["name"] = "gb200b"
        extra["nvlink"]["compute_domain"] = {"name": "gb200"}
        data["pools"].append(extra)

    data = copy.deepcopy(BASE)
    two(data)
    with pytest.raises(model_errors.Problems) as model_err:
        model_load.load_cluster(copy.deepcopy(data))
    assert model_err.value.problems == [
        (
            "gpupool_cluster.pools[4] (gb200b).nvlink.compute_domain.name",
            "ComputeDomain default/gb200 is also wanted by gpupool_cluster.pools[3] (gb200).nvlink.compute_domain; "
            "give each pool its own compute_domain.name",
        )
    ]
    c = cluster(lambda d: d["pools"][3]["nvlink"].update(compute_domain={"allocation_mode": "All"}))
    (d,) = plan_compute_domains.cluster_compute_domains(c, api_version="resource.nvidia.com/v1beta2")
    assert d.obj["metadata"]["name"] == "gb200" and d.obj["metadata"]["namespace"] == "default"
    assert d.obj["spec"]["channel"] == {"resourceClaimTemplate": {"name": "gb200-channel"}, "allocationMode": "All"}
    assert d.obj["apiVersion"] == "resource.nvidia.com/v1beta2"


# ---- Nodes ------------------------------------------------------------------------------------------------


def node(name, labels=None, ready=True, taints=None, annotations=None):
    return {
        "metadata": {
            "name": name,
            "uid": "uid-" + name,
            "resourceVersion": "1",
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {"taints": taints} if taints is not None else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def magnum_cluster():
    return model_load.load_cluster(
        {
            "name": "c",
            "magnum": {"cloud": "o", "cluster": "k"},
            "pools": [
                {"name": "t4", "nodegroup": {"flavor": "f"}, "gpu": {"model": "T4"}},
                {
                    "name": "a100",
                    "nodegroup": {"flavor": "f", "name": "ng-a100"},
                    "gpu": {"model": "A100-40GB"},
                    "node_labels": {"team": "ml"},
                    "gpu_taint": False,
                    "taints": [{"key": "example.com/dedicated", "value": "ml", "effect": "NoExecute"}],
                },
                {"name": "sel", "node_selector": {"hw": "l4"}, "gpu": {"model": "L4"}},
            ],
        }
    )


def test_assign_nodes_by_nodegroup_label_selector_and_name_pattern():
    c = magnum_cluster()
    nodes = [
        node("k-t4-0", {model_names.NODEGROUP_LABEL: "t4"}),
        node("k-ng-a100-0", {model_names.NODEGROUP_LABEL: "ng-a100"}),
        node("x", {"hw": "l4"}),
        node("k-ng-a100-1"),
        node("other"),
    ]
    got = plan_nodes.assign_nodes(c.pools, nodes)
    assert {k: [n["metadata"]["name"] for n in v] for k, v in got.items()} == {
        "t4": ["k-t4-0"],
        "a100": ["k-ng-a100-0"],
        "sel": ["x"],
    }
    got = plan_nodes.assign_nodes(c.pools, nodes, name_pattern=r"-{nodegroup}-\d+$")
    assert [n["metadata"]["name"] for n in got["a100"]] == ["k-ng-a100-0", "k-ng-a100-1"]
    m = plan_nodes.node_matcher(c.pools[1], name_pattern=r"-{nodegroup}-\d+$")
    assert m.describe == "magnum.openstack.org/nodegroup=ng-a100 or name ~ /-ng\\-a100-\\d+$/"


def test_node_in_two_pools_and_pool_without_selector():
    c = magnum_cluster()
    with pytest.raises(model_errors.Problems) as err:
        plan_nodes.assign_nodes(c.pools, [node("n", {model_names.NODEGROUP_LABEL: "t4", "hw": "l4"})])
    assert "node n matches pools t4 and sel" in str(err.value)
    bare = shape_only({"name": "c", "pools": [{"name": "p", "gpu": {"model": "T4"}}]}).pools[0]
    with pytest.raises(model_errors.Problems) as err:
        plan_nodes.node_matcher(bare)
    assert "has neither a nodegroup nor a node_selector, so its nodes cannot be found" in str(err.value)
    assert "or give the module a name_pattern" in str(err.value)
    assert plan_nodes.node_matcher(bare, name_pattern="^{pool}-")(node("p-1"))


def test_gpu_present_label_only_without_nfd_or_gfd():
    c = magnum_cluster()
    t4 = c.pools[0]
    assert plan_nodes.desired_node_labels(t4, node("n")) == {"gpupool.io/pool": "t4", "nvidia.com/gpu.present": "true"}
    nfd = node("n", {"feature.node.kubernetes.io/pci-10de.present": "true"})
    assert "nvidia.com/gpu.present" not in plan_nodes.desired_node_labels(t4, nfd)
    gfd = node("n", {"nvidia.com/gpu.present": "true"})
    assert "nvidia.com/gpu.present" not in plan_nodes.desired_node_labels(t4, gfd)
    # ...but when gpupool set it itself, it keeps it.
    assert (
        plan_nodes.desired_node_labels(t4, gfd, owned_label_keys={"nvidia.com/gpu.present"})["nvidia.com/gpu.present"]
        == "true"
    )
    assert "nvidia.com/gpu.present" not in plan_nodes.desired_node_labels(t4, node("n"), set_gpu_present=False)
    assert plan_nodes.desired_node_labels(c.pools[1], node("n"))["team"] == "ml"


def test_desired_taints():
    c = magnum_cluster()
    assert plan_nodes.desired_node_taints(c.pools[0]) == [
        {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
    ]
    assert plan_nodes.desired_node_taints(c.pools[1]) == [
        {"key": "example.com/dedicated", "value": "ml", "effect": "NoExecute"}
    ]
    assert plan_nodes.taints_annotation(plan_nodes.desired_node_taints(c.pools[1])) == "example.com/dedicated:NoExecute"


GPU = {"key": "node-role.kubernetes.io/gpu", "value": "true", "effect": "NoSchedule"}
OTHER = {"key": "other", "value": "x", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "live,ours,desired,expected,changed",
    [
        ([], set(), [GPU], [GPU], True),
        ([OTHER], set(), [GPU], [OTHER, GPU], True),
        ([OTHER, GPU], {"node-role.kubernetes.io/gpu:NoSchedule"}, [GPU], [OTHER, GPU], False),
        ([GPU, OTHER], {"node-role.kubernetes.io/gpu:NoSchedule"}, [], [OTHER], True),  # ours removed
        ([OTHER], {"other:NoSchedule"}, [], [], True),  # recorded as ours: removed
        ([dict(GPU, value="false")], set(), [GPU], [GPU], True),  # value updated in place
        (
            [{"key": "k", "effect": "NoExecute", "timeAdded": "t"}],
            set(),
            [{"key": "k", "value": "", "effect": "NoExecute"}],
            [{"key": "k", "effect": "NoExecute", "timeAdded": "t"}],
            False,
        ),
    ],
)
def test_merge_taints(live, ours, desired, expected, changed):
    assert plan_nodes.merge_taints(live, ours, desired) == (expected, changed)


def test_recorded_taints_and_readiness():
    n = node("n", annotations={model_names.TAINTS_ANNOTATION: "a:NoSchedule,b:NoExecute"}, ready=False)
    assert plan_nodes.recorded_taints(n) == ["a:NoSchedule", "b:NoExecute"]
    assert (
        not plan_nodes.node_ready(n)
        and plan_nodes.node_ready(node("m"))
        and not plan_nodes.node_ready({"metadata": {}})
    )
    assert plan_nodes.node_schedulable(n)


def test_ownership_helpers():
    assert plan_ownership.owned_selector() == "app.kubernetes.io/managed-by=gpupool"
    assert plan_ownership.owned_selector(["b", "a"]) == "app.kubernetes.io/managed-by=gpupool,gpupool.io/pool in (a,b)"
    assert plan_ownership.is_owned({"metadata": {"labels": plan_ownership.ownership_labels("x")}})
    assert not plan_ownership.is_owned({"metadata": {}})
    assert plan_ownership.pool_of({"metadata": {"labels": plan_ownership.ownership_labels("x")}}) == "x"
    assert (
        plan_kinds.DEVICE_CLASS.api_version("v1") == "resource.k8s.io/v1" and plan_kinds.NODE.api_version("v1") == "v1"
    )


# ---- engine: pure comparison helpers ------------------------------------------------------------------------

LIVE_DC = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {
        "name": "t4",
        "uid": "u",
        "resourceVersion": "7",
        "generation": 1,
        "creationTimestamp": "x",
        "labels": {"app.kubernetes.io/managed-by": "gpupool", "gpupool.io/pool": "t4", "extra": "by-someone"},
        "managedFields": [
            {
                "manager": "gpupool",
                "operation": "Apply",
                "apiVersion": "resource.k8s.io/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:gpupool.io/pool": {}}},
                    "f:spec": {"f:selectors": {}, "f:config": {}},
                },
            },
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:extra": {}}}}},
        ],
    },
    "spec": {
        "selectors": [{"cel": {"expression": "a"}}],
        "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}}}],
    },
}


def desired_dc(**spec):
    s = {
        "selectors": [{"cel": {"expression": "a"}}],
        "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}}}],
    }
    s.update(spec)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "t4", "labels": plan_ownership.ownership_labels("t4")},
        "spec": {k: v for k, v in s.items() if v is not None},
    }


def test_needs_apply_no_change_ignores_server_fields_and_others_labels():
    assert plan_ssa_compare.needs_apply(desired_dc(), LIVE_DC) == (False, [])


def test_needs_apply_detects_value_change_and_dropped_field():
    assert plan_ssa_compare.needs_apply(desired_dc(selectors=[{"cel": {"expression": "b"}}]), LIVE_DC) == (
        True,
        ["spec.selectors[0].cel.expression differs"],
    )
    assert plan_ssa_compare.needs_apply(desired_dc(config=None), LIVE_DC) == (True, ["spec.config no longer set"])
    assert plan_ssa_compare.needs_apply(desired_dc(extendedResourceName="gpupool.io/t4"), LIVE_DC) == (
        True,
        ["spec.extendedResourceName differs"],
    )
    assert plan_ssa_compare.needs_apply(desired_dc(), None) == (True, ["does not exist"])


def test_needs_apply_node_labels_release():
    live = {
        "metadata": {
            "name": "n",
            "uid": "u",
            "labels": {"a": "1", "b": "2"},
            "managedFields": [
                {
                    "manager": "gpupool",
                    "operation": "Apply",
                    "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}}},
                }
            ],
        }
    }
    want = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "u", "labels": {"a": "1"}}}
    assert plan_ssa_compare.needs_apply(want, live) == (True, ["metadata.labels.b no longer set"])
    want["metadata"]["labels"]["b"] = "2"
    assert plan_ssa_compare.needs_apply(want, live) == (False, [])
    assert plan_ssa_compare.owned_label_keys(live) == {"a", "b"}


def test_differences_semantics():
    assert plan_ssa_compare.differences({"a": 1}, {"a": 1.0, "b": 2}) == []
    assert plan_ssa_compare.differences({"a": True}, {"a": 1}) == [".a"]
    assert plan_ssa_compare.differences({"l": [{"x": 1}]}, {"l": [{"x": 1, "default": 0}]}) == []
    assert plan_ssa_compare.differences({"l": [{"x": 1}]}, {"l": [{"x": 1}, {"x": 2}]}) == [".l"]
    assert plan_ssa_compare.differences({"e": {}}, {}) == []
    assert plan_ssa_compare.differences({"e": None}, {"e": 1}) == [".e"]
    assert plan_ssa_compare.differences({"d": {"x": 1}}, {"d": "s"}) == [".d"]


def test_fields_v1_paths_stop_at_list_items():
    fields = {
        "f:spec": {
            "f:taints": {},
            "f:podCIDRs": {".": {}, 'v:"10.0.0.0/24"': {}},
            "f:x": {'k:{"name":"a"}': {".": {}, "f:name": {}}},
        }
    }
    assert plan_ssa_compare.fields_v1_paths(fields) == {
        ("spec",),
        ("spec", "taints"),
        ("spec", "podCIDRs"),
        ("spec", "x"),
    }


def test_strip_and_node_view():
    s = plan_ssa_compare.strip(LIVE_DC)
    assert set(s["metadata"]) == {"name", "labels"}
    assert plan_ssa_compare.strip(None) is None
    assert "status" not in plan_ssa_compare.strip({"metadata": {}, "status": {"x": 1}}, keep_status=False)
    n = node("n", {"a": "1"}, taints=[GPU], annotations={model_names.TAINTS_ANNOTATION: "x", "other": "y"})
    assert plan_ssa_compare.node_view(n) == {
        "metadata": {"name": "n", "labels": {"a": "1"}, "annotations": {model_names.TAINTS_ANNOTATION: "x"}},
        "spec": {"taints": [GPU]},
    }


def test_conflict_message_names_the_other_manager():
    body = {
        "kind": "Status",
        "code": 409,
        "reason": "Conflict",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-edit" using resource.k8s.io/v1: '
        ".spec.selectors",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "field": ".spec.selectors",
                    "message": 'conflict with "kubectl-edit" using resource.k8s.io/v1',
                }
            ]
        },
    }
    err = Conflict(body["message"], status=409, body=body)
    assert k8s_apply_engine.conflict_owners(err) == [("kubectl-edit", ".spec.selectors")]
    msg = k8s_apply_engine.conflict_message("DeviceClass t4 (pool t4)", err)
    assert msg.startswith(
        "DeviceClass t4 (pool t4): server-side apply conflict: .spec.selectors owned by "
        "field manager 'kubectl-edit', not by 'gpupool'."
    )
    assert "force_conflicts: true" in msg
    # without structured causes, the message is parsed
    err = Conflict('Apply failed with 2 conflicts: conflict with "helm" using v1: .metadata.labels.x', status=409)
    assert k8s_apply_engine.conflict_owners(err) == [("helm", ".metadata.labels.x")]


def test_invalid_message_points_at_the_inventory_selector():
    body = {
        "code": 422,
        "message": 'DeviceClass.resource.k8s.io "x" is invalid',
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.selectors[2].cel.expression",
                    "message": 'Invalid value: "x ==": compilation failed',
                }
            ]
        },
    }
    err = K8sError(body["message"], status=422, body=body)
    msg = k8s_apply_engine.invalid_message(
        "DeviceClass h100-big", err, ["a", "b", "pools[2].device_classes.extra[0].selectors[0]"], "h100"
    )
    assert msg == (
        "DeviceClass h100-big (pool h100) was rejected by the API server: spec.selectors[2].cel.expression: "
        'Invalid value: "x ==": compilation failed (from pools[2].device_classes.extra[0].selectors[0])'
    )


def test_prune_scope():
    owned = {"metadata": {"name": "a", "namespace": "ns", "labels": plan_ownership.ownership_labels("t4")}}
    assert k8s_apply_engine.PruneScope().covers(owned)
    assert k8s_apply_engine.PruneScope(pools=["t4"], namespaces=["ns"]).covers(owned)
    assert not k8s_apply_engine.PruneScope(pools=["a100"]).covers(owned)
    assert not k8s_apply_engine.PruneScope(namespaces=["other"]).covers(owned)
    assert not k8s_apply_engine.PruneScope().covers({"metadata": {"name": "a", "labels": {"gpupool.io/pool": "t4"}}})


def test_result_shapes():
    r = k8s_apply_engine.Result("DeviceClass", "t4", None, "t4")
    r.before, r.after, r.changed, r.action = {}, {"a": 1}, True, "created"
    assert r.as_dict() == {"kind": "DeviceClass", "name": "t4", "action": "created", "changed": True, "pool": "t4"}
    assert r.diff()["before_header"] == "DeviceClass t4 (pool t4)"
    assert k8s_apply_engine.results_summary([r]) == {"created": 1}


def test_diff_leaves_out_api_version_and_kind():
    # A live object read from a LIST has no apiVersion/kind, the apply response has both: neither is a change.
    r = k8s_apply_engine.Result("DeviceClass", "t4", None, "t4")
    r.before = {"metadata": {"name": "t4"}, "spec": {"selectors": ["a"]}}
    r.after = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "t4"},
        "spec": {"selectors": ["b"]},
    }
    diff = r.diff()
    assert diff["before"] == {"metadata": {"name": "t4"}, "spec": {"selectors": ["a"]}}
    assert diff["after"] == {"metadata": {"name": "t4"}, "spec": {"selectors": ["b"]}}
    assert plan_ssa_compare.diff_view(None) == {} and plan_ssa_compare.diff_view({"kind": "X"}) == {}


def test_connection_options_order(monkeypatch):
    c = cluster(lambda d: d.update(kubeconfig="~/kc", context="ctx"))
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/env/kc")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "no")
    p = resolve_params({}, c)
    assert p["kubeconfig"].endswith("/kc") and not p["kubeconfig"].startswith("~") and p["context"] == "ctx"
    assert p["validate_certs"] is False and p["request_timeout"] == 30.0 and p["request_retries"] == 5
    assert resolve_params({"kubeconfig": "/opt/x"}, c)["kubeconfig"] == "/opt/x"
    assert resolve_params({}, None)["kubeconfig"] == "/env/kc"
    assert resolve_params({"host": "https://h"}, c)["kubeconfig"] == "/env/kc"  # inventory kubeconfig not forced


# ---- client: paths and error classification (pure) ----------------------------------------------------------


def test_client_paths():
    from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sClient

    assert K8sClient.path("", "v1", "nodes", name="n/1") == "/api/v1/nodes/n%2F1"
    assert K8sClient.path("resource.k8s.io", "v1", "resourceclaimtemplates", "ns", "t") == (
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaimtemplates/t"
    )
    assert K8sClient.path("resource.nvidia.com", "v1beta1", "computedomains", "ns", "cd", "status") == (
        "/apis/resource.nvidia.com/v1beta1/namespaces/ns/computedomains/cd/status"
    )


@pytest.mark.parametrize(
    "status,cls,text",
    [
        (
            401,
            "K8sError",
            "rejected the credentials (401 Unauthorized) for GET /x; check the user/token in kubeconfig k",
        ),
        (
            403,
            "K8sError",
            "nope; the identity running gpupool needs the ClusterRole in docs/rbac/gpupool-clusterrole.yaml",
        ),
        (404, "NotFound", "nope"),
        (409, "Conflict", "nope"),
        (503, "K8sError", "nope (HTTP 503, still failing after retries)"),
    ],
)
def test_client_errors(status, cls, text):

    class Fake:
        host, source = "https://h", "kubeconfig k"

    err = k8s_client._error("GET", "/x", status, "Reason", b'{"message": "nope", "reason": "R"}', Fake())
    assert type(err).__name__ == cls and text in err.describe() and err.status == status
    assert k8s_client._error("GET", "/x", 500, "Oops", b"not json", Fake()).body == {"message": "not json"}
