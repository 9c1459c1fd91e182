# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One summary per cluster at the end of a run: what changed, then the capacity table of the pools.

Pure: reads the registered results of the run's steps (as the modules return them) and the pool report of
plan/report/capacity.py. The same data goes to the terminal (`lines`) and to AWX (`set_stats`, `data`). A step that
was skipped or did not run is left out; a failed step says so with its message's first line.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.markdown import capacity_lines
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.mismatches import mismatch_lines


def _first_line(text: object) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


def _object_changes(result: dict) -> List[str]:
    """Kubernetes objects written through the apply engine: 'DeviceClass gpu-t4 updated'."""
    out = []
    for obj in result.get("objects") or []:
        if not obj.get("changed"):
            continue
        name = "%s/%s" % (obj["namespace"], obj["name"]) if obj.get("namespace") else obj.get("name")
        out.append("%s %s %s" % (obj.get("kind"), name, obj.get("action")))
    return out


def _nodegroup_changes(result: dict) -> List[str]:
    """Magnum nodegroups: the summary of each planned or done API call."""
    out = []
    pools = result.get("pools")
    if isinstance(pools, dict):
        for name, pool in pools.items():
            if not isinstance(pool, dict):
                continue
            if pool.get("failed"):
                out.append(FAILED + "nodegroup of %s: %s" % (name, _first_line(pool.get("msg"))))
            if not pool.get("changed"):
                continue
            for action in pool.get("actions") or []:
                out.append(action.get("summary") or "%s nodegroup of %s" % (action.get("action"), name))
    for action in result.get("actions") or []:  # the module's standalone form
        if isinstance(action, dict) and action.get("summary"):
            out.append(action["summary"])
    return out


def _wave_changes(result: dict) -> List[str]:
    """MIG rollouts: one line per wave with its nodes, evictions and outcome."""
    out = []
    config_map = result.get("config_map") or {}
    if config_map.get("action") not in (None, "unchanged"):
        out.append(
            "MIG ConfigMap %s/%s %s" % (config_map.get("namespace"), config_map.get("name"), config_map.get("action"))
        )
    waves = [w for w in result.get("waves") or [] if isinstance(w, dict)]
    per_pool: Dict[str, int] = {}
    for wave in waves:
        per_pool[wave.get("pool")] = per_pool.get(wave.get("pool"), 0) + 1
    for wave in waves:
        nodes = ", ".join("%s (%s)" % (n, (wave.get("actions") or {}).get(n, "?")) for n in wave.get("nodes") or [])
        text = "MIG %s wave %d/%d: %s" % (wave.get("pool"), wave.get("index", 0) + 1, per_pool[wave.get("pool")], nodes)
        evict = wave.get("evicted") if wave.get("evicted") is not None else wave.get("evict")
        if evict:
            text += "; evict%s %s" % (
                "ed" if wave.get("evicted") is not None else "",
                ", ".join(_pod(p) for p in evict),
            )
        out.append(text + " - %s" % wave.get("result", "planned"))
    return out


def _release_changes(result: dict, check_mode: bool = False) -> List[str]:
    """The DRA driver's Helm release, in the words of `helm install`/`upgrade`: what, where, and why."""
    reasons = list(result.get("reasons") or [])
    if not result.get("changed") or not reasons:
        return []
    desired = result.get("desired") or {}
    release = result.get("release") or {}
    name = desired.get("release") or release.get("name") or "?"
    where = desired.get("namespace") or release.get("namespace")
    at = "release %s%s" % (name, " in namespace %s" % where if where else "")
    version = desired.get("version") or release.get("version") or "?"
    if reasons == ["state=absent"]:
        return ["%s the DRA driver %s" % ("would uninstall" if check_mode else "uninstalled", at)]
    if reasons == ["not installed"]:
        return ["%s the DRA driver %s as %s" % ("would install" if check_mode else "installed", version, at)]
    return [
        "%s the DRA driver %s to %s because %s"
        % ("would upgrade" if check_mode else "upgraded", at, version, "; ".join(reasons))
    ]


