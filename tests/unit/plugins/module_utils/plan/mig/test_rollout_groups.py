"""A mig_layout run over a pool with MIG groups (mig.groups): each node gets its group's config, and only the nodes
whose config label changes are planned into waves (plan/mig/rollout_plan.py, rollout_text.py, waves.py)."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import waves as plan_waves
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_plan import RolloutOptions, RolloutPlan

POOL = "gpupool-a100"
GROUP = "gpupool-a100-small"
BASE = {
    "name": "c1",
    "mig_manager": {"max_unavailable": 1},
    "pools": [
        {
            "name": "a100",
            "node_selector": {"gpu": "a100"},
            "gpu": {"model": "A100-40GB", "per_node": 1},
            "mig": {
                "mode": "static",
                "layout": {"3g.20gb": 1, "2g.10gb": 2},
                "groups": [{"name": "small", "nodes": 1, "layout": {"1g.5gb": 7}}],
            },
        },
    ],
}


def rollout(nodes_in_group=1, check=False):
    data = copy.deepcopy(BASE)
    data["pools"][0]["mig"]["groups"][0]["nodes"] = nodes_in_group
    c = model_load.load_cluster(data)
    return RolloutPlan(c, c.pools, RolloutOptions(), check)


def node(name, config=None, digest=None):
    labels = {"gpu": "a100"}
    ann = {}
    if config:
        labels[model_names.CONFIG_LABEL] = config
        labels[model_names.STATE_LABEL] = "success"
        ann[model_names.DIGEST_ANNOTATION] = digest
    return {
        "metadata": {"name": name, "labels": labels, "annotations": ann},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def converged(r, assignment):
    """Nodes as a finished rollout leaves them: each labelled with its config and that config's digest."""
    return [node(name, config, r.configs[config].digest) for name, config in sorted(assignment.items())]


def test_a_group_has_its_own_config_beside_the_pools():
    r = rollout()
    assert sorted(r.configs) == [POOL, GROUP]
    assert r.desired[GROUP] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]
    assert r.config_paths[GROUP] == "gpupool_cluster.pools[0] (a100).mig.groups[0].name"


def test_a_fresh_pool_labels_one_node_with_the_group_and_the_rest_with_the_pool():
    r = rollout()
    r.plan_pools({"a100": [node("n-%d" % i) for i in range(4)]}, set())
    entry = r.pools["a100"]
    assert entry["assignment"] == {"n-0": "small", "n-1": None, "n-2": None, "n-3": None}
    assert entry["waves"] == [["n-1"], ["n-2"], ["n-3"]] and entry["config_name"] == POOL
    assert entry["groups"]["small"]["waves"] == [["n-0"]]
    assert entry["groups"]["small"]["config_name"] == GROUP
    assert [(p.pool, p.group) for p in r.plans] == [("a100", None), ("a100", "small")]


def test_adding_a_group_to_a_converged_pool_moves_exactly_one_node():
    before = rollout()
    nodes = converged(before, {"n-%d" % i: POOL for i in range(4)})
    r = rollout()
    r.plan_pools({"a100": nodes}, set())
    changing = {row.name: row.action for p in r.plans for row in p.nodes if row.action != "none"}
    assert changing == {"n-0": plan_mig_rollout.CONFIGURE}
    small = r.plans[1]
    entry = r.add_wave(small, 0)
    assert entry.group == "small" and entry.nodes == ["n-0"]
    assert entry.as_dict()["group"] == "small"
    assert r.plan_of(entry) is small
    assert plan_waves.subject(small, entry) == "MIG wave 1/1 of a100 group small"
    diff = plan_waves.node_diffs(small, ["n-0"], {})
    assert diff[0]["before_header"] == "Node n-0 (pool a100, group small)"
    assert diff[0]["after"]["metadata"]["labels"][model_names.CONFIG_LABEL] == GROUP
    r.documents = ({"mig-configs": {}}, {"mig-configs": {}})
    text = r.rollout_text()
    assert "MIG groups of pool a100 (nodes that keep their config are not touched):" in text
    assert "  group small (gpupool-a100-small): n-0\n    n-0 moves: gpupool-a100 -> gpupool-a100-small\n" in text
    assert "  the pool's layout (gpupool-a100): 3 node(s)\n" in text
    assert "MIG rollout of pool a100, group small, to gpupool-a100-small (all GPUs: 1g.5gb x7)" in text


