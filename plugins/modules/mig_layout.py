# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Roll out the static MIG layouts of GPU pools through NVIDIA's MIG manager
version_added: "1.0.0"
description:
  - For each pool in scope with C(mig.mode=static), writes the pool's C(nvidia-mig-parted) config into the MIG
    manager's ConfigMap and switches the pool's nodes to it, a few nodes at a time.
  - "Before anything is read or written: the inventory is validated with the pool model and every GPU's layout is
    placed by the MIG planner; an infeasible layout fails with the planner's explanation and nothing is changed."
  - "ConfigMap: C(gpupool_cluster.mig_manager.config_map) in C(mig_manager.namespace) (default
    C(gpupool-mig-parted-config) in C(gpu-operator)), key C(config.yaml), one C(version: v1) document. gpupool
    merges at the C(mig-configs) level: it adds or updates only its own configs (named by each pool's
    C(mig.config_name), default C(gpupool-<pool>)) and keeps every config others wrote. The names it wrote are
    recorded per owner (C(gpupool_cluster.owner), default its C(name)) in the ConfigMap annotation
    C(mig-configs.gpupool.io/<owner>), so two inventories that share one cluster never prune each other's configs.
    The write is a read-modify-write with the ConfigMap's C(resourceVersion) as precondition, retried when someone
    else changed it meanwhile. A config name that exists with other content and was not written by gpupool is an
    error; one that another owner wrote with other content is refused before any write, naming both owners."
  - "Before owners: names recorded in the shared annotation C(gpupool.io/mig-configs) (by older gpupool) that
    this inventory wants are adopted into its own annotation (C(adopted), said once in a warning); names another
    owner recorded are left to it; the rest are pruned as before when no node is labelled with them. The shared
    annotation is removed once empty."
  - "Nodes: found like M(gpupool.core.node_pool) finds them (the pool's C(node_selector), else the Magnum nodegroup
    label, plus O(name_pattern)). A node is left alone when its C(nvidia.com/mig.config) label is the pool's config,
    C(nvidia.com/mig.config.state) is C(success), and the config did not change since gpupool switched it (the
    annotation C(gpupool.io/mig-config-digest) records a digest of the config's content)."
  - "Rolling: the nodes to change go in waves of at most C(gpupool_cluster.mig_manager.max_unavailable). For each
    wave: cordon (O(cordon)), evict the pods that use GPUs (O(drain)), set C(nvidia.com/mig.config=<config>) (and
    clear the old state label, so only the MIG manager's answer counts), wait for
    C(nvidia.com/mig.config.state=success), uncordon. When the config's content changed but its name did not, the
    label is removed and set again after O(relabel_delay) seconds, because the MIG manager only acts on label
    changes."
  - "Requests: the cordon is decided from the plan's node LIST (no read per node) and sent with the node's
    C(resourceVersion) as precondition (a node changed meanwhile is read again). The cordon's write also carries
    the cordon's record (C(gpupool.io/cordon-reason)) and the node's first label change: the config label when
    nothing is to be evicted first (without O(drain), or a node with no GPU pod: with O(drain) its pods are read
    just before the cordon to know), or the removal of the label of a config changed under the same name (the MIG
    manager ignores an unset label). So a node that changes layout is written twice (cordon with label, uncordon),
    a node with GPU pods to evict or a changed config three times. A wave is watched with one LIST of the nodes
    carrying the config label per round, first after 1 s, then less and less often up to O(wait_sleep)."
  - "A node that ends in state C(failed) stops the rollout: the task fails naming the node, the nodes of later
    waves are not touched, and the failed node stays cordoned. A node already in state C(failed) for the wanted
    config holds back that pool only (no wave of it runs) unless O(retry_failed=true): the other pools roll on, then
    the task fails naming the node."
  - NotReady nodes that need a change are skipped with a warning (their MIG manager cannot act).
  - "MIG groups (C(mig.groups)): each group has its own config, C(<pool's config>-<group name>), written beside the
    pool's. Which nodes carry a group is decided stably (a node labelled with the group's config stays while the
    group has room, then the nodes the group's C(prefer) names, then the others by name); each node is labelled with
    its group's config, and only the nodes whose config changes are cordoned, drained and re-partitioned (in waves of
    their own, named C(<pool> group <name>)); a node that keeps its config is not touched. With C(--diff) the plan
    shows the assignment and which nodes move from which config to which."
  - Nodes are only patched (labels, one annotation, C(spec.unschedulable)); never created or deleted.
author:
  - gpupool.core developers (@gpupool)
options:
  cordon:
    description:
      - Cordon each node of a wave before its MIG layout changes and uncordon it after C(success).
      - Nodes someone else cordoned are left cordoned.
    type: bool
    default: true
  drain:
    description:
      - Evict the pods that use GPUs from each node of a wave (through the Eviction API, so PodDisruptionBudgets
        apply) and wait until they are gone, before the label changes. Implies O(cordon).
      - "Default: each pool's drain policy in the inventory (C(gpupool_cluster.drain) changed by the pool's
        C(drain)), which drains unless it says C(enabled: false); given here, it overrides the policy of every
        pool in scope."
      - "GPU pods: pods requesting C(nvidia.com/gpu*), C(nvidia.com/mig-*) or C(gpupool.io/*) resources, or with
        DRA resource claims. DaemonSet and static pods are not evicted (the MIG manager pauses GPU operands itself)."
  drain_timeout:
    description: Seconds for the drain of one wave (refused evictions and waiting for the evicted pods to be gone).
  wait_timeout:
    description: Seconds to wait for the MIG manager to finish one wave.
    type: int
    default: 1800
  wait_sleep:
    description: Longest pause between two reads of a wave's nodes while waiting (the first read comes after 1 s).
    type: float
    default: 5
  relabel_delay:
    description:
      - Seconds between removing and setting the config label again when a config changed under the same name
        (counted from the removal; time spent draining counts).
    type: float
    default: 5
  retry_failed:
    description:
      - Switch nodes again whose C(nvidia.com/mig.config.state) is C(failed) for the wanted config (after the cause
        was fixed). Without it such a node stops the run before any write.
    type: bool
    default: false
  prune:
    description:
      - Remove configs this inventory's owner wrote earlier that no pool wants any more and no node is labelled
        with. A config another owner recorded too stays; only this owner's record lets go of it.
      - Only when O(pools) is not given (every pool is in scope).
    type: bool
    default: true
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.nodes
  - gpupool.core.k8s_auth.drain
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
  check_mode:
    details: Reads the ConfigMap, nodes and pods and returns the plan (configs, waves, pods to evict) without any write;
      a ConfigMap still to be made is sent as a server dry run, so a missing MIG manager namespace fails as the run would.
  diff_mode:
    details: The pool configs in the ConfigMap and each node's MIG labels and digest annotation, before and after.
