"""The packing check against a brute-force packer: exact on small cases, never a false "does not fit"."""

from __future__ import annotations

from collections import Counter
from typing import List, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import packing
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import fits_all


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
