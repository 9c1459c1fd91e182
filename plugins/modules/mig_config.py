#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_config
short_description: Apply a MIG layout on a node's GPUs through NVML
version_added: "0.1.0"
description:
  - Converges the MIG configuration of the host's NVIDIA GPUs through NVML with the C(pynvml) bindings (PyPI
    C(nvidia-ml-py)), without the GPU Operator or C(nvidia-mig-parted) - for bare-metal and Slurm nodes.
  - Enables or disables MIG mode; destroys the GPU instances that are not in the desired layout; creates the missing
    ones at the placements of the collection's MIG planner, each with its full-size compute instance.
  - Keeps existing GPU instances that already sit where a valid placement of the layout puts them, so a second run
    changes nothing.
  - On A100 and A30 a MIG mode change stays pending until the GPU is reset; the module then reports
    C(reset_required=true) and creates the instances on the run after the reset. Hopper and later GPUs switch at once.
  - A layout that does not fit the GPU fails with the planner's explanation before any NVML write, on every listed
    GPU. A GPU with running compute processes is refused unless O(force=true).
  - MIG geometry comes from the collection's MIG catalog and planner, the same as C(gpupool.core.validate) uses;
    where the GPU reports different profiles (profile names change across drivers) the GPU wins, with a warning.
  - O(export=true) returns the node's MIG layout (after the run) as C(nvidia-mig-parted) configuration.
author:
  - gpupool.core developers (@gpupool)
options:
  layout:
    description:
      - 'MIG layout for every GPU in O(devices) - profile name to count, for example C({"3g.20gb": 1, "2g.10gb": 2}).'
      - Use C({}) to enable MIG with no instances. Profile names are the GPU's, as C(nvidia-smi mig -lgip) shows them.
    type: dict
  layouts:
    description:
      - 'Per-GPU layouts - GPU index to layout, for example C({0: {"7g.40gb": 1}, 1: {"1g.5gb": 7}}).'
      - GPUs not listed are left alone.
    type: dict
  devices:
    description:
      - GPU indices O(layout) or O(mig_enabled) applies to. Omit for every GPU.
    type: list
    elements: int
  mig_enabled:
    description:
      - MIG mode wanted. Defaults to V(true) when O(layout) or O(layouts) is given.
      - V(false) destroys every MIG instance of the GPUs and disables MIG mode.
      - V(true) without a layout only enables the mode and leaves instances alone.
    type: bool
  force:
    description:
      - Change GPUs even when compute processes run on them. NVML still refuses to destroy an instance a process
        uses, and a mode change then stays pending.
    type: bool
    default: false
  export:
    description:
      - Return the node's MIG layout after the run as C(nvidia-mig-parted) C(version v1) configuration in
        RV(mig_parted_config). On its own (no layout, no mode) the module changes nothing.
    type: bool
    default: false
  export_name:
    description:
      - Name of the exported configuration under C(mig-configs).
    type: str
    default: gpupool-exported
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
  - gpupool.core.attributes.node
attributes:
  check_mode:
    details: Returns the plan (the NVML calls it would make) without making any.
  diff_mode:
    details: Per GPU, MIG mode and C(profile@start) of every GPU instance, before and after.
  action_group:
    membership:
    - gpupool.core.nvml
requirements:
  - nvidia-ml-py (C(import pynvml)) on the managed node
  - the NVIDIA driver (C(libnvidia-ml.so.1)) on the managed node
  - root on the managed node (use C(become))
notes:
  - GPU instances are created with their full-size compute instance only, as C(nvidia-mig-parted) does.
  - The GPU reset that A100/A30 need after a mode change is not done by this module; reset the GPU
    (C(nvidia-smi -r -i <index>) with no processes on it) or reboot, then run again.
  - Placements of inferred catalog GPUs (H200, GB200, A30) are checked against what the GPU reports at run time.
seealso:
  - module: gpupool.core.gpu_facts
  - module: gpupool.core.validate
"""

EXAMPLES = r"""
- name: One 3g.20gb and two 2g.10gb on every A100-40GB
  become: true
  gpupool.core.mig_config:
    layout:
      3g.20gb: 1
      2g.10gb: 2
  register: mig

- name: Reset the GPUs when the mode change waits for it (A100)
  become: true
  ansible.builtin.command: nvidia-smi -r
  when: mig.reset_required
  changed_when: true

- name: Different layouts per GPU
  become: true
  gpupool.core.mig_config:
    layouts:
      0: {7g.40gb: 1}
      1: {1g.5gb: 7}

