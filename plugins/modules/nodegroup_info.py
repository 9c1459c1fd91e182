# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nodegroup_info
short_description: List the nodegroups of an OpenStack Magnum cluster
version_added: "1.0.0"
description:
  - Lists the nodegroups of a Magnum cluster through the Magnum nodegroup API, or shows one of them.
  - "Sends C(OpenStack-API-Version: container-infra <version>) with the highest microversion the server and the
    module support, and retries on HTTP 5xx and connection errors."
author:
  - gpupool.core developers (@gpupool)
options:
  cluster:
    description:
      - Name or uuid of the Magnum cluster.
    type: str
    required: true
  name:
    description:
      - Only this nodegroup (name or uuid). The result is an empty list when it does not exist.
    type: str
  role:
    description:
      - Only nodegroups with this role (for example C(worker) or C(master)).
    type: str
  detail:
    description:
      - Return every field of each nodegroup (labels, counts, node addresses, status_reason, ...). Costs one request
        per nodegroup. Without it the list has Magnum's short form (uuid, name, flavor_id, image_id, node_count, role,
        is_default, status, stack_id).
      - Always on when O(name) is given.
    type: bool
    default: false
extends_documentation_fragment:
  - gpupool.core.openstack
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.actiongroups
  - gpupool.core.attributes.controller
  - gpupool.core.attributes.info
attributes:
  action_group:
    membership:
    - gpupool.core.openstack
seealso:
  - module: gpupool.core.nodegroup
"""

EXAMPLES = r"""
- name: Every nodegroup of the cluster, in full
  gpupool.core.nodegroup_info:
    cloud: cern
    cluster: k8s-prod
    detail: true
  register: ngs

- name: Names and sizes of the worker nodegroups
  ansible.builtin.debug:
    msg: "{{ ngs.nodegroups | items2dict(key_name='name', value_name='node_count') }}"

- name: One nodegroup
  gpupool.core.nodegroup_info:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
"""

RETURN = r"""
nodegroups:
  description: The nodegroups, as Magnum returns them.
  returned: always
  type: list
  elements: dict
  sample:
    - uuid: 5d12f6fd-a0e8-4f5e-9b8c-3a9c3f6d2b1e
      name: gpu-a100
      flavor_id: g4.a100.large
      image_id: fedora-coreos-40
      node_count: 2
      role: worker
      is_default: false
      status: CREATE_COMPLETE
      stack_id: 3c1d7e8a-52a4-4fc8-b1f6-8f0b4c3d2e1f
cluster:
  description: uuid, name, status and labels of the cluster.
  returned: always
  type: dict
  sample: {uuid: 0b7b2c9e-1f49-4bd1-8f5a-6b6c0e0f7a11, name: k8s-prod, status: UPDATE_COMPLETE, labels: {}}
microversion:
  description: The Magnum API microversion the module used.
  returned: always
  type: str
  sample: "1.12"
"""
