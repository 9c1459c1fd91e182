"""The DRA driver release's one owner (pure): whose it is, and whether another owner's release serves this
inventory's pools - each kind of difference, the refusal's sentence, and properties over random inventories."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import LINES
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import release_owner as ro
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import desired_values, merge_values

L04, L05 = LINES["0.4"], LINES["0.5"]
CHART = "dra-driver-nvidia-gpu"
# the chart's defaults as `helm get values --all` merges them under the given values (values.yaml, 0.5 line)
CHART_DEFAULTS = {
    "nvidiaDriverRoot": "/",
    "gpuResourcesEnabledOverride": False,
    "resources": {
        "gpus": {"enabled": True},
        "computeDomains": {
            "enabled": True,
            "imex": {
                "mode": "driverManaged",
                "isolation": "domain",
                "hostSocketPath": "/etc/nvidia-imex/imex_ctrl.sock",
            },
        },
    },
    "featureGates": {},
    "kubeletPlugin": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    "webhook": {"enabled": False},
}
T4 = {"name": "t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}}
A100 = {"name": "a100", "node_selector": {"pool": "a100"}, "gpu": {"model": "A100-40GB", "per_node": 2}}
GB200 = {
    "name": "gb200",
    "node_selector": {"pool": "gb200"},
    "gpu": {"model": "GB200", "per_node": 4},
    "nvlink": {"mode": "compute_domain"},
}
TEAM = {"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}


def with_(pool, **changes):
    out = copy.deepcopy(pool)
    out.update(changes)
    return out


def cluster(*pools, name="b", **dra):
    data = {"name": name, "pools": [copy.deepcopy(p) for p in pools]}
    if dra:
        data["dra_driver"] = dra
    return load_cluster(data)


def release_of(c, line=L05, root=None):
    """What `helm get values --all` returns for the release inventory `c` installed."""
    return merge_values(CHART_DEFAULTS, desired_values(c, line, root))


def needs(c, line=L05, root=None):
    return ro.driver_needs(c, desired_values(c, line, root), CHART)


def gaps(b, release_values, version="0.5.1", chart=CHART, root=None):
    return ro.missing(needs(b, root=root), release_values, chart, version)


# ---- who owns it -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels,standing",
    [
        ({}, ro.UNOWNED),
        ({"gpupool.io/run": "gpupool_host_1a2b"}, ro.UNOWNED),  # an older gpupool: its run label, no owner
        ({"gpupool.io/owner": ""}, ro.UNOWNED),
        ({"gpupool.io/owner": "team-b"}, ro.MINE),
        ({"gpupool.io/owner": "team-a"}, ro.FOREIGN),
    ],
)
def test_ownership_reads_the_owner_label(labels, standing):
    assert ro.ownership(labels, "team-b") == standing


def test_the_owner_is_recorded_as_a_helm_label_and_adoption_is_a_reason():
    assert ro.owner_labels("team-a") == {"gpupool.io/owner": "team-a"}
    assert "adopted by owner 'team-a'" in ro.adopt_reason("team-a")


# ---- serves: nothing missing -----------------------------------------------------------------------------------
def test_a_release_made_for_the_same_pools_serves_them():
    a = cluster(with_(A100, taints=[TEAM], mig={"mode": "dynamic"}), name="a")
    b = cluster(with_(A100, name="b100", node_selector={"pool": "b100"}, taints=[TEAM], mig={"mode": "dynamic"}))
    assert gaps(b, release_of(a)) == []


def test_more_gates_and_tolerations_than_needed_still_serve():
    a = cluster(with_(T4, taints=[TEAM], sharing={"time_slicing": {"interval": "Short"}}), GB200, name="a")
    b = cluster(T4)
    assert gaps(b, release_of(a)) == []


def test_an_inventory_without_present_pools_needs_nothing():
    b = load_cluster({"name": "b", "allow_empty": True, "pools": [with_(T4, state="absent")]})
    assert gaps(b, {"resources": {"gpus": {"enabled": False}}}, version="0.4.1", chart="other") == []


def test_values_without_the_chart_defaults_count_the_chart_defaults():
    # `helm get values` without --all: only what was given; tolerations, root and modes are then the chart's
    assert gaps(cluster(T4, name="b"), {"featureGates": {}}) == [
        ro.Need(
            "a kubelet-plugin toleration of taint node-role.kubernetes.io/gpu=true:NoSchedule",
            "pool t4",
            "tolerations nvidia.com/gpu:NoSchedule",
        ),
        ro.Need(
            "the kubelet-plugin affinity gpupool sets (nodes with gpupool.io/pool)",
            "pool t4",
            "another affinity, which may keep the plugin off these pools' nodes",
        ),
    ]


# ---- each kind of difference ------------------------------------------------------------------------------------
def test_a_gate_the_pools_need_and_the_release_lacks():
    a = cluster(A100, name="a")
    b = cluster(with_(A100, mig={"mode": "dynamic"}))
    (gap,) = gaps(b, release_of(a))
    assert gap == ro.Need("gate DynamicMIG on", "pools[0] (a100).mig.mode", "off")


def test_an_explicit_gate_off_that_the_release_has_on_by_default():
    # CrashOnNVLinkFabricErrors is on by default: an inventory that turns it off is not served by the default
    a = cluster(GB200, name="a")
    b = cluster(GB200, feature_gates={"CrashOnNVLinkFabricErrors": False})
    (gap,) = gaps(b, release_of(a))
    gate = "CrashOnNVLinkFabricErrors"
    assert gap == ro.Need("gate %s off" % gate, "dra_driver.feature_gates.%s" % gate, "on")


def test_a_taint_the_release_does_not_tolerate():
    a = cluster(T4, name="a")
    b = cluster(with_(T4, taints=[TEAM]))
    (gap,) = gaps(b, release_of(a))
    assert gap.what == "a kubelet-plugin toleration of taint example.com/team=ml:NoSchedule" and gap.why == "pool t4"
    assert "node-role.kubernetes.io/gpu:NoSchedule" in gap.has and "nvidia.com/gpu:NoSchedule" in gap.has


def test_a_prefer_no_schedule_taint_keeps_no_plugin_off_and_is_not_needed():
    a = cluster(T4, name="a")
    b = cluster(with_(T4, taints=[dict(TEAM, effect="PreferNoSchedule")]))
    assert gaps(b, release_of(a)) == []


def test_compute_domains_off_in_the_release():
    a = cluster(T4, name="a")
    b = cluster(T4, GB200)
    (gap,) = gaps(b, release_of(a))
    assert gap == ro.Need("ComputeDomains on (resources.computeDomains.enabled)", "pool gb200", "them off")


def test_the_imex_mode_must_match_in_both_directions():
    host = with_(GB200, nvlink={"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]})
    driver_managed, host_managed = cluster(GB200, name="a"), cluster(host, name="a")
    assert gaps(cluster(host), release_of(driver_managed)) == [
        ro.Need("gate HostManagedIMEXDaemon on", "pools[0] (gb200).nvlink.mode", "off"),
        ro.Need("IMEX mode hostManaged", "pool gb200", "IMEX mode driverManaged"),
    ]
    assert gaps(cluster(GB200), release_of(host_managed)) == [
        ro.Need("IMEX mode driverManaged", "pool gb200", "IMEX mode hostManaged")
    ]


def test_the_imex_socket_of_host_managed_mode():
    host = with_(GB200, nvlink={"mode": "host_imex", "imex_nodes": ["10.0.0.1", "10.0.0.2"]})
    release = release_of(cluster(host, name="a"))
    release["resources"]["computeDomains"]["imex"]["hostSocketPath"] = "/run/imex.sock"
    (gap,) = gaps(cluster(host), release)
    assert gap == ro.Need("IMEX host socket /etc/nvidia-imex/imex_ctrl.sock", "pool gb200", "/run/imex.sock")


def test_the_driver_root():
    a = cluster(T4, name="a")
    (gap,) = gaps(cluster(T4), release_of(a), root="/run/nvidia/driver")
    assert gap == ro.Need("nvidiaDriverRoot /run/nvidia/driver", "pool t4", "/")
    (gap,) = gaps(cluster(T4, nvidia_driver_root="/opt/nvidia"), release_of(a))
    assert gap.what == "nvidiaDriverRoot /opt/nvidia"


def test_gpu_resources_off():
    release = release_of(cluster(T4, name="a"))
    release["resources"]["gpus"]["enabled"] = False
    assert [g.what for g in gaps(cluster(T4), release)] == ["GPU resources on (resources.gpus.enabled)"]


def test_another_chart_version_or_chart():
    a = cluster(T4, name="a")
    (gap,) = gaps(cluster(T4), release_of(a), version="0.5.0")
    assert gap == ro.Need("chart dra-driver-nvidia-gpu 0.5.1", "dra_driver.version", "dra-driver-nvidia-gpu 0.5.0")
    (gap,) = gaps(cluster(T4), release_of(a), chart="nvidia-dra-driver-gpu")
    assert gap.why == "dra_driver.chart"


def test_a_release_with_another_affinity():
    release = release_of(cluster(T4, name="a"))
    release["kubeletPlugin"]["affinity"] = {"nodeAffinity": {}}
    assert [g.what for g in gaps(cluster(T4), release)] == [
        "the kubelet-plugin affinity gpupool sets (nodes with gpupool.io/pool)"
    ]


def test_the_users_other_values_are_compared_leaf_by_leaf():
    a = cluster(T4, name="a", values={"webhook": {"enabled": False}, "logVerbosity": "4"})
    b = cluster(T4, values={"webhook": {"enabled": False}, "logVerbosity": "6", "image": {"tag": "v0.5.1"}})
    assert [g.as_dict() for g in gaps(b, release_of(a))] == [
        {"need": "value image.tag='v0.5.1'", "for": "dra_driver.values.image.tag", "release_has": "it unset"},
        {"need": "value logVerbosity='6'", "for": "dra_driver.values.logVerbosity", "release_has": "'4'"},
    ]


def test_numbers_from_helm_compare_as_numbers_and_bools_stay_bools():
    assert ro._same(1, 1.0) and not ro._same(True, 1) and not ro._same("1", 1) and ro._same(False, False)


@pytest.mark.parametrize(
    "toleration,tolerated",
    [
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Exists"}, True),  # empty effect: every effect
        ({"operator": "Exists"}, True),  # empty key with Exists: every taint
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, True),  # Equal is the default operator
        ({"key": "k", "operator": "Equal", "value": "w"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "k", "operator": "Gt", "value": "1"}, False),
    ],
)
def test_tolerates_is_kubernetes_toleration_matching(toleration, tolerated):
    assert ro.tolerates(toleration, {"key": "k", "value": "v", "effect": "NoSchedule"}) is tolerated


def test_the_refusal_names_the_owner_the_release_and_every_difference():
    a = cluster(T4, name="a")
    b = cluster(with_(A100, taints=[TEAM], mig={"mode": "dynamic"}))
    found = gaps(b, release_of(a))
    text = ro.refusal("team-a", "team-b", "dra-driver-nvidia-gpu", "dra", found)
    assert text.startswith(
        "the DRA driver release dra-driver-nvidia-gpu (namespace dra) is owned by 'team-a'; it lacks what this "
        "inventory (owner 'team-b') needs: gate DynamicMIG on for pools[0] (a100).mig.mode (the release has off); "
        "a kubelet-plugin toleration of taint example.com/team=ml:NoSchedule for pool a100 (the release has "
    )
    assert "ask the inventory of owner 'team-a' to add it" in text
    assert "kubectl -n dra label secret -l owner=helm,name=dra-driver-nvidia-gpu gpupool.io/owner-" in text
    summary = ro.foreign_summary("team-a", found)
    assert summary["serves"] is False and summary["owner"] == "team-a" and len(summary["missing"]) == 2
    assert ro.foreign_summary("team-a", [])["serves"] is True


# ---- properties ----------------------------------------------------------------------------------------------
POOL_KINDS = {
    "t4": T4,
    "t4-sliced": with_(T4, sharing={"time_slicing": {"interval": "Short"}}),
    "t4-mps": with_(T4, sharing={"mps": {}}),
    "a100": A100,
    "a100-dyn": with_(A100, mig={"mode": "dynamic"}),
    "gb200": GB200,
    "t4-nogpu-taint": with_(T4, gpu_taint=False),
}
TAINTS = [
    TEAM,
    {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
    {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
]


@st.composite
def pool_lists(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(POOL_KINDS)), min_size=1, max_size=4, unique=True))
    out = []
    for kind in kinds:
        pool = with_(POOL_KINDS[kind], name=kind, node_selector={"pool": kind})
        taints = draw(st.lists(st.sampled_from(range(len(TAINTS))), max_size=2, unique=True))
        if taints:
            pool["taints"] = [TAINTS[i] for i in taints]
        out.append(pool)
    return out


def valid_cluster(pools, name):
    try:
        return cluster(*pools, name=name)
    except GpupoolError:  # gates the driver refuses together (MPS with dynamic MIG): not an inventory
        assume(False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool_lists(), st.data())
def test_a_release_made_for_more_pools_serves_any_subset_of_them(pools, data):
    """Owner A's release, converged for its pools, serves an owner B whose pools are a subset of A's (same
    kinds, same taints): nothing B needs is missing, so B writes nothing."""
    a = valid_cluster(pools, "a")
    subset = data.draw(st.lists(st.sampled_from(range(len(pools))), min_size=1, unique=True))
    b = valid_cluster([pools[i] for i in sorted(subset)], "b")
    assert gaps(b, release_of(a)) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool_lists(), pool_lists())
def test_what_is_missing_is_exactly_what_the_release_would_change_for_b(pools_a, pools_b):
    """Whatever A and B are: B is served exactly when B's own values, converged over A's release, would change
    no gate B needs, tolerate no new taint of B's, and switch on nothing B needs; and every missing gate is one
    whose value in B's values differs from the release's effective one."""
    a = valid_cluster(pools_a, "a")
    b = valid_cluster([with_(p, name="b-" + p["name"]) for p in pools_b], "b")
    found = gaps(b, release_of(a))
    assert gaps(b, release_of(b)) == []  # B's own release always serves B
    have = ro._release_gates(release_of(a), "0.5.1")
    wanted = desired_values(b, L05)["featureGates"]
    gate_gaps = {g.what.split(" ")[1] for g in found if g.what.startswith("gate ")}
    assert gate_gaps == {k for k, v in wanted.items() if bool(have.get(k, False)) != v}
    a_taints = {(t["key"], t.get("value"), t["effect"]) for p in a.present_pools for t in p.all_taints}
    b_blocking = {
        (t["key"], t.get("value"), t["effect"])
        for p in b.present_pools
        for t in p.all_taints
        if t["effect"] != "PreferNoSchedule"
    }
    tol_gaps = [g for g in found if g.what.startswith("a kubelet-plugin toleration")]
    assert len(tol_gaps) == len({(k, e) for k, _v, e in b_blocking} - {(k, e) for k, _v, e in a_taints})
