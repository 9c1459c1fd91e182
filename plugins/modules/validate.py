# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate
short_description: Validate a GPU-pool inventory and return it normalized
version_added: "1.0.0"
description:
  - Checks the C(gpupool_cluster) inventory structure against the GPU-pool model before anything is touched.
  - Rejects unknown keys (with a did-you-mean hint), duplicate or non-DNS pool names, node counts outside
    min/max, MIG profiles the pool's GPU does not have, MIG layouts that do not fit the GPU's placement rules,
    MIG on GPUs without MIG, time-slicing together with MPS, DRA feature-gate conflicts across pools and
    NVLink/ComputeDomains on GPUs without multi-node NVLink.
  - Every problem is reported with the path of the bad key and a sentence saying how to fix it.
  - Warns (without failing) about inventory that is valid but matches nothing, such as an extra DeviceClass whose
    C(min_memory) is above the memory every GPU of its pool publishes.
  - On success returns the pools with defaults filled in, the DRA driver feature gates that follow from them and
    the mig-parted configuration of the static MIG pools.
  - Changes nothing, on any host.
author:
  - gpupool.core developers (@gpupool)
options:
  cluster:
    description:
      - The cluster's GPU-pool description, usually C({{ gpupool_cluster }}).
      - Left out, the step reads the host's variable named O(var_name) itself, and checks how deep it nests before
        ansible-core templates it (ansible-core's templating fails on data nested about 200 levels deep, naming
        neither the key nor the depth); the collection's playbooks leave it out.
      - See the collection's C(docs/inventory.md) for every key.
      - A value that is not a mapping is refused by the model with the expected shape.
    type: raw
    required: false
  var_name:
    description:
      - Name used at the start of every error path, so messages point at the inventory variable.
    type: str
    default: gpupool_cluster
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes.info
requirements:
  - pydantic >= 2.6
notes:
  - MIG geometry comes from the collection's GPU catalog; see C(docs/mig-catalog.md) for where each GPU's
    placements come from (observed or inferred).
"""

EXAMPLES = r"""
- name: Validate the pools before touching anything
  gpupool.core.validate:
    cluster: "{{ gpupool_cluster }}"
  register: gpupool

- name: Show the DRA feature gates the pools need
  ansible.builtin.debug:
    var: gpupool.feature_gates
"""

RETURN = r"""
cluster:
  description: The cluster with every default filled in.
  returned: success
  type: dict
  sample:
    name: cern-gpu
    pools:
      - name: gpu-t4
        gpu: {model: T4, per_node: 1}
pools:
  description: Names of the pools in state C(present).
  returned: success
  type: list
  elements: str
  sample: [gpu-t4, gpu-a100-mig]
feature_gates:
  description: DRA driver feature gates derived from the pools, with explicit overrides applied.
  returned: success
  type: dict
  sample: {TimeSlicingSettings: true}
mig_parted_config:
  description: mig-parted C(version v1) configuration covering every static MIG pool.
  returned: success
  type: dict
  sample:
    version: v1
    mig-configs:
      gpupool-gpu-a100-mig:
        - devices: all
          mig-enabled: true
          mig-devices:
            3g.20gb: 1
mig_placements:
  description: Planned placement of every MIG instance, per pool and GPU index.
  returned: success
  type: dict
  sample:
    gpu-a100-mig:
      "0":
        - {profile: 3g.20gb, start: 4, size: 4, profile_id: 9, compute_slices: 3}
mig_group_placements:
  description:
    - Planned placement of every MIG instance on the nodes of each MIG group (C(mig.groups)), per pool, group name
      and GPU index. Only pools with groups are listed.
  returned: success
  type: dict
  sample:
    gpu-a100-mig:
      small:
        "0":
          - {profile: 1g.5gb, start: 0, size: 1, profile_id: 19, compute_slices: 1}
problems:
  description: Each problem as path and message (also in C(msg)).
  returned: failure
  type: list
  elements: dict
  sample:
    - path: gpupool_cluster.pools[0].nodegroup.node_cout
      message: "unknown key 'node_cout'; did you mean 'node_count'?"
"""
