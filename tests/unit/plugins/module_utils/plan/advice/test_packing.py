"""The packing check against a brute-force packer: exact on small cases, never a false "does not fit"."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import List, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import packing
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import ClaimNeed, Need


def fits_all(bins: Counter, sizes: Sequence[int]) -> bool:
    """The 1-D check as the advisor asks it: hashable, remembered."""
    key = tuple(sorted((c, n) for c, n in bins.items() if c > 0 and n > 0))
    return packing.fits_remembered(key, tuple(sorted(sizes, reverse=True)))


def brute_force(bins: Counter, sizes: Sequence[int]) -> bool:
    """Every item tried in every bin (no pruning, no greedy): the reference answer for small cases."""
    free: List[int] = [c for c, n in bins.items() for _copy in range(n)]
    items = list(sizes)

    def place(i: int) -> bool:
        if i == len(items):
            return True
        for b, cap in enumerate(free):
            if cap >= items[i]:
                free[b] -= items[i]
                if place(i + 1):
                    return True
                free[b] += items[i]
        return False

    return place(0)


def test_greedy_misses_a_packing_the_exact_check_finds():
    # bins 5 and 4, claims 3, 2, 2, 2: greedy puts 3 in the 4 and strands a 2; 5 = 3 + 2 and 4 = 2 + 2 pack them
    bins, sizes = Counter({5: 1, 4: 1}), [3, 2, 2, 2]
    assert brute_force(bins, sizes) is True
    assert packing.greedy_fits(bins, sizes) is False
    assert fits_all(bins, sizes) is True
    # the same shape over many nodes: 100 of each still pack, 1 claim more does not (total 900 = capacity)
    assert fits_all(Counter({5: 100, 4: 100}), [3] * 100 + [2] * 300) is True
    assert fits_all(Counter({5: 100, 4: 100}), [3] * 101 + [2] * 300) is False


def test_the_examples_greedy_already_got_right_still_hold():
    assert fits_all(Counter({4: 1, 2: 1}), [2, 2, 2]) is True
    assert fits_all(Counter({4: 1, 2: 1}), [3, 3]) is False
    assert fits_all(Counter({8: 500}), [4] * 1000) is True and fits_all(Counter({8: 500}), [4] * 1001) is False
    assert fits_all(Counter({1: 1, 3: 1}), [1, 3]) is True
    assert fits_all(Counter(), []) is True and fits_all(Counter({0: 3}), [1]) is False


def test_a_search_cut_short_answers_fits_never_a_false_does_not_fit():
    # 5 bins of 6, claims 4, 4, 4, 4, 3, 3, 3 (25 <= 30, so no cheap bound decides): each 4 takes a bin alone
    # (4 + 3 > 6) and the three 3s need two more bins, 6 in all: a search must prove "does not fit"
    bins, sizes = Counter({6: 5}), [4, 4, 4, 4, 3, 3, 3]
    assert brute_force(bins, sizes) is False
    assert packing.fits(bins, sizes) is False
    assert packing.fits(bins, sizes, budget=1) is True


bins_st = (
    st.dictionaries(st.integers(1, 8), st.integers(1, 4), max_size=4)
    .map(Counter)
    .filter(lambda b: sum(b.values()) <= 4)
)
sizes_st = st.lists(st.integers(1, 8), max_size=7)


@settings(max_examples=400, deadline=None)
@given(bins=bins_st, sizes=sizes_st)
def test_fits_all_equals_a_brute_force_packer_on_small_cases(bins, sizes):
    assert fits_all(bins, sizes) is brute_force(bins, sizes)


@settings(max_examples=200, deadline=None)
@given(bins=bins_st, sizes=sizes_st)
def test_a_greedy_packing_is_a_packing(bins, sizes):
    if packing.greedy_fits(bins, sizes):
        assert fits_all(bins, sizes) is True and brute_force(bins, sizes) is True


def test_the_remembered_answer_is_the_same_and_asked_once():
    packing.fits_remembered.cache_clear()
    first = fits_all(Counter({5: 1, 4: 1}), [2, 3, 2, 2])
    again = fits_all(Counter({4: 1, 5: 1, 7: 0}), [2, 2, 2, 3])  # the same question, written otherwise
    assert first is again is True
    info = packing.fits_remembered.cache_info()
    assert (info.misses, info.hits) == (1, 1)


# --- whole claims on one node ------------------------------------------------------------------------------------

ROOT = "resource.kubernetes.io/pcieRoot"
BUS = "resource.kubernetes.io/pciBusID"


def brute_force_claims(nodes: Counter, claims: Sequence[ClaimNeed]) -> bool:
    """Every claim on every node, every group for each constraint, every device on every GPU of its group: no
    counting argument, no memo - the reference answer for small cases. A GPU publishing no value matches nothing."""
    free = [[dict(g.free) for g in node] for node, many in nodes.items() for _copy in range(many)]
    shapes = [node for node, many in nodes.items() for _copy in range(many)]

    def value(n: int, i: int, attribute: str):
        v = dict(shapes[n][i].values).get(attribute)
        return v if v is not None else ("alone", i)

    def place(c: int) -> bool:
        if c == len(claims):
            return True
        claim = claims[c]
        used = sorted({need.constraint for need in claim.needs if need.constraint is not None})
        for n in range(len(free)):
            gpus = range(len(free[n]))
            choices = [sorted({value(n, i, claim.match[k]) for i in gpus}, key=repr) for k in used]
            for picked in itertools.product(*choices):
                where = dict(zip(used, picked))
                todo = []
                for need in claim.needs:
                    allowed = [
                        i
                        for i in gpus
                        if need.constraint is None
                        or value(n, i, claim.match[need.constraint]) == where[need.constraint]
                    ]
                    todo += [(need.unit, allowed)] * need.count
                # the devices of this claim, then (on success) the rest of the claims: try every assignment
                if assign_then(n, todo, 0, c):
                    return True
        return False

    def assign_then(n: int, todo: List, k: int, c: int) -> bool:
        if k == len(todo):
            return place(c + 1)
        unit, allowed = todo[k]
        for i in allowed:
            if free[n][i].get(unit, 0) > 0:
                free[n][i][unit] -= 1
                ok = assign_then(n, todo, k + 1, c)
                free[n][i][unit] += 1
                if ok:
                    return True
        return False

    return place(0)


gpu_st = st.builds(
    lambda a, b, root: packing.gpu({"a": a, "b": b}, {ROOT: root}),
    st.integers(0, 3),
    st.integers(0, 2),
    st.sampled_from(["r0", "r1", None]),
)


def with_bus(gpus):
    """Each GPU its own PCI bus ID (a GPU lies under one PCIe root: the groups nest, as on real hardware)."""
    return tuple(packing.Gpu(g.free, tuple(sorted(g.values + ((BUS, "bus%d" % i),)))) for i, g in enumerate(gpus))


nodes_st = st.lists(st.lists(gpu_st, min_size=1, max_size=3).map(with_bus), min_size=1, max_size=3).map(Counter)
need_st = st.builds(Need, st.sampled_from(["a", "a", "b"]), st.integers(1, 2), st.sampled_from([None, 0, 1]))
claim_st = st.builds(
    lambda needs, match: ClaimNeed("c", tuple(needs), match),
    st.lists(need_st, min_size=1, max_size=2),
    st.tuples(st.sampled_from([ROOT, BUS]), st.sampled_from([ROOT, BUS])),
)
claims_st = st.lists(claim_st, min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(nodes=nodes_st, claims=claims_st)
def test_whole_claims_pack_exactly_as_a_brute_force_on_small_cases(nodes, claims):
    answer = packing.check(nodes, claims)
    assert answer.cut_short is False
    assert answer.fits is brute_force_claims(nodes, claims)
    assert packing.pack(nodes, claims).fits is answer.fits  # the 1-D path and the whole-claim search agree


@settings(max_examples=300, deadline=None)
@given(nodes=nodes_st, claims=claims_st, budget=st.integers(1, 6))
def test_a_cut_short_search_never_says_does_not_fit_when_a_packing_exists(nodes, claims, budget):
    answer = packing.check(nodes, claims, budget=budget)
    truth = brute_force_claims(nodes, claims)
    if truth:
        assert answer.fits is True
    if not answer.cut_short:
        assert answer.fits is truth


crossing_gpu_st = st.builds(
    lambda a, x, y: packing.gpu({"a": a}, {"x": x, "y": y}),
    st.integers(0, 2),
    st.sampled_from(["p", "q", None]),
    st.sampled_from(["p", "q", None]),
)


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(st.lists(crossing_gpu_st, min_size=1, max_size=3).map(tuple), min_size=1, max_size=2).map(Counter),
    claims=st.lists(
        st.builds(
            lambda needs, match: ClaimNeed("c", tuple(needs), match),
            st.lists(st.builds(Need, st.just("a"), st.integers(1, 2), st.sampled_from([None, 0, 1])), max_size=2),
            st.just(("x", "y")),
        ),
        max_size=3,
    ),
)
def test_crossing_attributes_answer_fits_only_for_a_real_packing(nodes, claims):
    # Groups of x and y may cross (no real GPU publishes that): modelled by their common refinement, so "fits"
    # stays a real packing (module docstring, Limits).
    if packing.check(nodes, claims).fits:
        assert brute_force_claims(nodes, claims) is True


def test_requests_of_one_claim_share_a_node():
    # two nodes with one free 1g each: two claims of one 1g fit, one claim of two 1g does not (it was free_now)
    node = (packing.gpu({"1g": 1}),)
    assert packing.check(Counter({node: 2}), [ClaimNeed("x", (Need("1g", 1),))] * 2).fits is True
    assert packing.check(Counter({node: 2}), [ClaimNeed("x", (Need("1g", 2),))]).fits is False
    two_units = ClaimNeed("y", (Need("1g", 1), Need("2g", 1)))
    assert packing.check(Counter({node: 1, (packing.gpu({"2g": 1}),): 1}), [two_units]).fits is False
    assert packing.check(Counter({(packing.gpu({"1g": 1}), packing.gpu({"2g": 1})): 1}), [two_units]).fits is True


def test_a_constraint_draws_from_one_pcie_root_and_the_rest_from_the_node():
    node = tuple(packing.gpu({"1g": 2}, {ROOT: r}) for r in ("a", "a", "b", "b"))
    three_under_one_root_plus_one = ClaimNeed("x", (Need("1g", 3, 0), Need("1g", 1)), (ROOT,))
    assert packing.check(Counter({node: 1}), [three_under_one_root_plus_one] * 2).fits is True
    assert packing.check(Counter({node: 1}), [three_under_one_root_plus_one] * 3).fits is False
    four_under_one_root = ClaimNeed("y", (Need("1g", 4, 0),), (ROOT,))
    assert packing.check(Counter({node: 1}), [four_under_one_root] * 2).fits is True
    assert (
        packing.check(Counter({node: 1}), [four_under_one_root] * 2 + [ClaimNeed("z", (Need("1g", 1),))]).fits is False
    )
    # 5 under one root: no root has more than 4, though the node has 8
    assert packing.check(Counter({node: 1}), [ClaimNeed("w", (Need("1g", 5, 0),), (ROOT,))]).fits is False


def test_two_thousand_nodes_cost_their_few_shapes():
    node = tuple(packing.gpu({"1g": 7}, {ROOT: "r%d" % (i // 4)}) for i in range(8))
    other = tuple(packing.gpu({"1g": 7, "3g": 1}) for _i in range(8))
    nodes = Counter({node: 1000, other: 1000})
    claims = [ClaimNeed("x%d" % k, (Need("1g", 20, 0), Need("3g", 0)), (ROOT,)) for k in range(1000)]
    claims += [ClaimNeed("y%d" % k, (Need("1g", 7), Need("3g", 1))) for k in range(500)]
    answer = packing.check(nodes, claims)
    assert answer == packing.Answer(True, False)
    # one claim more of the first kind than roots with 20 free 1g (each root has 4 x 7 = 28: one per root)
    assert packing.check(Counter({node: 10}), [claims[0]] * 21).fits is False


def test_a_whole_claim_search_past_its_budget_says_it_was_cut_short():
    # five nodes of 6, claims 4, 4, 4, 4, 3, 3, 3 (one of them two requests): 6 nodes are needed, a search proves it
    node = (packing.gpu({"a": 6}),)
    claims = [ClaimNeed("x", (Need("a", 4),))] * 4 + [ClaimNeed("y", (Need("a", 3),))] * 2
    claims.append(ClaimNeed("z", (Need("a", 2), Need("a", 1))))
    assert packing.check(Counter({node: 5}), claims) == packing.Answer(False, False)
    assert packing.check(Counter({node: 5}), claims, budget=2) == packing.Answer(True, True)
    # and the 1-D path says so too
    assert packing.fits_checked(Counter({6: 5}), [4, 4, 4, 4, 3, 3, 3], budget=1) == packing.Answer(True, True)
