# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPUs of one gpupool.core.mig_config run, decided without I/O: which GPUs it reads and changes, each
GPU's apply plan (node_apply.plan_gpu) or why none can be made, the refusals made before any NVML write,
each GPU's entry in the result and the module's result.

`facts` are one GPU's facts as nvml/facts.read_gpu reads them (name, uuid, pci_device_id, _profiles, mig,
processes); nvml/mig_node.py reads them, executes the plans and reads the GPUs back.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import mig_parted_config
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_apply import (
    GpuPlan,
    catalog_model_for,
    current_layout,
    effective_model,
    layout_summary,
    plan_gpu,
    translate_layout,
)

Target = Tuple[bool, Optional[Dict[str, int]]]  # (MIG mode wanted, layout or None: leave instances alone)


def gpu_targets(targets: Dict[Any, Target], count: int) -> Dict[int, Target]:
    """The request's targets by GPU index ("all": every GPU of the host); Problems for an index the host
    does not have, before anything is read."""
    if "all" in targets:
        targets = dict.fromkeys(range(count), targets["all"])
    missing = sorted(i for i in targets if i < 0 or i >= count)
    if missing:
        raise Problems(
            "GPU index %s does not exist on this host: it has %d GPU(s), indices 0-%d. "
            "No change made." % (", ".join(str(i) for i in missing), count, count - 1)
        )
    return targets


def gpus_to_read(targets: Dict[int, Target], count: int, export: bool) -> List[int]:
    """The GPUs whose facts are read: those to change, or every GPU for an export."""
    return list(range(count)) if export else sorted(targets)


def observed_state(facts: dict) -> dict:
    """A GPU's MIG state as node_apply.plan_gpu reads it."""
    mig = facts["mig"]
    return {
        "mig_capable": mig["capable"],
        "mig_current": mig["current"],
        "mig_pending": mig["pending"],
        "instances": mig["instances"],
    }


def summary(facts: dict) -> dict:
    """MIG mode and profile@start of each GPU instance: the before/after of the result and of --diff."""
    mig = facts["mig"]
    return layout_summary(mig["current"], mig["instances"], pending=mig["pending"])


def infeasible(label: str, exc: InfeasibleLayout) -> str:
    """Why a layout does not fit a GPU, with the planner's layouts that would."""
    hint = ""
    if getattr(exc, "suggestions", None):
        hint = " Layouts that fit: %s." % "; ".join(
            " + ".join("%s x%d" % (n, c) for n, c in sorted(s.items())) for s in exc.suggestions
        )
    return "%s: %s.%s" % (label, exc.reason.rstrip("."), hint)


def plan_gpus(targets: Dict[int, Target], facts: Dict[int, dict]) -> Tuple[Dict[int, GpuPlan], List[str], List[str]]:
    """({index: plan}, warnings, errors) for the targets, in index order.

    Each GPU is planned with its catalog model corrected by what it reports (the GPU wins, with a warning);
    a layout that does not fit, or a MIG-capable GPU neither in the catalog nor reporting profiles, is an
    error. Every GPU is planned, so one refusal names every GPU that cannot take its layout."""
    plans: Dict[int, GpuPlan] = {}
    warnings: List[str] = []
    errors: List[str] = []
    for index in sorted(targets):
        gpu = facts[index]
        enabled, layout = targets[index]
        label = "GPU %d (%s)" % (index, gpu["name"])
        model, aliases, diffs = effective_model(gpu["name"], gpu["_profiles"], gpu["pci_device_id"], label=gpu["name"])
        warnings.extend(diffs)
        if gpu["mig"]["capable"] and model is None:
            errors.append(
                "%s reports no MIG profiles and is not in the MIG catalog: the layout cannot be planned" % label
            )
            continue
        if layout is not None and model is not None:
            layout, more = translate_layout(model, layout, aliases, gpu["name"])
            warnings.extend(more)
        try:
            plans[index] = plan_gpu(index, model, observed_state(gpu), enabled, layout)
        except InfeasibleLayout as exc:
            errors.append(infeasible(label, exc))
    return plans, warnings, errors


