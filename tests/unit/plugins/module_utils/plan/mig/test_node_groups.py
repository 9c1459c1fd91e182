"""Which nodes carry which MIG group's layout: stable, preferring what the inventory names, pure."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CONFIG_LABEL as MIG_CONFIG_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import (
    assign_groups,
    members,
)


def pool(groups, node_count=6):
    data = {
        "name": "c1",
        "pools": [
            {
                "name": "a100",
                "node_selector": {"gpu": "a100"},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}, "groups": groups},
            }
        ],
    }
    return model_load.load_cluster(data).pools[0]


def node(name, config=None):
    labels = {MIG_CONFIG_LABEL: config} if config else {}
    return {"metadata": {"name": name, "labels": labels}}


def test_no_groups_every_node_carries_the_pool_layout():
    assert assign_groups(pool([]), [node("n1"), node("n0")]) == {"n0": None, "n1": None}


def test_a_new_group_takes_preferred_nodes_then_the_rest_by_name():
    p = pool([{"nodes": 2, "layout": {"1g.5gb": 7}, "prefer": ["n3"]}])
    got = assign_groups(p, [node("n%d" % i, "gpupool-a100") for i in range(5)])
    assert members(got, "g1") == ["n0", "n3"]
    assert members(got, None) == ["n1", "n2", "n4"]


def test_members_stay_and_a_shrunk_group_keeps_its_lowest_names():
    p = pool([{"name": "small", "nodes": 1, "layout": {"1g.5gb": 7}}])
    nodes = [node("n0"), node("n1", "gpupool-a100-small"), node("n2", "gpupool-a100-small")]
    got = assign_groups(p, nodes)
    assert got == {"n0": None, "n1": "small", "n2": None}


def test_a_node_left_by_one_group_goes_last_to_another():
    p = pool([{"name": "a", "nodes": 1, "layout": {"1g.5gb": 7}}, {"name": "b", "nodes": 1, "layout": {"7g.40gb": 1}}])
    nodes = [node("n0", "gpupool-a100-a"), node("n1", "gpupool-a100-a"), node("n2")]
    assert assign_groups(p, nodes) == {"n0": "a", "n1": None, "n2": "b"}


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    labels=st.lists(
        st.sampled_from([None, "gpupool-a100", "gpupool-a100-g1", "gpupool-a100-g2", "gpupool-a100-g3"]), max_size=8
    ),
    prefer=st.lists(st.integers(0, 9), max_size=3),
)
def test_groups_get_their_size_and_members_stay(sizes, labels, prefer):
    groups = [{"nodes": n, "layout": {"1g.5gb": 7}, "prefer": ["n%d" % i for i in prefer]} for n in sizes]
    p = pool(groups)
    nodes = [node("n%d" % i, lab) for i, lab in enumerate(labels)]
    got = assign_groups(p, nodes)
    assert sorted(got) == sorted("n%d" % i for i in range(len(labels)))
    label_of = {x["metadata"]["name"]: x["metadata"]["labels"].get(MIG_CONFIG_LABEL) for x in nodes}
    # groups never exceed their size, and are filled as far as the nodes go (members first: stability wins)
    assert all(len(members(got, "g%d" % (k + 1))) <= size for k, size in enumerate(sizes))
    assert sum(1 for g in got.values() if g) == min(sum(sizes), len(labels))
    for k, size in enumerate(sizes):
        group = "g%d" % (k + 1)
        # a member keeps its group while the group has room for it (lowest names first)
        kept = [n for n in sorted(got) if label_of[n] == "gpupool-a100-" + group]
        assert set(kept[:size]) <= set(members(got, group))
    # the same nodes in another order get the same answer
    assert assign_groups(p, list(reversed(nodes))) == got
