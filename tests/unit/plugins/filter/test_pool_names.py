# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gpupool.core.pool_names: each way a pool selection is written gives the same list."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpupool.core.plugins.filter.pool_names import FilterModule, pool_names


@pytest.mark.parametrize(
    "given, names",
    [
        (None, []),
        ("", []),
        ([], []),
        ("gpu-t4", ["gpu-t4"]),
        ("gpu-t4,gpu-h100", ["gpu-t4", "gpu-h100"]),
        (" gpu-t4 , gpu-h100 ,", ["gpu-t4", "gpu-h100"]),
        # What `-e gpupool_pools=[gpu-t4]` really passes: a string, not a list.
        ("[gpu-t4]", ["gpu-t4"]),
        ("[\"gpu-t4\", 'gpu-h100']", ["gpu-t4", "gpu-h100"]),
        (["gpu-t4", "gpu-h100"], ["gpu-t4", "gpu-h100"]),
        (["gpu-t4,gpu-h100", "gpu-gb200"], ["gpu-t4", "gpu-h100", "gpu-gb200"]),
        (["gpu-t4", "gpu-t4"], ["gpu-t4"]),
    ],
)
def test_every_form_gives_the_pool_names(given, names):
    assert pool_names(given) == names


def test_a_bare_name_is_never_matched_by_substring():
    # The bug this filter exists for: `item.name in "gpu-t4"` is true for a pool named "gpu".
    assert "gpu" not in pool_names("gpu-t4")


@pytest.mark.parametrize(
    "given, words",
    [
        ({"gpu-t4": True}, "gpupool_pools is dict"),
        (3, "gpupool_pools is int"),
        (["gpu-t4", 3], "gpupool_pools[1] is int"),
    ],
)
def test_other_types_are_refused_with_the_forms_that_work(given, words):
    with pytest.raises(AnsibleFilterError) as err:
        pool_names(given)
    assert words in str(err.value)
    assert "gpu-t4" in str(err.value)


def test_registered_under_its_name():
    assert FilterModule().filters() == {"pool_names": pool_names}