def refusal(errors: Sequence[str]) -> GpupoolError:
    return GpupoolError("MIG layout refused, no change made: " + " ".join(errors), errors=list(errors))


def busy_gpus(plans: Dict[int, GpuPlan], facts: Dict[int, dict]) -> List[str]:
    """The GPUs a plan would change while compute processes run on them, one sentence each."""
    busy = []
    for index, gp in sorted(plans.items()):
        procs = facts[index]["processes"]
        if gp.changed and procs:
            busy.append(
                "GPU %d (%s) runs %d compute process(es), pid %s"
                % (index, facts[index]["name"], len(procs), ", ".join(str(x["pid"]) for x in procs))
            )
    return busy


def busy_refusal(busy: Sequence[str]) -> GpupoolError:
    return GpupoolError(
        "MIG change refused, no change made: %s. Changing MIG would disrupt them: stop those "
        "processes (drain the node) and run again, or set force: true." % "; ".join(busy),
        busy=list(busy),
    )


def gpu_entry(index: int, facts: dict, gp: GpuPlan) -> dict:
    """A GPU's entry in the result before its plan runs: what it is and how it was."""
    catalog = catalog_model_for(facts["name"], facts["pci_device_id"])
    return {
        "index": index,
        "name": facts["name"],
        "uuid": facts["uuid"],
        "catalog_model": catalog.key if catalog is not None else None,
        "before": summary(facts),
        "kept_gpu_instances": [k["gpu_instance_id"] for k in gp.kept],
        "reset_required": gp.reset_required,
    }


def planned(entry: dict, gp: GpuPlan, facts: dict) -> None:
    """The entry of a GPU whose plan is not executed (check mode, or nothing to change): the planned actions
    and state; an unchanged GPU whose mode change still waits for a reset says so."""
    entry["actions"] = list(gp.actions)
    entry["after"] = gp.after if gp.changed else entry["before"]
    if not gp.changed and facts["mig"]["mode_change_pending"]:
        entry["reset_required"] = True


def applied(entry: dict, outcome: dict, facts_after: dict) -> None:
    """The entry of a GPU whose plan ran: the actions performed (with the ids NVML gave), how the GPU is now.
    outcome: nvml/mig_apply.execute's result; facts_after: the GPU read again."""
    entry["actions"] = outcome["done"]
    entry["reset_required"] = outcome["reset_required"]
    if outcome["activation_status"]:
        entry["activation_status"] = outcome["activation_status"]
    entry["after"] = summary(facts_after)
    entry["reset_required"] = entry["reset_required"] or facts_after["mig"]["mode_change_pending"]


def export_config(name: str, gpus_facts: Sequence[dict]) -> dict:
    """The node's MIG layout as a mig-parted v1 config named `name` (GPUs without MIG are left out)."""
    entries = []
    for facts in gpus_facts:
        mig = facts["mig"]
        if not mig["capable"]:
            continue
        entries.append(([facts["index"]], current_layout(mig["instances"]) if mig["current"] else None))
    return mig_parted_config({name: entries}) if entries else mig_parted_config({})


def node_result(results: List[dict], exported: Optional[dict], diff_mode: bool) -> Dict[str, Any]:
    """The module's result from the GPUs' entries (and the export)."""
    out: Dict[str, Any] = dict(
        changed=any(r["actions"] for r in results),
        reset_required=any(r["reset_required"] for r in results),
        gpus=results,
    )
    if exported is not None:
        out["mig_parted_config"] = exported
    if diff_mode:
        out["diff"] = {
            "before": {"gpu%d" % r["index"]: r["before"] for r in results},
            "after": {"gpu%d" % r["index"]: r["after"] for r in results},
        }
    return out
