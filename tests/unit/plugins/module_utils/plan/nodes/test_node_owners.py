"""The owner label on nodes: two inventories on one cluster never orphan, relabel or uncordon each other's nodes; a
pool that selects another owner's node is refused before any write; a node made before owner labels is adopted
when its pool is this inventory's and left alone (with a warning) when it is not."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_ledger, node_owners
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import orphans as plan_orphans
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    assign_nodes,
    desired_node_labels,
    desired_node_taints,
    gpupool_label_keys,
    node_matcher,
    node_patch,
)

POOL, OWNER, ORPHANED = "gpupool.io/pool", "gpupool.io/owner", "gpupool.io/orphaned"
BY, REASON = "gpupool.io/cordoned-by", "gpupool.io/cordon-reason"


def inventory(owner="team-b", pools=None):
    return model_load.load_cluster(
        {
            "name": "c1",
            "owner": owner,
            "allow_empty": True,
            "magnum": {"cloud": "x", "cluster": "y"},
            "pools": pools
            or [
                {"name": "l4", "node_selector": {"gpu": "l4"}, "gpu": {"model": "L4"}},
                {"name": "old", "state": "absent", "node_selector": {"gpu": "old"}, "gpu": {"model": "L4"}},
            ],
        }
    )


def node(name, labels, cordoned_by=None, reason=None):
    annotations = {}
    if cordoned_by:
        annotations[BY] = cordoned_by
    if reason:
        annotations[REASON] = reason
    # gpupool's cordon: its field manager set spec.unschedulable (plan/nodes/cordon_owner.py)
    fields = [{"manager": "gpupool", "operation": "Update", "fieldsV1": {"f:spec": {"f:unschedulable": {}}}}]
    meta = {"name": name, "labels": dict(labels), "annotations": annotations, "resourceVersion": "7"}
    return {
        "metadata": dict(meta, managedFields=fields if cordoned_by else []),
        "spec": {"unschedulable": True} if cordoned_by else {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def names(nodes):
    return [n["metadata"]["name"] for n in nodes]


def test_each_node_is_classified_by_its_owner_label_then_its_pool_label():
    pools = ["l4", "old"]
    assert node_owners.classify_node(node("a", {POOL: "x", OWNER: "team-b"}), "team-b", pools) == node_owners.OURS
    assert node_owners.classify_node(node("a", {POOL: "l4", OWNER: "team-a"}), "team-b", pools) == node_owners.FOREIGN
    assert node_owners.classify_node(node("a", {POOL: "old"}), "team-b", pools) == node_owners.LEGACY
    assert node_owners.classify_node(node("a", {POOL: "a100"}), "team-b", pools) == node_owners.UNKNOWN
    assert node_owners.classify_node(node("a", {"gpu": "l4"}), "team-b", pools) == node_owners.FREE


def test_split_leaves_out_another_owners_nodes_and_undeclared_legacy_ones_unless_selected():
    nodes = [
        node("a-0", {POOL: "a100", OWNER: "team-a"}),
        node("a-1", {POOL: "a100"}),  # legacy, pool not ours: maybe team-a's
        node("r-0", {POOL: "renamed", "gpu": "l4"}),  # legacy, pool not ours, but our l4 selects it: adopted
        node("o-0", {POOL: "old", "gpu": "old"}),  # legacy of our absent pool: adopted
        node("b-0", {POOL: "l4", OWNER: "team-b", "gpu": "l4"}),
        node(
            "b-1", {POOL: "l4", "gpu": "l4"}
        ),  # born from l4's nodegroup (the pool label from Magnum): new, not adopted
        node("cpu-0", {}),
    ]
    for legacy in nodes[2:4]:  # node_pool labelled these before owner labels: it recorded its keys
        legacy["metadata"]["annotations"]["gpupool.io/labels"] = "gpupool.io/pool"
    split = node_owners.split_nodes(nodes, "team-b", ["l4", "old"], selected=["r-0", "b-0"])
    assert names(split.mine) == ["b-0", "b-1", "cpu-0", "o-0", "r-0"]
    assert names(split.foreign) == ["a-0"] and names(split.unknown) == ["a-1"]
    assert split.adopted == ["o-0", "r-0"]


def test_a_pool_that_selects_another_owners_node_is_refused_naming_node_both_owners_and_the_fix():
    c = inventory()
    theirs = node("gpu-a-0", {POOL: "a100", OWNER: "team-a", "gpu": "l4"})
    assigned = assign_nodes(c.present_pools, [theirs])
    selectors = {p.name: node_matcher(p).describe for p in c.present_pools}
    clashes = node_owners.owner_clashes(c.pools, assigned, "team-b", selectors)
    assert clashes == [node_owners.OwnerClash("gpu-a-0", "team-a", "l4", "gpupool_cluster.pools[0]", "gpu=l4")]
    text = node_owners.clash_message(clashes, "team-b")
    assert text.startswith("node_pool did not write anything")
    for words in ("gpu-a-0", "'team-a'", "'team-b'", "pool l4 (gpupool_cluster.pools[0]) selects it with gpu=l4"):
        assert words in text
    assert "narrow the pool's node_selector" in text and "release the node from the other inventory" in text
    assert node_owners.owner_clashes(c.pools, assigned, "team-a", selectors) == []  # its own owner: no clash


def test_every_line_stays_within_200_characters_for_the_longest_names():
    long_node = "n" * 253
    owner = "o" * 63
    clashes = [node_owners.OwnerClash(long_node, "t" * 63, "p" * 63, "gpupool_cluster.pools[999]", "k" * 300)] * 7
    lines = node_owners.clash_message(clashes, owner).splitlines()
    lines += node_owners.unknown_message(node(long_node, {POOL: "p" * 63}), owner).splitlines()
    lines += node_owners.adopted_message([long_node] * 9, owner).splitlines()
    assert max(len(line) for line in lines) <= 200
    assert "and 2 more node(s)" in node_owners.clash_message(clashes, owner)


def test_unknown_message_says_how_to_claim_the_node():
    text = node_owners.unknown_message(node("a-1", {POOL: "a100"}), "team-b")
    assert "node a-1 carries gpupool.io/pool=a100" in text
    assert "add the pool back with" in text and "state: absent for one run" in text
    assert "label the node gpupool.io/owner=team-b" in text


def test_the_ledger_never_judges_another_owners_cordon_nor_one_of_an_undeclared_legacy_node():
    c = inventory()
    nodes = [
        node("a-0", {POOL: "a100", OWNER: "team-a"}, "mig-layout", "mig-layout:a100:cfg"),
        node("a-1", {POOL: "a100"}, "node-pool", "orphan:a100"),
        node("b-0", {POOL: "l4", OWNER: "team-b", "gpu": "l4"}, "mig-layout", "mig-layout:l4:cfg"),
    ]
    members = {"b-0": "l4"}
    verdicts = cordon_ledger.plan_ledger(nodes, c.pools, members, owner="team-b")
    assert [(v.node, v.action) for v in verdicts] == [("b-0", cordon_ledger.LIFT)]
    # without an owner (as before owner labels) the others' cordons would have been lifted: the filter matters
    assert {v.node for v in cordon_ledger.plan_ledger(nodes, c.pools, members)} == {"a-0", "a-1", "b-0"}


def test_an_orphan_made_before_owner_labels_gets_the_owner_label_recorded_as_gpupools():
    legacy = node("o-0", {POOL: "old", "gpu": "old"})
    labels = plan_orphans.orphan_labels(legacy, gpupool_label_keys(legacy), "old", "team-b")
    assert labels == {POOL: "old", OWNER: "team-b", ORPHANED: "true"}
    patch, _reasons = node_patch(legacy, labels)
    assert patch["metadata"]["labels"][OWNER] == "team-b"
    assert OWNER in patch["metadata"]["annotations"]["gpupool.io/labels"].split(",")  # a release removes it
    released, _taints = node_patch(
        {
            **legacy,
            "metadata": {
                **legacy["metadata"],
                "labels": {**labels},
                "annotations": {"gpupool.io/labels": patch["metadata"]["annotations"]["gpupool.io/labels"]},
            },
        },
        {},
    )
    assert released["metadata"]["labels"][OWNER] is None


# ---- the property: another owner's node never appears in anything the plan writes ------------------------------
POOL_NAMES = ["l4", "t4", "old", "a100"]


@st.composite
def clusters(draw):
    """Two owners' nodes on one cluster, some made before owner labels, some cordoned by gpupool; this inventory
    (team-b) declares some pools, present or absent, with selectors that may reach the other's nodes."""
    pools = []
    for index, name in enumerate(draw(st.lists(st.sampled_from(POOL_NAMES), min_size=1, max_size=3, unique=True))):
        pools.append(
            {
                "name": name,
                "state": draw(st.sampled_from(["present", "absent"])),
                "node_selector": {"gpu": draw(st.sampled_from(["l4", "t4", "a100", "x%d" % index]))},
                "gpu": {"model": "L4"},
            }
        )
    nodes = []
    for index in range(draw(st.integers(0, 8))):
        labels = {"gpu": draw(st.sampled_from(["l4", "t4", "a100", "cpu"]))}
        pool = draw(st.sampled_from(POOL_NAMES + [None]))
        if pool:
            labels[POOL] = pool
        owner = draw(st.sampled_from(["team-a", "team-b", None]))
        if owner:
            labels[OWNER] = owner
        if draw(st.booleans()):
            labels[ORPHANED] = "true"
        by = draw(st.sampled_from([None, "mig-layout", "node-pool", "nodegroup"]))
        nodes.append(node("n-%d" % index, labels, by, "orphan:%s" % pool if by == "node-pool" and pool else None))
    return inventory("team-b", pools), nodes


