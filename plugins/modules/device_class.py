# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: device_class
short_description: Publish the DRA DeviceClasses of GPU pools
version_added: "1.0.0"
description:
  - Generates the C(resource.k8s.io) DeviceClasses of each pool from the validated GPU-pool inventory and converges
    them with server-side apply (field manager C(gpupool)).
  - "Per present pool with C(device_classes.defaults): C(<pool>) for full GPUs (driver C(gpu.nvidia.com), C(type == 'gpu'),
    the GPU's product names), C(<pool>-<profile>) for each MIG profile (static MIG: the layout's profiles; dynamic MIG:
    every profile of the GPU; C(+) in a profile becomes C(-)), C(<pool>-vfio) with C(passthrough), and each
    C(device_classes.extra) class under its own name (product, optional MIG profile, C(min_memory) as a capacity
    comparison, then the user's CEL selectors)."
  - The pool's sharing becomes opaque driver configuration in the class (C(GpuConfig) or C(MigDeviceConfig) with
    C(TimeSlicing) or C(MPS)). C(device_classes.extended_resource_names) sets C(extendedResourceName) to
    C(gpupool.io/<class>) where the cluster supports it (otherwise the field is left out, with a warning).
  - The API server validates the CEL selectors; a selector it rejects fails the task with the server's message, the
    class, the pool and the inventory key it came from.
  - Uses C(resource.k8s.io/v1), or C(v1beta2)/C(v1beta1) on clusters that do not serve v1.
  - Classes it creates carry C(app.kubernetes.io/managed-by=gpupool) and C(gpupool.io/pool=<pool>). A DeviceClass
    without these labels is never modified or deleted; a name clash with one fails.
  - Every object also carries C(gpupool.io/owner=<owner>) (C(gpupool_cluster.owner), default its C(name)). Prune
    deletes only this owner's objects, so two inventories on one cluster never prune each other's; a name another
    owner's object holds is refused before the task writes anything. Objects made before the owner label are
    adopted when wanted (action C(adopted), with a warning), pruned only when their pool is one of this
    inventory's, and otherwise left alone with a warning.
  - With O(prune), gpupool's classes that are no longer wanted (pool removed, set to C(absent), profile dropped) are
    deleted.
  - A DeviceClass selects devices, not nodes; to keep a workload on a pool's nodes, also use the pool's node label
    (C(gpupool.io/pool)) and tolerate its taint (see M(gpupool.core.node_pool)).
author:
  - gpupool.core developers (@gpupool)
options:
  prune:
    description:
      - Delete gpupool's DeviceClasses of the pools in scope that are no longer wanted.
      - Without O(pools), every DeviceClass of this owner not wanted by a present pool is in scope.
    type: bool
    default: true
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.apply
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
  check_mode:
    details: Every write is sent with C(dryRun=All), so the API server validates (CEL included) without persisting.
"""

EXAMPLES = r"""
- name: Publish the DeviceClasses of every pool
  gpupool.core.device_class:
    cluster: "{{ gpupool_cluster }}"

- name: Only the A100 pool, with credentials from module_defaults
  module_defaults:
    group/gpupool.core.k8s:
      kubeconfig: ~/.kube/cern-gpu.conf
  gpupool.core.device_class:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-a100-mig]
  register: classes

- name: Names of the classes
  ansible.builtin.debug:
    msg: "{{ classes.objects | map(attribute='name') | list }}"
"""

RETURN = r"""
objects:
  description: One entry per DeviceClass converged or pruned.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(DeviceClass).
      type: str
    name:
      description: Class name.
      type: str
    pool:
      description: Pool the class belongs to.
      type: str
    action:
      description: C(created), C(updated), C(adopted), C(unchanged), C(deleted) or C(failed).
      type: str
    changed:
      description: Whether the object changed (or would, in check mode).
      type: bool
    error:
      description: Why it failed.
      type: str
      returned: on failure of this object
  sample: [{kind: DeviceClass, name: gpu-t4, pool: gpu-t4, action: created, changed: true}]
api_version:
  description: The C(resource.k8s.io) version used.
  returned: success
  type: str
  sample: resource.k8s.io/v1
extended_resource_names:
  description: Whether the cluster keeps C(extendedResourceName) on DeviceClasses (null when no class asked for one).
  returned: success
  type: bool
  sample: true
diff:
  description: Before and after of each changed class (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""
