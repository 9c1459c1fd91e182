"""Chart values derived from the pools (pure): every value gpupool sets, why, and the diff."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import (
    LINES,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import values as dv

L04, L05 = LINES["0.4"], LINES["0.5"]
T4 = {"name": "t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}}
A100 = {
    "name": "a100",
    "node_selector": {"pool": "a100"},
    "gpu": {"model": "A100-40GB", "per_node": 2},
    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
}
GB200 = {
    "name": "gb200",
    "node_selector": {"pool": "gb200"},
    "gpu": {"model": "GB200", "per_node": 4},
    "nvlink": {"mode": "compute_domain"},
}


def cluster(*pools, **dra):
    data = {"name": "c", "pools": [copy.deepcopy(p) for p in pools]}
    if dra:
        data["dra_driver"] = dra
    return load_cluster(data)


def with_(pool, **changes):
    out = copy.deepcopy(pool)
    out.update(changes)
    return out


def test_whole_gpus_only():
    values = dv.desired_values(cluster(T4), L05)
    assert values == {
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "featureGates": {},
        "nvidiaDriverRoot": "/",
        "kubeletPlugin": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "node-role.kubernetes.io/gpu",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                },
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpupool.io/pool", "operator": "Exists"}]}]
                    }
                }
            },
        },
    }


def test_compute_domains_only_with_an_nvlink_pool():
    assert dv.desired_values(cluster(T4, A100), L05)["resources"]["computeDomains"] == {"enabled": False}
    assert dv.desired_values(cluster(T4, GB200), L05)["resources"]["computeDomains"] == {"enabled": True}
    # an absent NVLink pool no longer needs them
    gone = with_(GB200, state="absent")
    assert dv.desired_values(cluster(T4, gone), L05)["resources"]["computeDomains"] == {"enabled": False}


def test_host_managed_imex_sets_mode_socket_and_gate_on_0_5():
    host = with_(GB200, nvlink={"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]})
    values = dv.desired_values(cluster(host), L05)
    assert values["resources"]["computeDomains"] == {
        "enabled": True,
        "imex": {
            "mode": "hostManaged",
            "hostSocketPath": "/etc/nvidia-imex/imex_ctrl.sock",
        },
    }
    assert values["featureGates"] == {"HostManagedIMEXDaemon": True}
    # 0.4 has no such value: none is written (the model refuses this pairing before we get here)
    assert "imex" not in dv.desired_values(cluster(host), L04)["resources"]["computeDomains"]


@pytest.mark.parametrize(
    "pool_changes,gate",
    [
        ({"sharing": {"time_slicing": {"interval": "Short"}}}, "TimeSlicingSettings"),
        ({"sharing": {"mps": {"active_thread_percentage": 50}}}, "MPSSupport"),
        ({"passthrough": True}, "PassthroughSupport"),
    ],
)
def test_gates_follow_what_pools_use(pool_changes, gate):
    assert dv.desired_values(cluster(with_(T4, **pool_changes)), L05)["featureGates"] == {gate: True}


def test_dynamic_mig_gate():
    pool = with_(A100, mig={"mode": "dynamic"})
    assert dv.desired_values(cluster(pool), L04)["featureGates"] == {"DynamicMIG": True}


def test_explicit_gates_join_the_derived_ones():
    values = dv.desired_values(
        cluster(
            with_(T4, sharing={"mps": {}}),
            feature_gates={"NVMLDeviceHealthCheck": True},
        ),
        L05,
    )
    assert values["featureGates"] == {"MPSSupport": True, "NVMLDeviceHealthCheck": True}


def test_tolerations_keep_the_chart_entry_and_add_every_pool_taint_once():
    extra = with_(
        A100,
        taints=[
            {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
            {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        ],
    )
    no_gpu_taint = with_(
        T4,
        name="t4b",
        gpu_taint=False,
        taints=[{"key": "zone", "value": "b", "effect": "PreferNoSchedule"}],
    )
    tol = dv.desired_values(cluster(T4, extra, no_gpu_taint), L05)["kubeletPlugin"]["tolerations"]
    assert tol == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        {
            "key": "node-role.kubernetes.io/gpu",
            "operator": "Exists",
            "effect": "NoSchedule",
        },
        {"key": "zone", "operator": "Exists", "effect": "PreferNoSchedule"},
    ]
    # order of pools does not matter
    assert dv.plugin_tolerations(cluster(no_gpu_taint, extra, T4)) == tol


def test_driver_root_from_inventory_or_detected():
    assert (
        dv.desired_values(cluster(T4, nvidia_driver_root="/run/nvidia/driver"), L05)["nvidiaDriverRoot"]
        == "/run/nvidia/driver"
    )
    assert (
        dv.desired_values(cluster(T4), L05, driver_root="/run/nvidia/driver")["nvidiaDriverRoot"]
        == "/run/nvidia/driver"
    )


def test_legacy_release_name_keeps_object_names():
    assert (
        dv.desired_values(cluster(T4, release_name="nvidia-dra-driver-gpu"), L04)["nameOverride"]
        == "nvidia-dra-driver-gpu"
    )
    assert "nameOverride" not in dv.desired_values(cluster(T4), L04)


def test_user_values_merge_last_and_are_reported():
    user = {
        "logVerbosity": "6",
        "kubeletPlugin": {
            "tolerations": [{"operator": "Exists"}],
            "priorityClassName": "x",
        },
        "featureGates": {"CrashOnNVLinkFabricErrors": False},
    }
    c = cluster(with_(T4, sharing={"mps": {}}), values=user)
    values = dv.desired_values(c, L05)
    assert values["logVerbosity"] == "6"
    # a toleration list is extended, never replaced (driver_values_rules.py)
    assert values["kubeletPlugin"]["tolerations"] == dv.plugin_tolerations(c) + [{"operator": "Exists"}]
    assert values["kubeletPlugin"]["priorityClassName"] == "x"
    assert values["kubeletPlugin"]["affinity"] == dv.plugin_affinity()  # a map merges
    assert values["featureGates"] == {
        "MPSSupport": True,
        "CrashOnNVLinkFabricErrors": False,
    }
    assert [(o["path"], o["rule"]) for o in dv.user_overrides(c, L05)] == [("kubeletPlugin.tolerations", "merged")]


def test_values_diff_paths_and_equality():
    before = dv.desired_values(cluster(T4), L05)
    after = dv.desired_values(cluster(with_(T4, sharing={"mps": {}})), L05)
    assert dv.values_diff(before, after) == [{"path": "featureGates.MPSSupport", "before": None, "after": True}]
    assert dv.values_equal(after, copy.deepcopy(after))
    assert dv.values_diff(None, {"a": {"b": 1}}) == [{"path": "a.b", "before": None, "after": 1}]
    assert dv.values_diff({"a": 1}, {}) == [{"path": "a", "before": 1, "after": None}]
    assert dv.values_equal({"n": 1}, {"n": 1.0}) and not dv.values_equal({"n": 1}, {"n": True})
    assert dv.values_diff({"l": [1, 2]}, {"l": [2, 1]}) == [{"path": "l", "before": [1, 2], "after": [2, 1]}]
    assert dv.summarize_diff(dv.values_diff(before, after)) == ["featureGates.MPSSupport: (unset) -> True"]


def test_summary_is_bounded():
    diff = dv.values_diff({}, {"k%02d" % i: i for i in range(20)})
    lines = dv.summarize_diff(diff, limit=5)
    assert len(lines) == 6 and lines[-1] == "... and 15 more"


def test_merge_does_not_alias_inputs():
    base = {"a": {"b": [1]}}
    merged = dv.merge_values(base, {"a": {"c": 2}})
    merged["a"]["b"].append(9)
    assert base == {"a": {"b": [1]}}


# ---- raw values at a key gpupool derives (#34; model/driver_values_rules.py) -------------------------------------
TEAM = with_(T4, name="team", taints=[{"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}])
GPU_TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_plugin_tolerations_are_extended_not_replaced_and_each_entry_once():
    mine = {"key": "example.com/maintenance", "operator": "Exists"}
    c = cluster(TEAM, values={"kubeletPlugin": {"tolerations": [GPU_TOL, mine, mine]}})
    tol = dv.desired_values(c, L05)["kubeletPlugin"]["tolerations"]
    assert tol == dv.plugin_tolerations(c) + [mine]
    assert {"key": "example.com/team", "operator": "Exists", "effect": "NoSchedule"} in tol


def test_controller_tolerations_extend_the_charts_own_list():
    mine = {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
    c = cluster(T4, values={"controller": {"tolerations": [mine]}})
    assert dv.desired_values(c, L05)["controller"]["tolerations"] == [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        mine,
    ]
    # nothing of the controller's is written unless the user's values name it
    assert "controller" not in dv.desired_values(cluster(T4), L05)


def test_raw_feature_gates_join_the_derived_ones_in_the_chart_value():
    c = cluster(with_(T4, sharing={"mps": {}}), values={"featureGates": {"CrashOnNVLinkFabricErrors": False}})
    assert dv.desired_values(c, L05)["featureGates"] == {"MPSSupport": True, "CrashOnNVLinkFabricErrors": False}


def test_pod_anti_affinity_merges_beside_gpupools_node_affinity():
    anti = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}
    c = cluster(T4, values={"kubeletPlugin": {"affinity": {"podAntiAffinity": anti}}})
    assert dv.desired_values(c, L05)["kubeletPlugin"]["affinity"] == dict(dv.plugin_affinity(), podAntiAffinity=anti)


def test_the_imex_socket_is_the_users_and_reported_so():
    host = with_(GB200, nvlink={"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]})
    c = cluster(host, values={"resources": {"computeDomains": {"imex": {"hostSocketPath": "/run/imex.sock"}}}})
    assert dv.desired_values(c, L05)["resources"]["computeDomains"]["imex"] == {
        "mode": "hostManaged",
        "hostSocketPath": "/run/imex.sock",
    }
    (override,) = dv.user_overrides(c, L05)
    assert override["path"] == "resources.computeDomains.imex.hostSocketPath" and override["rule"] == "yours"


def test_the_diff_header_says_which_lists_were_extended():
    from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release import values_diff_entry

    c = cluster(TEAM, values={"kubeletPlugin": {"tolerations": [GPU_TOL]}, "logVerbosity": "6"})
    entry = values_diff_entry(c.dra_driver, None, None, dv.desired_values(c, L05), "dra-driver-nvidia-gpu")
    assert entry["after_header"] == (
        "desired values (dra-driver-nvidia-gpu 0.5.1); kubeletPlugin.tolerations extended by dra_driver.values "
        "(1 entry, duplicates dropped)"
    )
    assert dv.merge_notes({"logVerbosity": "6"}) == []
