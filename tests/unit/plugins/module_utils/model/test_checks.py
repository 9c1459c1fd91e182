"""The model's checks beyond types: each refusal with its exact message, key path, pool name and fix.

Every case starts from a valid inventory and breaks one thing, so the message shown is the one a person
gets for that mistake (gpupool.core.validate renders these same pairs).
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import checks as model_checks
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import lookalikes
from ansible_collections.gpupool.core.plugins.module_utils.model.gpu_checks import similar_models
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import inventory_path

CATALOG_KEYS = (
    "A10, A100-40GB, A100-80GB, A30, B200, B300, GB200, GB300, GH200-144GB, H100-80GB, H100-96GB, "
    "H100-NVL-94GB, H200-141GB, L4, L40S, RTX-PRO-6000, T4, V100, V100S"
)
LABEL_VALUE_RULE = "at most 63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit (or empty)"
DYNAMIC_MIG_WHY = (
    "the DRA driver's DynamicMIG feature gate that gpupool_cluster.pools[1] (gpu-a100).mig.mode turns "
    "on is cluster-wide (one chart value), and with it the driver's kubelet plugin destroys at start-up "
    "every MIG device it did not create itself (and on Hopper and newer may switch MIG mode)"
)

BASE = {
    "name": "c1",
    "magnum": {"cloud": "openstack", "cluster": "k8s"},
    "pools": [
        {
            "name": "gpu-t4",
            "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2, "max_node_count": 4},
            "gpu": {"model": "T4"},
            "sharing": {"time_slicing": {"interval": "Medium"}},
        },
        {
            "name": "gpu-a100",
            "nodegroup": {"flavor": "g4.p2.40g"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "gpu-gb200",
            "nodegroup": {"flavor": "g6.gb200x4"},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain"},
        },
    ],
}


def problems(mutate):
    """[(path, message)] load_cluster refuses BASE with after `mutate`."""
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(data)
    return err.value.problems


def accepted(mutate):
    data = copy.deepcopy(BASE)
    mutate(data)
    return model_load.load_cluster(data)


def test_base_is_valid():
    assert [p.name for p in accepted(lambda d: None).pools] == ["gpu-t4", "gpu-a100", "gpu-gb200"]


# ---- checks moved from the builders (validate now refuses first, with the builders' message) ----------------


def test_pool_name_too_long_for_the_mig_config_label():
    name = "a" * 60  # a DNS label, but gpupool-<name> is 68 characters
    assert problems(lambda d: d["pools"][1].update(name=name)) == [
        (
            "gpupool_cluster.pools[1] (%s).mig.config_name" % name,
            "the pool name is too long for the nvidia.com/mig.config label value: its MIG config is named 'gpupool-%s' "
            "(68 characters) and label values are at most 63; shorten the pool name to at most 55 characters or set "
            "mig.config_name" % name,
        )
    ]


def test_config_name_that_is_no_label_value():
    assert problems(lambda d: d["pools"][1]["mig"].update(config_name="a100 layout")) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).mig.config_name",
            "'a100 layout' cannot be the value of the node label nvidia.com/mig.config (%s); choose another config_name"
            % LABEL_VALUE_RULE,
        )
    ]


def test_shared_config_name_with_different_layouts():
    def mutate(d):
        d["pools"][1]["mig"]["config_name"] = "shared"
        d["pools"].append(
            {
                "name": "gpu-a100b",
                "node_selector": {"gpu": "a100b"},
                "gpu": {"model": "A100-40GB"},
                "mig": {"mode": "static", "config_name": "shared", "layout": {"7g.40gb": 1}},
            }
        )

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[3] (gpu-a100b).mig.config_name",
            "MIG config 'shared' is also used by gpupool_cluster.pools[1] (gpu-a100) with a different layout; pools that "
            "share a config name share one mig-parted config, so give one of them its own mig.config_name",
        )
    ]


def test_extra_device_class_named_like_a_generated_one():
    assert problems(lambda d: d["pools"][1].update(device_classes={"extra": [{"name": "gpu-t4"}]})) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).device_classes.extra[0].name",
            "DeviceClass name 'gpu-t4' is also generated by gpupool_cluster.pools[0] (gpu-t4); DeviceClass names are "
            "cluster-wide, rename one of them",
        )
    ]


def test_extra_device_class_name_and_extended_resource_name_the_api_server_refuses():
    extra = {"name": "Big_T4", "extended_resource_name": "kubernetes.io/t4"}
    assert problems(lambda d: d["pools"][0].update(device_classes={"extra": [extra]})) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).device_classes.extra[0].name",
            "'Big_T4' is not a valid DeviceClass name (at most 253 characters of lowercase letters, digits, '-' and '.', "
            "each dot-separated part starting and ending with a letter or digit); choose another name",
        ),
        (
            "gpupool_cluster.pools[0] (gpu-t4).device_classes.extra[0].extended_resource_name",
            "'kubernetes.io/t4' is not a valid extended resource name: the kubernetes.io domain is reserved: use your "
            "own domain, e.g. example.com/t4",
        ),
    ]


def test_generated_extended_resource_name_too_long():
    name = "g" * 56  # the MIG class gpupool.io/<pool>-1g.5gb-me has a 66-character name part

    def mutate(d):
        d["pools"][1].update(
            name=name,
            mig={"mode": "static", "config_name": "a100", "layout": {"1g.5gb+me": 1}},
            device_classes={"extended_resource_names": True},
        )

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[1] (%s).device_classes.extended_resource_names" % name,
            "'gpupool.io/%s-1g.5gb-me' is not a valid extended resource name: the name '%s-1g.5gb-me' must be at most "
            "63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric" % (name, name),
        )
    ]


def test_compute_domain_namespace_that_is_no_dns_label():
    assert problems(lambda d: d["pools"][2]["nvlink"].update(compute_domain={"namespace": "ML_Team"})) == [
        (
            "gpupool_cluster.pools[2] (gpu-gb200).nvlink.compute_domain.namespace",
            "'ML_Team' is not a valid namespace name (at most 63 lowercase letters, digits and '-', starting and ending "
            "with a letter or digit)",
        )
    ]


def test_two_pools_wanting_the_same_compute_domain():
    def mutate(d):
        d["pools"].append(
            {
                "name": "gpu-gb200b",
                "nodegroup": {"flavor": "g6"},
                "gpu": {"model": "GB200"},
                "nvlink": {"mode": "compute_domain", "compute_domain": {"name": "gpu-gb200"}},
            }
        )

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[3] (gpu-gb200b).nvlink.compute_domain.name",
            "ComputeDomain default/gpu-gb200 is also wanted by gpupool_cluster.pools[2] (gpu-gb200).nvlink.compute_domain; "
            "give each pool its own compute_domain.name",
        )
    ]


def test_pool_whose_nodes_cannot_be_found():
    assert problems(lambda d: d["pools"].append({"name": "gpu-l4", "gpu": {"model": "L4"}})) == [
        (
            "gpupool_cluster.pools[3] (gpu-l4).node_selector",
            "pool gpu-l4 has neither a nodegroup nor a node_selector, so its nodes cannot be found; add node_selector "
            "(e.g. node_selector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}) or a Magnum nodegroup",
        )
    ]


def test_absent_pool_needs_no_way_to_find_nodes():
    accepted(lambda d: d["pools"].append({"name": "gpu-l4", "state": "absent", "gpu": {"model": "L4"}}))


# ---- new checks ------------------------------------------------------------------------------------------


def test_unknown_gpu_model_without_mig_gets_did_you_mean():
    assert problems(lambda d: d["pools"][0]["gpu"].update(model="Tesla T5")) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).gpu.model",
            "unknown GPU model 'Tesla T5'; did you mean 'T4'? Use a catalog key (%s) or an NVML product name such as "
            "'NVIDIA A100-SXM4-40GB' (docs/mig-catalog.md). A GPU that is not in the catalog needs gpu.not_in_catalog: "
            "true, and model must then be the exact productName the DRA driver publishes for it" % CATALOG_KEYS,
        )
    ]


@pytest.mark.parametrize(
    "typed, meant",
    [
        ("A100-40G", "A100-40GB"),
        ("a100", "A100-40GB"),
        ("h100", "H100-80GB"),
        ("GB20", "GB200"),
        ("A1OO-40GB", "A100-40GB"),
        ("NVIDIA L4O", "L4"),
    ],
)
def test_did_you_mean_puts_the_meant_model_first(typed, meant):
    assert similar_models(typed)[0] == meant


def test_gpu_outside_the_catalog_is_accepted_when_declared():
    cluster = accepted(lambda d: d["pools"][0]["gpu"].update(model="NVIDIA RTX PRO 6000", not_in_catalog=True))
    assert cluster.pools[0].catalog_gpu is None


def test_not_in_catalog_on_a_catalog_gpu():
    assert problems(lambda d: d["pools"][0]["gpu"].update(not_in_catalog=True)) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).gpu.not_in_catalog",
            "'T4' is in the catalog (as T4); remove not_in_catalog so the pool gets the catalog's product names and MIG "
            "profiles",
        )
    ]


@pytest.mark.parametrize(
    "mutate, what",
    [
        (lambda d: d.update(pools=[]), "has no pools"),
        (lambda d: [p.update(state="absent") for p in d["pools"]], "has only absent pools"),
    ],
    ids=["no-pools", "all-absent"],
)
def test_a_cluster_without_present_pools_needs_allow_empty(mutate, what):
    assert problems(mutate) == [
        (
            "gpupool_cluster.pools",
            "the cluster %s, so the modules would delete every DeviceClass, ComputeDomain, MIG config and node label "
            "that gpupool manages in it; if that is what you want, set gpupool_cluster.allow_empty: true, otherwise add "
            "the pools" % what,
        )
    ]

    def opted_in(d):
        mutate(d)
        d["allow_empty"] = True

    assert accepted(opted_in).present_pools == []


def test_two_pools_with_one_nodegroup():
    assert problems(lambda d: d["pools"][1]["nodegroup"].update(name="gpu-t4")) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).nodegroup.name",
            "nodegroup 'gpu-t4' is also the nodegroup of gpupool_cluster.pools[0] (gpu-t4); two pools would resize, "
            "relabel and delete the same Magnum nodegroup, so give each pool its own nodegroup.name",
        )
    ]


@pytest.mark.parametrize("layout", [{}, {"1g.5gb": 0}], ids=["empty", "all-zero"])
def test_empty_mig_layout(layout):
    assert problems(lambda d: d["pools"][1]["mig"].update(layout=layout)) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).mig.layout",
            "the layout is empty: MIG would be enabled with no instance, so the GPU can run nothing; list the instances, "
            "e.g. {7g.40gb: 1}, or drop the GPU from layouts (or set mig.mode: off) to keep it whole",
        )
    ]


def test_empty_layout_of_one_gpu():
    mig = {"mode": "static", "layouts": {0: {"7g.40gb": 1}, 1: {}}}
    assert [p for p, _unused in problems(lambda d: d["pools"][1].update(mig=mig))] == [
        "gpupool_cluster.pools[1] (gpu-a100).mig.layouts[1]"
    ]


def test_time_slicing_interval_on_a_static_mig_pool():
    assert problems(lambda d: d["pools"][1].update(sharing={"time_slicing": {"interval": "Long"}})) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).sharing.time_slicing.interval",
            "interval 'Long' cannot apply: every GPU of this pool is MIG-partitioned, and the DRA driver's "
            "MigDeviceConfig sharing has no timeSlicingConfig, so the interval would be dropped silently; remove interval "
            "(time_slicing: {} time-slices the MIG devices with the default interval)",
        )
    ]


def test_time_slicing_without_interval_on_mig_and_interval_with_a_whole_gpu_are_fine():
    accepted(lambda d: d["pools"][1].update(sharing={"time_slicing": {}}))
    accepted(
        lambda d: d["pools"][1].update(
            mig={"mode": "static", "layouts": {0: {"7g.40gb": 1}}}, sharing={"time_slicing": {"interval": "Long"}}
        )
    )


@pytest.mark.parametrize(
    "taint, path, message",
    [
        (
            {"key": "example.com/team", "value": "ml team"},
            "taints[0].value",
            "'ml team' is not a valid taint value: use " + LABEL_VALUE_RULE,
        ),
        (
            {"key": "bad key"},
            "taints[0].key",
            "'bad key' is not a valid taint key: use an optional DNS-subdomain prefix and '/', then at most 63 characters "
            "of [A-Za-z0-9-_.] starting and ending with a letter or digit, e.g. example.com/team",
        ),
        ({"key": "example.com/" + "t" * 64}, "taints[0].key", None),
        ({"key": "a" * 254 + "/team"}, "taints[0].key", None),
    ],
    ids=["value-with-space", "key-with-space", "name-part-too-long", "prefix-too-long"],
)
def test_taints_the_api_server_refuses(taint, path, message):
    got = problems(lambda d: d["pools"][0].update(taints=[taint]))
    assert [p for p, _unused in got] == ["gpupool_cluster.pools[0] (gpu-t4)." + path]
    if message:
        assert got[0][1] == message


def test_two_taints_with_one_key_and_effect():
    taints = [
        {"key": "example.com/team", "value": "a"},
        {"key": "example.com/team", "value": "b"},
        {"key": "example.com/team", "value": "c", "effect": "NoExecute"},
    ]
    assert problems(lambda d: d["pools"][0].update(taints=taints)) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).taints[1]",
            "taint example.com/team:NoSchedule is also taints[0]; the API server refuses two taints with the same key and "
            "effect on a node, so keep one",
        )
    ]


def test_extra_taint_hidden_by_the_gpu_taint():
    taints = [{"key": "node-role.kubernetes.io/gpu", "effect": "NoExecute"}]
    assert problems(lambda d: d["pools"][0].update(taints=taints)) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).taints[0]",
            "gpu_taint: true already sets node-role.kubernetes.io/gpu=true:NoSchedule, so this taint would be ignored; "
            "set gpu_taint: false to use your own taint with this key",
        )
    ]
    accepted(lambda d: d["pools"][0].update(taints=taints, gpu_taint=False))


def test_max_node_count_above_int32():
    assert problems(lambda d: d["pools"][0]["nodegroup"].update(max_node_count=2**31)) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).nodegroup.max_node_count",
            "2147483648 is more than Magnum can store: at most 2147483647 (a 32-bit integer)",
        )
    ]
    accepted(lambda d: d["pools"][0]["nodegroup"].update(max_node_count=2**31 - 1))


def test_dynamic_mig_beside_static_mig():
    def mutate(d):
        d["pools"][1]["mig"] = {"mode": "dynamic"}
        d["pools"][2] = {
            "name": "gpu-h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB"},
            "mig": {"mode": "static", "layout": {"7g.80gb": 1}},
        }

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[2] (gpu-h100).mig.mode",
            "static MIG cannot share a cluster with dynamic MIG: %s, so this pool's layout would be wiped on every plugin "
            "restart. Use mig.mode: dynamic for every MIG-capable pool of the cluster, or static (or off) for all of them"
            % DYNAMIC_MIG_WHY,
        )
    ]


def test_dynamic_mig_beside_a_mig_capable_pool_with_mig_off():
    def mutate(d):
        d["pools"][1]["mig"] = {"mode": "dynamic"}
        d["pools"][2]["nvlink"] = {"mode": "none"}

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[2] (gpu-gb200).mig.mode",
            "GB200 is MIG-capable and MIG is off here, but %s; it would also publish this pool's GPUs as dynamic MIG "
            "devices. Use mig.mode: dynamic here too, or keep dynamic MIG out of this cluster" % DYNAMIC_MIG_WHY,
        )
    ]


def test_dynamic_mig_beside_gpus_without_mig_is_fine():
    cluster = accepted(lambda d: (d["pools"][1].update(mig={"mode": "dynamic"}), d["pools"].pop(2)))
    assert [p.mig.mode for p in cluster.pools] == ["off", "dynamic"]


def test_dra_driver_default_namespace_and_leading_v():
    assert problems(lambda d: d.update(dra_driver={"namespace": "default", "version": "v0.5.1"})) == [
        (
            "gpupool_cluster.dra_driver.namespace",
            "the chart refuses to install into the default namespace (templates/validation.yaml, allowDefaultNamespace "
            "is false); use namespace: dra-driver-nvidia-gpu",
        ),
        (
            "gpupool_cluster.dra_driver.version",
            "chart versions have no leading v (the image tag is v + the chart's appVersion); use version: '0.5.1'",
        ),
    ]


def test_mig_manager_and_release_names():
    assert [
        p
        for p, _unused in problems(
            lambda d: d.update(
                mig_manager={"config_map": "Bad_Name", "namespace": "gpu operator"},
                dra_driver={"release_name": "r" * 54},
            )
        )
    ] == [
        "gpupool_cluster.mig_manager.config_map",
        "gpupool_cluster.mig_manager.namespace",
        "gpupool_cluster.dra_driver.release_name",
    ]


# ---- shapes: what a type error says ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mutate, path, message",
    [
        (
            lambda d: d["pools"][1].update(mig="static"),
            "pools[1] (gpu-a100).mig",
            "must be a mapping, e.g. `mig: {mode: static, layout: {3g.20gb: 1, 2g.10gb: 2}}`; got a string 'static'",
        ),
        (
            lambda d: d["pools"][0].update(taints={"key": "a"}),
            "pools[0] (gpu-t4).taints",
            "must be a list, e.g. `taints: [{key: example.com/team, value: ml, effect: NoSchedule}]`; got a mapping "
            "{'key': 'a'}",
        ),
        (
            lambda d: d["pools"][0]["nodegroup"].update(node_count="two"),
            "pools[0] (gpu-t4).nodegroup.node_count",
            "must be a whole number, e.g. `node_count: 1`; got a string 'two'",
        ),
        (
            lambda d: d["pools"][0].update(node_labels={"team": True}),
            "pools[0] (gpu-t4).node_labels.team",
            "must be a string; got true (YAML reads yes/no/on/off as booleans); quote it to keep it a string",
        ),
        (
            lambda d: d["magnum"].update(cloud=["x"]),
            "magnum.cloud",
            "must be a string or a mapping, e.g. `cloud: openstack`; got a list ['x']",
        ),
        (
            lambda d: d["pools"].append("gpu-h100"),
            "pools[3]",
            "must be a mapping, e.g. `- {name: gpu-a100, gpu: {model: A100-40GB}, nodegroup: {flavor: g4.p2.40g}}`; got a "
            "string 'gpu-h100'",
        ),
        (
            lambda d: d["pools"][0].pop("gpu"),
            "pools[0] (gpu-t4).gpu",
            "required key is missing, e.g. `gpu: {model: A100-40GB, per_node: 2}`",
        ),
        (
            lambda d: d["pools"][0]["gpu"].update(per_node=0),
            "pools[0] (gpu-t4).gpu.per_node",
            "must be 1 or more; got a whole number 0",
        ),
        (
            lambda d: (
                d["pools"][0]["mig"].update(mode=True)
                if "mig" in d["pools"][0]
                else d["pools"][0].update(mig={"mode": True})
            ),
            "pools[0] (gpu-t4).mig.mode",
            "true is not a MIG mode (YAML reads an unquoted on/yes as true): use static or dynamic",
        ),
    ],
    ids=[
        "mig-string",
        "taints-mapping",
        "count-string",
        "label-bool",
        "cloud-list",
        "pool-string",
        "missing-gpu",
        "per-node-zero",
        "mig-mode-on",
    ],
)
def test_type_errors_say_the_expected_shape(mutate, path, message):
    assert problems(mutate) == [("gpupool_cluster." + path, message)]


def test_no_pydantic_wording_reaches_the_user():
    got = problems(lambda d: (d["pools"][0].update(gpu="T4", mig=3, taints="x"), d.update(dra_driver=[])))
    text = " ".join(m for _unused, m in got)
    for pydantic in ("Input should be", "instance of", "valid dictionary", "Value error"):
        assert pydantic not in text


def test_a_long_value_is_cut():
    ((path, message),) = problems(lambda d: d["pools"][0].update(gpu="x" * 300))
    assert path == "gpupool_cluster.pools[0] (gpu-t4).gpu"
    assert message.endswith("got a string '%s... (302 characters)" % ("x" * 59)) and len(message) < 160


def test_gpupool_cluster_that_is_not_a_mapping():
    for value, shown in (("cern-gpu", "a string 'cern-gpu'"), (None, "nothing (null)"), ([1], "a list [1]")):
        with pytest.raises(model_errors.Problems) as err:
            model_load.load_cluster(value)
        assert err.value.problems == [
            (
                "gpupool_cluster",
                "must be a mapping with name and pools, e.g. "
                "`gpupool_cluster: {name: cern-gpu, pools: [...]}`; got %s" % shown,
            )
        ]


def test_mig_mode_off_read_by_yaml_as_false_is_off():
    cluster = accepted(lambda d: d["pools"][1].update(mig={"mode": False}))
    assert cluster.pool("gpu-a100").mig.mode == "off"


# ---- look-alike characters -----------------------------------------------------------------------------------


def test_look_alike_character_in_a_key():
    assert problems(lambda d: d["pools"][0]["nodegroup"].update({"n\u043ede_count": 3})) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).nodegroup.n\u043ede_count",
            "unknown key 'n\u043ede_count'; did you mean 'node_count'? Allowed here: name, flavor, image, node_count, "
            "min_node_count, max_node_count, docker_volume_size, role, labels, merge_labels. The key 'n\u043ede_count' "
            "contains U+043E CYRILLIC SMALL LETTER O at position 2, which looks like 'o'; retype it in ASCII "
            "('node_count').",
        )
    ]


def test_look_alike_character_in_a_pool_name():
    assert problems(lambda d: d["pools"][0].update(name="gpu\u2011t4")) == [
        (
            "gpupool_cluster.pools[0] (gpu\u2011t4).name",
            "'gpu\u2011t4' is not a DNS label: use at most 63 lowercase letters, digits and '-', starting and ending with a "
            "letter or digit. The value 'gpu\u2011t4' contains U+2011 NON-BREAKING HYPHEN at position 4, which looks like "
            "'-'; retype it in ASCII ('gpu-t4').",
        )
    ]


def test_look_alike_character_in_a_gpu_model_and_a_label_key():
    got = dict(
        problems(
            lambda d: (
                d["pools"][0]["gpu"].update(model="\u04224"),
                d["pools"][1].update(node_labels={"t\u0435am": "ml"}),
            )
        )
    )
    assert got["gpupool_cluster.pools[0] (gpu-t4).gpu.model"].startswith(
        "unknown GPU model '\u04224'; did you mean 'T4'?"
    )
    assert got["gpupool_cluster.pools[0] (gpu-t4).gpu.model"].endswith(
        "The value '\u04224' contains U+0422 CYRILLIC CAPITAL LETTER TE at position 1, which looks like 'T'; retype it "
        "in ASCII ('T4')."
    )
    assert "U+0435 CYRILLIC SMALL LETTER IE at position 2" in got["gpupool_cluster.pools[1] (gpu-a100).node_labels"]


def test_free_form_settings_are_not_scanned_so_a_cloud_password_is_never_quoted():
    data = copy.deepcopy(BASE)
    data["magnum"]["cloud"] = {"auth": {"pass\u0435word": "s\u0435cret"}}
    data["dra_driver"] = {"values": {"n\u043ede": "x"}}
    data["pools"][0]["node_labels"] = {"t\u0435am": "ml"}
    notes = lookalikes.scan(data, "gpupool_cluster", lambda root, loc: inventory_path(root, loc, data))
    assert list(notes) == ["gpupool_cluster.pools[0] (gpu-t4).node_labels.t\u0435am"]


# ---- one pool's type error does not hide the others' problems ------------------------------------------------


def test_semantic_problems_of_other_pools_survive_a_type_error():
    def mutate(d):
        d["pools"][0]["gpu"] = "T4"  # a type error in pool 0 ...
        d["pools"][1]["mig"]["layout"] = {"3g.20gb": 3}  # ... and a layout that does not fit in pool 1
        d["pools"][2]["nodegroup"]["name"] = "gpu-a100"  # ... and two pools on one nodegroup

    assert problems(mutate) == [
        (
            "gpupool_cluster.pools[0] (gpu-t4).gpu",
            "must be a mapping, e.g. `gpu: {model: A100-40GB, per_node: 2}`; got a string 'T4'",
        ),
        (
            "gpupool_cluster.pools[2] (gpu-gb200).nodegroup.name",
            "nodegroup 'gpu-a100' is also the nodegroup of gpupool_cluster.pools[1] (gpu-a100); two pools would resize, "
            "relabel and delete the same Magnum nodegroup, so give each pool its own nodegroup.name",
        ),
        (
            "gpupool_cluster.pools[1] (gpu-a100).mig.layout",
            "A100-40GB allows at most 2 x 3g.20gb, the layout asks for 3",
        ),
    ]


def test_a_broken_cluster_setting_leaves_only_the_shape_problems():
    got = problems(lambda d: (d.update(magnum="openstack"), d["pools"][1]["mig"].update(layout={"3g.20gb": 3})))
    assert [p for p, _unused in got] == ["gpupool_cluster.magnum"]


# ---- the list of checks ----------------------------------------------------------------------------------------


def test_every_check_documents_itself_in_one_line():
    for check in model_checks.CHECKS:
        doc = (check.__doc__ or "").strip()
        assert doc and "\n" not in doc, check.__name__


@pytest.mark.parametrize("value", ["cern-gpu", ["a"], 3, None])
def test_a_cluster_that_is_no_mapping_gets_our_message(value):
    with pytest.raises(model_errors.Problems) as err:
        model_load.load_cluster(value)
    assert err.value.problems[0][0] == "gpupool_cluster" and "must be a mapping" in err.value.problems[0][1]
