# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gpupool.core.run_summary checks what it is given (the summary itself: plan/report/test_run_summary.py).

Here, not beside the plan's tests: a filter is controller code and imports ansible, which ansible-test's
module_utils unit context does not have."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.filter import run_summary as filter_run_summary


def test_filter_checks_its_input():
    assert filter_run_summary.run_summary({"x": "not a result"}, "c")["lines"] == ["c: nothing changed"]
    with pytest.raises(Exception, match="mapping of step name"):
        filter_run_summary.run_summary(["x"], "c")
    with pytest.raises(Exception, match="pool_info's result"):
        filter_run_summary.run_summary({}, "c", "text")
