#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Roll out the static MIG layouts of GPU pools through NVIDIA's MIG manager
version_added: "0.1.0"
description:
  - For each pool in scope with C(mig.mode=static), writes the pool's C(nvidia-mig-parted) config into the MIG
    manager's ConfigMap and switches the pool's nodes to it, a few nodes at a time.
  - "Before anything is read or written: the inventory is validated with the pool model and every GPU's layout is
    placed by the MIG planner; an infeasible layout fails with the planner's explanation and nothing is changed."
  - "ConfigMap: C(gpupool_cluster.mig_manager.config_map) in C(mig_manager.namespace) (default
    C(gpupool-mig-parted-config) in C(gpu-operator)), key C(config.yaml), one C(version: v1) document. gpupool
    merges at the C(mig-configs) level: it adds or updates only its own configs (named by each pool's
    C(mig.config_name), default C(gpupool-<pool>)) and keeps every config others wrote. The names it wrote are
    recorded in the ConfigMap annotation C(gpupool.io/mig-configs). The write is a read-modify-write with the
    ConfigMap's C(resourceVersion) as precondition, retried when someone else changed it meanwhile. A config
    name that exists with other content and was not written by gpupool is an error."
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
    C(resourceVersion) as precondition (a node changed meanwhile is read again); without O(drain) and for a first
    config the cordon and the config label go in one write. A wave is watched with one LIST of the nodes carrying
    the config label per round, first after 1 s, then less and less often up to O(wait_sleep)."
  - "A node that ends in state C(failed) stops the rollout: the task fails naming the node, the nodes of later
    waves are not touched, and the failed node stays cordoned. A node already in state C(failed) for the wanted
    config stops the run before any write unless O(retry_failed=true)."
  - NotReady nodes that need a change are skipped with a warning (their MIG manager cannot act).
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
      - Seconds between removing and setting the config label again when a config changed under the same name.
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
      - Remove configs gpupool wrote earlier that no pool wants any more and no node is labelled with.
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
attributes:
  check_mode:
    support: full
    details: Reads the ConfigMap, nodes and pods and returns the plan (configs, waves, pods to evict) without any write.
  diff_mode:
    support: full
    details: The pool configs in the ConfigMap and each node's MIG labels and digest annotation, before and after.
  platform:
    platforms: all
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
  description: Per pool in scope, its config and the plan for each of its nodes.
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
diff:
  description:
    - With C(--diff), first the rollout plan as text (C(prepared)) - per pool each wave, its nodes with their MIG
      layout now and the layout they get, the pods evicted first when the pool's drain policy drains, and the steps
      around them - then before and after of gpupool's configs in the ConfigMap and of each switched node's labels.
  returned: when diff mode is on
  type: list
  elements: dict
