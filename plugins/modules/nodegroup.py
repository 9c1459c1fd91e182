# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nodegroup
short_description: Create, resize, update and delete the OpenStack Magnum nodegroups of GPU pools
version_added: "1.0.0"
description:
  - Makes the Magnum nodegroups of a cluster's GPU pools match the inventory, through the Magnum nodegroup API
    (C(/v1/clusters/{cluster}/nodegroups)), which neither openstacksdk nor the C(openstack.cloud) collection cover.
  - "Two ways to call it. With the inventory: O(cluster) is C(gpupool_cluster) (validated by the pool model before
    any request) and every pool in scope (O(pools)) with a C(nodegroup) is converged in one run: one connection, one
    nodegroup list, a plan for every pool, then the changes pool by pool. The cloud is C(gpupool_cluster.magnum.cloud),
    the Magnum cluster C(gpupool_cluster.magnum.cluster). Standalone: O(cluster) is the Magnum cluster's name or uuid
    and the flat options (O(name), O(flavor), O(node_count), ...) describe one nodegroup."
  - Creates a nodegroup when it is missing. Changes the node count through the cluster resize action
    (C(POST /v1/clusters/{cluster}/actions/resize) with the nodegroup), C(min_node_count) and C(max_node_count)
    (and, from microversion 1.14, O(node_labels) and O(node_taints)) through a JSON-patch, in the order that keeps
    Magnum's C(min <= node_count <= max) checks satisfied at every step.
  - Magnum cannot change the flavor, image, labels, docker volume size or role of an existing nodegroup. When a pool
    asks for such a change, that pool fails and says so instead of silently doing nothing; the other pools are still
    converged. A label that comes from C(gpupool_cluster.magnum.labels) (cluster-wide) and differs on an existing
    nodegroup is reported as drift (a warning and RV(pools.label_drift)), not refused.
  - "Sends C(OpenStack-API-Version: container-infra <version>) on every call, with the highest microversion both the
    server (from its C(OpenStack-API-Maximum-Version) header) and this module support (up to 1.14)."
  - Retries on HTTP 5xx and connection errors with backoff, and waits for C(*_COMPLETE) with backoff, reporting
    C(*_FAILED) with Magnum's C(status_reason).
  - With O(drain), drains the Kubernetes nodes a shrink removes (or every node of a nodegroup being deleted) before
    Magnum removes them, and tells Magnum which servers to remove.
author:
  - gpupool.core developers (@gpupool)
