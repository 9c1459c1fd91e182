# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pool_info
short_description: Report what the GPU pools look like in the cluster, and where it differs from the inventory
version_added: "1.0.0"
description:
  - Reads Nodes, ResourceSlices and ResourceClaims (one LIST each) and reports, for each present pool in scope,
    its nodes (Ready, MIG config and state), the GPUs and MIG devices (by profile) the NVIDIA DRA driver publishes
    for them, and how many are allocated and free.
  - "A device is allocated when a ResourceClaim's C(status.allocation.devices.results) names it (driver, pool,
    device). Only the newest generation of each ResourceSlice pool counts."
  - "Reports every mismatch against the declared pools, with what to do: fewer (or more) nodes than the nodegroup's
    C(node_count), NotReady nodes, C(nvidia.com/mig.config.state=failed), a C(nvidia.com/mig.config) label that is
    not the pool's config, nodes whose devices are not published, and nodes whose published devices differ from
    the layout the planner gives the pool (compared per GPU as profile counts: the MIG manager chooses placements)."
  - "Says per pool how many more of each device could be allocated right now (whole GPUs, each MIG profile the
    pool offers) and how many claims of each tenant template (C(gpupool_cluster.tenants)), each count on its own.
    The counts are fragmentation-aware: a MIG profile counts only where a free placement exists for it (static
    MIG: free devices; dynamic MIG: placements that still fit beside the allocated instances), and only Ready,
    schedulable nodes count."
  - With O(markdown), also the report as Markdown and one SVG picture per pool of each node's GPUs and MIG slices,
    used or free (what C(playbooks/report.yml) writes to files).
  - Nodes of a pool are found like M(gpupool.core.node_pool) finds them.
  - Read-only; never reports a change.
author:
  - gpupool.core developers (@gpupool)
options:
  fail_on_mismatch:
    description: Fail the task (with the summary) when there is any mismatch.
    type: bool
    default: false
  markdown:
    description: Also return the report as Markdown (RV(markdown)) and the pools' pictures (RV(pictures)).
    type: bool
    default: false
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.nodes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes.info
attributes:
  check_mode:
    details: Read-only; runs the same in check mode.
notes:
  - Permissions needed besides the gpupool ClusterRole's node rules are C(resourceslices) and C(resourceclaims)
    list (C(resource.k8s.io)). A cluster without the DRA API reports every node as not published, with a warning.
seealso:
  - module: gpupool.core.mig_layout
  - module: gpupool.core.node_pool
"""

EXAMPLES = r"""
- name: What the pools look like
  gpupool.core.pool_info:
    cluster: "{{ gpupool_cluster }}"
  register: info

- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ info.summary }}"

- name: Free 3g.20gb MIG devices in the A100 pool
  ansible.builtin.debug:
    msg: "{{ info.pools['gpu-a100-mig'].mig_devices['3g.20gb'].free }}"

- name: How many more 3g.20gb slices fit now (fragmentation-aware)
  ansible.builtin.debug:
    msg: "{{ info.pools['gpu-a100-mig'].capacity.allocatable['3g.20gb'] }}"

- name: Gate a rollout on a healthy cluster
  gpupool.core.pool_info:
    cluster: "{{ gpupool_cluster }}"
    fail_on_mismatch: true
