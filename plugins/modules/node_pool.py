# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_pool
short_description: Label and taint the Kubernetes nodes of GPU pools and wait for them to be Ready
version_added: "1.0.0"
description:
  - Finds each pool's nodes, applies the pool's labels and taints, and optionally waits until enough of them are Ready.
  - "Nodes of a pool: those matching the pool's C(node_selector) (every label); else those whose Magnum nodegroup
    label (O(nodegroup_label)) equals the pool's nodegroup name; plus, with O(name_pattern), those whose name matches
    it. A node matched by two pools is an error."
  - "Labels: the pool's C(node_labels), C(gpupool.io/pool=<pool>), and C(nvidia.com/gpu.present=true) when no Node
    Feature Discovery or GPU Feature Discovery label that the NVIDIA DRA kubelet plugin's node affinity needs is
    present (O(set_gpu_present)). Labels set by others stay; a label another field manager set to a different value
    is a conflict unless O(force_conflicts). The label keys gpupool set are recorded in the C(gpupool.io/labels)
    annotation, so a label dropped from the inventory is removed and nobody else's is."
  - "Taints: C(node-role.kubernetes.io/gpu=true:NoSchedule) (unless the pool sets C(gpu_taint: false)) and the
    pool's C(taints). C(spec.taints) is an atomic list in server-side apply, so gpupool reads the taints, keeps
    everyone else's, adds or updates its own and removes those it set before but no longer wants (recorded in the
    C(gpupool.io/taints) annotation)."
  - "One write per node that differs: labels, taints and both annotations go in ONE JSON merge patch (field manager
    C(gpupool)) with the node's C(resourceVersion) as precondition, recomputed from a fresh read when the node
    changed meanwhile; a node already right gets no request."
  - "Nodes of a pool that left: a node that carries C(gpupool.io/pool=<pool>) but that no present pool claims any
    more (the pool was removed from the inventory, set to C(absent), or its selector no longer matches) is an
    orphan. It is never handed back schedulable: gpupool's labels and taints stay, it gets the label
    C(gpupool.io/orphaned=true) and is cordoned (annotation C(gpupool.io/cordoned-by=node-pool)), and it is listed
    in RV(orphaned) on every run. A pool that claims it again adopts it: the orphan label goes and node_pool's own
    cordon is lifted. O(release_orphans) hands orphans back instead (labels, taints and node_pool's cordon
    removed). Nodes of a pool gone from the inventory are only looked at when every pool is in scope."
  - "The cordon ledger: every gpupool cordon records why (C(gpupool.io/cordon-reason)) and by which run
    (C(gpupool.io/cordon-run)). node_pool, which runs after the nodegroup step and before mig_layout, lifts each one
    whose reason no longer holds, whatever step made it (a MIG wave of a pool turned off, a shrink the inventory no
    longer wants), and lists it in RV(cordons_lifted). A person's cordon is never lifted: a cordon is gpupool's only
    while the node's managedFields show field manager C(gpupool) alone set C(spec.unschedulable) last. One a person
    set after gpupool's (C(kubectl uncordon) then C(kubectl cordon) on a node a killed run had cordoned) stays,
    gpupool's record on it is removed, a warning names the node, and RV(cordons_left) lists it. Every lift is a patch
    with the resourceVersion it was decided from."
  - "Owners: every node node_pool puts in a pool also gets C(gpupool.io/owner=<owner>) (C(gpupool_cluster.owner),
    default its C(name)), recorded in C(gpupool.io/labels) so a release removes it. A node another owner labelled is
    never written - not orphaned, not relabelled, no cordon lifted - and a present pool that selects one is refused
    before any write, naming the node, both owners and the fix. A node labelled for one of this inventory's pools
    without an owner label is adopted (listed in RV(nodes_adopted) when node_pool labelled it before owner labels
    existed); one labelled for a
    pool this inventory does not declare, without an owner label, is left alone with a warning (it may be another
    inventory's)."
  - Nodes are never created or deleted (a merge patch never creates; a node deleted meanwhile is reported as vanished).
author:
  - gpupool.core developers (@gpupool)
options:
  confirm_orphans:
    description:
      - Confirm that this run may orphan (cordon and taint) more than C(gpupool_cluster.orphan_guard.max_share) of a
        present pool's nodes, or all of them. Without it such a run is refused before any write, naming the pool,
        its selector and the nodes it no longer matches (a node_selector typo would otherwise cordon a whole pool).
      - The role C(gpupool.core.node_pools) sets it from the variable C(gpupool_confirm_orphans).
      - Pools set to C(state=absent) or removed from the inventory, and runs with O(release_orphans), are not guarded.
    type: bool
    default: false
  release_orphans:
    description:
      - Hand the orphaned nodes in scope back to general use - remove gpupool's labels and taints and lift
        node_pool's cordon - instead of keeping them cordoned and tainted.
      - For a machine that should stay in the cluster as an ordinary node after its pool was removed.
    type: bool
    default: false
  set_gpu_present:
    description:
      - Label C(nvidia.com/gpu.present=true) on nodes that have none of the NFD/GFD labels the DRA kubelet plugin's
        node affinity needs (without one the plugin never runs there).
    type: bool
    default: true
  wait:
    description:
      - Wait until each pool in scope has at least O(min_ready) Ready nodes; nodes that appear meanwhile are labelled
        and tainted as they come. Skipped in check mode.
    type: bool
    default: false
  min_ready:
    description:
      - Ready nodes to wait for, per pool. Default is the pool's C(nodegroup.node_count), else 1.
    type: int
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two checks while waiting.
    type: float
    default: 10.0
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.wait
  - gpupool.core.k8s_auth.nodes
  - gpupool.core.k8s_auth.apply
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
  check_mode:
    details: Writes are sent with C(dryRun=All).
"""

EXAMPLES = r"""
- name: Label and taint every pool's nodes, wait for the nodegroups' node counts
  gpupool.core.node_pool:
    cluster: "{{ gpupool_cluster }}"
    wait: true
    wait_timeout: 1200

- name: One pool, nodes found by name
  gpupool.core.node_pool:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-t4]
    name_pattern: "-{nodegroup}-\\d+$"
