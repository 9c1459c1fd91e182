#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Read the GPUs of a node through NVML (identity, MIG state, fabric clique)
version_added: "1.0.0"
description:
  - Reads every NVIDIA GPU of the host, or the listed indices, through NVML with the C(pynvml) bindings
    (PyPI C(nvidia-ml-py)) - no GPU Operator and no C(nvidia-smi) needed. Use it on bare-metal and Slurm nodes,
    or to check what the GPU Operator or MIG Manager did.
  - Per GPU it returns index, UUID, product name, brand, architecture, CUDA compute capability, memory, PCI bus id,
    driver and CUDA driver version, MIG mode (current and pending), the MIG GPU instances with their compute
    instances, placements and MIG device UUIDs, the processes using the GPU and the multi-node NVLink fabric
    registration with the IMEX clique id C(<clusterUuid>.<cliqueId>) as the NVIDIA DRA driver and GPU Feature
    Discovery write it (label C(nvidia.com/gpu.clique)).
  - With O(include_profiles=true) it also returns the MIG profiles the GPU reports and where they differ from the
    collection's MIG catalog (profile names change across drivers; the GPU's own data wins).
  - A host without NVML (no driver, driver not loaded, no C(pynvml)) is not an error unless O(require_nvml=true);
    the result then says C(nvml_available=false) and why.
  - Read-only, it never changes a GPU.
author:
  - gpupool.core developers (@gpupool)
options:
  devices:
    description:
      - GPU indices to read. Omit to read every GPU.
    type: list
    elements: int
  include_profiles:
    description:
      - Also return the MIG GPU-instance profiles each MIG-capable GPU reports (id, name, slices, placements, memory)
        and the differences from the catalog.
    type: bool
    default: false
  require_nvml:
    description:
      - Fail when NVML cannot be used on the host instead of returning C(nvml_available=false).
    type: bool
    default: false
extends_documentation_fragment:
  # first: its action group membership wins over the empty one of .actiongroups (earlier fragments win)
  - gpupool.core.attributes.nvml
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - ansible.builtin.action_common_attributes.actiongroups
  - gpupool.core.attributes.node
attributes:
  diff_mode:
    support: none
  facts:
    support: full
notes:
  - The facts are also set as C(gpupool_gpus) and C(gpupool_nvml).
  - MIG device UUIDs are only listed for compute instances that exist.
seealso:
  - module: gpupool.core.mig_config
"""

EXAMPLES = r"""
- name: Read the GPUs
  gpupool.core.gpu_facts:
  register: gpus

- name: Show each GPU's MIG instances
  ansible.builtin.debug:
    msg: "{{ item.index }} {{ item.name }} MIG={{ item.mig.current }} {{ item.mig.instances | map(attribute='profile') }}"
  loop: "{{ gpus.gpus }}"

- name: Compare the H200's reported MIG profiles with the catalog
  gpupool.core.gpu_facts:
    devices: [0]
    include_profiles: true
  register: h200

- name: Group nodes by IMEX clique
  ansible.builtin.group_by:
    key: "clique_{{ gpupool_gpus[0].fabric.clique | default('none', true) | replace('-', '_') | replace('.', '_') }}"
"""

RETURN = r"""
nvml_available:
  description: Whether NVML could be used on the host.
  returned: always
  type: bool
  sample: true
msg:
  description: Why NVML could not be used (when O(require_nvml=false)).
  returned: when nvml_available is false
  type: str
  sample: "NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) could not be loaded: this host has no NVIDIA driver, ..."
driver_version:
  description: NVIDIA driver version.
  returned: when nvml_available
  type: str
  sample: "550.127.05"
cuda_driver_version:
  description: Highest CUDA version the driver supports.
  returned: when nvml_available
  type: str
  sample: "12.4"
nvml_version:
  description: NVML library version.
  returned: when nvml_available
  type: str
  sample: "12.550.127.05"