def _cordon_changes(result: dict) -> List[str]:
    """The cordon ledger (node_pool): each gpupool cordon lifted because its reason no longer holds, and each cordon
    someone set after gpupool's, left to them."""
    out = []
    for lifted in result.get("cordons_lifted") or []:
        if isinstance(lifted, dict):
            out.append(
                "lifted the cordon %s left on node %s (%s): %s"
                % (
                    lifted.get("cordoned_by"),
                    lifted.get("name"),
                    lifted.get("reason") or "no reason",
                    lifted.get("why"),
                )
            )
    for left in result.get("cordons_left") or []:
        if isinstance(left, dict):
            out.append(
                "left the cordon %s set on node %s after gpupool's cordon (gpupool's record removed)"
                % (left.get("manager") or "someone", left.get("name"))
            )
    return out


def _pod(ref: object) -> str:
    if isinstance(ref, dict):
        return "%s/%s" % (ref.get("namespace"), ref.get("name"))
    return str(ref)


EXTRACTORS = (_object_changes, _nodegroup_changes, _wave_changes, _release_changes, _cordon_changes)
FAILED = "FAILED: "  # how a failure line starts, so the count says changes and failures apart


def step_changes(step: str, result: Optional[dict], check_mode: bool = False) -> List[str]:
    """What one step changed (or would, in check mode), as lines."""
    if not isinstance(result, dict) or result.get("skipped"):
        return []
    lines: List[str] = []
    if isinstance(result.get("results"), list):  # a task with a loop: each item's result
        for item in result["results"]:
            lines += step_changes(step, item, check_mode)
        if result.get("failed") and not any(line.startswith(FAILED) for line in lines):
            lines.append(FAILED + _first_line(result.get("msg")))
        return lines
    for extract in EXTRACTORS:
        lines += extract(result, check_mode) if extract is _release_changes else extract(result)
    if result.get("failed"):
        lines.append(FAILED + _first_line(result.get("msg")))
    elif result.get("changed") and not lines:
        lines.append("%s changed" % step)
    return lines


def run_summary(
    cluster: str, steps: Dict[str, Optional[dict]], report: Optional[dict] = None, check_mode: bool = False
) -> dict:
    """{"lines": [...], "data": {...}} - the summary of one cluster's run.

    steps: {step name: registered result} in run order; report: pool_info's result (pools with capacity)."""
    changes: Dict[str, List[str]] = {}
    for step, result in steps.items():
        found = step_changes(step, result, check_mode)
        if found:
            changes[step] = found
    failures = sum(1 for found in changes.values() for line in found if line.startswith(FAILED))
    count = sum(len(found) for found in changes.values()) - failures
    verb = "would change" if check_mode else "changed"
    head = "%d %s" % (count, verb) if count else "nothing %s" % verb
    lines = ["%s: %s%s" % (cluster, head, ", %d failed" % failures if failures else "")]
    for step, found in changes.items():
        lines += ["  %s: %s" % (step, line) for line in found]
    data = {"changes": changes, "check_mode": check_mode, "capacity": {}}
    if report and report.get("pools") is not None:
        lines += ["  " + line for line in capacity_lines(report)]
        for name, rep in report["pools"].items():
            data["capacity"][name] = {
                "nodes_ready": rep["ready_nodes"],
                "nodes": len(rep["nodes"]),
                "gpus": rep["gpus"],
                "mig_devices": rep["mig_devices"],
                "allocatable": (rep.get("capacity") or {}).get("allocatable", {}),
                "mismatches": len(rep["mismatches"]),
            }
        mismatches = report.get("mismatches") or []
        if mismatches:
            lines.append("  %d mismatch(es) between the inventory and the cluster:" % len(mismatches))
            lines += mismatch_lines(mismatches, indent="    ")
    return {"lines": lines, "data": data}