def planned_writes(cluster, nodes, release=False):
    """Every node write node_pool's plan makes, as node_pool composes it: (node name, patch) pairs; None when it
    refuses before any write."""
    owner = cluster.owner_id
    present = cluster.present_pools
    assigned = assign_nodes(present, nodes)
    selectors = {p.name: node_matcher(p).describe for p in present}
    if node_owners.owner_clashes(cluster.pools, assigned, owner, selectors):
        return None
    selected = [n["metadata"]["name"] for group in assigned.values() for n in group]
    split = node_owners.split_nodes(nodes, owner, [p.name for p in cluster.pools], selected)
    writes, members = [], {}
    for pool in present:
        for n in assigned[pool.name]:
            members[n["metadata"]["name"]] = pool.name
            labels = dict(desired_node_labels(pool, n, gpupool_label_keys(n)), **{OWNER: owner})
            writes.append((n["metadata"]["name"], node_patch(n, labels, desired_node_taints(pool))[0]))
            if plan_orphans.lifts_orphan_cordon(n):
                writes.append((n["metadata"]["name"], plan_orphans.uncordon_patch()))
    orphans = []
    for n, left in plan_orphans.find_orphans(split.mine, members):
        orphans.append(n["metadata"]["name"])
        labels = {} if release else plan_orphans.orphan_labels(n, gpupool_label_keys(n), left, owner)
        writes.append((n["metadata"]["name"], node_patch(n, labels, [] if release else None)[0]))
        if plan_orphans.needs_orphan_cordon(n) and not release:
            writes.append((n["metadata"]["name"], plan_orphans.orphan_cordon_patch(left)))
    for verdict in cordon_ledger.plan_ledger(split.mine, cluster.pools, members, orphans, owner=owner):
        if verdict.action == cordon_ledger.LIFT:
            writes.append((verdict.node, plan_orphans.uncordon_patch()))
    return [(name, patch) for name, patch in writes if patch is not None]