"""

import time

from ansible_collections.gpupool.core.plugins.module_utils.argument_specs import DRAIN, NODES
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.mig import mig_parted as mig_mig_parted
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import MANAGED_BY
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import CONFIG_MAP, NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout_text as plan_mig_rollout_text
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import drain_settings
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import assign_nodes, node_matcher
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter


class Stop(GpupoolError):
    """The rollout stops: message for the person, already recorded in the waves."""


class Rollout:
    def __init__(self, module, cluster, scope):
        self.module = module
        self.p = module.params
        self.engine = module.engine
        self.client = module.engine.client
        self.cluster = cluster
        self.mm = cluster.mig_manager
        self.scope = scope
        self.static = [p for p in scope if p.state == "present" and p.mig.mode == "static"]
        self.configs = plan_mig_rollout.desired_configs(self.static)
        self.check = module.check_mode
        # The one drain (k8s/drain.py), as each pool's drain policy says (the inventory's, with the drain options
        # on top); cordons made here are marked as mig_layout's. `self.drainer` (the cluster's policy) uncordons.
        p = self.p
        self.settings = {
            pool.name: drain_settings(
                drain_policy(cluster, pool), p["drain"], p["drain_timeout"], p["drain_grace_period"]
            )
            for pool in self.static
        }
        self.drainers = {name: self._drainer(settings) for name, settings in self.settings.items()}
        self.drainer = self._drainer(
            drain_settings(drain_policy(cluster), p["drain"], p["drain_timeout"], p["drain_grace_period"])
        )
        self.changed = False
        self.diff = []
        self.waves = []
        self.failed_nodes = []
        self.pools = {}
        self.plans = []
        self.cm_result = {
            "name": self.mm.config_map,
            "namespace": self.mm.namespace,
            "action": "unchanged",
            "configs": {},
        }

    def _drainer(self, settings):
        return Drain.for_settings(
            self.client,
            model_names.CORDON_VALUE,
            settings,
            sleep=max(0.1, min(self.p["wait_sleep"], 2.0)),
            warn=self.module.warn,
        )

    def drains(self, pool_name):
        """Whether the waves of the pool evict their GPU pods first (its drain policy)."""
        return self.settings[pool_name].enabled

    def cordons(self, pool_name):
        return self.p["cordon"] or self.drains(pool_name)

    # ---- reads ----------------------------------------------------------------------------------------
    def read_config_map(self):
        live = self.engine.get(CONFIG_MAP, self.mm.config_map, self.mm.namespace)
        where = "ConfigMap %s/%s" % (self.mm.namespace, self.mm.config_map)
        data = (live or {}).get("data") or {}
        doc = plan_mig_rollout.read_document(data.get(mig_mig_parted.CONFIG_KEY), where)
        owned = plan_mig_rollout.owned_names(((live or {}).get("metadata") or {}).get("annotations"))
        return live, doc, owned

    def merge(self, doc, owned, nodes):
        desired = {n: c["entries"] for n, c in self.configs.items()}
        prune = []
        if self.p["prune"] and not self.p["pools"]:
            in_use = {(n["metadata"].get("labels") or {}).get(model_names.CONFIG_LABEL) for n in nodes}
            prune = [n for n in owned if n not in desired and n not in in_use]
            kept = [n for n in owned if n not in desired and n in in_use]
            for name in kept:
                self.module.warn(
                    "MIG config %s is no longer wanted by any pool but nodes are still labelled with it; "
                    "it stays in the ConfigMap until they are switched to another config" % name
                )
        where = "ConfigMap %s/%s" % (self.mm.namespace, self.mm.config_map)
        new_doc, names, changes = plan_mig_rollout.merge_document(doc, desired, owned, prune, where)
        return new_doc, names, changes

    # ---- plan -------------------------------------------------------------------------------------------
    def plan(self):
        nodes = self.engine.list(NODE)
        self.nodes_by_name = {n["metadata"]["name"]: n for n in nodes}
        assigned = assign_nodes(self.static, nodes, self.p["nodegroup_label"], self.p["name_pattern"])
        live, doc, owned = self.read_config_map()
        new_doc, names, changes = self.merge(doc, owned, nodes)
        self.cm = (live, doc, owned, new_doc, names, changes)
        changed_configs = {n for n, c in changes.items() if c in ("created", "updated")}
        for pool in self.scope:
            if pool not in self.static:
                why = "state absent" if pool.state != "present" else "mig.mode is %s" % pool.mig.mode
                self.pools[pool.name] = {"skipped": "no static MIG layout (%s)" % why}
                continue
            name = pool.mig_config_name
            cfg = self.configs[name]
            plan = plan_mig_rollout.plan_pool(
                pool.name,
                name,
                cfg["digest"],
                assigned[pool.name],
                self.mm.max_unavailable,
                config_changed=name in changed_configs,
                retry_failed=self.p["retry_failed"],
            )
            plan["selector"] = node_matcher(pool, self.p["nodegroup_label"], self.p["name_pattern"]).describe
            self.plans.append(plan)
            self.pools[pool.name] = {
                "config_name": name,
                "digest": cfg["digest"],
                "selector": plan["selector"],
                "nodes": plan["nodes"],
                "waves": plan["waves"],
            }
            for n in plan["skipped"]:
                self.module.warn(
                    "pool %s: node %s is NotReady and needs a MIG change; skipped (rerun when it is "
                    "Ready)" % (pool.name, n)
                )
        problems = plan_mig_rollout.blocked_problems(self.plans, self.mm.namespace)
        if problems:
            raise model_errors.Problems(problems)
        for plan in self.plans:
            pool, pods = plan["pool"], {}
            for i, wave in enumerate(plan["waves"]):
                actions = {r["name"]: r["action"] for r in plan["nodes"] if r["name"] in wave}
                entry = {
                    "pool": pool,
                    "index": i,
                    "nodes": list(wave),
                    "actions": actions,
                    "result": "planned" if self.check else "not started",
                }
                if self.drains(pool):
                    pods.update((n, self.drainers[pool].pod_plan(n)) for n in wave)
                    entry["evict"] = [plan_eviction.pod_ref(pod) for n in wave for pod in pods[n][0]]
                    entry["skip"] = [plan_eviction.pod_ref(pod) for n in wave for pod in pods[n][1]]
                self.waves.append(entry)

    # ---- ConfigMap ---------------------------------------------------------------------------------------
    def write_config_map(self, attempts=5):
        """Read-modify-write with the resourceVersion as precondition.

        Why not server-side apply: the MIG manager reads ONE string (data["config.yaml"]); server-side apply
        merges fields, not the YAML inside a string, so applying our configs would replace the whole document
        and take over (or conflict on) a field others write too. Parsing the document, changing only
        gpupool's mig-configs entries and writing it back with metadata.resourceVersion makes the API server
        refuse the write (409) if anyone changed the ConfigMap since we read it; we then read and merge again.
        """
        live, doc, owned, new_doc, names, changes = self.cm
        if live is None and not self.configs:
            return  # no static MIG pool and no ConfigMap: nothing to store (and no GPU Operator needed)
        for attempt in range(attempts):
            cm_changed = live is None or new_doc != doc or sorted(owned) != sorted(names)
            self.cm_result["configs"] = dict(changes.items())
            shown = sorted(n for n, c in changes.items() if c != "unchanged")
            before, after = plan_mig_rollout.ours_view(doc, shown), plan_mig_rollout.ours_view(new_doc, shown)
            if not cm_changed:
                return
            self.cm_result["action"] = "created" if live is None else "updated"
            if not self.check:
                try:
                    self._send_config_map(live, new_doc, names)
                except Conflict:
                    if attempt + 1 == attempts:
                        raise K8sError(
                            "ConfigMap %s/%s kept changing while gpupool merged its MIG configs (%d "
                            "attempts)" % (self.mm.namespace, self.mm.config_map, attempts),
                            hint="rerun; if it persists, find the tool rewriting it",
                        )
                    live, doc, owned = self.read_config_map()
                    new_doc, names, changes = self.merge(doc, owned, list(self.nodes_by_name.values()))
                    continue
            self.changed = True
            header = "ConfigMap %s/%s: mig-configs written by gpupool" % (self.mm.namespace, self.mm.config_map)
            self.diff.append(
                {
                    "before": {"mig-configs": before},
                    "after": {"mig-configs": after},
                    "before_header": header,
                    "after_header": header,
                }
            )
            return

    def _send_config_map(self, live, doc, names):
        text = plan_mig_rollout.write_document(doc)
        ann = {model_names.CONFIGS_ANNOTATION: ",".join(names)}
        ns, name = self.mm.namespace, self.mm.config_map
        if live is None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns, "labels": dict(MANAGED_BY), "annotations": ann},
                "data": {mig_mig_parted.CONFIG_KEY: text},
            }
            try:
                self.client.request(
                    "POST",
                    self.client.path("", "v1", "configmaps", ns),
                    query={"fieldManager": self.engine.field_manager},
                    body=body,
                )
            except K8sError as err:
                if err.status == 404:
                    raise K8sError(
                        "namespace %s does not exist, so the MIG manager ConfigMap %s cannot be created" % (ns, name),
                        status=404,
                        hint="install the GPU Operator (its MIG manager reads the ConfigMap) or set "
                        "gpupool_cluster.mig_manager.namespace to where it runs",
                    )
                raise
            return
        patch = {
            "metadata": {"resourceVersion": live["metadata"]["resourceVersion"], "annotations": ann},
            "data": {mig_mig_parted.CONFIG_KEY: text},
        }
        self.engine.merge_patch(CONFIG_MAP, name, patch, namespace=ns)

    # ---- nodes --------------------------------------------------------------------------------------------
    def patch_node(self, name, patch):
        self.engine.merge_patch(NODE, name, patch)
        self.changed = True

    def node_diffs(self, plan, wave, states):
        for row in plan["nodes"]:
            if row["name"] not in wave or row["action"] not in (
                plan_mig_rollout.CONFIGURE,
                plan_mig_rollout.RECONFIGURE,
            ):
                continue
            b = row["before"]
            header = "Node %s (pool %s)" % (row["name"], plan["pool"])
            self.diff.append(
                {
                    "before": plan_mig_rollout.node_diff_view(b["config"], b["state"], b["digest"]),
                    "after": plan_mig_rollout.node_diff_view(
                        plan["config_name"], states.get(row["name"], "success"), plan["digest"]
                    ),
                    "before_header": header,
                    "after_header": header,
                }
            )

    def uncordon_leftovers(self, plan):
        """Nodes an interrupted earlier run left cordoned, now done: uncordon."""
        for row in plan["nodes"]:
            if row.get("uncordon"):
                if not self.check:
                    self.drainer.uncordon(row["name"])
                self.changed = True

    def run_wave(self, plan, entry):
        wave = entry["nodes"]
        config, digest = plan["config_name"], plan["digest"]
        actions = entry["actions"]
        entry["started"] = time.time()
        entry["cordoned"] = []
        entry["labelled"] = {}
        try:
            pool = plan["pool"]
            if self.cordons(pool):
                for name in wave:
                    # Decided from the node as the plan's (or a later wave's) LIST read it: no GET per node. Cordon
                    # and label go in one write when nothing has to happen in between (no drain, no relabel): the
                    # MIG manager may start at once, the node takes no new pods from then on.
                    together = not self.drains(pool) and actions[name] == plan_mig_rollout.CONFIGURE
                    label = plan_mig_rollout.label_patch(config, digest) if together else None
                    done = self.drainer.cordon(name, self.nodes_by_name.get(name), also=label)
                    if done in ("cordoned", "ours"):  # "ours": left cordoned by an earlier failed run
                        entry["cordoned"].append(name)
                    if done == "cordoned" or (label is not None and done is not None):
                        self.changed = True
                    if label is not None and done is not None:
                        entry["labelled"][name] = time.time()
            if self.drains(pool):
                entry["evicted"] = self.drainers[pool].evict(wave)
                self.changed = self.changed or bool(entry["evicted"])
            actions = entry["actions"]
            relabel = [n for n in wave if actions[n] == plan_mig_rollout.RECONFIGURE]
            for name in relabel:
                self.patch_node(name, plan_mig_rollout.unlabel_patch())
            if relabel:
                time.sleep(self.p["relabel_delay"])
            for name in wave:
                if (
                    actions[name] in (plan_mig_rollout.CONFIGURE, plan_mig_rollout.RECONFIGURE)
                    and name not in entry["labelled"]
                ):
                    self.patch_node(name, plan_mig_rollout.label_patch(config, digest))
                    entry["labelled"][name] = time.time()
            states = self.wait(wave, config, entry)
        except (K8sError, DrainError, Stop) as err:
            entry["result"] = "error"
            entry["finished"] = time.time()
            text = err.describe() if isinstance(err, K8sError) else str(err)
            if entry["cordoned"]:
                text += (
                    " Cordoned by this run and left so: %s (a rerun continues the rollout and uncordons them)."
                    % ", ".join(entry["cordoned"])
                )
            raise Stop(text)
        entry["states"] = states
        entry["finished"] = time.time()
        self.node_diffs(plan, wave, states)
        bad = [n for n in wave if states[n] != "success"]
        for name in entry["cordoned"]:
            if name not in bad:
                self.drainer.uncordon(name)
        if bad:
            self.failed_nodes += bad
            entry["result"] = "timeout" if all(states[n] == "timeout" for n in bad) else "failed"
            raise Stop(self.failure_message(plan, entry, bad, states))
        entry["result"] = "success"

    def wait(self, wave, config, entry):
        """Watch one wave: ONE LIST of the nodes labelled with the config per round (not a GET per node), polled
        after 1 s and then less and less often, up to wait_sleep; a wave node missing from the LIST (deleted,
        or relabelled by someone else) is read on its own to tell which."""
        states = {}
        now = {}
        selector = "%s=%s" % (model_names.CONFIG_LABEL, config)

        def probe():
            listed = {n["metadata"]["name"]: n for n in self.engine.list(NODE, label_selector=selector)}
            self.nodes_by_name.update(listed)  # the freshest view, for later waves' preconditions
            now.clear()
            for name in wave:
                if name not in states:
                    now[name] = listed[name] if name in listed else self.engine.get(NODE, name)
            for name, prog in plan_mig_rollout.wave_progress(now, config).items():
                if prog == "done":
                    states[name] = "success"
                elif prog in ("failed", "gone", "relabelled"):
                    states[name] = prog
            return len(states) == len(wave), "%d/%d node(s) of the wave finished" % (len(states), len(wave))

        first = min(1.0, self.p["wait_sleep"])
        Waiter(self.p["wait_timeout"], first, backoff=1.5, max_sleep=self.p["wait_sleep"]).until(probe)
        for name in wave:
            if name not in states:
                node = now.get(name) or {}
                entry.setdefault("last_state", {})[name] = (
                    (node.get("metadata") or {}).get("labels", {}).get(model_names.STATE_LABEL)
                )
                states[name] = "timeout"
        return states

    def failure_message(self, plan, entry, bad, states):
        later = []
        after = False
        for w in self.waves:
            if w is entry:
                after = True
                continue
            if after:
                later += w["nodes"]
        parts = []
        for name in bad:
            st = states[name]
            if st == "failed":
                parts.append(
                    "node %s reports %s=failed for config %s" % (name, model_names.STATE_LABEL, plan["config_name"])
                )
            elif st == "timeout":
                parts.append(
                    "node %s did not reach %s=success within %ds (last state: %s)"
                    % (
                        name,
                        model_names.STATE_LABEL,
                        self.p["wait_timeout"],
                        (entry.get("last_state") or {}).get(name) or "not set",
                    )
                )
            elif st == "gone":
                parts.append("node %s was deleted during the change" % name)
            else:
                parts.append("node %s got another %s while gpupool waited" % (name, model_names.CONFIG_LABEL))
        text = "MIG layout rollout of pool %s stopped: %s." % (plan["pool"], "; ".join(parts))
        if later:
            text += " Not touched: %s." % ", ".join(later)
        cordoned = [n for n in bad if n in entry.get("cordoned", [])]
        if cordoned:
            text += " %s %s cordoned." % (", ".join(cordoned), "stays" if len(cordoned) == 1 else "stay")
        text += (
            " Read the nvidia-mig-manager log on the node (kubectl -n %s logs -l app=nvidia-mig-manager "
            "--field-selector spec.nodeName=%s), fix the cause, then rerun with retry_failed: true."
            % (self.mm.namespace, bad[0])
        )
        return text

    # ---- the run -------------------------------------------------------------------------------------------
    def run(self):
        self.write_config_map()
        by_pool = {p["pool"]: p for p in self.plans}
        for plan in self.plans:
            self.uncordon_leftovers(plan)
        for entry in self.waves:
            plan = by_pool[entry["pool"]]
            if self.check:
                if any(
                    a in (plan_mig_rollout.CONFIGURE, plan_mig_rollout.RECONFIGURE) for a in entry["actions"].values()
                ) or self.cordons(entry["pool"]):
                    self.changed = True
                self.node_diffs(plan, entry["nodes"], {})
                continue
            self.run_wave(plan, entry)

    def rollout_text(self):
        """The waves as text for --diff (plan/mig/rollout_text.py); '' before the plan or without waves."""
        if not getattr(self, "cm", None) or not self.waves:
            return ""
        before = dict(((self.cm[1] or {}).get("mig-configs") or {}))
        after = dict(((self.cm[3] or {}).get("mig-configs") or {}))
        after.update((name, config["entries"]) for name, config in self.configs.items())
        return plan_mig_rollout_text.rollout_text(
            self.plans, self.waves, after, before, self.cordons, self.drains, self.mm.max_unavailable
        )

    def result(self):
        out = dict(
            changed=self.changed,
            config_map=self.cm_result,
            pools=self.pools,
            waves=self.waves,
            failed_nodes=self.failed_nodes,
            skipped_nodes=sorted(n for p in self.plans for n in p["skipped"]),
        )
        if self.module.diff_mode:
            out["diff"] = self.diff
            text = self.rollout_text()
            if text:  # the plan first: what the node diffs below amount to
                out["diff"] = [{"prepared": text}] + self.diff
        return out


class MigLayoutModule(KubernetesModule):
    shared = (NODES, DRAIN)
    argument_spec = dict(
        cordon=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=5.0),
        relabel_delay=dict(type="float", default=5.0),
        retry_failed=dict(type="bool", default=False),
        prune=dict(type="bool", default=True),
    )
    required_libraries = ("pydantic", "yaml")
    job = None

    def prepare(self):
        super().prepare()
        p = self.params
        for key, low in (("drain_timeout", 1), ("wait_timeout", 1), ("drain_grace_period", 0)):
            if p[key] is not None and p[key] < low:
                raise model_errors.Problems(
                    [(key, "must be at least %d, got %d" % (low, p[key]))], subject="in the module options"
                )
        if p["wait_sleep"] <= 0 or p["relabel_delay"] < 0:
            raise model_errors.Problems("wait_sleep must be greater than 0 and relabel_delay at least 0")
        static = [pl for pl in self.selected if pl.state == "present" and pl.mig.mode == "static"]
        plan_mig_rollout.desired_configs(static)  # plans every layout before any request
        for pl in static:
            node_matcher(pl, p["nodegroup_label"], p["name_pattern"])

    def run(self):
        self.job = Rollout(self, self.cluster, self.selected)
        self.job.plan()
        self.job.run()
        return self.job.result()

    def partial_result(self):
        if self.job is None:
            return {"changed": False}
        return self.job.result()


def main():
    MigLayoutModule()()


if __name__ == "__main__":
    main()