"""

RETURN = r"""
pools:
  description: Per present pool in scope.
  returned: always
  type: dict
  contains:
    mig_mode:
      description: C(off), C(static) or C(dynamic).
      type: str
    gpu_model:
      description: The pool's GPU model.
      type: str
    gpus_per_node:
      description: GPUs per node the inventory declares.
      type: int
    selector:
      description: How the pool's nodes are found.
      type: str
    config_name:
      description: The pool's mig-parted config name (static MIG), else null.
      type: str
    expected_nodes:
      description: The nodegroup's C(node_count), or null without a nodegroup.
      type: int
    expected_layout:
      description: Per GPU index, null (full GPU) or the planner's C({profile; count}); null for dynamic MIG.
      type: dict
    ready_nodes:
      description: Nodes that are Ready.
      type: int
    nodes:
      description: Per node.
      type: list
      elements: dict
      contains:
        name:
          description: Node name.
          type: str
        ready:
          description: Whether the node is Ready.
          type: bool
        schedulable:
          description: False when the node is cordoned.
          type: bool
        mig_config:
          description: The C(nvidia.com/mig.config) label.
          type: str
        mig_state:
          description: The C(nvidia.com/mig.config.state) label (pending, rebooting, success, failed).
          type: str
        mig_group:
          description: In a pool with MIG groups, the group whose layout the node carries (null for the pool's own).
          type: str
          returned: when the pool has MIG groups
        expected_layout:
          description: In a pool with MIG groups, the node's own expected layout (its group's, or the pool's).
          type: dict
          returned: when the pool has MIG groups
        published:
          description: Whether the DRA driver publishes devices for the node.
          type: bool
        layout:
          description: Per GPU index, null (full GPU) or C({profile; count}) as published.
          type: dict
        gpus:
          description: Full GPU devices, C(total), C(allocated), C(free).
          type: dict
        mig_devices:
          description: Per MIG profile, C(total), C(allocated), C(free).
          type: dict
        allocated:
          description: Allocated devices and the C(namespace/name) of the claim holding each.
          type: list
          elements: dict
        allocatable:
          description: What more the node could take now, C({gpu or profile; count}) (0 when cordoned or NotReady).
          type: dict
        gpu_devices:
          description:
            - Per GPU (C(index), C(minor), C(memory_slices), C(dynamic)) its whole-GPU device (C(full), with the
              C(claim) holding it or null) and its MIG devices (C(instances), each with C(profile), the memory
              C(slices) it covers and its C(claim)).
          type: list
          elements: dict
    gpus:
      description: Full GPU devices of the pool, C(total), C(allocated), C(free).
      type: dict
    mig_devices:
      description: MIG devices of the pool per profile, C(total), C(allocated), C(free).
      type: dict
    devices:
      description: All GPU and MIG devices of the pool, C(total), C(allocated), C(free).
      type: dict
    mismatches:
      description: The pool's mismatches (see RV(mismatches)).
      type: list
      elements: dict
    capacity:
      description:
        - C(allocatable), what more could be allocated now per C(gpu) (whole GPUs) and MIG profile, each count on
          its own; C(templates), per tenant template of the pool the claims that could be allocated now
          (C(namespace), C(name), C(device_class), C(count), C(allocatable), maybe a C(note)); C(left_out), the
          nodes not counted and why (cordoned, NotReady).
      type: dict
      sample:
        allocatable: {"3g.20gb": 3, "2g.10gb": 8}
        templates: [{namespace: ml-training, name: a100-3g, device_class: gpu-a100-mig-3g.20gb, count: 1,
                     allocatable: 3}]
        left_out: []
  sample:
    gpu-a100-mig:
      mig_mode: static
      gpu_model: A100-40GB
      gpus_per_node: 2
      config_name: gpupool-gpu-a100-mig
      expected_nodes: 2
      ready_nodes: 2
      gpus: {total: 0, allocated: 0, free: 0}
      mig_devices: {"3g.20gb": {total: 4, allocated: 1, free: 3}, "2g.10gb": {total: 8, allocated: 0, free: 8}}
      devices: {total: 12, allocated: 1, free: 11}
mismatches:
  description: Every difference from the inventory, all pools.
  returned: always
  type: list
  elements: dict
  contains:
    pool:
      description: Pool name.
      type: str
    node:
      description: Node name, or null for pool-level mismatches.
      type: str
    kind:
      description:
        - C(missing_nodes), C(extra_nodes), C(node_not_ready), C(taint_missing) (the node lacks one of its pool's
          taints, so any pod may land there), C(mig_failed), C(mig_config_label), C(not_published),
          C(wrong_layout), C(node_in_two_pools), C(no_node_selector) or C(orphaned_node) (a node of a pool that
          left the inventory, see RV(orphaned); C(pool) is the pool it left).
      type: str
    message:
      description: What is wrong and what to do.
      type: str
  sample:
    - {pool: gpu-a100-mig, node: null, kind: missing_nodes, expected: 2, found: 1,
       message: "pool gpu-a100-mig has 1 of the 2 nodes of its nodegroup (found: a100-0); check the nodegroup ..."}
orphaned:
  description:
    - Nodes labelled for a pool that no present pool claims any more (removed from the inventory, absent, or no
      longer selected), on every run until they are gone. Each is also a C(orphaned_node) mismatch.
    - With O(pools), only the orphans of those pools.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The orphaned node's name.
      type: str
    pool:
      description: The pool it left (its C(gpupool.io/pool) label).
      type: str
    reason:
      description: Why it is an orphan.
      type: str
    schedulable:
      description: Whether ordinary pods can still be scheduled there (it should be false; gpupool.core.node_pool
        cordons orphans).
      type: bool
    cordoned_by:
      description: The C(gpupool.io/cordoned-by) annotation (C(node-pool), C(nodegroup), C(mig-layout)) or null.
      type: str
    labelled:
      description: Whether it carries C(gpupool.io/orphaned=true).
      type: bool
    taints:
      description: gpupool's taints still on it, as C(key=value:effect).
      type: list
      elements: str
    nodegroup:
      description: Its Magnum nodegroup (label C(magnum.openstack.org/nodegroup)), or null.
      type: str
  sample: [{name: cern-gpu-old-0, pool: gpu-old, reason: pool gpu-old is no longer in the inventory,
            schedulable: false, cordoned_by: node-pool, labelled: true,
            taints: ["node-role.kubernetes.io/gpu=true:NoSchedule"], nodegroup: gpu-old}]
totals:
  description: Sums over the pools in scope (nodes, ready_nodes, gpus, mig_devices, devices).
  returned: always
  type: dict
ok:
  description: True when there is no mismatch.
  returned: always
  type: bool
summary:
  description: A few lines for people - per pool nodes and free devices, then each mismatch.
  returned: always
  type: str
  sample: "gpu-a100-mig: 2/2 nodes Ready (nodegroup wants 2); 8 x 2g.10gb, 8 free; 4 x 3g.20gb, 3 free; OK"
markdown:
  description: The report as Markdown (a capacity table, then per pool its nodes, capacity, templates, mismatches).
  returned: when O(markdown=true)
  type: str
pictures:
  description: C({file name; SVG}), one picture per pool with nodes, named C(<pool>.svg) as the Markdown links it.
  returned: when O(markdown=true)
  type: dict
resource_api_version:
  description: The C(resource.k8s.io) version read (a cluster that serves none is refused before any request).
  returned: always
  type: str
  sample: resource.k8s.io/v1
"""
