#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nodegroup
short_description: Create, resize, update and delete OpenStack Magnum nodegroups
version_added: "0.1.0"
description:
  - Makes a nodegroup of a Magnum Kubernetes cluster match the task, through the Magnum nodegroup API
    (C(/v1/clusters/{cluster}/nodegroups)), which neither openstacksdk nor the C(openstack.cloud) collection cover.
  - Creates the nodegroup when it is missing. Changes O(node_count) through the cluster resize action
    (C(POST /v1/clusters/{cluster}/actions/resize) with the nodegroup), O(min_node_count) and O(max_node_count)
    (and, from microversion 1.14, O(node_labels) and O(node_taints)) through a JSON-patch, in the order that keeps
    Magnum's C(min <= node_count <= max) checks satisfied at every step.
  - Magnum cannot change the flavor, image, labels, docker volume size or role of an existing nodegroup. When the task
    asks for such a change the module fails and says so, instead of silently doing nothing.
  - "Sends C(OpenStack-API-Version: container-infra <version>) on every call, with the highest microversion both the
    server (from its C(OpenStack-API-Maximum-Version) header) and this module support (up to 1.14)."
  - Retries on HTTP 5xx and connection errors with backoff, and waits for C(*_COMPLETE) with backoff, reporting
    C(*_FAILED) with Magnum's C(status_reason).
  - Optionally drains the Kubernetes nodes a shrink removes (cordon, evict the pods that use GPUs) and tells Magnum
    which servers to remove.
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
      - Name of the nodegroup, unique within the cluster.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the nodegroup, V(absent) deletes it.
      - Default nodegroups (C(default-master), C(default-worker)) cannot be deleted.
    type: str
    choices: [present, absent]
    default: present
  flavor:
    description:
      - Nova flavor (name or id) of the nodes. Defaults to the cluster's flavor on create.
      - Cannot be changed later; compared as given with the nodegroup's C(flavor_id).
    type: str
    aliases: [flavor_id]
  image:
    description:
      - Glance image (name or id) of the nodes. Defaults to the cluster template's image on create.
      - Cannot be changed later.
    type: str
    aliases: [image_id]
  node_count:
    description:
      - Number of nodes. Defaults to 1 on create. V(0) needs Magnum microversion 1.10.
      - A change resizes the nodegroup; with O(drain) the removed nodes are drained first.
    type: int
  min_node_count:
    description:
      - Lower bound for resizes and the cluster autoscaler. Defaults to 0 on create.
    type: int
  max_node_count:
    description:
      - Upper bound for resizes and the cluster autoscaler. Unbounded when never set.
    type: int
  docker_volume_size:
    description:
      - Size in GB of the container storage volume of each node. Cannot be changed later.
    type: int
  labels:
    description:
      - Magnum labels of the nodegroup (driver settings such as C(nvidia_gpu_enabled)), not Kubernetes node labels.
      - Values are sent as strings (V(true) becomes C("true")).
      - Cannot be changed later. With O(merge_labels=true) only the given keys are compared.
    type: dict
  merge_labels:
    description:
      - Merge O(labels) over the cluster's labels on create.
      - Without it Magnum gives the nodegroup B(only) the labels of the task and drops every cluster label
        (for example the Kubernetes version and registry settings).
      - With V(false) the nodegroup's labels must equal O(labels) exactly.
    type: bool
    default: true
  node_labels:
    description:
      - Kubernetes labels for the nodes, applied by Magnum. Needs Magnum microversion 1.14 (Magnum master, 2026);
        the module fails with an explanation on older servers. Can be changed later.
    type: dict
  node_taints:
    description:
      - Kubernetes taints for the nodes, applied by Magnum. Needs Magnum microversion 1.14. Can be changed later.
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
      - Role of the nodegroup (Magnum's default is C(worker)). C(master) cannot be created. Cannot be changed later.
    type: str
  wait:
    description:
      - Wait until Magnum reports C(*_COMPLETE) (or the nodegroup is gone after a delete).
      - When a change needs several calls, the module always waits between them; V(false) only skips waiting
        after the last one.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for each operation.
    type: int
    default: 1800
  drain:
    description:
      - Drain the Kubernetes nodes a shrink removes before resizing, and pass their servers to Magnum as
        C(nodes_to_remove) so that exactly the drained nodes go away.
      - Nodes are found by their C(magnum.openstack.org/nodegroup) label; the ones already cordoned, then those
        with the fewest GPU pods, then the newest are chosen.
      - Without this option Magnum chooses the nodes and nothing is drained.
    type: dict
    suboptions:
      kubeconfig:
        description: Path to the kubeconfig of the cluster.
        type: path
        required: true
      context:
        description: Context in the kubeconfig; the current context when not set.
        type: str
      gpu_resource_prefixes:
        description:
          - A pod uses GPUs when a container requests a resource starting with one of these prefixes, or when it
            has DRA resource claims. Only such pods are evicted.
        type: list
        elements: str
        default: [nvidia.com/]
      timeout:
        description: Seconds to wait for the evicted pods to go away.
        type: int
        default: 600
extends_documentation_fragment:
  - gpupool.core.openstack
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.actiongroups
attributes:
  action_group:
    membership: [gpupool.core.openstack]
  check_mode:
    support: full
    details: Reads the cluster and nodegroup (and the nodes for O(drain)), reports the plan; sends no write request.
  diff_mode:
    support: full
  platform:
    platforms: all
requirements:
  - kubernetes >= 24.2.0 (only with O(drain))
notes:
  - Magnum's API answers 202 and works asynchronously; with O(wait=false) the returned nodegroup is the state right
    after the request.
  - Flavor and image are compared as strings with what Magnum stored, so give them the same way (name or id) as
    when the nodegroup was created.
seealso:
  - module: gpupool.core.nodegroup_info
"""

EXAMPLES = r"""
- name: A GPU nodegroup that keeps the cluster's labels
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

- name: Scale it down, draining the GPU pods of the nodes that go away
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
    node_count: 1
    drain:
      kubeconfig: ~/.kube/k8s-prod

- name: Kubernetes labels and taints set by Magnum (microversion 1.14)
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

- name: Remove it, without waiting for Magnum
  gpupool.core.nodegroup:
    cloud: cern
    cluster: k8s-prod
    name: gpu-a100
    state: absent
    wait: false
"""

RETURN = r"""
nodegroup:
  description:
    - The nodegroup as Magnum shows it after the change (an empty dict after a delete).
    - In check mode, the state the plan leads to.
  returned: always
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
  description: The API calls of the plan, in order (done, or planned in check mode).
  returned: always
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
  description: Retries and status changes seen while waiting, with the elapsed time.
  returned: always
  type: list
  elements: str
  sample: ["create nodegroup 'gpu-a100' of cluster 'k8s-prod' with 2 node(s): CREATE_IN_PROGRESS after 0.3s (2 nodes)"]
drain:
  description: The drain plan of a shrink with O(drain) (victims, nodes_to_remove, cordon, evict).
  returned: when a shrink is planned and O(drain) is set
  type: dict
  sample: {victims: [k8s-gpu-a100-x1y2z-node-3], nodes_to_remove: [7f0c...], cordon: [k8s-gpu-a100-x1y2z-node-3],
           evict: [{node: k8s-gpu-a100-x1y2z-node-3, namespace: ml, name: train-0}]}
diff:
  description: Before and after (name, role, flavor_id, image_id, counts, docker_volume_size, labels, node labels
    and taints), with C(--diff).
  returned: when diff mode is on
  type: dict
  sample: {before: {node_count: 2}, after: {node_count: 4}}
status:
  description: Status of the nodegroup when an operation failed or timed out.
  returned: on failure while waiting
  type: str
  sample: CREATE_FAILED
status_reason:
  description: Magnum's reason for a failed operation.
  returned: on failure while waiting
  type: str
  sample: "Quota exceeded for instances: Requested 2, but already used 10 of 10 instances"
"""

import time

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpupool.core.plugins.module_utils.module import MagnumModule
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import MagnumClient, MagnumError, OperationFailed, WaitTimeout
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.eviction import pod_uses_gpu
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodegroup import IN_PROGRESS_STATES, desired_state, format_version, plan_drain, plan_nodegroup

NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"


def argument_spec():
    return dict(
        cluster=dict(type="str", required=True),
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        flavor=dict(type="str", aliases=["flavor_id"]),
        image=dict(type="str", aliases=["image_id"]),
        node_count=dict(type="int"),
        min_node_count=dict(type="int"),
        max_node_count=dict(type="int"),
        docker_volume_size=dict(type="int"),
        labels=dict(type="dict"),
        merge_labels=dict(type="bool", default=True),
        node_labels=dict(type="dict"),
        node_taints=dict(type="list", elements="dict", options=dict(
            key=dict(type="str", required=True, no_log=False),
            value=dict(type="str"),
            effect=dict(type="str", required=True, choices=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        )),
        role=dict(type="str"),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=1800),
        drain=dict(type="dict", options=dict(
            kubeconfig=dict(type="path", required=True),
            context=dict(type="str"),
            gpu_resource_prefixes=dict(type="list", elements="str", default=["nvidia.com/"]),
            timeout=dict(type="int", default=600),
        )),
    )


class KubeDrainer(object):
    """The Kubernetes side of a drain, kept thin: list the nodegroup's nodes with their GPU pods,
    cordon, evict (policy/v1 Eviction, retried while a PodDisruptionBudget refuses), wait for the pods."""

    def __init__(self, kubeconfig, context=None, gpu_resource_prefixes=("nvidia.com/",), timeout=600, log=None):
        try:
            from kubernetes import client, config
        except ImportError:
            raise MagnumError(missing_required_lib("kubernetes", reason="to drain nodes (option drain)"))
        self.client = client
        self.api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig, context=context))
        self.prefixes = tuple(gpu_resource_prefixes)
        self.timeout = timeout
        self.log = log or (lambda text: None)

    def nodes(self, nodegroup):
        items = self.api.list_node(label_selector="%s=%s" % (NODEGROUP_LABEL, nodegroup)).items
        out = []
        for node in items:
            pods = self.api.list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node.metadata.name).items
            gpu_pods = []
            for pod in pods:
                owners = pod.metadata.owner_references or []
                if any(o.kind == "DaemonSet" for o in owners) or \
                        "kubernetes.io/config.mirror" in (pod.metadata.annotations or {}):
                    continue
                spec = self.api.api_client.sanitize_for_serialization(pod.spec)
                if pod_uses_gpu(spec, self.prefixes):
                    gpu_pods.append({"namespace": pod.metadata.namespace, "name": pod.metadata.name})
            out.append({"name": node.metadata.name, "provider_id": node.spec.provider_id,
                        "unschedulable": bool(node.spec.unschedulable), "gpu_pods": gpu_pods})
        return out

    def cordon(self, name):
        self.api.patch_node(name, {"spec": {"unschedulable": True}})
        self.log("cordoned node %s" % name)

    def evict(self, pods):
        deadline = time.monotonic() + self.timeout
        pending = list(pods)
        while pending:
            retry = []
            for pod in pending:
                meta = self.client.V1ObjectMeta(name=pod["name"], namespace=pod["namespace"])
                body = self.client.V1Eviction(metadata=meta)
                try:
                    self.api.create_namespaced_pod_eviction(pod["name"], pod["namespace"], body)
                    self.log("evicting pod %s/%s from %s" % (pod["namespace"], pod["name"], pod["node"]))
                except self.client.exceptions.ApiException as exc:
                    if exc.status == 404:
                        continue
                    if exc.status == 429:  # a PodDisruptionBudget says not now
                        retry.append(pod)
                        continue
                    raise
            if retry and time.monotonic() > deadline:
                raise MagnumError("Timed out after %ds evicting %s: a PodDisruptionBudget keeps refusing. Relax the "
                                  "budget or scale the workload, then run again."
                                  % (self.timeout, ", ".join("%(namespace)s/%(name)s" % p for p in retry)))
            pending = retry
            if pending:
                time.sleep(2)
        while True:
            left = []
            for pod in pods:
                try:
                    self.api.read_namespaced_pod(pod["name"], pod["namespace"])
                    left.append(pod)
                except self.client.exceptions.ApiException as exc:
                    if exc.status != 404:
                        raise
            if not left:
                return
            if time.monotonic() > deadline:
                raise MagnumError("Timed out after %ds waiting for evicted pods to terminate: %s. Nothing was "
                                  "resized; run again when they are gone (or raise drain.timeout)."
                                  % (self.timeout, ", ".join("%(namespace)s/%(name)s" % p for p in left)))
            time.sleep(2)


def _make_drainer(options, log):
    return make_drainer(options, log)  # looked up at call time, so tests can replace make_drainer


def make_drainer(options, log):
    return KubeDrainer(options["kubeconfig"], options.get("context"), options.get("gpu_resource_prefixes") or
                       ("nvidia.com/",), options.get("timeout") or 600, log)


class NodegroupRunner(object):
    """Plan and apply. client: MagnumClient; drainer_factory(options, log) for O(drain)."""

    def __init__(self, module, client, drainer_factory=None):
        self.module, self.client = module, client
        self.drainer_factory = drainer_factory or _make_drainer
        self.params = module.params
        self.result = {"changed": False, "actions": [], "nodegroup": {}, "progress": client.events}

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.result.pop("changed", None)
        self.module.fail_json(msg=msg, changed=bool(self.result.get("_wrote")),
                              **dict((k, v) for k, v in self.result.items() if not k.startswith("_")))

    def run(self):
        p, client = self.params, self.client
        try:
            desired = desired_state(p)
            version = client.negotiate()
            self.result["microversion"] = format_version(version)
            cluster = client.get_cluster(p["cluster"])
            cid = cluster["uuid"]
            what = "nodegroup '%s' of cluster '%s'" % (p["name"], cluster.get("name") or cid)
            observed = client.get_nodegroup(cid, p["name"])
            if observed and observed.get("status") in IN_PROGRESS_STATES and p["wait"] and not self.module.check_mode:
                observed = client.wait_settled(cid, observed["uuid"], p["timeout"], what)
            plan = plan_nodegroup(desired, observed, cluster, version, p["state"])
        except Problems as exc:
            return self.fail(str(exc))
        except MagnumError as exc:
            return self.fail(str(exc), error=exc.to_dict())

        self.result["changed"] = plan.changed
        self.result["actions"] = [a.to_dict() for a in plan.actions]
        if self.module._diff:
            self.result["diff"] = {"before": plan.before, "after": plan.after,
                                   "before_header": what, "after_header": what}
        drain_plan = drainer = None
        shrink = next((a for a in plan.actions if a.kind == "resize" and a.shrink_by), None)
        if shrink and p.get("drain"):
            try:
                drainer = self.drainer_factory(p["drain"], client.log)
                drain_plan = plan_drain(drainer.nodes(p["name"]), shrink.shrink_by, what)
            except (Problems, MagnumError) as exc:
                return self.fail(str(exc))
            except Exception as exc:  # kubernetes client errors
                return self.fail("Cannot read the nodes of %s from Kubernetes (kubeconfig %s): %s"
                                 % (what, p["drain"]["kubeconfig"], exc))
            self.result["drain"] = drain_plan

        if self.module.check_mode:
            self.result["nodegroup"] = dict(observed or {}, **plan.after) if plan.after else {}
            return self.module.exit_json(**self.result)

        ng = observed
        try:
            for index, action in enumerate(plan.actions):
                last = index == len(plan.actions) - 1
                ng = self.apply(cid, observed, action, drain_plan, drainer, wait=p["wait"] or not last)
                self.result["actions"][index] = action.to_dict()  # nodes_to_remove added by a drain
            if plan.wait_gone and p["wait"]:
                client.wait(cid, observed["uuid"], {"gone": True}, p["timeout"], "delete of %s" % what,
                            initial_status=observed.get("status"))
        except (Problems, MagnumError) as exc:
            extra = {}
            if isinstance(exc, MagnumError):
                extra["error"] = exc.to_dict()
            if isinstance(exc, (OperationFailed, WaitTimeout)):
                extra.update(status=exc.status, status_reason=exc.detail)
            return self.fail(str(exc), **extra)
        except Exception as exc:  # kubernetes client errors during the drain
            return self.fail("Draining the nodes of %s failed: %s: %s. Nothing was resized; fix the cause and run "
                             "again." % (what, type(exc).__name__, exc))
        self.result["nodegroup"] = (ng or {}) if p["state"] == "present" else {}
        self.result.pop("_wrote", None)
        return self.module.exit_json(**self.result)

    def apply(self, cid, observed, action, drain_plan, drainer, wait):
        """Send one action; wait for its expectation when ``wait``. Returns the nodegroup view."""
        client, p = self.client, self.params
        initial = (observed or {}).get("status")
        ng = None
        if action.kind == "create":
            ng = client.create_nodegroup(cid, action.payload)
            ident = ng.get("uuid") or p["name"]
        elif action.kind == "delete":
            client.delete_nodegroup(cid, observed["uuid"])
            ident = observed["uuid"]
        elif action.kind == "patch":
            ng = client.patch_nodegroup(cid, observed["uuid"], action.payload)
            ident = observed["uuid"]
        elif action.kind == "resize":
            body = dict(action.payload)
            if drain_plan and action.shrink_by:
                for name in drain_plan["cordon"]:
                    drainer.cordon(name)
                drainer.evict(drain_plan["evict"])
                body["nodes_to_remove"] = drain_plan["nodes_to_remove"]
                action.payload = body
            client.resize(cid, body["nodegroup"], body["node_count"], body.get("nodes_to_remove"))
            ident = observed["uuid"]
        else:  # pragma: no cover
            raise MagnumError("unknown action %s" % action.kind)
        self.result["_wrote"] = True
        if not wait:
            if action.kind == "delete":
                return None
            return ng if ng is not None else client.get_nodegroup(cid, ident)
        return client.wait(cid, ident, action.expect, p["timeout"], action.summary, initial_status=initial)


class NodegroupModule(MagnumModule):
    argument_spec = argument_spec()
    module_kwargs = dict(required_by={"drain": "node_count"})

    def run(self):
        client = MagnumClient(self.connect(), log=self.ansible.log)
        NodegroupRunner(self.ansible, client).run()


def main():
    NodegroupModule()()


if __name__ == "__main__":
    main()
