"""The Evaluator: what nodes have after a change (pool layout, nodes joining a group, added nodes), packed whole.

Supply rows are written by hand in the shape plan/advice/supply.py gives (per node: usable, group, per GPU index
its free devices and attributes), so each example says exactly what is free where."""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import packing
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import claim_needs
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import NO_CHANGE, Change, ClaimNeed, Need
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.evaluate import Evaluator
from tests.support.advice_beds import A100, PCIE_ROOT, cluster_data, load

LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}  # beds.A100: the pool's layout on both GPUs of a node
SMALL = {"1g.5gb": 7}


def a100_pool(groups=None, node_count: int = 3, max_node_count: int = 8):
    data = dict(A100, nodegroup={"flavor": "g4.p2.40g", "node_count": node_count, "max_node_count": max_node_count})
    if groups is not None:
        data["mig"] = dict(A100["mig"], groups=groups)
    return load(cluster_data(data)).pool("a100")


def row(
    name: str,
    free: Dict[int, Dict[str, int]],
    group: Optional[str] = None,
    usable: bool = True,
    roots: Optional[Dict[int, str]] = None,
    with_group_key: bool = True,
) -> dict:
    out = {
        "name": name,
        "usable": usable,
        "why": None if usable else "cordoned",
        "gpus": {
            i: {
                "index": i,
                "free": dict(f),
                "free_fraction": 1.0 if f else 0.0,
                "attributes": {PCIE_ROOT: roots[i]} if roots and i in roots else {},
            }
            for i, f in free.items()
        },
    }
    if with_group_key:
        out["group"] = group
    return out


def supply(*rows) -> dict:
    return {"nodes": list(rows), "frozen": {}}


def claims(unit: str, count: int, many: int, attribute: Optional[str] = None) -> List[ClaimNeed]:
    need = Need(unit, count, 0 if attribute else None)
    return [ClaimNeed("ml/c%d" % k, (need,), (attribute,) if attribute else ()) for k in range(many)]


def fresh(name: str, **kw) -> dict:
    return row(name, {0: dict(LAYOUT), 1: dict(LAYOUT)}, **kw)


def test_identical_nodes_are_one_class_and_unusable_nodes_do_not_count():
    pool = a100_pool()
    rows = [fresh("n%d" % k) for k in range(3)] + [fresh("cordoned", usable=False)]
    ev = Evaluator(pool, supply(*rows), claims("3g.20gb", 1, 6))
    assert [len(names) for names in ev.classes.values()] == [3]
    assert ev.serves(NO_CHANGE) is True  # 3 nodes x 2 GPUs x one 3g.20gb
    assert ev.serves(NO_CHANGE, claims("3g.20gb", 1, 7)) is False  # the cordoned node's two are not counted
    assert ev.serves(Change({}, {}, 1), claims("3g.20gb", 1, 7)) is True  # an added node has two more
    assert ev.evaluations == 3


def test_a_missing_group_key_is_the_pools_layout():
    pool = a100_pool()
    rows = [fresh("n0", with_group_key=False), fresh("n1", with_group_key=False)]
    ev = Evaluator(pool, supply(*rows), claims("1g.5gb", 1, 14))
    assert ev.serves(NO_CHANGE) is False
    assert ev.serves(Change({1: SMALL}, {}, 0)) is True  # index 1 of both nodes: 7 each


def test_pool_layout_indices_change_only_nodes_carrying_the_pools_layout():
    pool = a100_pool(groups=[{"name": "small", "nodes": 1, "layout": SMALL}])
    rows = [fresh("n0"), fresh("n1"), row("n2", {0: dict(SMALL), 1: dict(SMALL)}, group="small")]
    ev = Evaluator(pool, supply(*rows), claims("3g.20gb", 1, 4))
    assert ev.serves(NO_CHANGE) is True  # n0 and n1: two 3g.20gb each; n2 has none
    assert ev.serves(NO_CHANGE, claims("3g.20gb", 1, 5)) is False
    # index 0 to whole... to 1g.5gb x 7 on the pool-layout nodes only: n0, n1 keep one 3g.20gb each, n2 unchanged
    assert ev.serves(Change({0: SMALL}, {}, 0), claims("3g.20gb", 1, 2)) is True
    assert ev.serves(Change({0: SMALL}, {}, 0), claims("3g.20gb", 1, 3)) is False
    # 1g.5gb: n2 has 14, the change gives n0 and n1 seven each
    assert ev.serves(Change({0: SMALL}, {}, 0), claims("1g.5gb", 1, 28)) is True
    assert ev.serves(Change({0: SMALL}, {}, 0), claims("1g.5gb", 1, 29)) is False


def test_a_named_node_joins_a_group_and_a_claim_stays_whole_on_one_node():
    pool = a100_pool()
    rows = [fresh("n0"), fresh("n1"), fresh("n2")]
    eight = claims("1g.5gb", 8, 1)  # one claim of 8: more than one GPU's 7, so a node with both GPUs in 1g.5gb
    ev = Evaluator(pool, supply(*rows), eight)
    assert ev.serves(Change({1: SMALL}, {}, 0)) is False  # 7 per node on 3 nodes (21 in all) - not on one node
    assert ev.serves(Change({}, {"n1": {0: SMALL, 1: SMALL}}, 0)) is True  # n1 alone has 14
    # n1 named with index 0 unchanged: it keeps its layout there (7 only), the claim does not fit
    assert ev.serves(Change({}, {"n1": {0: dict(LAYOUT), 1: SMALL}}, 0)) is False
    # a group member moved back to the pool's layout: its changed GPUs offer the pool layout's devices
    grouped = [row("g0", {0: dict(SMALL), 1: dict(SMALL)}, group="g1"), fresh("n0")]
    pool_g = a100_pool(groups=[{"nodes": 1, "layout": SMALL}])
    ev_g = Evaluator(pool_g, supply(*grouped), claims("3g.20gb", 1, 4))
    assert ev_g.serves(NO_CHANGE) is False
    assert ev_g.serves(Change({}, {"g0": {0: dict(LAYOUT), 1: dict(LAYOUT)}}, 0)) is True


