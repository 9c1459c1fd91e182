# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The requests of a MIG layout rollout (gpupool.core.mig_layout), in order. Thin I/O over plan/mig/.

  plan    the nodes from the run's view (ApplyEngine.observe; no GET per node), one GET of the MIG manager's
          ConfigMap, with a drain the pods of each node to change (one LIST each)
  write   the ConfigMap, read-modify-write with its resourceVersion (plan/mig/config_map.py says why), read and
          merged again when someone changed it meanwhile
  waves   per wave: cordon (decided from the node as last listed) carrying the node's first label write (the
          config label when nothing is to evict first: one pod LIST per such node of a draining pool says so;
          a reconfigure's removal of the label), evict through the one drain (k8s/drain.py), relabel, label, then
          watch it with the one waiter: ONE label-selected LIST per round, a GET only for a node missing from
          it; uncordon what this run cordoned. A node that changes layout: 2 patches (cordon+label, uncordon)

What to write and what to say is decided in plan/mig/ (rollout_plan.RolloutPlan holds the plan and the result,
waves.py the decisions inside a wave); waits read live, and progress lines go to the step's Progress.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, lease_check
from ansible_collections.gpupool.core.plugins.module_utils.k8s.drain import Drain, DrainError
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CORDON_VALUE
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import CONFIG_MAP, NODE
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import config_map as plan_config_map
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import waves as plan_waves
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    BlockedPools,
    blocked_problems,
    label_patch,
    unlabel_patch,
    wave_status,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import PoolPlan, Wave
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_plan import RolloutPlan
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_reasons
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import DrainSettings
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import assign_nodes
from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter


class Stop(GpupoolError):
    """The rollout stops: message for the person, already recorded in the waves."""