options:
  cluster:
    description:
      - The cluster's GPU-pool description, usually C({{ gpupool_cluster }}); its pools' C(nodegroup) sections say
        what each nodegroup should be (the model's defaults apply, for example C(node_count=1)). The Magnum labels
        of a new nodegroup are C(magnum.labels) overlaid with the pool's C(nodegroup.labels), plus
        C(gpupool.io/owner) set to the inventory's owner; C(nodegroup.adopt) lets a pool manage an existing
        nodegroup without that label.
      - Or, standalone, the name or uuid of the Magnum cluster; then O(name) and the other flat options describe one
        nodegroup, and options left out keep what Magnum has.
    type: raw
    required: true
  pools:
    description:
      - Names of the pools to work on (with the inventory as O(cluster)). Default is every pool.
      - Nodegroups that no pool of the inventory declares are reported in RV(orphaned) only when every pool is in scope.
    type: list
    elements: str
  name:
    description:
      - Standalone only. Name of the nodegroup, unique within the cluster.
    type: str
  state:
    description:
      - Standalone only (with the inventory, each pool's C(state) says it). V(present) (the default) creates or
        updates the nodegroup, V(absent) deletes it.
      - Default nodegroups (C(default-master), C(default-worker)) cannot be deleted.
    type: str
    choices: [present, absent]
  flavor:
    description:
      - Standalone only. Nova flavor (name or id) of the nodes. Defaults to the cluster's flavor on create.
      - Cannot be changed later; compared as given with the nodegroup's C(flavor_id).
    type: str
    aliases: [flavor_id]
  image:
    description:
      - Standalone only. Glance image (name or id) of the nodes. Defaults to the cluster template's image on create.
      - Cannot be changed later.
    type: str
    aliases: [image_id]
  node_count:
    description:
      - Standalone only. Number of nodes. Defaults to 1 on create. V(0) needs Magnum microversion 1.10.
      - A change resizes the nodegroup; with O(drain) the removed nodes are drained first.
    type: int
  min_node_count:
    description:
      - Standalone only. Lower bound for resizes and the cluster autoscaler. Defaults to 0 on create.
    type: int
  max_node_count:
    description:
      - Standalone only. Upper bound for resizes and the cluster autoscaler. Unbounded when never set.
    type: int
  docker_volume_size:
    description:
      - Standalone only. Size in GB of the container storage volume of each node. Cannot be changed later.
    type: int
  labels:
    description:
      - Standalone only. Magnum labels of the nodegroup (driver settings such as C(nvidia_gpu_enabled)), not
        Kubernetes node labels.
      - Values are sent as strings (V(true) becomes C("true")).
      - Cannot be changed later. With O(merge_labels=true) only the given keys are compared.
    type: dict
  merge_labels:
    description:
      - Standalone only. Merge O(labels) over the cluster's labels on create. Default V(true).
      - Without it Magnum gives the nodegroup B(only) the labels of the task and drops every cluster label
        (for example the Kubernetes version and registry settings).
      - With V(false) the nodegroup's labels must equal O(labels) exactly.
    type: bool
  node_labels:
    description:
      - Standalone only. Kubernetes labels for the nodes, applied by Magnum. Needs Magnum microversion 1.14 (Magnum
        master, 2026); the module fails with an explanation on older servers. Can be changed later.
    type: dict
  node_taints:
    description:
      - Standalone only. Kubernetes taints for the nodes, applied by Magnum. Needs Magnum microversion 1.14. Can be
        changed later.
    type: list
    elements: dict
    suboptions:
      key:
        description: Taint key.
        type: str
        required: true
      value:
        description: Taint value.
        type: str
      effect:
        description: Taint effect.
        type: str
        required: true
        choices: [NoSchedule, PreferNoSchedule, NoExecute]
  role:
    description:
      - Standalone only. Role of the nodegroup (Magnum's default is C(worker)). C(master) cannot be created. Cannot be
        changed later.
    type: str
  wait:
    description:
      - Wait until Magnum reports C(*_COMPLETE) (or the nodegroup is gone after a delete).
      - When a change needs several calls, the module always waits between them; V(false) only skips waiting
        after the last one.
      - Skipped in check mode.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for each operation.
    type: int
    default: 1800
  wait_sleep:
    description:
      - Longest pause in seconds between two reads of a nodegroup while waiting; polling starts at 0.25 seconds and
        grows by half each time up to this.
    type: float
    default: 15
  drain:
    description:
      - Before a shrink, choose the Kubernetes nodes that go (the ones already cordoned, then those with the fewest
        GPU pods, then the newest), drain them, and pass their servers to Magnum as C(nodes_to_remove) so that exactly
        the drained nodes go away. Before a delete (O(state=absent), or a pool with C(state=absent)), drain every
        node of the nodegroup.
      - Nodes are found by their C(magnum.openstack.org/nodegroup) label. Cordons are marked
        C(gpupool.io/cordoned-by=nodegroup).
      - "With the inventory as O(cluster), each pool's drain policy decides (C(gpupool_cluster.drain), changed by
        the pool's C(drain): on by default, with its timeout, grace period, C(skip_pods) selector and what a refusing
        PodDisruptionBudget does); this option, when given, overrides it for every pool. Standalone, draining is off
        unless this option is V(true). Without a drain Magnum chooses the nodes and nothing is evicted."
      - The Kubernetes connection is O(kubeconfig)/O(context) (or O(host)/O(api_key)), else
        C(gpupool_cluster.kubeconfig) and C(gpupool_cluster.context), else the E(K8S_AUTH_*) variables and the
        default kubeconfig. It is only opened when a shrink or delete is planned.
  kubeconfig:
    description:
      - Path to the kubeconfig of the cluster, for O(drain). Defaults to C(gpupool_cluster.kubeconfig), then the
        E(K8S_AUTH_KUBECONFIG) environment variable, then E(KUBECONFIG) or C(~/.kube/config).
    type: path
  context:
    description:
      - Kubeconfig context, for O(drain). Defaults to C(gpupool_cluster.context), then E(K8S_AUTH_CONTEXT), then the
        kubeconfig's current context.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for O(drain); overrides the kubeconfig's server. Env E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the Kubernetes API server, for O(drain). Env E(K8S_AUTH_API_KEY).
    type: str
extends_documentation_fragment:
  - gpupool.core.openstack
  - gpupool.core.k8s_auth.drain
  - gpupool.core.k8s_auth.lease
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.actiongroups
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
  action_group:
    membership:
    - gpupool.core.openstack
  check_mode:
    details: Reads the cluster and its nodegroups (and the nodes and pods for O(drain)), reports the plan; sends no write
      request and does not wait.
requirements:
  - pydantic >= 2.6 (with the inventory as O(cluster))
  - kubernetes >= 31.0.0 (only for O(drain))
notes:
  - Magnum's API answers 202 and works asynchronously; with O(wait=false) the returned nodegroup is the state right
    after the request.
  - Flavor and image are compared as strings with what Magnum stored, so give them the same way (name or id) as
    when the nodegroup was created.
  - "A nodegroup of a pool removed from the inventory is not deleted by default: it is listed in RV(orphaned) with a
    warning, and gpupool.core.node_pool keeps its nodes cordoned and tainted. With
    C(gpupool_cluster.magnum.prune_nodegroups: true) it is drained (the cluster's drain policy) and deleted if its
    owner label is this inventory's (below); another owner's, or one with no owner, is listed in RV(left) and in
    C(--diff) and left as it is. Setting the pool's C(state) to V(absent) deletes it when it is the pool's."
  - "Owners: a nodegroup created with the inventory carries the Magnum label C(gpupool.io/owner) set to
    C(gpupool_cluster.owner) (default its C(name)); Magnum keeps nodegroup labels and no PATCH can change them.
    A pool changes (resizes, patches, drains, deletes) only a nodegroup with its owner's label, or one without
    any owner label when the pool's C(nodegroup.adopt) is true (a nodegroup made before this version, or by hand);
    otherwise that pool fails, naming the owner, and nothing of that nodegroup is touched. Standalone use changes
    only nodegroups without the label. See the collection's docs/concurrency.md, Owners: Magnum nodegroups."
  - "From microversion 1.14 a pool's nodegroup gives its nodes the pool's taints and labels from birth
    (C(node_taints), and C(node_labels) with C(gpupool.io/pool=<pool>) plus the pool's C(node_labels) that kubelet
    may set), so no pod lands on a new GPU node before gpupool.core.node_pool runs; older servers get them from
    node_pool only."
seealso:
  - module: gpupool.core.nodegroup_info
  - module: gpupool.core.validate
"""

EXAMPLES = r"""
- name: The nodegroups of every pool of the cluster (one task per cluster)
  gpupool.core.nodegroup:
    cluster: "{{ gpupool_cluster }}"

- name: Preview a change of two pools, with the nodes and pods a shrink would drain
  gpupool.core.nodegroup:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-a100, gpu-t4]
    drain: true
  check_mode: true
  diff: true

- name: Converge, draining the GPU pods of nodes a shrink removes
  gpupool.core.nodegroup:
    cluster: "{{ gpupool_cluster }}"
    drain: true
    drain_timeout: 900

- name: Standalone - a GPU nodegroup that keeps the cluster's labels
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
    flavor: g4.a100.large
    node_count: 2
    min_node_count: 0
    max_node_count: 8
    labels:
      nvidia_gpu_enabled: true
    merge_labels: true

- name: Standalone - scale it down, draining the GPU pods of the nodes that go away
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
    node_count: 1
    drain: true
    kubeconfig: ~/.kube/k8s-prod

- name: Standalone - Kubernetes labels and taints set by Magnum (microversion 1.14)
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-h100
    flavor: g5.h100.xlarge
    node_count: 1
    node_labels:
      gpupool.io/pool: h100
    node_taints:
      - key: nvidia.com/gpu
        value: present
        effect: NoSchedule

- name: Standalone - remove it, without waiting for Magnum
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
    state: absent
    wait: false
"""

RETURN = r"""
pools:
  description:
    - With the inventory as O(cluster), per pool in scope the outcome for its nodegroup. Pools without a nodegroup
      are listed with C(skipped).
  returned: with the inventory as O(cluster)
  type: dict
  contains:
    nodegroup:
      description: The nodegroup as Magnum shows it after the change (in check mode, as the plan leads to it;
        an empty dict after a delete).
      type: dict
    name:
      description: The nodegroup's name.
      type: str
    changed:
      description: Whether the nodegroup was (or, in check mode, would be) changed.
      type: bool
    actions:
      description: The API calls of the plan, in order, as RV(actions).
      type: list
      elements: dict
    drain:
      description: The drain plan, as RV(drain).
      type: dict
      returned: when a shrink or delete is planned and the pool's drain policy (or O(drain)) drains
    label_drift:
      description: Cluster-wide Magnum labels (C(gpupool_cluster.magnum.labels)) the existing nodegroup has with
        another value; Magnum cannot change them, so they are reported, not refused.
      type: dict
      returned: when there is drift
      sample: {kube_tag: {nodegroup: v1.29.2, inventory: v1.30.1}}
    failed:
      description: Whether this pool failed; RV(pools.msg) says why. The other pools were still converged.
      type: bool
      returned: when the pool failed
    msg:
      description: Why the pool failed.
      type: str
      returned: when the pool failed
    skipped:
      description: Why the pool has nothing to converge on Magnum.
      type: str
      returned: for pools without a nodegroup
  sample:
    gpu-a100:
      name: gpu-a100
      changed: true
      actions:
        - action: resize
          summary: "resize nodegroup 'gpu-a100' of cluster 'k8s-prod' from 2 to 4 node(s) (bounds [0, 8])"
          request: {node_count: 4, nodegroup: 5d12f6fd-a0e8-4f5e-9b8c-3a9c3f6d2b1e}
      nodegroup: {name: gpu-a100, node_count: 4, status: UPDATE_COMPLETE}
    gpu-t4: {name: gpu-t4, changed: false, actions: [], nodegroup: {name: gpu-t4, node_count: 2}}
orphaned:
  description: Nodegroups of the Magnum cluster that no pool declares (not Magnum's default ones), left as they are.
  returned: with the inventory as O(cluster) and every pool in scope
  type: list
  elements: str
  sample: [gpu-old]
pruned:
  description:
    - With C(gpupool_cluster.magnum.prune_nodegroups), the orphaned nodegroups gpupool made, drained and deleted
      (planned, in check mode), as RV(pools) entries plus C(pool), the removed pool it was made for.
  returned: with the inventory as O(cluster) and every pool in scope
  type: dict
  sample: {gpu-old: {name: gpu-old, pool: gpu-old, changed: true, actions: [{action: delete}], drain: {}}}
left:
  description:
    - With C(gpupool_cluster.magnum.prune_nodegroups), the nodegroups no pool declares that are not this
      inventory's to prune (another owner's, or one without an owner label), each with the plan's line for it, also
      shown by C(--diff). Nothing of them is read from Kubernetes, drained or deleted.
  returned: when prune_nodegroups leaves a nodegroup
  type: dict
  sample: {gpu-t4: "leave nodegroup 'gpu-t4' of cluster 'k8s-prod': owned by 'team-a'"}
nodegroup:
  description:
    - Standalone. The nodegroup as Magnum shows it after the change (an empty dict after a delete).
    - In check mode, the state the plan leads to.
  returned: standalone
  type: dict
  sample:
    uuid: 5d12f6fd-a0e8-4f5e-9b8c-3a9c3f6d2b1e
    name: gpu-a100
    cluster_id: 0b7b2c9e-1f49-4bd1-8f5a-6b6c0e0f7a11
    flavor_id: g4.a100.large
    image_id: fedora-coreos-40
    node_count: 2
    min_node_count: 0
    max_node_count: 8
    role: worker
    is_default: false
    labels: {kube_tag: v1.29.2, nvidia_gpu_enabled: "true"}
    status: CREATE_COMPLETE
    status_reason: Stack CREATE completed successfully
    node_addresses: [10.0.0.12, 10.0.0.13]
actions:
  description: Standalone. The API calls of the plan, in order (done, or planned in check mode).
  returned: standalone
  type: list
  elements: dict
  sample:
    - action: resize
      summary: "resize nodegroup 'gpu-a100' of cluster 'k8s-prod' from 2 to 4 node(s) (bounds [0, 8])"
      request: {node_count: 4, nodegroup: 5d12f6fd-a0e8-4f5e-9b8c-3a9c3f6d2b1e}
microversion:
  description: The Magnum API microversion the module used.
  returned: when the server was reached
  type: str
  sample: "1.14"
progress:
  description: Retries, status changes seen while waiting and drain steps, with the elapsed time.
  returned: always
  type: list
  elements: str
  sample: ["create nodegroup 'gpu-a100' of cluster 'k8s-prod' with 2 node(s): CREATE_IN_PROGRESS after 0.3s (2 nodes)"]
drain:
  description:
    - Standalone. The drain plan of a shrink or delete with O(drain) (victims, nodes_to_remove, cordon, evict, and
      skip - GPU pods the drain leaves alone), and after the drain the pods evicted.
  returned: when a shrink or delete is planned and O(drain) is set
  type: dict
  sample: {victims: [k8s-gpu-a100-x1y2z-node-3], nodes_to_remove: [7f0c...], cordon: [k8s-gpu-a100-x1y2z-node-3],
           evict: [{node: k8s-gpu-a100-x1y2z-node-3, namespace: ml, name: train-0}], evicted: [ml/train-0]}
diff:
  description:
    - Before and after (name, role, flavor_id, image_id, counts, docker_volume_size, labels, node labels
      and taints), with C(--diff). Standalone one dict; with the inventory a list with one entry per changed nodegroup,
      each shrink or delete followed by one for its Kubernetes nodes - those that stay, and per node that goes the
      GPU pods evicted from it first (and those the drain policy skips).
  returned: when diff mode is on
  type: raw
  sample: {before: {node_count: 2}, after: {node_count: 4}}
status:
  description: Status of the nodegroup when an operation failed or timed out (standalone; per pool in RV(pools)).
  returned: on failure while waiting
  type: str
  sample: CREATE_FAILED
status_reason:
  description: Magnum's reason for a failed operation (standalone; per pool in RV(pools)).
  returned: on failure while waiting
  type: str
  sample: "Quota exceeded for instances: Requested 2, but already used 10 of 10 instances"
"""
