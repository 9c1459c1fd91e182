"""The search: exact per GPU index (checked against a brute force over every per-index choice), MIG group candidates
(the fewest idle nodes, exactly those node_groups.assign_groups picks), the largest servable set of claims decided
together, cut_short said, and nothing to change when the free devices serve."""

from __future__ import annotations

import itertools
from xml.etree import ElementTree

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import fits
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import candidates, frontier, inventory_edit
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import advise
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import Change, ClaimNeed, Need
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.evaluate import Evaluator
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import pool_supply
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import (
    Observed,
    current_slices,
    slices_by_node,
)
from tests.support import advice_beds as b

# a few A100-40GB layouts, each with the starts the MIG manager would give it (by hand)
LAYOUTS = {
    "3g+2x2g": [("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)],
    "7g": [("7g.40gb", 0)],
    "2x3g": [("3g.20gb", 4), ("3g.20gb", 0)],
    "7x1g5": [("1g.5gb", s) for s in range(7)],
    "3g+3x1g5": [("3g.20gb", 4)] + [("1g.5gb", s) for s in range(3)],
}


def as_layout(name):
    out = {}
    for profile, _start in LAYOUTS[name]:
        out[profile] = out.get(profile, 0) + 1
    return out


def devices(minor, name):
    return [b.mig(minor, p, s) for p, s in LAYOUTS[name]]


def pool_data(names, node_count, max_node_count=None, groups=None):
    mig = {"mode": "static", "layouts": {i: as_layout(n) for i, n in enumerate(names)}}
    if groups:
        mig["groups"] = groups
    return dict(
        b.A100,
        gpu={"model": "A100-40GB", "per_node": len(names)},
        nodegroup={"flavor": "g4.p2.40g", "node_count": node_count, "max_node_count": max_node_count or node_count},
        mig=mig,
    )


def cluster_for(names, node_count, held=(), tenants=None):
    """A pool of `node_count` nodes with per-index layouts `names`; held: [(node number, GPU index)] with its first
    instance allocated."""
    data = b.cluster_data(pool_data(names, node_count), tenants=tenants)
    nodes = [b.node("a100-%d" % n, "a100") for n in range(node_count)]
    slices = []
    claims = []
    for n in range(node_count):
        devs = []
        for i, name in enumerate(names):
            devs += devices(i, name)
        slices.append(b.rslice("a100-%d" % n, devs))
    for k, (n, i) in enumerate(held):
        device = devices(i, names[i])[0]["name"]
        claims.append(b.claim("held%d" % k, "a100-%s" % LAYOUTS[names[i]][0][0], allocated=[("a100-%d" % n, device)]))
    return data, nodes, slices, claims


def run(data, nodes, slices, claims, pods=()):
    cluster = b.load(data)
    classes = [d.obj for d in cluster_device_classes(cluster)]
    return advise(cluster, data, Observed(nodes, slices, claims, classes, list(pods)))


def supply_of(data, nodes, slices, claims):
    cluster = b.load(data)
    pool = cluster.pool("a100")
    allocated = {}
    for c in claims:
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", []):
            allocated[(r["driver"], r["pool"], r["device"])] = "ml/" + c["metadata"]["name"]
    supply = pool_supply(pool, nodes, slices_by_node(current_slices(slices)), allocated)
    return cluster, pool, supply


def waits(unit, n, start=0):
    return [b.claim("w%02d" % k, "a100-" + unit, created="2026-01-01T00:%02d:00Z" % k) for k in range(start, start + n)]


def test_eight_claims_for_a_profile_a_gpu_holds_seven_of_serve_seven():
    """One node, one GPU (3g + 2 x 2g), the nodegroup at its maximum: 8 x 1g.5gb wait. A GPU holds at most 7 of them,
    so the advice is the 7 x 1g.5gb layout and the youngest claim is unserved, with why."""
    data, nodes, slices, claims = cluster_for(["3g+2x2g"], 1)
    result = run(data, nodes, slices, waits("1g.5gb", 8))
    entry = result["pools"]["a100"]
    assert entry["advice"]["layouts"] == {"0": {"1g.5gb": 7}}
    assert entry["demand"] == {"1g.5gb": 7}
    assert [u["claim"] for u in entry["unserved"]] == ["ml/w07"]  # the youngest
    assert "serves at most 7 claim(s) of 1 x 1g.5gb" in entry["unserved"][0]["why"]
    line = [x for x in result["summary"].splitlines() if "ml/w07 cannot be served by a change" in x]
    assert line and len(line[0]) <= 200


def test_nothing_to_change_when_the_free_devices_serve():
    data, nodes, slices, claims = cluster_for(["3g+2x2g", "3g+2x2g"], 1)
    result = run(data, nodes, slices, waits("3g.20gb", 2))
    assert result["nothing_to_change"] is True and result["pools"]["a100"]["serves_now"] is True
    assert result["pools"]["a100"]["options"] == [] and "nothing to change" in result["summary"]


def test_a_group_of_the_fewest_idle_nodes_ranks_above_the_whole_pool():
    """Five nodes; a100-0, a100-1 and a100-3 each hold a 3g.20gb on GPU 0 (busy, pods on them), a100-2 and a100-4
    are idle. Four 1g.5gb wait. GPU 0 is frozen pool-wide; GPU 1 -> 3g + 3 x 1g.5gb on every node serves (5 nodes
    re-partitioned, pods evicted); a group of ONE idle node with 7 x 1g.5gb on one GPU serves too: a100-2 (idle,
    first by name). The group's prefer names it, node_groups.assign_groups picks exactly it, and the picture draws
    only it."""
    data, nodes, slices, held = cluster_for(["3g+2x2g", "3g+2x2g"], 5, held=[(0, 0), (1, 0), (3, 0)])
    pods = [b.pod("p%d" % n, "a100-%d" % n, ["held%d" % k]) for k, n in enumerate((0, 1, 3))]
    result = run(data, nodes, slices, held + waits("1g.5gb", 4), pods)
    entry = result["pools"]["a100"]
    advice = entry["advice"]
    assert advice["kind"] == "group" and advice["group"]["nodes"] == ["a100-2"]
    assert advice["nodes_repartitioned"] == ["a100-2"] and advice["pods_evicted"] == []
    group = advice["inventory"]["mig"]["groups"][-1]
    assert group["nodes"] == 1 and group["prefer"] == ["a100-2"]
    # exactly the node the rollout will pick
    after = dict(data)
    after["pools"] = [dict(data["pools"][0], mig=advice["inventory"]["mig"])]
    assignment = assign_groups(b.load(after).pool("a100"), nodes)
    assert [n for n, g in sorted(assignment.items()) if g is not None] == ["a100-2"]
    # the pool-wide change is ranked below it, and re-partitions all five nodes
    wide = [o for o in entry["options"] if o["kind"] == "layout"]
    assert wide and len(wide[0]["nodes_repartitioned"]) == 5 and "0" not in wide[0]["layouts"]
    svg = result["pictures"]["advice-a100.svg"] if "advice-a100.svg" in result["pictures"] else None
    assert svg is not None and ">a100-2 after<" in svg and ">a100-0 now<" not in svg
    ElementTree.fromstring(svg)
    assert "1 node(s) (a100-2) join a MIG group" in result["summary"]


def test_the_group_edit_extends_a_group_with_the_same_layout():
    data, nodes, slices, held = cluster_for(["3g+2x2g", "3g+2x2g"], 4, held=[(0, 0), (1, 0), (2, 0)])
    cluster, pool, supply = supply_of(data, nodes, slices, held)
    candidate = candidates.Candidate(
        "a100", {}, 0, ["a100-3"], [], 1, 0.0, 1, ("a100-3",), {0: {"1g.5gb": 7}, 1: {"1g.5gb": 7}}
    )
    raw = dict(data["pools"][0])
    raw["mig"] = dict(raw["mig"], groups=[{"nodes": 1, "layout": {"1g.5gb": 7}, "prefer": ["a100-9"]}])
    after = inventory_edit.pool_after(pool, raw, candidate)
    assert after["mig"]["groups"] == [{"nodes": 2, "layout": {"1g.5gb": 7}, "prefer": ["a100-3", "a100-9"]}]
    # a new layout appends a group
    other = candidate._replace(group_layout={0: {"7g.40gb": 1}, 1: {"7g.40gb": 1}})
    groups = inventory_edit.pool_after(pool, raw, other)["mig"]["groups"]
    assert groups[-1] == {"nodes": 1, "layout": {"7g.40gb": 1}, "prefer": ["a100-3"]} and len(groups) == 2


def test_eight_gpus_with_a_layout_each_are_searched_to_the_end():
    """8 GPUs with five layouts among them, 2 nodes, nothing allocated: 4 x 7g.40gb and 20 x 1g.5gb wait on the pool
    at its maximum. The budgeted search of old ran out here; the dynamic programme does not cut short, and
    its fewest changed indices equal a brute force over every per-index choice of the changed indices."""
    names = ["3g+2x2g", "7g", "2x3g", "7x1g5", "3g+3x1g5", "3g+2x2g", "2x3g", "3g+3x1g5"]
    data, nodes, slices, _held = cluster_for(names, 2)
    claims = waits("7g.40gb", 4) + waits("1g.5gb", 20, start=10)
    result = run(data, nodes, slices, claims)
    entry = result["pools"]["a100"]
    assert entry["cut_short"] is False and entry["advice"] is not None and entry["unserved"] == []
    assert "cut short" not in result["summary"]
    # brute force: the fewest indices (of 8) whose change to some option serves all claims
    cluster, pool, supply = supply_of(data, nodes, slices, [])
    needs = [ClaimNeed("ml/w%d" % k, (Need(u, 1),)) for k, u in enumerate(["7g.40gb"] * 4 + ["1g.5gb"] * 20)]
    ev = Evaluator(pool, supply, needs)
    options = candidates.layout_options(pool, needs, [])
    current = candidates.current_layouts(pool)
    best = None
    for k in range(1, 4):
        for indices in itertools.combinations(range(8), k):
            for chosen in itertools.product(options, repeat=k):
                if any(current[i] == lay for i, lay in zip(indices, chosen)):
                    continue
                if ev.serves(Change(dict(zip(indices, chosen)), {}, 0)):
                    best = k
                    break
            if best:
                break
        if best:
            break
    assert best is not None and entry["advice"]["gpus_changed"] == best * 2


def test_a_cut_short_search_says_so(monkeypatch):
    monkeypatch.setattr(frontier, "MAX_STATES", 1)
    names = ["3g+2x2g", "7g", "2x3g", "7x1g5"]
    data, nodes, slices, _held = cluster_for(names, 1)
    result = run(data, nodes, slices, waits("7g.40gb", 2) + waits("1g.5gb", 9, start=10))
    assert result["pools"]["a100"]["cut_short"] is True
    assert "the search was cut short for pool(s) a100" in result["summary"]


NAMES = sorted(LAYOUTS)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layouts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
    node_count=st.integers(1, 3),
    held=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=3),
    wanted=st.lists(st.sampled_from(["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb", "1g.10gb"]), min_size=1, max_size=6),
)
def test_search_invariants(layouts, node_count, held, wanted):
    """No proposal changes a GPU holding an allocated device (pool-wide: on any node carrying the pool's layout; a
    group: on its nodes), every proposed layout is feasible (mig/placement.fits), every candidate serves the claims
    it says it serves, every claim is served or unserved, and the fewest changed indices equal a brute force."""
    held = sorted({(n % node_count, i % len(layouts)) for n, i in held})
    data, nodes, slices, held_claims = cluster_for(layouts, node_count, held=held)
    cluster, pool, supply = supply_of(data, nodes, slices, held_claims)
    needs = [ClaimNeed("ml/w%d" % k, (Need(u, 1),)) for k, u in enumerate(wanted)]
    found = candidates.search(pool, supply, needs, [], {})
    served = found["claims"]
    assert sorted([c.claim for c in served] + [c.claim for c, _w in found["unserved"]]) == sorted(
        c.claim for c in needs
    )
    model = pool.catalog_gpu
    frozen = {i for _n, i in held}
    busy = {("a100-%d" % n, i) for n, i in held}
    ev = Evaluator(pool, supply, served)
    for cand in found["candidates"]:
        assert not set(cand.changed) & frozen
        for lay in cand.changed.values():
            assert lay is None or fits(model, lay)
        for node in cand.group_nodes:
            now = candidates.current_layouts(pool)
            for i, lay in cand.group_layout.items():
                if lay != now[i]:
                    assert (node, i) not in busy
                    assert lay is None or fits(model, lay)
        assert ev.serves(cand.change)
    assert found["cut_short"] is False
    # brute force of the fewest changed indices (pool-wide, no node added: the pool is at its maximum)
    wide = [c for c in found["candidates"] if c.changed and not c.nodes_added and not c.group_nodes]
    if found["serves_now"] or not served:
        return
    options = candidates.layout_options(pool, served, [])
    current = candidates.current_layouts(pool)
    changeable = [i for i in range(len(layouts)) if i not in frozen]
    best = None
    for k in range(1, len(changeable) + 1):
        for indices in itertools.combinations(changeable, k):
            for chosen in itertools.product(options, repeat=k):
                if not any(current[i] == lay for i, lay in zip(indices, chosen)) and ev.serves(
                    Change(dict(zip(indices, chosen)), {}, 0)
                ):
                    best = k
                    break
            if best:
                break
        if best:
            break
    assert (min(len(c.changed) for c in wide) if wide else None) == best


