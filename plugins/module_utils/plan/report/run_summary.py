# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One summary per cluster at the end of a run: what changed, then the capacity table of the pools.

Pure: reads the registered results of the run's steps (as the modules return them) and the pool report of
plan/report/capacity.py. The same data goes to the terminal (`lines`) and to AWX (`set_stats`, `data`). A step that
was skipped or did not run is left out; a failed step says so with its message's first line.

A run that stopped says so in its first line, at which step, and what it did (checked, in check mode) before and
never reached: a failed dry run must not read as "nothing would change" (`run_outcome`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

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
        pending = " %s" % obj["pending"] if obj.get("pending") else ""  # check mode, its CRD not installed yet
        out.append("%s %s %s%s" % (obj.get("kind"), name, obj.get("action"), pending))
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
        out = ["%s the DRA driver %s as %s" % ("would install" if check_mode else "installed", version, at)]
    else:
        out = [
            "%s the DRA driver %s to %s because %s"
            % ("would upgrade" if check_mode else "upgraded", at, version, "; ".join(reasons))
        ]
    # the chart's CRDs, applied before helm (which installs crds/ only once): what serves ComputeDomains
    crds = sorted(c.get("name") for c in result.get("crds") or [] if isinstance(c, dict) and c.get("changed"))
    if crds:
        out.append("%s the chart's CRDs %s" % ("would apply" if check_mode else "applied", ", ".join(crds)))
    return out


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


def run_outcome(steps: Dict[str, Optional[dict]], plan: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """How far the run got: {"failed", "failed_step", "last_step", "done", "skipped", "not_reached"}.

    A step's result is None until its task ran (Ansible registers a result for a step that failed or was skipped too),
    so a failed step is the first result that failed. plan: the playbook's steps in run order; with it, the steps
    after the failed one, or after the last one with a result, were not reached (a task that registers nothing stopped
    the run: failed_step None, last_step the last step with a result). Without it nothing is said about steps without
    a result: they may not be in the playbook at all."""
    order = list(plan) if plan is not None else [name for name in steps if isinstance(steps[name], dict)]
    reached = [i for i, name in enumerate(order) if isinstance(steps.get(name), dict)]
    last = reached[-1] if reached else -1
    out: Dict[str, Any] = {"failed_step": None, "last_step": None, "done": [], "skipped": [], "not_reached": []}
    for i, name in enumerate(order):
        result = steps.get(name)
        if out["failed_step"] is not None or i > last:
            out["not_reached"].append(name)
            continue
        if not isinstance(result, dict):
            continue  # a step this run left out between two that ran
        out["last_step"] = name
        if result.get("failed"):
            out["failed_step"] = name
        elif result.get("skipped"):
            out["skipped"].append(name)
        else:
            out["done"].append(name)
    out["failed"] = out["failed_step"] is not None or bool(out["not_reached"])
    return out


def _outcome_lines(outcome: Dict[str, Any], check_mode: bool) -> List[str]:
    """What a stopped run did and did not do, in two lines."""
    done = ", ".join(outcome["done"]) or "no step"
    if outcome["skipped"]:
        done += " (skipped: %s)" % ", ".join(outcome["skipped"])
    lines = ["  %s: %s" % ("checked" if check_mode else "done", done)]
    if outcome["not_reached"]:
        lines.append("  not reached: %s" % ", ".join(outcome["not_reached"]))
    return lines


def run_summary(
    cluster: str,
    steps: Dict[str, Optional[dict]],
    report: Optional[dict] = None,
    check_mode: bool = False,
    plan: Optional[Sequence[str]] = None,
) -> dict:
    """{"lines": [...], "data": {...}} - the summary of one cluster's run.

    steps: {step name: registered result} in run order; report: pool_info's result (pools with capacity); plan: the
    playbook's steps in run order, to say where a failed run stopped and which steps it never reached (`run_outcome`).
    """
    changes: Dict[str, List[str]] = {}
    for step, result in steps.items():
        found = step_changes(step, result, check_mode)
        if found:
            changes[step] = found
    failures = sum(1 for found in changes.values() for line in found if line.startswith(FAILED))
    count = sum(len(found) for found in changes.values()) - failures
    verb = "would change" if check_mode else "changed"
    head = "%d %s" % (count, verb) if count else "nothing %s" % verb
    outcome = run_outcome(steps, plan)
    if outcome["failed"]:
        if outcome["failed_step"]:
            where = "at %s" % outcome["failed_step"]
        elif outcome["last_step"]:  # a task that registers no result failed
            where = "after %s" % outcome["last_step"]
        else:
            where = "before %s" % outcome["not_reached"][0]
        lines = ["%s: FAILED %s (%s up to there)" % (cluster, where, head)]
        lines += _outcome_lines(outcome, check_mode)
    else:
        lines = ["%s: %s%s" % (cluster, head, ", %d failed" % failures if failures else "")]
    for step, found in changes.items():
        lines += ["  %s: %s" % (step, line) for line in found]
    data = {"changes": changes, "check_mode": check_mode, "capacity": {}, "outcome": outcome}
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
            lines.append(
                "  %d mismatch(es) between the inventory and the cluster%s:"
                % (len(mismatches), " as it is, before the changes above" if check_mode and count else "")
            )
            lines += mismatch_lines(mismatches, indent="    ")
    return {"lines": lines, "data": data}
