"""The drain policy in the inventory: the cluster's defaults, a pool's changes, and what the model refuses."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy, policy_dict

BASE = {
    "name": "c1",
    "magnum": {"cloud": "openstack", "cluster": "k8s"},
    "pools": [
        {"name": "gpu-t4", "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2}, "gpu": {"model": "T4"}},
        {
            "name": "gpu-a100",
            "nodegroup": {"flavor": "g4.p2.40g"},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
        },
    ],
}
DEFAULTS = {"enabled": True, "timeout": 600, "grace_period": None, "skip_pods": None, "when_budget_blocks": "wait"}


def load(mutate=lambda d: None):
    data = copy.deepcopy(BASE)
    mutate(data)
    return model_load.load_cluster(data)


def problems(mutate):
    with pytest.raises(model_errors.Problems) as err:
        load(mutate)
    return err.value.problems


def test_defaults_drain_every_change():
    cluster = load()
    assert policy_dict(drain_policy(cluster)) == DEFAULTS
    assert [policy_dict(drain_policy(cluster, p)) for p in cluster.pools] == [DEFAULTS, DEFAULTS]
    assert cluster.magnum.prune_nodegroups is False


def test_a_pool_changes_only_the_keys_it_gives():
    def mutate(d):
        d["drain"] = {"timeout": 900, "grace_period": 30, "skip_pods": "gpupool.io/drain=skip"}
        d["pools"][1]["drain"] = {"when_budget_blocks": "fail", "grace_period": None, "timeout": 1200}

    cluster = load(mutate)
    t4, a100 = cluster.pools
    assert policy_dict(drain_policy(cluster, t4)) == {
        "enabled": True,
        "timeout": 900,
        "grace_period": 30,
        "skip_pods": "gpupool.io/drain=skip",
        "when_budget_blocks": "wait",
    }
    # grace_period: null in the pool means each pod's own, not "the cluster's"
    assert policy_dict(drain_policy(cluster, a100)) == {
        "enabled": True,
        "timeout": 1200,
        "grace_period": None,
        "skip_pods": "gpupool.io/drain=skip",
        "when_budget_blocks": "fail",
    }
    dumped = model_load.dump_cluster(cluster)
    assert dumped["drain"]["timeout"] == 900 and dumped["pools"][1]["drain_effective"]["timeout"] == 1200


def test_a_pool_can_turn_draining_off_and_skip_nothing():
    def mutate(d):
        d["drain"] = {"skip_pods": "app=monitor"}
        d["pools"][0]["drain"] = {"enabled": False, "skip_pods": None}

    cluster = load(mutate)
    mine = drain_policy(cluster, cluster.pools[0])
    assert mine.enabled is False and mine.skip_pods is None
    assert drain_policy(cluster, cluster.pools[1]).skip_pods == "app=monitor"


def test_grace_period_longer_than_the_timeout_is_refused_where_it_is_set():
    assert problems(lambda d: d.update(drain={"timeout": 60, "grace_period": 120})) == [
        (
            "gpupool_cluster.drain.grace_period",
            "grace_period 120s is longer than timeout 60s: an evicted pod may take its whole grace period to stop, so the "
            "drain would give up while the pod is still stopping and nothing would be removed or reconfigured; raise "
            "timeout to at least 120 or lower grace_period",
        )
    ]

    def pool_timeout(d):
        d["drain"] = {"grace_period": 300}
        d["pools"][1]["drain"] = {"timeout": 100}

    assert problems(pool_timeout) == [
        (
            "gpupool_cluster.pools[1] (gpu-a100).drain.timeout",
            "grace_period 300s is longer than timeout 100s: an evicted pod may take its whole grace period to stop, so "
            "the drain would give up while the pod is still stopping and nothing would be removed or reconfigured; raise "
            "timeout to at least 300 or lower grace_period",
        )
    ]


def test_a_pool_that_does_not_drain_has_no_grace_period_to_fit():
    def mutate(d):
        d["pools"][0]["drain"] = {"enabled": False, "grace_period": 3600}

    assert drain_policy(load(mutate), load(mutate).pools[0]).grace_period == 3600


@pytest.mark.parametrize(
    "where, value, message",
    [
        (
            "cluster",
            {"skip_pods": "app inference"},
            "'app inference' is not a label selector requirement: use key=value, key!=value, key in (a,b), key notin (a,b), "
            "key or !key",
        ),
        ("pool", {"skip_pods": ""}, "an empty selector matches every pod; leave the key out instead"),
        ("pool", {"when_budget_blocks": "ignore"}, "'ignore' is not allowed: use 'wait' or 'fail'"),
        ("cluster", {"timeout": 0}, "must be 1 or more; got a whole number 0"),
        (
            "pool",
            {"drain_timeout": 5},
            "unknown key 'drain_timeout'; did you mean 'timeout'? Allowed here: timeout, "
            "grace_period, when_budget_blocks, enabled, skip_pods.",
        ),
    ],
)
def test_shape_problems_name_the_key(where, value, message):
    def mutate(d):
        if where == "cluster":
            d["drain"] = value
        else:
            d["pools"][1]["drain"] = value

    (found,) = problems(mutate)
    prefix = "gpupool_cluster.drain" if where == "cluster" else "gpupool_cluster.pools[1] (gpu-a100).drain"
    key = next(iter(value))
    assert found == (prefix + "." + key, message)


def test_prune_nodegroups_is_a_magnum_setting():
    cluster = load(lambda d: d["magnum"].update(prune_nodegroups=True))
    assert cluster.magnum.prune_nodegroups is True
    (found,) = problems(lambda d: d.update(prune_nodegroups=True))
    assert found[0] == "gpupool_cluster.prune_nodegroups"
