# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pool_advice
short_description: Say why GPU claims wait, and the smallest pool change that serves them
version_added: "1.0.0"
description:
  - Reads Nodes, ResourceSlices, ResourceClaims, DeviceClasses and Pods (one LIST each) and says, for every
    ResourceClaim that is not allocated, why it waits - no DeviceClass of that name; the class selects no device
    of any pool; the pool has no nodes (C(node_count) 0); its nodes are cordoned or NotReady; more devices on one
    node, or under one C(matchAttribute) value, than any node has; free memory but no placement for the profile
    (fragmentation, naming the GPU and its free slices); every matching device allocated; or devices free for it
    now (it waits for the scheduler).
  - "Then, per pool, the smallest inventory change that serves the waiting claims: new MIG layouts for some GPU
    indices (feasible by the GPU's placement rules; an index that holds an allocated device on any node is never
    changed; the units the tenants' templates ask for are kept), C(nodegroup.node_count + N) within
    C(max_node_count), or both. Options are ranked by pods evicted, nodes re-partitioned, then GPUs left idle; each
    is checked with the same rules as M(gpupool.core.validate)."
  - The advice comes as a YAML snippet to paste into the inventory, a diff of the inventory file (O(inventory_file))
    and, per changed pool, an SVG of each node's GPUs now and after.
  - "A claim names a pool through its DeviceClass: the inventory's classes, the name gpupool would give a class
    of a profile the pool does not offer yet (C(<pool>-<profile>)), or a class of the cluster whose selectors are
    simple comparisons of device attributes (see docs/advisor.md for the limits)."
  - Read-only; never reports a change.
author:
  - gpupool.core developers (@gpupool)
options:
  inventory_file:
    description:
      - The inventory file that holds C(gpupool_cluster) (e.g. C(inventories/site/host_vars/cluster/gpupool.yml)),
        read on the controller. The diff RV(inventory_diff) is then a diff of that file, edited where the keys are, with its
        comments kept. Without it, the diff is of the changed pools' data.
    type: path
  pictures:
    description: Draw RV(pictures), one SVG per changed pool.
    type: bool
    default: true
  namespaces:
    description:
      - Only the claims of these namespaces (a tenant's view). Default - the claims of every namespace.
    type: list
    elements: str
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.nodes
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes.info
notes:
  - Permissions needed besides the gpupool ClusterRole's node rules are C(list) of C(resourceslices),
    C(resourceclaims) and C(deviceclasses) (C(resource.k8s.io)) and of C(pods).
  - The advice looks at the claims waiting now; one burst of claims is enough to make it propose a re-partition.
seealso:
  - module: gpupool.core.pool_info
  - module: gpupool.core.mig_layout
"""

EXAMPLES = r"""
- name: Why do claims wait, and what should change
  gpupool.core.pool_advice:
    cluster: "{{ gpupool_cluster }}"
    inventory_file: "{{ inventory_dir }}/host_vars/{{ inventory_hostname }}/gpupool.yml"
  register: advice

- name: Print it
  ansible.builtin.debug:
    msg: "{{ advice.summary.splitlines() }}"

- name: The change to paste into the inventory
  ansible.builtin.copy:
    content: "{{ advice.snippet }}"
    dest: "advice-{{ gpupool_cluster.name }}.yml"
    mode: "0644"
  delegate_to: localhost
  when: not advice.nothing_to_change
"""

RETURN = r"""
waiting:
  description: Every claim in scope that is not allocated, oldest first.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: The claim's namespace.
      type: str
    name:
      description: The claim's name.
      type: str
    pods:
      description: The pods that use it (C(namespace/name)).
      type: list
      elements: str
    reason:
      description:
        - Why it waits (its first request that cannot be allocated now) - C(no_device_class),
          C(class_not_evaluated), C(compute_domain), C(selects_nothing), C(no_nodes), C(nodes_unusable),
          C(no_match), C(too_many), C(fragmented), C(apart), C(all_allocated), or C(free_now) (devices are
          free for it; it waits for the scheduler).
      type: str
    message:
      description: The reason in words, with what to do.
      type: str
    servable:
      description: Whether a change of its pool could serve it (the pool's advice then does).
      type: bool
    no_change_serves:
      description: Why no layout and no node count of its pool could serve it, or null.
      type: str
    requests:
      description: Per request its C(device_class), C(count), C(match_attribute), C(pool), C(unit) (C(gpu) for
        whole GPUs, else the MIG profile), C(reason), C(message).
      type: list
      elements: dict
  sample:
    - namespace: ml-training
      name: finetune-1g
      pods: [ml-training/finetune]
      reason: no_device_class
      message: "no DeviceClass gpu-a100-mig-1g.10gb: it is the name of pool gpu-a100-mig's class for 1g.10gb MIG
        device(s), which gpupool creates once the pool offers them (it does not now)"
      servable: true
pools:
  description: Per pool with waiting claims.
  returned: always
  type: dict
  contains:
    demand:
      description: The devices its waiting claims ask for, per unit.
      type: dict
    serves_now:
      description: The free devices serve every waiting claim (nothing to change there).
      type: bool
    advice:
      description: The best option (see C(options)), or null.
      type: dict
    options:
      description:
        - Up to three options, best first, each of another kind (C(nodes), C(group), C(layout), C(layout and
          nodes)) - C(layouts) (GPU index to its new layout on the nodes carrying the pool's layout, null for a whole
          GPU), C(group) (a MIG group of the fewest idle nodes - C(nodes), the nodes named, and C(layouts), their
          layout per GPU index - or null), C(node_count) (C(from), C(to)) or null, C(nodes_repartitioned),
          C(pods_evicted), C(gpus_changed), C(nodes_added), C(idle_gpus), C(inventory) (the pool's keys to set; a
          group is added to C(mig.groups) with C(prefer) naming its nodes) and C(text).
      type: list
      elements: dict
    unserved:
      description:
        - Claims the advice does not serve (C(claim), C(why)) - no change serves them alone, or not together with
          the older claims it serves.
      type: list
      elements: dict
    rejected:
      description: Better-ranked changes that validate refuses, with its messages.
      type: list
      elements: dict
    cut_short:
      description:
        - The search stopped at a limit (states of its dynamic programme, group checks, or a packing check's
          budget); the advice is the best found.
      type: bool
  sample:
    gpu-a100-mig:
      demand: {"1g.10gb": 1}
      serves_now: false
      advice:
        kind: layout
        layouts: {"1": {"3g.20gb": 1, "2g.10gb": 1, "1g.10gb": 1}}
        node_count: null
        nodes_repartitioned: [cern-gpu-a100-0]
        pods_evicted: []
        idle_gpus: 1.25
        text: "gpu-a100-mig: layout GPU 1 -> 3g.20gb + 2g.10gb + 1g.10gb on every node (re-partitions 1 node(s):
          cern-gpu-a100-0; evicts no pod; 1.25 GPU(s) left idle)"
nothing_to_change:
  description: True when no pool needs a change (nothing waits, or the free devices serve what waits).
  returned: always
  type: bool
snippet:
  description: The advice as YAML to paste into C(gpupool_cluster.pools) (empty when nothing changes).
  returned: always
  type: str
inventory_diff:
  description: A unified diff of the inventory file (O(inventory_file)), or of the changed pools' data.
  returned: always
  type: str
diff_note:
  description: Why the diff is of the data although O(inventory_file) was given, or null.
  returned: always
  type: str
pictures:
  description: C({advice-<pool>.svg; SVG}) per changed pool, each node's GPUs now and after.
  returned: always
  type: dict
problems:
  description: What validate would refuse in the inventory with every pool's advice applied together (C(path),
    C(message)); empty when it passes.
  returned: always
  type: list
  elements: dict
summary:
  description: A few lines for people - each waiting claim and why, then the advice per pool, or nothing to change.
  returned: always
  type: str
resource_api_version:
  description: The C(resource.k8s.io) version read.
  returned: always
  type: str
  sample: resource.k8s.io/v1
"""
