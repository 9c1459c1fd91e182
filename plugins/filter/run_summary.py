# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter gpupool.core.run_summary: the end-of-run summary of one cluster (plan/report/run_summary.py renders it).

A filter, not a module: the summary is made from results the play already holds (registered step results and
the pool report), so it runs on the controller without a connection and without another API read.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.run_summary import run_summary as render


def run_summary(
    steps: object, cluster: str, report: object = None, check_mode: bool = False, plan: object = None
) -> dict:
    if not isinstance(steps, dict):
        raise AnsibleFilterError(
            "run_summary takes a mapping of step name to registered result, got %s" % type(steps).__name__
        )
    if report is not None and not isinstance(report, dict):
        raise AnsibleFilterError(
            "run_summary's report is gpupool.core.pool_info's result, got %s" % type(report).__name__
        )
    if plan is not None and (isinstance(plan, (str, bytes, dict)) or not isinstance(plan, (list, tuple))):
        raise AnsibleFilterError("run_summary's plan is a list of step names, got %s" % type(plan).__name__)
    steps = {str(k): v if isinstance(v, dict) else None for k, v in steps.items()}
    return render(
        str(cluster), steps, report or None, bool(check_mode), None if plan is None else [str(p) for p in plan]
    )


class FilterModule:
    def filters(self):
        return {"run_summary": run_summary}
