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
    with pytest.raises(Exception, match="plan is a list of step names"):
        filter_run_summary.run_summary({}, "c", None, False, "validate,run_lease")


def test_the_summary_of_a_failed_run_says_so_through_the_filter():
    """What the run_summary role hands the filter after a dry run stopped at a step: the run failed, there, with what
    it checked before and what it never reached (not "nothing would change")."""
    plan = ["validate", "run_lease", "compute_domains", "pool_report"]
    steps = {
        "validate": {"changed": False},
        "run_lease": {"changed": False},
        "compute_domains": {"failed": True, "msg": "the API server does not serve ComputeDomain"},
        "pool_report": "",  # an undefined register, as the role's default(None) may template it
    }
    out = filter_run_summary.run_summary(steps, "cern-gpu", None, True, plan)
    assert out["lines"] == [
        "cern-gpu: FAILED at compute_domains (nothing would change up to there)",
        "  checked: validate, run_lease",
        "  not reached: pool_report",
        "  compute_domains: FAILED: the API server does not serve ComputeDomain",
    ]
    assert out["data"]["outcome"]["failed_step"] == "compute_domains"


@pytest.mark.parametrize("playbook", ["site", "scale", "mig", "teardown"])
def test_each_playbook_names_its_own_steps_in_order_to_the_summary(playbook):
    """run_summary_plan is the playbook's block read in order (the validation, then each role imported), so that a
    failed run's summary never names a step the playbook does not run as 'not reached'; and each step of it has a
    registered result in the role's defaults."""
    import os

    import yaml

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    with open(os.path.join(root, "playbooks", playbook + ".yml")) as f:
        plays = yaml.safe_load(f)
    with open(os.path.join(root, "roles", "run_summary", "defaults", "main.yml")) as f:
        registered = yaml.safe_load(f)["run_summary_steps"]
    (block,) = [t for play in plays for t in play.get("tasks") or [] if "always" in t]
    steps = [
        "validate" if "gpupool.core.validate" in task else task["ansible.builtin.import_role"]["name"].split(".")[-1]
        for task in block["block"]
    ]
    (summary,) = [t for t in block["always"] if t["ansible.builtin.import_role"]["name"] == "gpupool.core.run_summary"]
    assert summary["vars"]["run_summary_plan"] == steps
    assert set(steps) <= set(registered), set(steps) - set(registered)