@settings(max_examples=300, deadline=None)
@given(clusters(), st.booleans())
def test_another_owners_node_never_appears_in_any_write_the_plan_produces(bed, release):
    cluster, nodes = bed
    try:
        writes = planned_writes(cluster, nodes, release)
    except Problems:  # two present pools select one node: refused before any write (assign_nodes), not this test's
        assume(False)
    foreign = {n["metadata"]["name"] for n in nodes if node_owners.node_owner(n) not in (None, "team-b")}
    if writes is None:  # refused: a present pool selects a foreign node, and the refusal names it
        present = cluster.present_pools
        assigned = assign_nodes(present, nodes)
        picked = {n["metadata"]["name"] for group in assigned.values() for n in group}
        assert picked & foreign
        return
    assert not {name for name, _patch in writes} & foreign
    # a node of a pool this inventory does not declare, without an owner label, that no present pool selects: untouched
    assigned = assign_nodes(cluster.present_pools, nodes)
    picked = {n["metadata"]["name"] for group in assigned.values() for n in group}
    declared = {p.name for p in cluster.pools}
    undeclared = {
        n["metadata"]["name"]
        for n in nodes
        if node_owners.node_owner(n) is None and n["metadata"]["labels"].get(POOL) not in declared | {None}
    } - picked
    assert not {name for name, _patch in writes} & undeclared
    # every node the plan writes that keeps a pool label carries this owner afterwards (adopted when it had none)
    live = {n["metadata"]["name"]: dict(n["metadata"]["labels"]) for n in nodes}
    for name, patch in writes:
        for key, value in (patch["metadata"].get("labels") or {}).items():
            if value is None:
                live[name].pop(key, None)
            else:
                live[name][key] = value
    for name in {name for name, _patch in writes}:
        if live[name].get(POOL):
            assert live[name].get(OWNER) == "team-b", (name, live[name])
