# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a wait on a Magnum nodegroup is over: one poll's verdict from the nodegroup's view and what the plan's
action expects (plan/magnum/actions.Action.expect), and the advice for each failed status. The polling itself is
MagnumClient.wait's (openstack/magnum.py)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.values import normalize_field

FAILED_STATES = frozenset(("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "ROLLBACK_FAILED", "RESUME_FAILED"))
FAILED_HINTS = {
    "CREATE_FAILED": "Fix the cause (quota, flavor, image...), remove the failed nodegroup with state=absent, then run "
    "the task again.",
    "UPDATE_FAILED": "Fix the cause and run the task again; Magnum accepts a new update after UPDATE_FAILED.",
    "DELETE_FAILED": "Fix the cause and run the task with state=absent again.",
}


def failed_hint(status: Optional[str]) -> str:
    """What a person does about a nodegroup that ended in `status`."""
    return FAILED_HINTS.get(status or "", "Fix the cause and run the task again.")


def evaluate_wait(
    nodegroup: Optional[Mapping[str, Any]],
    expect: Mapping[str, Any],
    seen_in_progress: bool = False,
    initial_status: Optional[str] = None,
) -> Tuple[str, str]:
    """One poll of a waiter: ('done' | 'failed' | 'pending', text).

    nodegroup is the API view or None (404). A *_FAILED status left over from before the operation
    (initial_status) only counts once the operation was seen in progress."""
    if expect.get("gone"):
        if nodegroup is None:
            return "done", "gone"
        status = nodegroup.get("status") or ""
        if status == "DELETE_FAILED" and (seen_in_progress or initial_status != "DELETE_FAILED"):
            return "failed", status
        return "pending", status
    if nodegroup is None:
        # The conductor writes a new nodegroup's row asynchronously: 404 right after the 202 is normal.
        return "pending", "not visible yet"
    status = nodegroup.get("status") or ""
    if status in FAILED_STATES and (seen_in_progress or initial_status not in FAILED_STATES):
        return "failed", status
    for key, want in (expect.get("fields") or {}).items():
        if normalize_field(key, nodegroup.get(key)) != want:
            return "pending", status
    if status in expect.get("status", ()):
        return "done", status
    return "pending", status
