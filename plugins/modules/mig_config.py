#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_config
short_description: Apply a MIG layout on a node's GPUs through NVML
version_added: "1.0.0"
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
  # first: its action group membership wins over the empty one of .actiongroups (earlier fragments win)
  - gpupool.core.attributes.nvml
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
  - gpupool.core.attributes.node
attributes:
  check_mode:
    details: Returns the plan (the NVML calls it would make) without making any.
  diff_mode:
    details: Per GPU, MIG mode and C(profile@start) of every GPU instance, before and after.
requirements:
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

from ansible_collections.gpupool.core.plugins.module_utils.model.node_mig_request import NodeMigRequest
from ansible_collections.gpupool.core.plugins.module_utils.module import NvmlModule
from ansible_collections.gpupool.core.plugins.module_utils.nvml import mig_node as nvml_mig_node
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import node_gpus as plan_node_gpus


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
        """Plan every GPU, refuse before any write, apply (nvml/mig_node.py); the entries are the result."""
        request = NodeMigRequest.from_options(self.params)
        p = self.params
        results, exported = nvml_mig_node.configure(request, self.check_mode, p["force"], p["export_name"], self.warn)
        return plan_node_gpus.node_result(results, exported, self.diff_mode)


def main():
    MigConfigModule()()


if __name__ == "__main__":
    main()
