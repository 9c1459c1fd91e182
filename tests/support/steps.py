# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a controller step in-process, as its action plugin does (option checks, the step, secrets hidden).

Shared by the unit tests of each step (tests/unit/plugins/action/) and the integration tests that drive a step
against the real test bed."""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import run_step


def run_action(action: Any, **args: Any) -> Dict[str, Any]:
    """action: a plugins/action/<step>.py module; ``_ansible_check_mode``/``_ansible_diff`` as a module gets them."""
    check = bool(args.pop("_ansible_check_mode", False))
    diff = bool(args.pop("_ansible_diff", False))
    return run_step(action.ActionModule.step, args, check_mode=check, diff_mode=diff)


def said(result: Dict[str, Any]) -> str:
    """A failed step's message as one line (messages wrap at 200 characters, a test looks for the words)."""
    return " ".join(str(result.get("msg", "")).split())
