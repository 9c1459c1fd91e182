"""The model refuses, before helm runs, what the chosen DRA driver version would reject (paths + fixes)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster

GB = {
    "name": "gb",
    "node_selector": {"rack": "1"},
    "gpu": {"model": "GB200", "per_node": 4},
    "nvlink": {"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]},
}
T4 = {"name": "t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}}


def problems(dra=None, pools=(T4,)):
    data = {"name": "c", "pools": [copy.deepcopy(p) for p in pools]}
    if dra is not None:
        data["dra_driver"] = dra
    try:
        load_cluster(data)
    except Problems as exc:
        return dict(exc.problems)
    return {}


def test_a_valid_driver_section_passes():
    assert problems({"version": "0.4.1", "values": {"logVerbosity": "6"}}) == {}
    assert problems({"version": "0.5.1"}, pools=(T4, GB)) == {}


@pytest.mark.parametrize(
    "version,words",
    [
        ("v0.5.1", "no leading v"),
        ("0.6.0", "supported lines are 0.4.x, 0.5.x"),
        ("25.12.0", "predate the 0.4 rename"),
        ("latest", "not a chart version"),
    ],
)
def test_version(version, words):
    assert words in problems({"version": version})["gpupool_cluster.dra_driver.version"]


def test_namespace_and_release_name():
    assert (
        "refuses to install into the default namespace"
        in problems({"namespace": "default"})["gpupool_cluster.dra_driver.namespace"]
    )
    assert "not a valid namespace name" in problems({"namespace": "GPU"})["gpupool_cluster.dra_driver.namespace"]
    assert "Helm release name" in problems({"release_name": "x" * 54})["gpupool_cluster.dra_driver.release_name"]
    assert (
        "dra_driver.namespace instead"
        in problems({"values": {"namespace": "x"}})["gpupool_cluster.dra_driver.values.namespace"]
    )


def test_values_the_chart_version_does_not_have():
    probs = problems({"version": "0.4.1", "values": {"consumableShares": "memory", "bogus": 1}})
    assert (
        "the 0.4.x chart has no value consumableShares" in probs["gpupool_cluster.dra_driver.values.consumableShares"]
    )
    assert "it exists in 0.5.x" in probs["gpupool_cluster.dra_driver.values.consumableShares"]
    assert "it exists" not in probs["gpupool_cluster.dra_driver.values.bogus"]
    imex = {"resources": {"computeDomains": {"imex": {"mode": "hostManaged"}}}}
    assert "gpupool_cluster.dra_driver.values.resources.computeDomains.imex.mode" in problems(
        {"version": "0.4.1", "values": imex}
    )


def test_values_the_chart_fails_on_and_deeper_keys_of_one_line():
    ctk = problems({"values": {"nvidiaCtkPath": "/usr/bin/nvidia-ctk"}})[
        "gpupool_cluster.dra_driver.values.nvidiaCtkPath"
    ]
    assert ctk.startswith("the chart fails when nvidiaCtkPath is set") and "remove it" in ctk
    clique = {"kubeletPlugin": {"containers": {"computeDomains": {"gpuCliqueLabelEnabled": True}}}}
    key = "gpupool_cluster.dra_driver.values.kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled"
    assert "it exists in 0.5.x" in problems({"version": "0.4.1", "values": clique})[key]
    assert problems({"version": "0.5.1", "values": clique}) == {}
    # a deeper key both lines have, and a free-form map below a known key, pass on both
    both = {
        "kubeletPlugin": {"containers": {"gpus": {"healthcheckPort": -1}}},
        "webhook": {"nodeSelector": {"rack": "a"}},
    }
    assert problems({"version": "0.4.1", "values": both}) == {} == problems({"version": "0.5.1", "values": both})


def test_host_imex_needs_a_version_with_host_managed_imex():
    probs = problems({"version": "0.4.1"}, pools=(T4, GB))
    msg = probs["gpupool_cluster.pools[1] (gb).nvlink.mode"]
    assert "host-managed IMEX needs DRA driver 0.5.x" in msg and "compute_domain" in msg
    assert not any("feature_gates" in path for path in probs)  # reported once, at the pool


def test_gates_the_version_lacks_fail_naming_them():
    probs = problems({"version": "0.4.1", "feature_gates": {"ConsumableShares": True}})
    msg = probs["gpupool_cluster.dra_driver.feature_gates.ConsumableShares"]
    assert "DRA driver 0.4.x has no feature gate ConsumableShares" in msg and "0.5.x release" in msg
    typo = problems({"feature_gates": {"MPSSuport": True}})["gpupool_cluster.dra_driver.feature_gates.MPSSuport"]
    assert "did you mean MPSSupport? Otherwise remove it; the 0.5.x gates: MPSSupport, " in typo
    assert "\nthe 0.5.x gates (16, closest first): MPSSupport, " in typo  # every gate, on the lines below


def test_requirements_count_the_version_defaults():
    msg = problems({"feature_gates": {"IMEXDaemonsWithDNSNames": False}})["gpupool_cluster.dra_driver.feature_gates"]
    assert "ComputeDomainCliques (from its default in DRA driver 0.5.x) requires IMEXDaemonsWithDNSNames" in msg
    # host-managed IMEX forces both off: nothing to refuse
    assert problems({"feature_gates": {"IMEXDaemonsWithDNSNames": False}}, pools=(T4, GB)) == {}


def test_conflicts_name_both_gates_and_where_they_come_from():
    mps = dict(T4, sharing={"mps": {}})
    msg = problems({"feature_gates": {"DynamicMIG": True}}, pools=(mps,))["gpupool_cluster.dra_driver.feature_gates"]
    assert "DynamicMIG (from gpupool_cluster.dra_driver.feature_gates.DynamicMIG)" in msg
    assert "MPSSupport (from pools[0] (t4).sharing.mps)" in msg