"""

RETURN = r"""
objects:
  description: One entry per node gpupool touched or checked.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(Node).
      type: str
    name:
      description: Node name.
      type: str
    pool:
      description: Pool of the node (for orphaned and released nodes, the pool it left).
      type: str
    action:
      description:
        - C(updated), C(unchanged), C(orphaned) (kept tainted, labelled C(gpupool.io/orphaned) and cordoned),
          C(adopted) (an orphan claimed by a pool again), C(released) (gpupool's labels and taints removed, with
          O(release_orphans)), C(vanished) or C(failed).
      type: str
    changed:
      description: Whether the node changed (or would, in check mode).
      type: bool
  sample: [{kind: Node, name: cern-gpu-t4-0, pool: gpu-t4, action: updated, changed: true}]
pools:
  description: Per pool in scope, its nodes and how many are Ready.
  returned: always
  type: dict
  sample: {gpu-t4: {nodes: [cern-gpu-t4-0], ready: 1, selector: "magnum.openstack.org/nodegroup=gpu-t4"}}
orphaned:
  description: The orphaned nodes in scope after the run (kept cordoned and tainted), with the pool each left and why.
  returned: always
  type: list
  elements: dict
  sample: [{name: cern-gpu-old-0, pool: gpu-old, reason: pool gpu-old is no longer in the inventory}]
cordons_lifted:
  description:
    - The cordon ledger - gpupool cordons (annotation C(gpupool.io/cordoned-by)) whose reason
      (C(gpupool.io/cordon-reason)) no longer holds, lifted by this run whatever step made them - a MIG wave of a
      pool that is no longer static MIG, a nodegroup shrink or delete the inventory no longer wants, an orphan
      claimed again. A person's cordon (no such annotation) is never lifted, nor, when the step runs without the
      run lease, a cordon another run recorded.
  returned: always
  type: list
  elements: dict
  sample: [{name: gpu-a100-0, cordoned_by: mig-layout, reason: "mig-layout:gpu-a100:gpupool-gpu-a100", run: "awx-42",
            why: pool gpu-a100 is no longer a static MIG pool that selects the node}]
cordons_left:
  description:
    - Cordons gpupool had recorded that someone set again after gpupool's (the node's managedFields name another
      field manager of C(spec.unschedulable), such as C(kubectl)) - left cordoned, gpupool's record removed,
      C(manager) says whose they are now.
  returned: always
  type: list
  elements: dict
  sample: [{name: gpu-a100-0, cordoned_by: mig-layout, reason: "mig-layout:gpu-a100:gpupool-gpu-a100", run: "awx-42",
            why: "cordoned by kubectl after gpupool's cordon", manager: kubectl}]
nodes_adopted:
  description:
    - Nodes node_pool labelled before owner labels existed (a C(gpupool.io/labels) record, no C(gpupool.io/owner))
      that this run gave the owner label. A node born from a pool's nodegroup (the pool label from Magnum, no
      record) gets the owner label without being listed here. Empty on the run after.
  returned: always
  type: list
  elements: str
  sample: [gpu-a100-0]
wait_log:
  description: Progress lines while waiting.
  returned: when O(wait=true)
  type: list
  elements: str
diff:
  description: Labels, taints and the taints annotation before and after, per changed node (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""