class MigRollout:
    """Runs a RolloutPlan against the API server: `plan()` reads and plans, `run()` writes and waits; the
    plan's `result()` says what was done, also after a failure."""

    def __init__(
        self,
        engine: Any,
        plan: RolloutPlan,
        warn: Callable[[str], None],
        progress: Progress,
        run: Optional[str] = None,
    ) -> None:
        self.engine = engine
        self.run_holder = run  # this run's identity, recorded with every cordon (the cordon ledger)
        self.client = engine.client
        self.plan = plan
        self.options = plan.options
        self.mm = plan.mig_manager
        self.where = plan_config_map.where(self.mm.namespace, self.mm.config_map)
        self.warn = warn
        self.progress = progress
        # The one drain (k8s/drain.py) per pool, as its drain policy says; cordons made here are marked as
        # mig_layout's. `self.drainer` (the cluster's policy) uncordons.
        self.drainers = {name: self._drainer(settings) for name, settings in plan.settings.items()}
        self.drainer = self._drainer(plan.cluster_settings)
        self.nodes_by_name: Dict[str, dict] = {}
        self.read: Optional[tuple] = None  # (live ConfigMap, document, config_map.Records) as the plan read them
        self.merged: Optional[tuple] = None  # (document, names, changes) as the plan merged them

    def _drainer(self, settings: DrainSettings) -> Drain:
        return Drain.for_settings(
            self.client,
            CORDON_VALUE,
            settings,
            run=self.run_holder,
            sleep=max(0.1, min(self.options.wait_sleep, 2.0)),
            warn=self.warn,
            progress=self.progress,
        )

    # ---- plan ------------------------------------------------------------------------------------------
    def read_config_map(self) -> tuple:
        """(live ConfigMap, document, this owner's view of who recorded which config: config_map.Records)."""
        live = self.engine.get(CONFIG_MAP, self.mm.config_map, self.mm.namespace)
        doc = plan_config_map.read(live, self.where)[0]
        return live, doc, plan_config_map.records(live, self.plan.owner)

    def merge(self, doc: dict, records: plan_config_map.Records, nodes: List[dict]) -> tuple:
        """(document, records, changes) to write; refuses a config another owner wrote otherwise (no write yet)."""
        plan = self.plan
        merged = plan_config_map.merge(doc, plan.desired, records, nodes, plan.prunes, self.where, plan.config_paths)
        for text in merged.warnings:
            self.warn(text)
        return merged.doc, merged.records, merged.changes

    def plan_rollout(self) -> None:
        """Read what the plan needs and plan every pool; a pool with a failed node gets no wave (run() fails at the
        end, after the other pools rolled)."""
        o, plan = self.options, self.plan
        nodes = self.engine.observe(NODE)  # the run's view (k8s/run_view.py); the waves below read live
        self.nodes_by_name = {n["metadata"]["name"]: n for n in nodes}
        assigned = assign_nodes(plan.static, nodes, o.nodegroup_label, o.name_pattern)
        self.read = self.read_config_map()
        self.merged = self.merge(self.read[1], self.read[2], nodes)
        plan.documents = (self.read[1], self.merged[0])
        changes = self.merged[2]
        for text in plan.plan_pools(assigned, {n for n, c in changes.items() if c in ("created", "updated")}):
            self.warn(text)
        for pool_plan in plan.plans:
            drainer = self.drainers[pool_plan.pool] if plan.drains(pool_plan.pool) else None
            for index, wave in enumerate(pool_plan.waves):
                pods = {n: drainer.pod_plan(n) for n in wave} if drainer is not None else None
                plan.add_wave(pool_plan, index, pods)

    # ---- ConfigMap ---------------------------------------------------------------------------------------
    def write_config_map(self, attempts: int = plan_config_map.ATTEMPTS) -> None:
        """Read-modify-write with the resourceVersion as precondition (plan/mig/config_map.py says why)."""
        (live, doc, owned), (new_doc, names, changes) = self.read, self.merged
        if live is None and not self.plan.configs:
            return  # no static MIG pool and no ConfigMap: nothing to store (and no GPU Operator needed)
        for attempt in range(attempts):
            self.plan.config_map["configs"] = dict(changes.items())
            if not plan_config_map.needs_write(live, doc, owned.written(), new_doc, names.written()):
                return
            self.plan.config_map["action"] = "created" if live is None else "updated"
            # check mode sends the create as a dry run: the server's answer on the namespace, as the converge gets it
            if not self.plan.check or live is None:
                try:
                    self.send_config_map(live, new_doc, names, dry_run=self.plan.check)
                except Conflict:
                    if attempt + 1 == attempts:
                        message, hint = plan_config_map.kept_changing(self.mm.namespace, self.mm.config_map, attempts)
                        raise K8sError(message, hint=hint)
                    live, doc, owned = self.read_config_map()
                    new_doc, names, changes = self.merge(doc, owned, list(self.nodes_by_name.values()))
                    continue
            self.plan.changed = True
            self.plan.diff.append(
                plan_config_map.diff_entry(self.mm.namespace, self.mm.config_map, doc, new_doc, changes)
            )
            return

    def send_config_map(
        self, live: Optional[dict], doc: dict, names: plan_config_map.Records, dry_run: bool = False
    ) -> None:
        ns, name = self.mm.namespace, self.mm.config_map
        if live is not None:
            self.engine.merge_patch(CONFIG_MAP, name, plan_config_map.update_patch(live, doc, names), namespace=ns)
            return
        body = plan_config_map.create_body(ns, name, doc, names)
        query = {"fieldManager": self.engine.field_manager}
        if dry_run:
            query["dryRun"] = "All"
        try:
            self.client.request("POST", self.client.path("", "v1", "configmaps", ns), query=query, body=body)
        except K8sError as err:
            if err.status == 404:
                message, hint = plan_config_map.namespace_missing(ns, name)
                raise K8sError(message, status=404, hint=hint)
            raise

    # ---- nodes --------------------------------------------------------------------------------------------
    def patch_node(self, name: str, patch: dict) -> None:
        self.engine.merge_patch(NODE, name, patch)
        self.plan.changed = True

    def uncordon_leftovers(self, pool_plan: PoolPlan) -> None:
        """Nodes an interrupted earlier run left cordoned, now done: uncordon (unless someone cordoned one after
        gpupool: the drainer leaves that cordon, names the node, and removes only gpupool's record)."""
        for row in pool_plan.nodes:
            if row.uncordon:
                done = None if self.plan.check else self.drainer.uncordon(row.name, self.nodes_by_name.get(row.name))
                if self.plan.check or done in ("uncordoned", "theirs"):
                    self.plan.changed = True

    def cordon(self, pool_plan: PoolPlan, entry: Wave, name: str) -> None:
        """Cordon one node of the wave, decided from the node as the plan's (or a later wave's) LIST read it:
        no GET per node; the node's first label write goes in the same patch (plan_waves.cordon_write), with the
        cordon ledger's reason. A configure node of a draining pool has its pods read first: its label goes with
        the cordon only when there is nothing to evict."""
        action, drains = entry.actions[name], self.plan.drains(pool_plan.pool)
        idle = self.drainers[pool_plan.pool].idle(name) if plan_waves.needs_pods_read(action, drains) else True
        sent = plan_waves.cordon_write(action, idle, pool_plan.config_name, pool_plan.digest)
        reason = cordon_reasons.mig_layout(pool_plan.pool, pool_plan.config_name)
        done = self.drainer.cordon(name, self.nodes_by_name.get(name), also=sent, reason=reason)
        ours, changed, written = plan_waves.after_cordon(done, sent)
        if ours:
            entry.cordoned.append(name)
        if changed:
            self.plan.changed = True
        if written and sent is not None:
            plan_waves.record_cordon_write(entry, name, sent, time.time())

    def run_wave(self, pool_plan: PoolPlan, entry: Wave) -> None:
        wave, pool = entry.nodes, pool_plan.pool
        config, digest = pool_plan.config_name, pool_plan.digest
        subject = plan_waves.subject(pool_plan, entry)
        self.progress.start(subject, plan_waves.start_status(wave, self.plan.drains(pool)))
        entry.started = time.time()
        try:
            if self.plan.cordons(pool):
                for name in wave:
                    self.cordon(pool_plan, entry, name)
            if self.plan.drains(pool):
                entry.evicted = self.drainers[pool].evict(wave)
                self.plan.changed = self.plan.changed or bool(entry.evicted)
            for name in plan_waves.to_relabel(entry):
                self.patch_node(name, unlabel_patch())
                entry.unlabelled[name] = time.time()
            pause = plan_waves.relabel_pause(entry, self.options.relabel_delay, time.time())
            if pause > 0:
                time.sleep(pause)
            for name in plan_waves.to_label(entry):
                self.patch_node(name, label_patch(config, digest))
                entry.labelled[name] = time.time()
            states = self.wait(wave, config, entry, subject)
        except (K8sError, DrainError, Stop) as err:
            entry.result = "error"
            entry.finished = time.time()
            text = err.describe() if isinstance(err, K8sError) else str(err)
            raise Stop(plan_waves.left_cordoned(text, entry.cordoned))
        entry.states = states
        entry.finished = time.time()
        self.plan.diff.extend(plan_waves.node_diffs(pool_plan, wave, states))
        bad = plan_waves.bad_nodes(wave, states)
        for name in entry.cordoned:
            if name not in bad:
                self.drainer.uncordon(name, self.nodes_by_name.get(name))  # the wait's LIST: no GET
        entry.result = plan_waves.wave_result(bad, states)
        if bad:
            self.plan.failed_nodes += bad
            self.progress.done(subject, plan_waves.stopped_status(bad, states))
            raise Stop(
                plan_waves.failure_message(
                    pool_plan,
                    entry,
                    bad,
                    states,
                    self.plan.later_nodes(entry),
                    self.options.wait_timeout,
                    self.mm.namespace,
                )
            )
        self.progress.done(subject, plan_waves.done_status(wave))

    def wait(self, wave: List[str], config: str, entry: Wave, subject: str) -> Dict[str, str]:
        """Watch one wave: ONE LIST of the nodes labelled with the config per round (not a GET per node), polled
        after 1 s and then less and less often, up to wait_sleep; a wave node missing from the LIST (deleted,
        or relabelled by someone else) is read on its own to tell which."""
        states: Dict[str, str] = {}
        now: Dict[str, Optional[dict]] = {}
        selector = plan_waves.config_selector(config)

        def probe():
            lease_check(self.client, "waiting for %s" % subject)  # a run that lost its lease stops within a poll
            listed = {n["metadata"]["name"]: n for n in self.engine.list(NODE, label_selector=selector)}
            self.nodes_by_name.update(listed)  # the freshest view, for later waves' preconditions
            now.clear()
            for name in wave:
                if name not in states:
                    now[name] = listed[name] if name in listed else self.engine.get(NODE, name)
            plan_waves.settle(states, now, config)
            seen = {n: listed.get(n) or now.get(n) for n in wave}
            return len(states) == len(wave), wave_status(wave, seen, config)

        Waiter(
            self.options.wait_timeout,
            min(1.0, self.options.wait_sleep),
            backoff=1.5,
            max_sleep=self.options.wait_sleep,
            progress=lambda status: self.progress.update(subject, status),
        ).until(probe)
        for name, last in plan_waves.timed_out(wave, states, now).items():
            entry.last_state[name] = last
            states[name] = "timeout"
        return states

    # ---- the run -------------------------------------------------------------------------------------------
    def run(self) -> None:
        """Write the ConfigMap, uncordon what earlier runs left, then each wave in order (check mode: only say
        what each would change). A pool blocked by a failed node rolled nothing: the step fails at the end,
        naming the node and how to retry it."""
        self.write_config_map()
        for pool_plan in self.plan.plans:
            self.uncordon_leftovers(pool_plan)
        for entry in self.plan.waves:
            pool_plan = self.plan.plan_of(entry)
            if self.plan.check:
                if self.plan.changes_in_check(entry):
                    self.plan.changed = True
                self.plan.diff.extend(plan_waves.node_diffs(pool_plan, entry.nodes, {}))
                continue
            self.run_wave(pool_plan, entry)
        problems = blocked_problems(self.plan.plans, self.mm.namespace)
        if problems:
            raise BlockedPools(problems)