notes:
  - "Permissions beyond the gpupool ClusterRole's node rules: C(configmaps) get, create and patch in the MIG
    manager's namespace; with O(drain), C(pods) list and C(pods/eviction) create."
  - A run that fails midway leaves finished nodes switched and uncordoned; rerun it to continue.
seealso:
  - module: gpupool.core.pool_info
  - module: gpupool.core.validate
"""

EXAMPLES = r"""
- name: Roll out every static MIG layout, one node at a time (mig_manager.max_unavailable defaults to 1)
  gpupool.core.mig_layout:
    cluster: "{{ gpupool_cluster }}"

- name: Preview the waves and the pods that would be evicted
  gpupool.core.mig_layout:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-a100-mig]
    drain: true
  check_mode: true
  diff: true
  register: plan

- name: Roll out, evicting GPU pods first
  gpupool.core.mig_layout:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-a100-mig]
    drain: true
    drain_timeout: 900
    wait_timeout: 3600
"""

RETURN = r"""
config_map:
  description: The MIG manager's ConfigMap and what happened to gpupool's configs in it.
  returned: always
  type: dict
  contains:
    name:
      description: ConfigMap name.
      type: str
    namespace:
      description: ConfigMap namespace.
      type: str
    action:
      description: C(created), C(updated) or C(unchanged) (what would happen, in check mode).
      type: str
    configs:
      description: Per gpupool config name, C(created), C(updated), C(unchanged), C(adopted) or C(deleted).
      type: dict
  sample: {name: gpupool-mig-parted-config, namespace: gpu-operator, action: updated,
           configs: {gpupool-gpu-a100-mig: updated}}
pools:
  description:
    - Per pool in scope, its config and the plan for each of its nodes.
    - A pool with MIG groups also has C(assignment) (node name to group name, null for the pool's own layout) and
      C(groups) (per group name, the same keys as the pool's for the group's nodes); the pool's own C(nodes) and
      C(waves) are then those of the nodes that carry the pool's layout. A wave of a group has C(group).
  returned: always
  type: dict
  sample:
    gpu-a100-mig:
      config_name: gpupool-gpu-a100-mig
      digest: 3f2a0c9d1e4b5a6c
      selector: magnum.openstack.org/nodegroup=gpu-a100-mig
      waves: [[a100-0], [a100-1]]
      nodes:
        - {name: a100-0, action: configure, reason: "nvidia.com/mig.config is all-disabled, wants gpupool-gpu-a100-mig",
           ready: true, before: {config: all-disabled, state: success, digest: null}}
        - {name: a100-1, action: none, reason: "at gpupool-gpu-a100-mig (state success)", ready: true}
waves:
  description:
    - The waves in order; in check mode the planned ones (result C(planned)).
    - C(result) is C(success), C(failed), C(timeout), C(error), C(planned) or C(not started) (after an earlier wave failed).
    - When the pool's drain policy drains, C(evict) lists the GPU pods the wave evicts first and C(skip) those the
      policy's C(skip_pods) (or their kind) leaves alone; C(evicted) the pods evicted.
  returned: always
  type: list
  elements: dict
  sample:
    - {pool: gpu-a100-mig, index: 0, nodes: [a100-0], actions: {a100-0: configure}, result: success,
       started: 1767225600.1, finished: 1767225731.9, states: {a100-0: success}, evicted: [ml/train-0],
       cordoned: [a100-0]}
failed_nodes:
  description: Nodes that ended in C(nvidia.com/mig.config.state=failed), timed out, vanished or were relabelled.
  returned: always
  type: list
  elements: str
skipped_nodes:
  description: NotReady nodes that needed a change and were skipped.
  returned: always
  type: list
  elements: str
blocked_nodes:
  description:
    - Nodes the MIG manager failed on (C(nvidia.com/mig.config.state=failed)) before this run, without
      O(retry_failed). Each holds back its own pool only (no wave of that pool runs, C(pools.<name>.blocked) names
      them); the other pools roll on, and the step then fails naming each node and how to retry it.
  returned: always
  type: list
  elements: str
diff:
  description:
    - With C(--diff), first the rollout plan as text (C(prepared)) - per pool each wave, its nodes with their MIG
      layout now and the layout they get, the pods evicted first when the pool's drain policy drains, and the steps
      around them - then before and after of gpupool's configs in the ConfigMap and of each switched node's labels.
  returned: when diff mode is on
  type: list
  elements: dict
"""
