"""Raw chart values (`dra_driver.values`) at a key gpupool derives meet the same rules as the derived ones (#34):
each such key is refused with its path and the setting to use, or merged; raw feature gates meet every gate rule."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster

AT = "gpupool_cluster.dra_driver.values"
T4 = {"name": "t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}}
A100_STATIC = {
    "name": "a100",
    "node_selector": {"pool": "a100"},
    "gpu": {"model": "A100-40GB", "per_node": 2},
    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
}
GB = {
    "name": "gb",
    "node_selector": {"rack": "1"},
    "gpu": {"model": "GB200", "per_node": 4},
    "nvlink": {"mode": "compute_domain"},
}


def problems(values, pools=(T4,), **dra):
    data = {"name": "c", "pools": [copy.deepcopy(p) for p in pools], "dra_driver": dict(dra, values=values)}
    try:
        load_cluster(data)
    except Problems as exc:
        return dict(exc.problems)
    return {}


# ---- refused keys: each with its path and the gpupool setting to use --------------------------------------------
@pytest.mark.parametrize(
    "values,path,fix",
    [
        ({"nvidiaDriverRoot": "/run/nvidia/driver"}, "nvidiaDriverRoot", "dra_driver.nvidia_driver_root"),
        ({"gpuResourcesEnabledOverride": True}, "gpuResourcesEnabledOverride", "remove it"),
        ({"gpuResourcesEnabledOverride": False}, "gpuResourcesEnabledOverride", "remove it"),
        ({"resources": {"gpus": {"enabled": False}}}, "resources.gpus.enabled", "dra_driver.enabled: false"),
        (
            {"resources": {"computeDomains": {"enabled": True}}},
            "resources.computeDomains.enabled",
            "pools[].nvlink.mode",
        ),
        (
            {"resources": {"computeDomains": {"imex": {"mode": "hostManaged"}}}},
            "resources.computeDomains.imex.mode",
            "nvlink.mode: host_imex",
        ),
        (
            {"kubeletPlugin": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}},
            "kubeletPlugin.affinity.nodeAffinity",
            "pools[].node_selector",
        ),
        ({"kubeletPlugin": {"nodeSelector": {"gpu": "yes"}}}, "kubeletPlugin.nodeSelector", "pools[].node_selector"),
        ({"nameOverride": "mine"}, "nameOverride", "dra_driver.release_name"),
    ],
)
def test_a_refused_key_is_named_with_the_setting_to_use(values, path, fix):
    got = problems(values)
    assert list(got) == ["%s.%s" % (AT, path)], got
    (message,) = list(got.values())
    assert message.startswith("gpupool derives this value: ") and fix in message


def test_a_non_map_on_the_way_to_a_derived_key_is_refused_naming_what_it_would_replace():
    got = problems({"kubeletPlugin": None})
    assert list(got) == [AT + ".kubeletPlugin"]
    assert "kubeletPlugin.tolerations" in got[AT + ".kubeletPlugin"] and "not a map" in got[AT + ".kubeletPlugin"]
    got = problems({"resources": {"computeDomains": "on"}})
    assert list(got) == [AT + ".resources.computeDomains"]


# ---- merged keys ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["kubeletPlugin", "controller"])
def test_tolerations_are_accepted_as_a_list_of_maps_only(path):
    ok = [{"key": "example.com/team", "operator": "Exists", "effect": "NoSchedule"}]
    assert problems({path: {"tolerations": ok}}) == {}
    for bad in (None, {"key": "x"}, ["example.com/team"]):
        got = problems({path: {"tolerations": bad}})
        assert list(got) == ["%s.%s.tolerations" % (AT, path)], (bad, got)
        assert "a list of tolerations" in got["%s.%s.tolerations" % (AT, path)]


def test_affinity_other_than_node_affinity_and_the_socket_path_are_the_users():
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    assert problems({"kubeletPlugin": {"affinity": anti}}) == {}
    socket = {"resources": {"computeDomains": {"imex": {"hostSocketPath": "/run/imex.sock"}}}}
    assert problems(socket, pools=(GB,)) == {}


# ---- raw feature gates: the same rules as dra_driver.feature_gates ------------------------------------------------
def test_raw_dynamic_mig_beside_a_static_mig_pool_is_refused_as_the_explicit_gate_is():
    raw = problems({"featureGates": {"DynamicMIG": True}}, pools=(A100_STATIC,))
    explicit = problems({}, pools=(A100_STATIC,), feature_gates={"DynamicMIG": True})
    assert list(raw) == [AT + ".featureGates.DynamicMIG"]
    assert list(explicit) == ["gpupool_cluster.dra_driver.feature_gates.DynamicMIG"]
    (message,) = list(raw.values())
    assert "pools[0] (a100).mig.mode is static" in message and "destroys at start-up every MIG device" in message
    assert (
        message.replace(AT + ".featureGates", "gpupool_cluster.dra_driver.feature_gates") == list(explicit.values())[0]
    )


def test_raw_gates_meet_exclusions_needs_and_the_version_table():
    mps = dict(T4, sharing={"mps": {}})
    got = problems({"featureGates": {"DynamicMIG": True}}, pools=(mps,))
    assert list(got) == [AT + ".featureGates.DynamicMIG"]
    assert "MPSSupport (from pools[0] (t4).sharing.mps)" in got[AT + ".featureGates.DynamicMIG"]
    assert "cannot be enabled together" in got[AT + ".featureGates.DynamicMIG"]
    got = problems({"featureGates": {"MPSSupport": False}}, pools=(mps,))
    assert got == {
        AT
        + ".featureGates.MPSSupport": "set to false but pools[0] (t4).sharing.mps need(s) it; remove it (gpupool turns it on for them)"
    }
    got = problems({"featureGates": {"HostManagedIMEXDaemon": True}}, version="0.4.1")
    assert (
        "DRA driver 0.4.x has no feature gate HostManagedIMEXDaemon" in got[AT + ".featureGates.HostManagedIMEXDaemon"]
    )
    got = problems({"featureGates": {"IMEXDaemonsWithDNSNames": False}})
    assert "requires IMEXDaemonsWithDNSNames" in got[AT + ".featureGates.IMEXDaemonsWithDNSNames"]


def test_a_gate_in_both_places_must_agree_and_must_be_a_boolean():
    assert (
        problems({"featureGates": {"NVMLDeviceHealthCheck": True}}, feature_gates={"NVMLDeviceHealthCheck": True}) == {}
    )
    got = problems({"featureGates": {"NVMLDeviceHealthCheck": True}}, feature_gates={"NVMLDeviceHealthCheck": False})
    assert "set a gate in one place" in got[AT + ".featureGates.NVMLDeviceHealthCheck"]
    got = problems({"featureGates": {"TimeSlicingSettings": "yes"}})
    assert list(got) == [AT + ".featureGates.TimeSlicingSettings"]
    assert "write TimeSlicingSettings: true" in got[AT + ".featureGates.TimeSlicingSettings"]
    assert list(problems({"featureGates": ["DynamicMIG"]})) == [AT + ".featureGates"]