- name: Disable MIG on GPU 3
  become: true
  gpupool.core.mig_config:
    devices: [3]
    mig_enabled: false

- name: Export the node's current MIG layout for nvidia-mig-parted
  gpupool.core.mig_config:
    export: true
  register: current

- name: Show what would change
  gpupool.core.mig_config:
    layout: {1g.5gb: 7}
  check_mode: true
  diff: true
"""

RETURN = r"""
changed:
  description: Whether any NVML write was made (or, in check mode, would be).
  returned: always
  type: bool
reset_required:
  description: A MIG mode change is pending until a GPU reset (A100/A30) or until the GPU is idle.
  returned: always
  type: bool
  sample: true
gpus:
  description: Per GPU handled, what was planned and done.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: GPU index.
      type: int
    name:
      description: Product name.
      type: str
    uuid:
      description: GPU UUID.
      type: str
    catalog_model:
      description: MIG catalog entry used (with the GPU's reported profiles applied).
      type: str
    actions:
      description:
        - NVML actions in order. In check mode the planned ones; otherwise those performed, with the ids NVML gave.
        - C(action) is one of C(destroy_compute_instance), C(destroy_gpu_instance), C(set_mig_mode),
          C(create_compute_instance), C(create_gpu_instance).
      type: list
      elements: dict
      sample: [{action: create_gpu_instance, profile: 3g.20gb, profile_id: 9, start: 4, size: 4, compute_instance: full}]
    kept_gpu_instances:
      description: Ids of existing GPU instances kept because they already fit the layout.
      type: list
      elements: int
    reset_required:
      description: This GPU's mode change waits for a reset.
      type: bool
    before:
      description: MIG mode and C(profile@start) of each GPU instance before.
      type: dict
      sample: {mig_enabled: true, instances: ["7g.40gb@0"]}
    after:
      description: The same after the run (planned in check mode).
      type: dict
      sample: {mig_enabled: true, instances: ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]}
    instances:
      description: GPU instances after the run as C(gpupool.core.gpu_facts) reports them (not in check mode).
      type: list
      elements: dict
mig_parted_config:
  description: The node's MIG layout as C(nvidia-mig-parted) configuration (GPUs without MIG are left out).
  returned: when O(export=true)
  type: dict
  sample: {version: v1, mig-configs: {all-disabled: [{devices: all, mig-enabled: false}],
           gpupool-exported: [{devices: [0, 1], mig-enabled: true, mig-devices: {2g.10gb: 2, 3g.20gb: 1}}]}}
