# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: resource_claim_template
short_description: Give tenant namespaces ResourceClaimTemplates over the GPU pools' DeviceClasses
version_added: "1.0.0"
description:
  - Creates C(resource.k8s.io) ResourceClaimTemplates in tenant namespaces so workloads can ask for a pool's GPUs
    with C(resourceClaims[].resourceClaimTemplateName) and converges them with server-side apply
    (field manager C(gpupool)).
  - "Without O(namespaces) and O(templates), the templates are the inventory's: C(gpupool_cluster.tenants), a list
    of C({namespace, templates}) (see the collection's docs/inventory.md). That list is the whole truth: gpupool's
    templates of the pools in scope that it does not name are deleted in every namespace. When the inventory has no
    C(tenants) key the task fails and changes nothing."
  - Without O(templates), each namespace in O(namespaces) gets one template per DeviceClass of each pool in scope
    (the classes M(gpupool.core.device_class) publishes), named like the class, asking for one device.
  - With O(templates), each entry names a pool and asks for C(count) devices of the pool's full-GPU class,
    of the class of a MIG profile (C(mig_profile)) or of another of the pool's classes
    (C(device_class)), with optional sharing configuration and a C(matchAttribute) constraint (for
    example all GPUs under one PCIe root).
  - Templates are checked by the inventory model, the same rules for O(templates) and C(gpupool_cluster.tenants) -
    the pool exists and is present, the class is one the pool publishes, sharing can be applied; any problem fails
    the task before a request is sent.
  - Templates carry C(app.kubernetes.io/managed-by=gpupool) and C(gpupool.io/pool=<pool>); claims made from them get
    C(gpupool.io/pool). Templates without these labels are never modified or deleted.
  - Every object also carries C(gpupool.io/owner=<owner>) (C(gpupool_cluster.owner), default its C(name)). Prune
    deletes only this owner's objects, so two inventories on one cluster never prune each other's; a name another
    owner's object holds is refused before the task writes anything. Objects made before the owner label are
    adopted when wanted (action C(adopted), with a warning), pruned only when their pool is one of this
    inventory's, and otherwise left alone with a warning.
  - The tenant namespaces must exist; gpupool does not create them.
  - Uses C(resource.k8s.io/v1), or C(v1beta2)/C(v1beta1) on clusters that do not serve v1.
author:
  - gpupool.core developers (@gpupool)
options:
  namespaces:
    description:
      - Tenant namespaces that get the templates (each entry of O(templates) may override it).
      - Leave out with O(templates) to converge the inventory's C(gpupool_cluster.tenants).
    type: list
    elements: str
  templates:
    description:
      - "Templates to create. Default is one per DeviceClass of each pool in scope. Each entry has the keys of a
        template in C(gpupool_cluster.tenants[].templates[]), checked by the inventory model:"
      - "C(name) (required): template name."
      - "C(pool) (required): pool whose devices the template asks for."
      - "C(mig_profile): ask for the pool's MIG class of this profile, for example V(3g.20gb)."
      - "C(device_class): ask for this one of the pool's DeviceClasses instead (for example an extra class).
        Default: the pool's full-GPU class C(<pool>). Not with C(mig_profile)."
      - "C(count) (default V(1)): how many devices, with C(allocation_mode=ExactCount)."
      - "C(allocation_mode): V(ExactCount) (default) or V(All) (every matching device on the node)."
      - "C(sharing): sharing configuration for the claim, in the inventory's C(sharing) form
        (V({time_slicing: {interval: Long}}) or V({mps: {active_thread_percentage: 50}})); sent as opaque
        C(GpuConfig) or C(MigDeviceConfig) for the C(gpu.nvidia.com) driver."
      - "C(match_attribute): all devices of the claim must have the same value of this attribute, for example
        V(resource.kubernetes.io/pcieRoot)."
      - "C(namespaces): namespaces for this template instead of O(namespaces)."
    type: list
    elements: dict
  recreate:
    description:
      - The spec of a ResourceClaimTemplate is immutable in the Kubernetes API. With O(recreate=true) a template whose
        spec must change is deleted and created again; claims already made from it are not affected (they are
        separate objects owned by their pods).
      - With O(recreate=false) such a change fails and names the fields that differ.
    type: bool
    default: true
  prune:
    description:
      - Delete gpupool's templates of the pools in scope that are no longer wanted, in the namespaces this task names
        (O(namespaces) and every namespace of O(templates)). Templates in namespaces no longer named are left alone.
      - With the inventory's C(gpupool_cluster.tenants), in every namespace (the list is the whole truth).
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
    details: Every write is sent with C(dryRun=All); a re-created template is predicted by a dry-run create.
"""

EXAMPLES = r"""
- name: The templates the inventory declares (gpupool_cluster.tenants)
  gpupool.core.resource_claim_template:
    cluster: "{{ gpupool_cluster }}"

- name: One template per pool DeviceClass in two tenant namespaces
  gpupool.core.resource_claim_template:
    cluster: "{{ gpupool_cluster }}"
    namespaces: [team-a, team-b]

- name: Two H100s under one PCIe root, and a time-sliced MIG slice
  gpupool.core.resource_claim_template:
    cluster: "{{ gpupool_cluster }}"
    namespaces: [ml-training]
    templates:
      - name: two-h100-same-root
        pool: gpu-h100
        count: 2
        match_attribute: resource.kubernetes.io/pcieRoot
      - name: a100-3g-shared
        pool: gpu-a100-mig
        mig_profile: 3g.20gb
        sharing:
          time_slicing: {interval: Long}
"""

RETURN = r"""
objects:
  description: One entry per template converged or pruned.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(ResourceClaimTemplate).
      type: str
    name:
      description: Template name.
      type: str
    namespace:
      description: Namespace.
      type: str
    pool:
      description: Pool the template asks for.
      type: str
    action:
      description: C(created), C(adopted), C(recreated), C(unchanged), C(deleted) or C(failed).
      type: str
    changed:
      description: Whether the object changed (or would, in check mode).
      type: bool
  sample: [{kind: ResourceClaimTemplate, name: gpu-t4, namespace: team-a, pool: gpu-t4, action: created, changed: true}]
api_version:
  description: The C(resource.k8s.io) version used.
  returned: success
  type: str
  sample: resource.k8s.io/v1
diff:
  description: Before and after of each changed template (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""
