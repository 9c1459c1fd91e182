"""One mig_layout run's plan and result (plan/mig/rollout_plan.py): pure, hand-made inventories and nodes."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_plan import (
    RolloutOptions,
    RolloutPlan,
    not_ready_warning,
    skipped_reason,
)

BASE = {
    "name": "c1",
    "mig_manager": {"max_unavailable": 2},
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
        {
            "name": "h100",
            "node_selector": {"gpu": "h100"},
            "gpu": {"model": "H100-80GB", "per_node": 1},
            "mig": {"mode": "static", "layout": {"1g.10gb": 7}},
            "drain": {"enabled": False},
        },
        {"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        {"name": "whole", "node_selector": {"gpu": "whole"}, "gpu": {"model": "A100-80GB"}, "mig": {"mode": "off"}},
        {
            "name": "gone",
            "state": "absent",
            "node_selector": {"gpu": "gone"},
            "gpu": {"model": "A100-40GB"},
            "mig": {"mode": "static", "layout": {"7g.40gb": 1}},
        },
    ],
}
PARAMS = dict(
    cordon=True,
    drain=None,
    drain_timeout=None,
    drain_grace_period=None,
    wait_timeout=1800,
    wait_sleep=5.0,
    relabel_delay=5.0,
    retry_failed=False,
    prune=True,
    pools=None,
    nodegroup_label="magnum.openstack.org/nodegroup",
    name_pattern=None,
)


def cluster(mutate=None):
    data = copy.deepcopy(BASE)
    if mutate:
        mutate(data)
    return model_load.load_cluster(data)


def options(**changes):
    return RolloutOptions.from_params(dict(PARAMS, **changes))


def rollout(check=False, mutate=None, **changes):
    c = cluster(mutate)
    return RolloutPlan(c, c.pools, options(**changes), check)


def node(name, gpu="a100", config=None, state=None, digest=None, ready=True, cordoned=False):
    labels = {"gpu": gpu}
    if config:
        labels[model_names.CONFIG_LABEL] = config
    if state:
        labels[model_names.STATE_LABEL] = state
    ann = {model_names.DIGEST_ANNOTATION: digest} if digest else {}
    if cordoned:
        ann[model_names.CORDON_ANNOTATION] = model_names.CORDON_VALUE
    return {
        "metadata": {"name": name, "labels": labels, "annotations": ann},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name, node_name):
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"nodeName": node_name}}


def test_options_from_the_step_params():
    o = options(pools=["a100"], cordon=False, drain=True, name_pattern="gpu-*")
    assert o.limited and not o.cordon and o.drain and o.name_pattern == "gpu-*"
    assert not options().limited and not options(pools=[]).limited
    assert options() == RolloutOptions()  # the defaults are the module's


def test_the_plan_knows_its_static_pools_and_their_configs():
    r = rollout()
    assert [p.name for p in r.static] == ["a100", "h100"]
    assert sorted(r.configs) == ["gpupool-a100", "gpupool-h100"]
    assert r.desired == {name: config.entries for name, config in r.configs.items()}
    assert r.config_map == {
        "name": "gpupool-mig-parted-config",
        "namespace": "gpu-operator",
        "action": "unchanged",
        "configs": {},
    }
    assert r.documents is None and not r.changed


def test_the_plan_refuses_a_layout_that_does_not_fit_before_any_request():
    c = cluster()
    c.pools[0].mig.layout = {"7g.40gb": 2}
    with pytest.raises(Problems) as err:
        RolloutPlan(c, c.pools, options(), False)
    assert "pools[a100].mig" in str(err.value)


@pytest.mark.parametrize(
    "changes,a100,h100",
    [
        ({}, (True, True), (False, True)),  # the inventory: the cluster drains, h100 does not
        ({"cordon": False}, (True, True), (False, False)),  # a drain cordons anyway
        ({"drain": False}, (False, True), (False, True)),  # the option overrides every pool's policy
        ({"drain": False, "cordon": False}, (False, False), (False, False)),
        ({"drain": True, "cordon": False}, (True, True), (True, True)),
    ],
)
def test_each_pool_drains_and_cordons_as_its_policy_and_the_options_say(changes, a100, h100):
    r = rollout(**changes)
    assert (r.drains("a100"), r.cordons("a100")) == a100
    assert (r.drains("h100"), r.cordons("h100")) == h100


def test_drain_options_override_timeout_and_grace_period_of_every_policy():
    r = rollout(drain_timeout=30, drain_grace_period=0)
    assert {s.timeout for s in r.settings.values()} == {30} and r.cluster_settings.timeout == 30
    assert {s.grace_period for s in r.settings.values()} == {0}
    assert r.cluster_settings.enabled  # the cluster's own policy, for the uncordons
    assert rollout().settings["a100"].timeout == 600


@pytest.mark.parametrize("changes,prunes", [({}, True), ({"prune": False}, False), ({"pools": ["a100"]}, False)])
def test_prunes_only_when_the_run_sees_every_pool(changes, prunes):
    assert rollout(**changes).prunes is prunes


def test_skipped_reasons():
    c = cluster()
    by_name = {p.name: p for p in c.pools}
    assert skipped_reason(by_name["gone"]) == "no static MIG layout (state absent)"
    assert skipped_reason(by_name["whole"]) == "no static MIG layout (mig.mode is off)"
    assert not_ready_warning("a100", "n3") == (
        "pool a100: node n3 is NotReady and needs a MIG change; skipped (rerun when it is Ready)"
    )


def test_plan_pools_lists_every_pool_in_scope_and_plans_the_static_ones():
    r = rollout()
    digest = r.configs["gpupool-a100"].digest
    assigned = {
        "a100": [
            node("a-0", config="gpupool-a100", state="success", digest=digest),
            node("a-1"),
            node("a-2", ready=False),
            node("a-3", config="gpupool-a100", state="pending", digest=digest),
        ],
        "h100": [],
    }
    warnings = r.plan_pools(assigned, changed_configs=set())
    assert warnings == [not_ready_warning("a100", "a-2")]
    assert set(r.pools) == {"a100", "h100", "t4", "whole", "gone"}
    assert r.pools["t4"] == {"skipped": "no static MIG layout (mig.mode is off)"}
    assert r.pools["gone"] == {"skipped": "no static MIG layout (state absent)"}
    a100 = r.pools["a100"]
    assert a100["config_name"] == "gpupool-a100" and a100["digest"] == digest
    assert a100["selector"] == "gpu=a100"
    assert {row["name"]: row["action"] for row in a100["nodes"]} == {
        "a-0": plan_mig_rollout.NONE,
        "a-1": plan_mig_rollout.CONFIGURE,
        "a-2": plan_mig_rollout.SKIP,
        "a-3": plan_mig_rollout.WAIT,
    }
    assert a100["waves"] == [["a-3", "a-1"]]  # max_unavailable 2, the node already switching first
    assert [p.pool for p in r.plans] == ["a100", "h100"]
    assert r.plans[0].selector == "gpu=a100" and r.plans[1].waves == []
    assert r.result(False)["skipped_nodes"] == ["a-2"]


def test_a_changed_config_switches_nodes_that_have_its_label_but_no_digest():
    labelled_by_someone = node("a-0", config="gpupool-a100", state="success")
    r = rollout()
    r.plan_pools({"a100": [labelled_by_someone], "h100": []}, changed_configs=set())
    assert r.plans[0].nodes[0].action == plan_mig_rollout.NONE
    r = rollout()
    r.plan_pools({"a100": [labelled_by_someone], "h100": []}, changed_configs={"gpupool-a100"})
    assert r.plans[0].nodes[0].action == plan_mig_rollout.RECONFIGURE


def test_retry_failed_reconfigures_a_failed_node_instead_of_blocking():
    digest = rollout().configs["gpupool-a100"].digest
    failed = node("a-0", config="gpupool-a100", state="failed", digest=digest)
    r = rollout()
    r.plan_pools({"a100": [failed, node("a-1")], "h100": [node("h-0", gpu="h100")]}, set())
    assert r.plans[0].blocked == ["a-0"]
    # the failed node holds back its own pool only: no wave there, the other pool's waves are planned
    assert r.plans[0].waves == [] and r.pools["a100"]["blocked"] == ["a-0"]
    assert r.plans[1].waves == [["h-0"]] and "blocked" not in r.pools["h100"]
    assert r.result(False)["blocked_nodes"] == ["a-0"]
    r = rollout(retry_failed=True)
    r.plan_pools({"a100": [failed], "h100": []}, set())
    assert r.plans[0].nodes[0].action == plan_mig_rollout.RECONFIGURE


def planned(check=False, **changes):
    r = rollout(check=check, **changes)
    r.plan_pools({"a100": [node("a-%d" % i) for i in range(3)], "h100": [node("h-0", gpu="h100")]}, set())
    return r


def test_add_wave_makes_the_result_entry_with_the_pods_of_a_drain():
    r = planned()
    a100 = r.plans[0]
    assert a100.waves == [["a-0", "a-1"], ["a-2"]]
    pods = {"a-0": ([pod("train", "a-0")], [pod("ds", "a-0")]), "a-1": ([], [])}
    first = r.add_wave(a100, 0, pods)
    assert first.as_dict() == {
        "pool": "a100",
        "index": 0,
        "nodes": ["a-0", "a-1"],
        "actions": {"a-0": "configure", "a-1": "configure"},
        "result": "not started",
        "evict": ["ml/train"],
        "skip": ["ml/ds"],
    }
    second = r.add_wave(a100, 1)  # a pool that does not drain: no pods
    assert second.evict is None and "evict" not in second.as_dict() and "skip" not in second.as_dict()
    assert r.waves == [first, second]
    assert r.plan_of(second) is a100
    assert r.later_nodes(first) == ["a-2"] and r.later_nodes(second) == []


def test_check_mode_waves_are_planned_and_say_whether_they_change_anything():
    r = planned(check=True)
    entry = r.add_wave(r.plans[0], 0)
    assert entry.result == "planned"
    assert r.changes_in_check(entry)
    waiting = dataclasses.replace(entry, actions={"a-0": plan_mig_rollout.WAIT})
    assert r.changes_in_check(waiting)  # cordon (and uncordon) still happen
    assert not planned(check=True, cordon=False, drain=False).changes_in_check(waiting)


def test_a_run_wave_in_the_result_has_the_keys_it_reached():
    r = planned()
    entry = r.add_wave(r.plans[0], 0)
    entry.started, entry.cordoned, entry.labelled = 10.0, ["a-0"], {"a-0": 10.5}
    entry.unlabelled["a-1"] = 10.2  # the runner's own bookkeeping: not in the result
    assert r.result(False)["waves"] == [
        {
            "pool": "a100",
            "index": 0,
            "nodes": ["a-0", "a-1"],
            "actions": {"a-0": "configure", "a-1": "configure"},
            "result": "not started",
            "started": 10.0,
            "cordoned": ["a-0"],
            "labelled": {"a-0": 10.5},
        }
    ]
    entry.states, entry.finished, entry.result = {"a-0": "success", "a-1": "timeout"}, 20.0, "timeout"
    entry.last_state["a-1"] = "pending"
    out = r.result(False)["waves"][0]
    assert (out["states"], out["finished"], out["last_state"]) == (entry.states, 20.0, {"a-1": "pending"})


def test_result_and_its_diff():
    r = planned()
    assert r.rollout_text() == ""  # before the ConfigMap was read
    r.documents = ({"version": "v1", "mig-configs": {}}, {"version": "v1", "mig-configs": {}})
    assert r.rollout_text() == ""  # no wave
    r.add_wave(r.plans[0], 0)
    r.diff.append({"before": {}, "after": {}})
    out = r.result(True)
    assert set(out) == {
        "changed",
        "config_map",
        "pools",
        "waves",
        "failed_nodes",
        "skipped_nodes",
        "blocked_nodes",
        "diff",
    }
    prepared = out["diff"][0]["prepared"]
    assert prepared.startswith("MIG rollout of pool a100 to gpupool-a100 (all GPUs: ")
    assert "wave 1/1: cordon, evict the GPU pods, set nvidia.com/mig.config" in prepared
    assert out["diff"][1:] == [{"before": {}, "after": {}}]
    assert "diff" not in r.result(False)
    r.waves.clear()
    assert r.result(True)["diff"] == [{"before": {}, "after": {}}]  # no waves: the diffs alone
