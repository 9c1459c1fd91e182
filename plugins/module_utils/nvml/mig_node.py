# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVML sequence of gpupool.core.mig_config on one node, in order. Thin I/O over plan/mig/node_gpus.py.

read      the GPU count, then the facts of the GPUs to change (every GPU for an export)
refuse    before any write: a GPU index the host lacks, a layout that does not fit, compute processes
          on a GPU to change (unless force)
apply     per GPU in index order: the plan's NVML calls (nvml/mig_apply.py), then the GPU read back
export    the node's layout after the run, as mig-parted configuration
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.node_mig_request import NodeMigRequest
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml_facts
from ansible_collections.gpupool.core.plugins.module_utils.nvml import mig_apply as nvml_mig
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import node_gpus


def configure(
    request: NodeMigRequest,
    check_mode: bool,
    force: bool,
    export_name: str,
    warn: Callable[[str], None],
) -> Tuple[List[dict], Optional[dict]]:
    """(the GPUs' result entries, the config exported as export_name, or None without request.export).

    An NVML failure while reading is a GpupoolError that says no change was made by this step; one during
    a GPU's change names what was done on it (nvml/mig_apply.py) and the GPUs done before."""
    try:
        return _configure(request, check_mode, force, export_name, warn)
    except nvml_facts.NvmlUnavailable as exc:
        raise GpupoolError("cannot configure MIG on this host: %s" % exc)
    except nvml_facts.NvmlError as exc:
        raise GpupoolError("reading the GPUs through NVML failed, no change made by this step: %s" % exc)


def _configure(request, check_mode, force, export_name, warn):
    export = request.export
    with nvml_facts.Session() as session:
        system = nvml_facts.read_system()
        count = session.count()
        targets = node_gpus.gpu_targets(request.targets(), count)
        handles: Dict[int, object] = {}
        facts: Dict[int, dict] = {}
        for index in node_gpus.gpus_to_read(targets, count, export):
            handles[index] = session.handle(index)
            facts[index] = nvml_facts.read_gpu(handles[index], index, False, system)
        plans, warnings, errors = node_gpus.plan_gpus(targets, facts)
        for text in warnings:
            warn(text)
        if errors:
            raise node_gpus.refusal(errors)
        busy = node_gpus.busy_gpus(plans, facts)
        if busy and not force:
            raise node_gpus.busy_refusal(busy)
        results: List[dict] = []
        for index, gp in sorted(plans.items()):
            entry = node_gpus.gpu_entry(index, facts[index], gp)
            if check_mode or not gp.changed:
                node_gpus.planned(entry, gp, facts[index])
            else:
                try:
                    outcome = nvml_mig.execute(handles[index], index, gp, facts[index]["_profiles"])
                except nvml_mig.MigApplyError as exc:
                    raise GpupoolError(str(exc), gpus=results, partial={"index": index, "done": exc.done})
                facts[index] = nvml_facts.read_gpu(handles[index], index, False, system)
                node_gpus.applied(entry, outcome, facts[index])
            if not check_mode:
                entry["instances"] = facts[index]["mig"]["instances"]
            results.append(entry)
        exported = node_gpus.export_config(export_name, [facts[i] for i in sorted(facts)]) if export else None
    return results, exported
