# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The orphan guard: a run that would cordon too many of a pool's nodes is refused unless confirmed (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import assign_nodes, node_matcher


def node(name, labels):
    return {"metadata": {"name": name, "labels": labels}}


def inventory(selector="a100", max_share=None, confirm=(), state="present"):
    data = {
        "name": "c1",
        "pools": [
            {"name": "gpu-a100", "node_selector": {"gpu": selector}, "gpu": {"model": "A100-40GB"}, "state": state},
            {"name": "gpu-t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}},
        ],
    }
    guard = {}
    if max_share is not None:
        guard["max_share"] = max_share
    if confirm:
        guard["confirm_pools"] = list(confirm)
    if guard:
        data["orphan_guard"] = guard
    return load_cluster(data)


def plan(cluster, nodes, confirmed=False, scope=None):
    present = [p for p in cluster.pools if p.state == "present"]
    assigned = assign_nodes(present, nodes, "magnum.openstack.org/nodegroup", None)
    claimed = [n["metadata"]["name"] for p in present for n in assigned[p.name]]
    selectors = {p.name: node_matcher(p, "magnum.openstack.org/nodegroup", None).describe for p in present}
    return orphans.guard_hits(cluster, nodes, claimed, selectors, scope, confirmed)


def a100_nodes(count, matching):
    """`count` nodes labelled for gpu-a100 by an earlier run, the first `matching` still labelled gpu=a100."""
    return [
        node("a100-%d" % i, {"gpupool.io/pool": "gpu-a100", "gpu": "a100" if i < matching else "other"})
        for i in range(count)
    ]


def test_a_selector_typo_is_refused_with_the_pool_its_selector_and_its_nodes():
    cluster = inventory(selector="a10")  # the typo
    hits = plan(cluster, a100_nodes(5, 5))
    assert [(h.pool, h.at, h.members) for h in hits] == [("gpu-a100", "gpupool_cluster.pools[0]", 5)]
    text = orphans.guard_message(hits, cluster.orphan_guard.max_share)
    assert "pool gpu-a100 (gpupool_cluster.pools[0]): its selector gpu=a10 no longer matches all of its nodes: " in text
    assert "a100-0, a100-1, a100-2 and 2 more" in text
    assert "-e gpupool_confirm_orphans=true" in text and "orphan_guard.confirm_pools" in text
    assert max(len(line) for line in text.splitlines()) <= 200
    # a control character in a selector (the model refuses them; the message must not break its lines anyway)
    odd = orphans.OrphanGuardHit("p", "gpupool_cluster.pools[0]", "gpu=a100\n", ["n"], 1)
    assert "its selector gpu=a100\\n no longer matches all of its nodes: n" in orphans.guard_message([odd], 0.5)


def test_a_minority_passes_a_majority_or_all_is_refused():
    cluster = inventory()
    assert plan(cluster, a100_nodes(4, 2)) == []  # 2 of 4: exactly the share, allowed
    assert [h.orphaned for h in plan(cluster, a100_nodes(4, 1))] == [["a100-1", "a100-2", "a100-3"]]
    assert plan(inventory(max_share=1), a100_nodes(2, 1)) == []
    assert len(plan(inventory(max_share=1), a100_nodes(2, 0))) == 1  # never all of them, whatever the share
    assert len(plan(cluster, a100_nodes(1, 0))) == 1


def test_confirmed_absent_out_of_scope_and_already_orphaned_are_not_refused():
    nodes = a100_nodes(3, 0)
    assert plan(inventory(), nodes, confirmed=True) == []
    assert plan(inventory(confirm=["gpu-a100"]), nodes) == []
    assert plan(inventory(state="absent"), nodes) == []
    assert plan(inventory(), nodes, scope=["gpu-t4"]) == []
    orphaned_before = [
        node(n["metadata"]["name"], dict(n["metadata"]["labels"], **{"gpupool.io/orphaned": "true"})) for n in nodes
    ]
    assert plan(inventory(), orphaned_before) == []


def test_a_node_moved_to_another_pool_is_not_an_orphan():
    nodes = [node("n%d" % i, {"gpupool.io/pool": "gpu-a100", "gpu": "t4"}) for i in range(3)]
    assert plan(inventory(), nodes) == []


@given(
    st.integers(min_value=1, max_value=30),
    st.data(),
    st.sampled_from([0, 0.1, 0.25, 0.5, 0.75, 1]),
    st.booleans(),
    st.booleans(),
)
def test_never_more_than_the_share_unconfirmed_and_confirmed_never_refused(count, data, share, confirmed, in_inventory):
    matching = data.draw(st.integers(min_value=0, max_value=count))
    orphaned_before = data.draw(st.integers(min_value=0, max_value=count - matching))
    nodes = a100_nodes(count, matching)
    for n in nodes[matching : matching + orphaned_before]:
        n["metadata"]["labels"]["gpupool.io/orphaned"] = "true"
    cluster = inventory(max_share=share, confirm=["gpu-a100"] if in_inventory else ())
    hits = plan(cluster, nodes, confirmed=confirmed)
    if confirmed or in_inventory:
        assert hits == []
        return
    members = count - orphaned_before
    newly = members - matching
    if not hits:  # let through: within the share, and never the whole pool
        assert newly <= share * members and (newly < members or members == 0)
    else:
        (hit,) = hits
        assert len(hit.orphaned) == newly and hit.members == members
        assert newly > share * members or newly == members