def test_gpus_with_allocations_keep_only_what_is_free_on_them():
    pool = a100_pool()
    # n0's GPU 0 has its 3g.20gb and one 2g.10gb allocated; the search never changes that index, so free stays
    rows = [row("n0", {0: {"2g.10gb": 1}, 1: dict(LAYOUT)})]
    ev = Evaluator(pool, supply(*rows), claims("2g.10gb", 1, 3))
    assert ev.serves(NO_CHANGE) is True
    assert ev.serves(NO_CHANGE, claims("2g.10gb", 1, 4)) is False
    assert ev.serves(Change({1: SMALL}, {}, 0), claims("2g.10gb", 1, 1)) is True  # GPU 0's free one
    assert ev.serves(Change({1: SMALL}, {}, 0), claims("2g.10gb", 1, 2)) is False


def test_added_nodes_are_grouped_like_an_existing_node():
    # a claim of two 3g.20gb under one PCIe root: the existing node has one free (GPU 1's is allocated)
    two_under_one_root = claims("3g.20gb", 2, 1, PCIE_ROOT)
    one_root = row("n0", {0: dict(LAYOUT), 1: {"2g.10gb": 2}}, roots={0: "pci0", 1: "pci0"})
    two_roots = row("n0", {0: dict(LAYOUT), 1: {"2g.10gb": 2}}, roots={0: "pci0", 1: "pci1"})
    ev = Evaluator(a100_pool(node_count=1), supply(one_root), two_under_one_root)
    assert ev.serves(NO_CHANGE) is False
    assert ev.fewest_nodes(NO_CHANGE, 3) == 1  # a new node like n0: both GPUs under one root
    ev = Evaluator(a100_pool(node_count=1), supply(two_roots), two_under_one_root)
    assert ev.fewest_nodes(NO_CHANGE, 3) is None  # like n0: each GPU its own root, never two under one
    # with no node publishing all its GPUs, each GPU of a new node is alone
    ev = Evaluator(a100_pool(node_count=1), supply(row("n0", {0: {}}, roots={0: "pci0"})), two_under_one_root)
    assert ev.fewest_nodes(NO_CHANGE, 3) is None


def test_fewest_nodes_is_the_least_count_that_serves_and_ignores_the_changes_own():
    pool = a100_pool(node_count=1)
    ev = Evaluator(pool, supply(fresh("n0")), claims("3g.20gb", 1, 7))  # n0 serves 2; each new node 2 more
    assert ev.fewest_nodes(Change({}, {}, 99), 10) == 3
    assert ev.fewest_nodes(NO_CHANGE, 2) is None
    assert ev.fewest_nodes(NO_CHANGE, 0) is None
    # a change that gives both indices 1g.5gb leaves no 3g.20gb on n0 or on new nodes
    assert ev.fewest_nodes(Change({0: SMALL, 1: SMALL}, {}, 0), 10) is None
    assert ev.idle(0) == 0.0 and ev.idle(3) > ev.idle(0)
    assert ev.cut_short is False


def test_a_check_cut_short_answers_serves_and_says_so(monkeypatch):
    # five nodes with 6 x 1g.5gb free; claims 4, 4, 4, 4, 3, 3 and 2 + 1: six nodes needed, which a search proves
    pool = a100_pool(node_count=5)
    rows = [row("n%d" % k, {0: {"1g.5gb": 6}, 1: {}}) for k in range(5)]
    wanted = (
        claims("1g.5gb", 4, 4) + claims("1g.5gb", 3, 2) + [ClaimNeed("ml/z", (Need("1g.5gb", 2), Need("1g.5gb", 1)))]
    )
    ev = Evaluator(pool, supply(*rows), wanted)
    assert ev.serves(NO_CHANGE) is False and ev.cut_short is False
    monkeypatch.setattr(packing, "STATE_BUDGET", 2)
    ev = Evaluator(pool, supply(*rows), wanted)
    assert ev.serves(NO_CHANGE) is True and ev.cut_short is True


def _request(pool: str, unit: str, count: int, attribute: Optional[str] = None) -> dict:
    return {"pool": pool, "unit": unit, "count": count, "match_attribute": attribute}


def test_waiting_rows_become_whole_claims_and_a_claim_of_two_pools_is_not_servable():
    rows = [
        {
            "namespace": "ml",
            "name": "both",
            "servable": True,
            "requests": [_request("a100", "1g.5gb", 2, PCIE_ROOT), _request("a100", "2g.10gb", 1, PCIE_ROOT)]
            + [_request("a100", "1g.5gb", 1)],
        },
        {
            "namespace": "ml",
            "name": "split",
            "servable": True,
            "requests": [_request("a100", "gpu", 1)] * 1 + [_request("h100", "gpu", 1)],
        },
        {"namespace": "ml", "name": "lost", "servable": False, "requests": [_request("a100", "1g.5gb", 1)]},
    ]
    needs = claim_needs(rows)
    assert needs == {
        "a100": [
            ClaimNeed("ml/both", (Need("1g.5gb", 2, 0), Need("2g.10gb", 1, 0), Need("1g.5gb", 1, None)), (PCIE_ROOT,))
        ]
    }
    assert rows[1]["servable"] is False and "pools a100 and h100" in rows[1]["no_change_serves"]
    assert rows[2]["servable"] is False and "no_change_serves" not in rows[2]