def _group_candidate(layout):
    return candidates.Candidate("a100", {}, 0, ["a100-3"], [], 1, 0.0, 1, ("a100-3",), {0: layout, 1: layout})


def test_a_group_spelled_index_by_index_is_grown_not_duplicated():
    """The same per-GPU layout written as `layouts: {0: ..., 1: ...}` (keys as numbers or strings, counts in any
    order, a zero count) is the group the advice grows: one group, two nodes, not a second group beside it."""
    data, nodes, slices, held = cluster_for(["3g+2x2g", "3g+2x2g"], 4, held=[(0, 0), (1, 0), (2, 0)])
    _cluster, pool, _supply = supply_of(data, nodes, slices, held)
    candidate = _group_candidate({"1g.5gb": 7})
    for spelled in (
        {0: {"1g.5gb": 7}, 1: {"1g.5gb": 7}},
        {"0": {"1g.5gb": 7, "2g.10gb": 0}, "1": {"1g.5gb": 7}},
    ):
        raw = dict(data["pools"][0])
        raw["mig"] = dict(raw["mig"], groups=[{"name": "small", "nodes": 1, "layouts": spelled}])
        after = inventory_edit.pool_after(pool, raw, candidate)
        assert len(after["mig"]["groups"]) == 1
        assert after["mig"]["groups"][0]["nodes"] == 2 and after["mig"]["groups"][0]["prefer"] == ["a100-3"]
        assert inventory_edit.problems_of(b.cluster_data(after)) == []
    # another layout on one index is another group
    raw = dict(data["pools"][0])
    raw["mig"] = dict(raw["mig"], groups=[{"nodes": 1, "layouts": {0: {"1g.5gb": 7}, 1: {"7g.40gb": 1}}}])
    assert len(inventory_edit.pool_after(pool, raw, candidate)["mig"]["groups"]) == 2