"""

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import mig_parted_config
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.node_mig_request import NodeMigRequest
from ansible_collections.gpupool.core.plugins.module_utils.module import NvmlModule
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml_facts
from ansible_collections.gpupool.core.plugins.module_utils.nvml import mig_apply as nvml_mig
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_apply import (
    catalog_model_for,
    current_layout,
    effective_model,
    layout_summary,
    plan_gpu,
    translate_layout,
)


def observed_state(facts):
    mig = facts["mig"]
    return {
        "mig_capable": mig["capable"],
        "mig_current": mig["current"],
        "mig_pending": mig["pending"],
        "instances": mig["instances"],
    }


def summary(facts):
    mig = facts["mig"]
    return layout_summary(mig["current"], mig["instances"], pending=mig["pending"])


def export_config(name, gpus_facts):
    entries = []
    for facts in gpus_facts:
        mig = facts["mig"]
        if not mig["capable"]:
            continue
        entries.append(([facts["index"]], current_layout(mig["instances"]) if mig["current"] else None))
    return mig_parted_config({name: entries}) if entries else mig_parted_config({})


def run(module, request):
    p = module.params
    desired = request.targets()
    warnings = []
    with nvml_facts.Session() as session:
        system = nvml_facts.read_system()
        count = session.count()
        if "all" in desired:
            desired = dict.fromkeys(range(count), desired["all"])
        missing = sorted(i for i in desired if i < 0 or i >= count)
        if missing:
            raise Problems(
                "GPU index %s does not exist on this host: it has %d GPU(s), indices 0-%d. "
                "No change made." % (", ".join(str(i) for i in missing), count, count - 1)
            )
        handles, facts, plans, errors = {}, {}, {}, []
        read_all = range(count) if p["export"] else sorted(desired)
        for index in read_all:
            handles[index] = session.handle(index)
            facts[index] = nvml_facts.read_gpu(handles[index], index, False, system)
        for index in sorted(desired):
            gpu = facts[index]
            enabled, layout = desired[index]
            label = "GPU %d (%s)" % (index, gpu["name"])
            model, aliases, diffs = effective_model(
                gpu["name"], gpu["_profiles"], gpu["pci_device_id"], label=gpu["name"]
            )
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
                hint = ""
                if getattr(exc, "suggestions", None):
                    hint = " Layouts that fit: %s." % "; ".join(
                        " + ".join("%s x%d" % (n, c) for n, c in sorted(s.items())) for s in exc.suggestions
                    )
                errors.append("%s: %s.%s" % (label, exc.reason.rstrip("."), hint))
        for text in warnings:
            module.warn(text)
        if errors:
            raise GpupoolError("MIG layout refused, no change made: " + " ".join(errors), errors=errors)
        busy = []
        for index, gp in sorted(plans.items()):
            procs = facts[index]["processes"]
            if gp.changed and procs:
                busy.append(
                    "GPU %d (%s) runs %d compute process(es), pid %s"
                    % (index, facts[index]["name"], len(procs), ", ".join(str(x["pid"]) for x in procs))
                )
        if busy and not p["force"]:
            raise GpupoolError(
                "MIG change refused, no change made: %s. Changing MIG would disrupt them: stop those "
                "processes (drain the node) and run again, or set force: true." % "; ".join(busy),
                busy=busy,
            )
        results = []
        for index, gp in sorted(plans.items()):
            gpu = facts[index]
            entry = {
                "index": index,
                "name": gpu["name"],
                "uuid": gpu["uuid"],
                "catalog_model": None,
                "before": summary(gpu),
                "kept_gpu_instances": [k["gpu_instance_id"] for k in gp.kept],
                "reset_required": gp.reset_required,
            }
            catalog = catalog_model_for(gpu["name"], gpu["pci_device_id"])
            entry["catalog_model"] = catalog.key if catalog is not None else None
            if module.check_mode or not gp.changed:
                entry["actions"] = list(gp.actions)
                entry["after"] = gp.after if gp.changed else entry["before"]
                if not gp.changed and facts[index]["mig"]["mode_change_pending"]:
                    entry["reset_required"] = True
            else:
                try:
                    outcome = nvml_mig.execute(handles[index], index, gp, gpu["_profiles"])
                except nvml_mig.MigApplyError as exc:
                    raise GpupoolError(str(exc), gpus=results, partial={"index": index, "done": exc.done})
                entry["actions"] = outcome["done"]
                entry["reset_required"] = outcome["reset_required"]
                if outcome["activation_status"]:
                    entry["activation_status"] = outcome["activation_status"]
                facts[index] = nvml_facts.read_gpu(handles[index], index, False, system)
                entry["after"] = summary(facts[index])
                entry["reset_required"] = entry["reset_required"] or facts[index]["mig"]["mode_change_pending"]
            if not module.check_mode:
                entry["instances"] = facts[index]["mig"]["instances"]
            results.append(entry)
        exported = export_config(p["export_name"], [facts[i] for i in sorted(facts)]) if p["export"] else None
    return results, exported


class MigConfigModule(NvmlModule):
    argument_spec = dict(
        layout=dict(type="dict"),
        layouts=dict(type="dict"),
        devices=dict(type="list", elements="int"),
        mig_enabled=dict(type="bool"),
        force=dict(type="bool", default=False),
        export=dict(type="bool", default=False),
        export_name=dict(type="str", default="gpupool-exported"),
    )
    module_kwargs = dict(mutually_exclusive=[("layout", "layouts"), ("layouts", "devices")])

    def run(self):
        request = NodeMigRequest.from_options(self.params)
        try:
            results, exported = run(self, request)
        except nvml_facts.NvmlUnavailable as exc:
            raise GpupoolError("cannot configure MIG on this host: %s" % exc)
        except nvml_facts.NvmlError as exc:
            raise GpupoolError("reading the GPUs through NVML failed, no change made by this step: %s" % exc)
        out = dict(
            changed=any(r["actions"] for r in results),
            reset_required=any(r["reset_required"] for r in results),
            gpus=results,
        )
        if exported is not None:
            out["mig_parted_config"] = exported
        if self.diff_mode:
            out["diff"] = {
                "before": {"gpu%d" % r["index"]: r["before"] for r in results},
                "after": {"gpu%d" % r["index"]: r["after"] for r in results},
            }
        return out


def main():
    MigConfigModule()()


if __name__ == "__main__":
    main()
