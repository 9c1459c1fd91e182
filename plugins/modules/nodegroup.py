#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nodegroup
short_description: Create, resize, update and delete the OpenStack Magnum nodegroups of GPU pools
version_added: "0.1.0"
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
        of a new nodegroup are C(magnum.labels) overlaid with the pool's C(nodegroup.labels).
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
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  action_group:
    membership: [gpupool.core.openstack]
  check_mode:
    support: full
    details: Reads the cluster and its nodegroups (and the nodes and pods for O(drain)), reports the plan; sends no
      write request and does not wait.
  diff_mode:
    support: full
  platform:
    platforms: all
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
    C(gpupool_cluster.magnum.prune_nodegroups: true) it is drained (the cluster's drain policy) and deleted, if
    gpupool can tell it made it: its C(node_labels) carry C(gpupool.io/pool) (set at creation from microversion
    1.14), or every node of it carries C(gpupool.io/pool=<nodegroup>). Setting the pool's C(state) to V(absent)
    deletes it in any case."
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

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import AUTH, DRAIN, WAIT
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import connect as k8s_connect
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.module import MagnumPoolModule
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import (
    MagnumClient,
    MagnumError,
    OperationFailed,
    WaitTimeout,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.nodegroups import (
    IN_PROGRESS_STATES,
    desired_from_pool,
    desired_state,
    drain_candidate,
    format_version,
    orphaned_nodegroups,
    plan_drain,
    plan_nodegroup,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.drain_preview import removal_diff
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import drain_settings
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.orphans import nodegroup_pool

# The value of gpupool.io/cordoned-by on nodes this module cordons (mig_layout uses its own), so neither module
# uncordons the other's nodes.
CORDON_BY = "nodegroup"
# The Kubernetes connection of the drain: the AUTH options whose names do not clash with the OpenStack ones
# (TLS settings for Kubernetes come from the kubeconfig or the K8S_AUTH_* variables).
DRAIN_CONNECTION = {name: AUTH[name] for name in ("kubeconfig", "context", "host", "api_key")}
STANDALONE = (
    "name",
    "state",
    "flavor",
    "image",
    "node_count",
    "min_node_count",
    "max_node_count",
    "docker_volume_size",
    "labels",
    "merge_labels",
    "node_labels",
    "node_taints",
    "role",
)


class NodegroupsFailed(GpupoolError):
    """One or more nodegroups could not be converged; the others' results are in the task result."""


class Target:
    """One nodegroup to converge: its key (the pool's name, or the nodegroup's standalone), the desired state
    (plan/magnum/nodegroups.py's dict) and what happened to it."""

    def __init__(self, key, desired, state, pool=None, settings=None, pruned_pool=None):
        self.key, self.desired, self.state, self.pool = key, desired, state, pool
        self.settings = settings or drain_settings()  # plan/eviction.DrainSettings: the drain policy that applies
        self.pruned_pool = pruned_pool  # for the nodegroup of a removed pool: the pool it was made for
        self.name = desired["name"]
        self.what = "nodegroup '%s'" % self.name
        self.observed = self.plan = self.drain_plan = self.preview = self.drain = None
        self.wrote = False
        self.error = None  # (message, extra result keys)
        self.result = {"name": self.name, "changed": False, "actions": []}

    def fail(self, exc):
        extra = {}
        if isinstance(exc, MagnumError):
            extra["error"] = exc.to_dict()
        if isinstance(exc, (OperationFailed, WaitTimeout)):
            extra.update(status=exc.status, status_reason=exc.detail)
        self.error = (exc.describe() if isinstance(exc, GpupoolError) else str(exc), extra)


class NodegroupModule(MagnumPoolModule):
    shared = (WAIT, DRAIN, DRAIN_CONNECTION)
    standalone_options = STANDALONE
    argument_spec = dict(
        name=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"]),
        flavor=dict(type="str", aliases=["flavor_id"]),
        image=dict(type="str", aliases=["image_id"]),
        node_count=dict(type="int"),
        min_node_count=dict(type="int"),
        max_node_count=dict(type="int"),
        docker_volume_size=dict(type="int"),
        labels=dict(type="dict"),
        merge_labels=dict(type="bool"),
        node_labels=dict(type="dict"),
        node_taints=dict(
            type="list",
            elements="dict",
            options=dict(
                key=dict(type="str", required=True, no_log=False),
                value=dict(type="str"),
                effect=dict(type="str", required=True, choices=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
            ),
        ),
        role=dict(type="str"),
        # WAIT with the defaults of a Magnum operation (minutes, not seconds)
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=15.0),
    )

    def __init__(self):
        super().__init__()
        self.targets = []
        self.skipped = {}
        self.orphaned = None
        self.client = None
        self.microversion = None
        self._k8s = None

    # ---- what to converge ---------------------------------------------------------------------------
    @property
    def standalone(self):
        return self.cluster is None

    def prepare(self):
        super().prepare()
        p = self.params
        self.require_at_least(wait_timeout=0, drain_timeout=1, drain_grace_period=0)
        if p["wait_sleep"] <= 0:
            raise Problems(
                [("wait_sleep", "must be greater than 0, got %s" % p["wait_sleep"])], subject="in the module options"
            )
        if self.standalone:
            if not p["name"]:
                raise Problems(
                    [
                        (
                            "name",
                            "is required when cluster is a Magnum cluster name (standalone use); or pass "
                            "the cluster inventory ({{ gpupool_cluster }}) as cluster",
                        )
                    ],
                    subject="in the module options",
                )
            self.targets = [Target(p["name"], desired_state(p), p["state"] or "present", settings=self.settings())]
            return
        for pool in self.selected:
            if pool.nodegroup is None:
                self.skipped[pool.name] = "no nodegroup: its nodes are found by node_selector"
                continue
            self.targets.append(
                Target(pool.name, desired_from_pool(self.cluster, pool), pool.state, pool, settings=self.settings(pool))
            )

    def settings(self, pool=None):
        """The drain of a pool's nodegroup: the inventory's drain policy (the cluster's for a nodegroup no pool
        declares; none standalone) with the drain options that were given on top."""
        p = self.params
        policy = None if self.standalone else drain_policy(self.cluster, pool)
        return drain_settings(policy, p["drain"], p["drain_timeout"], p["drain_grace_period"])

    # ---- the run --------------------------------------------------------------------------------------
    def run(self):
        if not self.standalone and self.cluster.magnum is None:
            return {"changed": False, "msg": "gpupool_cluster has no magnum section: no nodegroups to converge"}
        cloud = None if self.standalone else self.cluster.magnum.cloud
        if cloud is not None and self.params["cloud"] is not None and self.params["cloud"] != cloud:
            self.warn("the cloud option is ignored: the cloud of the inventory (gpupool_cluster.magnum.cloud) is used")
        self.client = MagnumClient(
            self.connect(cloud), log=self.ansible.log, poll_max=max(0.25, self.params["wait_sleep"])
        )
        version = self.client.negotiate()
        self.microversion = format_version(version)
        ident = self.params["cluster"] if self.standalone else self.cluster.magnum.cluster
        magnum_cluster = self.client.get_cluster(ident)
        cid = magnum_cluster["uuid"]
        cluster_name = magnum_cluster.get("name") or cid
        # One list of the cluster's nodegroups; a full read only of those that exist and are in scope.
        listing = self.client.list_nodegroups(cid)
        listed = {}
        for entry in listing:
            listed[entry.get("uuid")] = listed[entry["name"]] = entry
        if not self.standalone and not self.params["pools"]:
            self.orphaned = orphaned_nodegroups(listing, self.cluster)
            if self.orphaned and self.cluster.magnum.prune_nodegroups:
                self.plan_prune(cid, cluster_name)
            for name in self.orphaned:
                self.warn(
                    "Magnum nodegroup %s of cluster %s belongs to no pool of the inventory (a removed pool?). It "
                    "was left as it is and its nodes stay cordoned and tainted (gpupool.core.node_pool): delete "
                    "it with a pool of that nodegroup and state: absent, set "
                    "gpupool_cluster.magnum.prune_nodegroups: true, or declare it again" % (name, cluster_name)
                )
        for target in self.targets:
            target.what = "nodegroup '%s' of cluster '%s'" % (target.name, cluster_name)
            self.plan_target(target, cid, magnum_cluster, version, listed.get(target.name))
        if not self.check_mode:
            for target in self.targets:
                if target.error is None:
                    self.apply_target(target, cid)
        failed = [t for t in self.targets if t.error is not None]
        if failed:
            raise NodegroupsFailed(self.failure_message(failed))
        return {}

    def failure_message(self, failed):
        if self.standalone:
            return failed[0].error[0]
        done = len(self.targets) - len(failed)
        return "The nodegroups of %d pool(s) failed (%s); %d other pool(s) were converged, see pools. %s" % (
            len(failed),
            ", ".join(t.key for t in failed),
            done,
            " ".join("Pool %s: %s" % (t.key, t.error[0]) for t in failed),
        )

    # ---- plan -----------------------------------------------------------------------------------------
    def plan_target(self, target, cid, magnum_cluster, version, listed):
        p = self.params
        try:
            observed = self.client.get_nodegroup(cid, target.name) if listed is not None else None
            if observed and observed.get("status") in IN_PROGRESS_STATES and p["wait"] and self.may_wait:
                observed = self.client.wait_settled(cid, observed["uuid"], p["wait_timeout"], target.what)
            target.observed = observed
            plan = target.plan = plan_nodegroup(target.desired, observed, magnum_cluster, version, target.state)
        except (Problems, MagnumError) as exc:
            target.fail(exc)
            return
        for note in plan.notes:
            self.warn(note)
        target.result.update(changed=plan.changed, actions=[a.to_dict() for a in plan.actions])
        if plan.drift:
            target.result["label_drift"] = plan.drift
        if self.check_mode:
            target.result["nodegroup"] = dict(observed or {}, **plan.after) if plan.after else {}
        if target.settings.enabled:
            self.plan_drain(target)
        elif any(a.kind == "delete" or a.shrink_by for a in plan.actions) and not self.standalone:
            self.warn(
                "%s: the drain policy is off (drain.enabled: false), so Magnum removes the nodes of its "
                "choosing with their GPU pods still running" % target.what
            )

    def plan_drain(self, target):
        """Which nodes a shrink (or a delete) removes and which pods leave them first; reads only."""
        plan = target.plan
        shrink = next((a for a in plan.actions if a.kind == "resize" and a.shrink_by), None)
        delete = next((a for a in plan.actions if a.kind == "delete"), None)
        if shrink is None and delete is None:
            return
        try:
            drain = self.drainer(target)
            nodes = drain.nodes("%s=%s" % (NODEGROUP_LABEL, target.name))
            pods = {n["metadata"]["name"]: drain.pod_plan(n["metadata"]["name"]) for n in nodes}
            candidates = [drain_candidate(n, pods[n["metadata"]["name"]][0]) for n in nodes]
            count = shrink.shrink_by if shrink is not None else len(candidates)
            target.drain_plan = plan_drain(candidates, count, target.what)
        except (Problems, DrainError) as exc:
            target.fail(exc)
            return
        except K8sError as exc:
            target.fail(
                GpupoolError(
                    "Cannot read the nodes of %s from Kubernetes: %s. Nothing was changed; fix "
                    "the connection (kubeconfig, context) or turn the pool's drain policy off (drain.enabled: false)."
                    % (target.what, exc.describe())
                )
            )
            return
        if delete is not None:
            target.drain_plan["nodes_to_remove"] = []  # the whole nodegroup goes
        victims = target.drain_plan["victims"]
        target.drain_plan["skip"] = [
            {"node": n, "namespace": pod["metadata"].get("namespace"), "name": pod["metadata"].get("name")}
            for n in victims
            for pod in pods[n][1]
        ]
        target.result["drain"] = target.drain_plan
        target.preview = removal_diff(
            target.what,
            sorted(pods),
            victims,
            {n: pods[n][0] for n in victims},
            {n: pods[n][1] for n in victims},
        )

    def k8s(self):
        """The cluster's Kubernetes API (for drains and for recognising nodegroups of removed pools), connected
        on first use."""
        if self._k8s is None:
            self._k8s = k8s_connect(self.params, self.cluster)
        return self._k8s

    def drainer(self, target):
        """The one drain, as the target's drain policy says; one per target, so the nodes its plan listed need no
        second read when they are cordoned."""
        if target.drain is None:
            target.drain = Drain.for_settings(
                self.k8s(), CORDON_BY, target.settings, warn=self.warn, progress=self.client.log
            )
        return target.drain

    def plan_prune(self, cid, cluster_name):
        """With magnum.prune_nodegroups: a delete (after a drain) of each orphaned nodegroup gpupool provably made
        (plan/orphans.nodegroup_pool); the others stay orphaned and reported. Reads only."""
        try:
            nodes = self.k8s().list("", "v1", "nodes")
        except K8sError as exc:
            raise GpupoolError(
                "gpupool_cluster.magnum.prune_nodegroups is on, but the nodes that tell which orphaned nodegroups "
                "gpupool made cannot be read: %s. Nothing was changed; fix the Kubernetes connection "
                "(gpupool_cluster.kubeconfig, context) or turn prune_nodegroups off" % exc.describe()
            ) from None
        kept = []
        for name in self.orphaned:
            pool = nodegroup_pool(self.client.get_nodegroup(cid, name) or {"name": name}, nodes)
            if pool is None:
                kept.append(name)
                self.warn(
                    "Magnum nodegroup %s of cluster %s is not pruned although prune_nodegroups is on: gpupool cannot "
                    "tell that it made it (no gpupool.io/pool in its node_labels, and not every node of it carries "
                    "gpupool.io/pool=%s). Delete it yourself if it belonged to a removed pool"
                    % (name, cluster_name, name)
                )
                continue
            self.targets.append(Target(name, {"name": name}, "absent", settings=self.settings(), pruned_pool=pool))
        self.orphaned = kept

    # ---- apply ----------------------------------------------------------------------------------------
    def apply_target(self, target, cid):
        p, plan = self.params, target.plan
        ng = target.observed
        try:
            for index, action in enumerate(plan.actions):
                last = index == len(plan.actions) - 1
                ng = self.apply_action(target, cid, action, wait=p["wait"] or not last)
                target.result["actions"][index] = action.to_dict()  # nodes_to_remove added by a drain
            if plan.wait_gone and p["wait"]:
                self.client.wait(
                    cid,
                    target.observed["uuid"],
                    {"gone": True},
                    p["wait_timeout"],
                    "delete of %s" % target.what,
                    initial_status=target.observed.get("status"),
                )
        except (Problems, MagnumError, DrainError) as exc:
            target.fail(exc)
        except K8sError as exc:
            target.fail(
                GpupoolError(
                    "Draining the nodes of %s failed: %s. Nothing was resized or deleted; fix the "
                    "cause and run again." % (target.what, exc.describe())
                )
            )
        if target.error is None:
            target.result["nodegroup"] = (ng or {}) if target.state == "present" else {}

    def drain_before(self, target, action):
        """Drain the nodes the action removes; returns the servers to name in a resize."""
        drain_plan = target.drain_plan
        if not drain_plan or not (action.kind == "delete" or action.shrink_by):
            return None
        done = self.drainer(target).drain(drain_plan["victims"])
        target.wrote = target.wrote or bool(done["cordoned"] or done["evicted"])
        drain_plan["evicted"] = done["evicted"]
        return drain_plan["nodes_to_remove"]

    def apply_action(self, target, cid, action, wait):
        """Send one action; wait for its expectation when ``wait``. Returns the nodegroup view."""
        client, observed = self.client, target.observed
        initial = (observed or {}).get("status")
        ng = None
        if action.kind == "create":
            ng = client.create_nodegroup(cid, action.payload)
            ident = ng.get("uuid") or target.name
        elif action.kind == "delete":
            self.drain_before(target, action)
            client.delete_nodegroup(cid, observed["uuid"])
            ident = observed["uuid"]
        elif action.kind == "patch":
            ng = client.patch_nodegroup(cid, observed["uuid"], action.payload)
            ident = observed["uuid"]
        elif action.kind == "resize":
            body = dict(action.payload)
            remove = self.drain_before(target, action)
            if remove:
                body["nodes_to_remove"] = remove
                action.payload = body
            client.resize(cid, body["nodegroup"], body["node_count"], body.get("nodes_to_remove"))
            ident = observed["uuid"]
        else:  # pragma: no cover - the planner makes only these four
            raise MagnumError("unknown action %s" % action.kind)
        target.wrote = True
        if not wait:
            if action.kind == "delete":
                return None
            return ng if ng is not None else client.get_nodegroup(cid, ident)
        return client.wait(
            cid, ident, action.expect, self.params["wait_timeout"], action.summary, initial_status=initial
        )

    # ---- results --------------------------------------------------------------------------------------
    def changed(self, target):
        """Check mode: whether the plan changes something; otherwise whether something was written."""
        if self.check_mode:
            return target.error is None and target.plan is not None and target.plan.changed
        return target.wrote

    def partial_result(self):
        for target in self.targets:
            target.result["changed"] = self.changed(target)
            if target.error is not None:
                target.result.update(failed=True, msg=target.error[0], **target.error[1])
        out = {
            "changed": any(t.result["changed"] for t in self.targets),
            "progress": self.client.events if self.client is not None else [],
        }
        if self.microversion:
            out["microversion"] = self.microversion
        if self.standalone:
            self._standalone_result(out)
        else:
            pools = {name: {"skipped": why} for name, why in self.skipped.items()}
            pools.update((t.key, t.result) for t in self.targets if t.pruned_pool is None)
            out["pools"] = pools
            if self.orphaned is not None:
                out["orphaned"] = self.orphaned
                out["pruned"] = {
                    t.key: dict(t.result, pool=t.pruned_pool) for t in self.targets if t.pruned_pool is not None
                }
            if self.diff_mode:
                out["diff"] = []
                for target in self.targets:
                    if target.plan is not None and target.plan.changed:
                        out["diff"].append(self._diff(target))
                        if target.preview is not None:
                            out["diff"].append(target.preview)
        return out

    def _standalone_result(self, out):
        if not self.targets:
            return
        target = self.targets[0]
        result = target.result
        out.update(actions=result["actions"], nodegroup=result.get("nodegroup", {}))
        if "drain" in result:
            out["drain"] = result["drain"]
        if "label_drift" in result:
            out["label_drift"] = result["label_drift"]
        if target.error is not None:
            out.update(target.error[1])
        if self.diff_mode and target.plan is not None:
            out["diff"] = self._diff(target)

    @staticmethod
    def _diff(target):
        return {
            "before": target.plan.before,
            "after": target.plan.after,
            "before_header": target.what,
            "after_header": target.what,
        }


def main():
    NodegroupModule()()


if __name__ == "__main__":
    main()