def test_a_converged_pool_with_a_group_changes_nothing():
    r = rollout()
    nodes = converged(r, {"n-0": GROUP, "n-1": POOL, "n-2": POOL, "n-3": POOL})
    r.plan_pools({"a100": nodes}, set())
    assert all(row.action == "none" for p in r.plans for row in p.nodes)
    assert all(p.waves == [] for p in r.plans)


def test_growing_the_group_moves_only_the_new_member_and_keeps_the_old_one():
    r = rollout(nodes_in_group=2)
    nodes = converged(rollout(), {"n-0": POOL, "n-1": POOL, "n-2": GROUP, "n-3": POOL})
    r.plan_pools({"a100": nodes}, set())
    assert r.pools["a100"]["assignment"] == {"n-0": "small", "n-1": None, "n-2": "small", "n-3": None}
    changing = {row.name for p in r.plans for row in p.nodes if row.action != "none"}
    assert changing == {"n-0"}


def test_shrinking_the_group_returns_one_node_to_the_pools_layout():
    big = rollout(nodes_in_group=2)
    nodes = converged(big, {"n-0": GROUP, "n-1": POOL, "n-2": GROUP, "n-3": POOL})
    r = rollout(nodes_in_group=1)
    r.plan_pools({"a100": nodes}, set())
    assert r.pools["a100"]["assignment"]["n-0"] == "small"  # the lowest name stays
    moves = [(row.name, p.config_name) for p in r.plans for row in p.nodes if row.action != "none"]
    assert moves == [("n-2", POOL)]


def test_a_failed_node_in_the_group_holds_back_the_whole_pool():
    r = rollout()
    failed = node("n-0", GROUP, r.configs[GROUP].digest)
    failed["metadata"]["labels"][model_names.STATE_LABEL] = "failed"
    r.plan_pools({"a100": [failed, node("n-1"), node("n-2")]}, set())
    assert [p.waves for p in r.plans] == [[], []]
    assert r.pools["a100"]["groups"]["small"]["blocked"] == ["n-0"]
    assert r.result(False)["blocked_nodes"] == ["n-0"]


def two_groups(sizes):
    data = copy.deepcopy(BASE)
    data["pools"][0]["mig"]["groups"] = [
        {"name": "small", "nodes": sizes[0], "layout": {"1g.5gb": 7}},
        {"name": "whole", "nodes": sizes[1], "layout": {"7g.40gb": 1}},
    ]
    c = model_load.load_cluster(data)
    return RolloutPlan(c, c.pools, RolloutOptions(), False)


CONFIGS = [POOL, GROUP, POOL + "-whole", None, "someone-else"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(CONFIGS), min_size=0, max_size=7),
    st.tuples(st.integers(1, 4), st.integers(1, 4)),
)
def test_property_only_nodes_whose_config_changes_move_and_a_rollout_converges(labels, sizes):
    """Over random current labels and group sizes: every node is planned exactly once, with its assigned config;
    a node is changed exactly when its label is not that config; each group gets its size (at most, with too few nodes); and
    once the planned labels are applied, the next plan changes nothing."""
    r = two_groups(sizes)
    names = ["n-%d" % i for i in range(len(labels))]
    nodes = [
        node(name, label, r.configs[label].digest if label in r.configs else "x") for name, label in zip(names, labels)
    ]
    r.plan_pools({"a100": nodes}, set())
    rows = {row.name: (plan.config_name, row) for plan in r.plans for row in plan.nodes}
    assert sorted(rows) == names
    assignment = r.pools["a100"]["assignment"]
    assert sum(1 for g in assignment.values() if g) == min(sum(sizes), len(names))
    for group, size in zip(("small", "whole"), sizes):
        members = [n for n, g in assignment.items() if g == group]
        # each group its size when the pool has the nodes (fewer: node_groups keeps labelled members first)
        assert len(members) == size if len(names) >= sum(sizes) else len(members) <= size
        assert all(rows[n][0] == "%s-%s" % (POOL, group) for n in members)
    for name, label in zip(names, labels):
        config, row = rows[name]
        assert (row.action != "none") == (label != config), (name, label, config, row)
    # apply: every node labelled with the config it was planned for; the next run changes nothing
    again = two_groups(sizes)
    again.plan_pools({"a100": converged(again, {n: rows[n][0] for n in names})}, set())
    assert all(row.action == "none" for plan in again.plans for row in plan.nodes)
    assert again.pools["a100"]["assignment"] == r.pools["a100"]["assignment"]