def test_a_new_group_gets_a_name_no_group_has():
    """An existing group pinned as `g2` takes the name a group appended second would get by default: the new group
    is named apart, and validate accepts the change."""
    data, nodes, slices, held = cluster_for(["3g+2x2g", "3g+2x2g"], 4, held=[(0, 0), (1, 0), (2, 0)])
    _cluster, pool, _supply = supply_of(data, nodes, slices, held)
    raw = dict(data["pools"][0])
    raw["mig"] = dict(raw["mig"], groups=[{"name": "g2", "nodes": 1, "layout": {"7g.40gb": 1}}])
    after = inventory_edit.pool_after(pool, raw, _group_candidate({"1g.5gb": 7}))
    names = [g.get("name") for g in after["mig"]["groups"]]
    assert names[0] == "g2" and names[1] not in (None, "g2")
    assert inventory_edit.problems_of(b.cluster_data(after)) == []
    # no clash: the new group keeps its default name, written as before
    raw["mig"] = dict(raw["mig"], groups=[{"name": "big", "nodes": 1, "layout": {"7g.40gb": 1}}])
    after = inventory_edit.pool_after(pool, raw, _group_candidate({"1g.5gb": 7}))
    assert "name" not in after["mig"]["groups"][1]


def test_the_advice_is_a_group_beside_a_group_pinned_by_the_default_name():
    """End to end: the pool has a group pinned as `g2` on a100-4 (7g.40gb); a group of idle a100-2 serves the waiting
    1g.5gb claims and validate accepts it (it used to clash: 'no change found')."""
    groups = [{"name": "g2", "nodes": 1, "layout": {"7g.40gb": 1}, "prefer": ["a100-4"]}]
    data, nodes, slices, held = cluster_for(["3g+2x2g", "3g+2x2g"], 5, held=[(0, 0), (1, 0), (3, 0)])
    data = b.cluster_data(pool_data(["3g+2x2g", "3g+2x2g"], 5, groups=groups))
    slices[4] = b.rslice("a100-4", devices(0, "7g") + devices(1, "7g"))
    nodes[4]["metadata"].setdefault("labels", {})["nvidia.com/mig.config"] = "gpupool-a100-g2"
    pods = [b.pod("p%d" % n, "a100-%d" % n, ["held%d" % k]) for k, n in enumerate((0, 1, 3))]
    result = run(data, nodes, slices, held + waits("1g.5gb", 4), pods)
    advice = result["pools"]["a100"]["advice"]
    assert advice is not None and advice["kind"] == "group", result["summary"]
    assert not result["pools"]["a100"].get("rejected"), result["pools"]["a100"].get("rejected")
    new = advice["inventory"]["mig"]["groups"][-1]
    assert new["name"] != "g2" and new["prefer"] == ["a100-2"]
