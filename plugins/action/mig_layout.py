# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.mig_layout, run in the controller (its documentation: plugins/modules/mig_layout.py)."""

from __future__ import annotations

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
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


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
            progress=self.module.progress,
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
        nodes = self.engine.observe(NODE)  # the run's view (k8s/run_view.py); the waves below read live
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

    @staticmethod
    def subject(plan, entry):
        """How progress lines name a wave: MIG wave 1/2 of gpu-a100-mig."""
        return "MIG wave %d/%d of %s" % (entry["index"] + 1, len(plan["waves"]), plan["pool"])

    def run_wave(self, plan, entry):
        wave = entry["nodes"]
        self.module.progress.start(
            self.subject(plan, entry),
            "%s %s" % (", ".join(wave), "cordon, drain, then MIG" if self.drains(plan["pool"]) else "MIG"),
        )
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
            states = self.wait(wave, config, entry, self.subject(plan, entry))
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
            self.module.progress.done(
                self.subject(plan, entry), "stopped: %s" % ", ".join("%s %s" % (n, states[n]) for n in bad)
            )
            raise Stop(self.failure_message(plan, entry, bad, states))
        entry["result"] = "success"
        self.module.progress.done(self.subject(plan, entry), "done: %s success" % ", ".join(wave))

    def wait(self, wave, config, entry, subject):
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
            seen = {n: listed.get(n) or now.get(n) for n in wave}
            return len(states) == len(wave), plan_mig_rollout.wave_status(wave, seen, config)

        first = min(1.0, self.p["wait_sleep"])
        Waiter(
            self.p["wait_timeout"],
            first,
            backoff=1.5,
            max_sleep=self.p["wait_sleep"],
            progress=lambda status: self.module.progress.update(subject, status),
        ).until(probe)
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


class ActionModule(StepAction):
    step = MigLayoutModule