gpus:
  description: One entry per GPU read.
  returned: when nvml_available
  type: list
  elements: dict
  contains:
    index:
      description: NVML index.
      type: int
    uuid:
      description: GPU UUID.
      type: str
      sample: GPU-d1f804c8-3645-5dbc-9217-f285b82036b5
    name:
      description: Product name as NVML reports it.
      type: str
      sample: NVIDIA A100-SXM4-40GB
    brand:
      description: Brand (C(NVIDIA), C(Tesla), ...).
      type: str
    architecture:
      description: Architecture (C(Ampere), C(Hopper), C(Blackwell), ...).
      type: str
    cuda_compute_capability:
      description: CUDA compute capability.
      type: str
      sample: "8.0"
    memory_mib:
      description: Total memory in MiB.
      type: int
    memory_bytes:
      description: Total memory in bytes.
      type: int
    pci_bus_id:
      description: PCI bus id as NVML reports it.
      type: str
      sample: "00000000:07:00.0"
    pci_device_id:
      description: Combined PCI device and vendor id.
      type: str
      sample: "0x20B010DE"
    driver_version:
      description: Driver version (as the DRA driver publishes it per device).
      type: str
    cuda_driver_version:
      description: CUDA driver version.
      type: str
    catalog_model:
      description: The collection's MIG catalog entry for this GPU, or null when unknown.
      type: str
      sample: A100-40GB
    mig:
      description:
        - C(capable), C(current) and C(pending) MIG mode, C(mode_change_pending) (true until a GPU reset applies
          the pending mode on A100/A30), C(instances) (GPU instances with C(gpu_instance_id), C(profile),
          C(profile_id), C(start), C(size), C(memory_mib), C(uuid) of the full-size MIG device and
          C(compute_instances)), C(profiles) with O(include_profiles).
      type: dict
    processes:
      description: Compute processes on the GPU (pid, used memory, GPU/compute instance ids).
      type: list
      elements: dict
    fabric:
      description:
        - Multi-node NVLink registration; C(supported=false) on GPUs without it.
        - C(clique) is C(<clusterUuid>.<cliqueId>) when the registration is completed, else null.
      type: dict
      sample: {supported: true, cluster_uuid: 8a1f..., clique_id: 1, state: completed, status: NVML_SUCCESS,
               clique: 8a1f....1}
    catalog_differences:
      description: Where the GPU's reported MIG profiles differ from the catalog (with O(include_profiles)).
      type: list
      elements: str
ansible_facts:
  description: Facts set for later tasks.
  returned: always
  type: dict
  contains:
    gpupool_gpus:
      description: Same as RV(gpus) (empty list without NVML).
      type: list
      elements: dict
    gpupool_nvml:
      description: C(available), C(driver_version), C(cuda_driver_version), C(nvml_version), C(msg).
      type: dict
"""

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.module import NvmlModule
from ansible_collections.gpupool.core.plugins.module_utils.nvml import facts as nvml_facts
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_apply import catalog_model_for, effective_model


def read(params):
    with nvml_facts.Session() as session:
        system = nvml_facts.read_system()
        count = session.count()
        wanted = params["devices"] if params["devices"] is not None else list(range(count))
        missing = [i for i in wanted if i < 0 or i >= count]
        if missing:
            raise Problems(
                "GPU index %s does not exist on this host: it has %d GPU(s), indices 0-%d"
                % (", ".join(str(i) for i in missing), count, count - 1)
            )
        gpus = []
        for index in wanted:
            facts = nvml_facts.read_gpu(session.handle(index), index, params["include_profiles"], system)
            reported = facts.pop("_profiles")
            _model, _aliases, differences = effective_model(
                facts["name"], reported, facts["pci_device_id"], label="GPU %d (%s)" % (index, facts["name"])
            )
            catalog = catalog_model_for(facts["name"], facts["pci_device_id"])
            facts["catalog_model"] = catalog.key if catalog is not None else None
            if params["include_profiles"]:
                facts["catalog_differences"] = differences
            gpus.append(facts)
        return system, gpus


class GpuFactsModule(NvmlModule):
    argument_spec = dict(
        devices=dict(type="list", elements="int"),
        include_profiles=dict(type="bool", default=False),
        require_nvml=dict(type="bool", default=False),
    )

    def run(self):
        try:
            system, gpus = read(self.params)
        except nvml_facts.NvmlUnavailable as exc:
            if self.params["require_nvml"]:
                raise GpupoolError(str(exc), nvml_available=False)
            return dict(
                nvml_available=False,
                msg=str(exc),
                ansible_facts={"gpupool_gpus": [], "gpupool_nvml": {"available": False, "msg": str(exc)}},
            )
        except nvml_facts.NvmlError as exc:
            raise GpupoolError("reading the GPUs through NVML failed: %s" % exc, nvml_available=True)
        nvml = dict(system, available=True)
        return dict(
            nvml_available=True, gpus=gpus, ansible_facts={"gpupool_gpus": gpus, "gpupool_nvml": nvml}, **system
        )


def main():
    GpuFactsModule()()


if __name__ == "__main__":
    main()
