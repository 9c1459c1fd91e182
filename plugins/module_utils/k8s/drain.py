# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one drain of the collection: cordon, evict the pods that use GPUs, wait for them to go, uncordon.

Used by gpupool.core.nodegroup (nodes a shrink or a delete removes) and gpupool.core.mig_layout (nodes of a
MIG wave). Which pods go and the request bodies are decided in plan/nodes/eviction.py; waiting goes through the
one `Waiter` (plan/waiting.py) with one deadline for the whole drain (`timeout`).

Evictions go through the policy/v1 Eviction subresource, so PodDisruptionBudgets apply: a 429 answer
("the budget allows no disruption now") is retried until the deadline, then the drain fails naming the
pod and its budget's message. A cordon records which module made it (annotation gpupool.io/cordoned-by),
so a module only ever uncordons nodes it cordoned itself.

No dry run here: in check mode the modules plan a drain (`gpu_pods`) but never run one.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import (
    CONTENT_MERGE,
    RETRY_STATUS,
    Conflict,
    K8sError,
    NotFound,
    lease_check,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import FIELD_MANAGER
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import cordon_owner
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import eviction as plan_eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.progress import Progress
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter

# An Eviction answered 429 is a PodDisruptionBudget refusing, waited out by the drain, not retried by the client.
EVICTION_RETRY_STATUS = RETRY_STATUS - {429}


class DrainError(GpupoolError):
    """A drain could not finish: a budget kept refusing or evicted pods did not go in time."""


class Drain:
    """Cordon / evict / wait / uncordon over a `K8sClient`.

    cordon_by: the value of the cordon annotation (which module cordons); timeout: seconds for one `evict()`
    (evictions refused by a budget plus waiting for the pods to go); grace_period: the evicted pods' grace
    period (None: each pod's own); sleep: seconds between two tries or checks; warn(text): pods that use
    GPUs but are not evicted (DaemonSet and static pods, those `skip_pods` selects); progress: the step's
    `plan.progress.Progress`, told what the drain does and waits for (the nodes being drained, the pods still to
    go, a budget that refuses); skip_pods: label selector of GPU pods never evicted; when_budget_blocks: "wait" (a budget's
    refusal is tried again until the timeout) or "fail" (the first refusal ends the drain). Timeout, grace
    period, skip_pods and when_budget_blocks come from the inventory's drain policy (`for_settings`).
    """

    @classmethod
    def for_settings(cls, client, cordon_by: str, settings, **kwargs) -> "Drain":
        """A drain as plan/eviction.DrainSettings says (the inventory's policy with a module's options on top)."""
        return cls(
            client,
            cordon_by,
            timeout=settings.timeout,
            grace_period=settings.grace_period,
            skip_pods=settings.skip_pods,
            when_budget_blocks=settings.when_budget_blocks,
            **kwargs,
        )

    def __init__(
        self,
        client,
        cordon_by: str,
        timeout: float = 600.0,
        grace_period: Optional[int] = None,
        sleep: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
        warn: Optional[Callable[[str], None]] = None,
        progress: Optional[Progress] = None,
        skip_pods: Optional[str] = None,
        when_budget_blocks: str = "wait",
        reason: Optional[str] = None,
        run: Optional[str] = None,
    ) -> None:
        self.client = client
        self.cordon_by = cordon_by
        # The cordon ledger (plan/nodes/cordon_ledger.py): why this drain cordons (a reason of
        # plan/nodes/cordon_reasons.py; cordon() may name another per node) and which run does (the lease holder).
        self.reason = reason
        self.run = run
        self.timeout = float(timeout)
        self.grace_period = grace_period
        self.skip_pods = skip_pods
        self.when_budget_blocks = when_budget_blocks
        self.sleep = float(sleep)
        self.clock = clock
        self.pause = pause
        self.warn = warn or (lambda text: None)
        self.progress = progress if progress is not None else Progress(lambda line: None)
        self.writes = 0  # cordons, uncordons and evictions sent
        self.seen: Dict[str, dict] = {}  # nodes as last listed, by name

    # ---- reads ----------------------------------------------------------------------------------------
    def node(self, name: str) -> Optional[dict]:
        try:
            return self.client.request("GET", self.client.path("", "v1", "nodes", name=name))
        except NotFound:
            return None

    def nodes(self, label_selector: str) -> List[dict]:
        """The nodes with these labels; remembered, so a later cordon of one of them needs no GET."""
        items = self.client.list("", "v1", "nodes", label_selector=label_selector)
        self.seen.update((n["metadata"]["name"], n) for n in items)
        return items

    def pods_on(self, node_name: str) -> List[dict]:
        """Every pod bound to the node (all namespaces), paging with limit/continue."""
        items, token = [], None
        while True:
            doc = self.client.request(
                "GET",
                self.client.path("", "v1", "pods"),
                query={"fieldSelector": "spec.nodeName=%s" % node_name, "limit": 500, "continue": token},
            )
            items.extend(doc.get("items") or [])
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                return items

    def gpu_pods(self, node_name: str) -> List[dict]:
        """The pods a drain of the node would evict (read only: what check mode reports)."""
        return self.pod_plan(node_name)[0]

    def pod_plan(self, node_name: str) -> Tuple[List[dict], List[dict]]:
        """(the pods a drain of the node would evict, the GPU pods it leaves alone), read only."""
        evict, _wait_for, skipped = plan_eviction.pods_to_evict(self.pods_on(node_name), node_name, self.skip_pods)
        return [pod for pod, _why in evict], [pod for pod, _why in skipped]

    def idle(self, node_name: str) -> bool:
        """Whether a drain of the node has nothing to do now: no GPU pod to evict, none terminating (read only).
        mig_layout then sends the config label with the cordon (the MIG manager may start at once)."""
        evict, wait_for, _skipped = plan_eviction.pods_to_evict(self.pods_on(node_name), node_name, self.skip_pods)
        return not evict and not wait_for

    # ---- cordon -----------------------------------------------------------------------------------------
    def _patch_node(self, name: str, patch: dict) -> None:
        self.client.request(
            "PATCH",
            self.client.path("", "v1", "nodes", name=name),
            query={"fieldManager": FIELD_MANAGER},
            body=patch,
            content_type=CONTENT_MERGE,
        )
        self.writes += 1

    def cordon(
        self,
        name: str,
        node: Optional[dict] = None,
        also: Optional[dict] = None,
        attempts: int = 5,
        reason: Optional[str] = None,
    ) -> Optional[str]:
        """Cordon a node; returns "cordoned" (done now), "ours" (already cordoned by this module, e.g. by an
        interrupted earlier run: ours to uncordon), "theirs" (cordoned by someone else: left so, not ours to
        uncordon) or None (the node is gone).

        node: the node as last read (say from the caller's LIST), so no GET is needed; the write carries its
        resourceVersion as precondition, and a node changed meanwhile is read again and decided anew.
        also: a merge patch sent in the same write (mig_layout's config label), whatever the cordon decides.
        reason: why (the ledger's reason), recorded with the cordon; None: the drain's own `reason`."""
        if node is None:
            node = self.node(name)
        for _attempt in range(attempts):
            if node is None:
                return None
            patch, state = plan_eviction.cordon_decision(node, self.cordon_by, reason or self.reason, self.run)
            patch = plan_eviction.merge_patches(patch, also)
            if patch:
                version = (node.get("metadata") or {}).get("resourceVersion")
                if version:
                    patch = plan_eviction.merge_patches(patch, {"metadata": {"resourceVersion": version}})
                try:
                    self._patch_node(name, patch)
                except Conflict:
                    node = self.node(name)
                    continue
                if state == "cordoned":
                    self.progress.say("cordoned node %s" % name)
            return state
        raise DrainError(
            "node %s kept changing while gpupool cordoned it (%d attempts); run again, and if it "
            "persists find the controller rewriting the node" % (name, attempts)
        )

    def uncordon(self, name: str, node: Optional[dict] = None, attempts: int = 5) -> Optional[str]:
        """Lift a cordon gpupool made; returns "uncordoned", "theirs" (someone cordoned the node after gpupool: it
        stays cordoned, gpupool's record on it goes, and `warn` names the node), "free" (not cordoned) or None (the
        node is gone). Decided from the node's managedFields (plan/nodes/cordon_owner.py): node as last read, or
        read here when it has none (a run view keeps none); the patch carries its resourceVersion, and a node
        changed meanwhile is read again and decided anew."""
        if node is None or "managedFields" not in (node.get("metadata") or {}):
            node = self.node(name)
        for _attempt in range(attempts):
            if node is None:
                return None
            patch, state = plan_eviction.uncordon_decision(node, FIELD_MANAGER)
            if patch:
                try:
                    self._patch_node(name, patch)
                except Conflict:
                    node = self.node(name)
                    continue
            if state == "uncordoned":
                self.progress.say("uncordoned node %s" % name)
            elif state == "theirs":
                self.warn(cordon_owner.persons_cordon_message(name, cordon_owner.cordoned_by_whom(node, FIELD_MANAGER)))
            return state
        raise DrainError(
            "node %s kept changing while gpupool uncordoned it (%d attempts); run again, and if it "
            "persists find the controller rewriting the node" % (name, attempts)
        )

    # ---- evict ------------------------------------------------------------------------------------------
    def _waiter(self, deadline: float, subject: str) -> Waiter:
        return Waiter(
            max(0.0, deadline - self.clock()),
            sleep=self.sleep,
            clock=self.clock,
            pause=self.pause,
            progress=lambda status: self.progress.update(subject, status),
        )

    def _evict_one(self, pod: dict, deadline: float, subject: str, left: int) -> None:
        meta = pod["metadata"]
        path = self.client.path("", "v1", "pods", meta["namespace"], meta["name"], "eviction")
        refusal = []
        done_text = "evicted pod %s, %d to go" % (plan_eviction.pod_ref(pod), left - 1)

        def probe():
            try:
                self.client.request(
                    "POST",
                    path,
                    body=plan_eviction.eviction(pod, self.grace_period),
                    retry_status=EVICTION_RETRY_STATUS,
                )
            except NotFound:
                return True, "already gone"
            except K8sError as err:
                if not plan_eviction.eviction_refused(err.status, err.message):
                    raise
                if self.when_budget_blocks == "fail":
                    raise DrainError(
                        "pod %s cannot be evicted: its PodDisruptionBudget allows no disruption now (%s), and the "
                        "drain policy says when_budget_blocks: fail, so the drain stopped at once. The node stays "
                        "cordoned and nothing was removed or reconfigured; scale the workload or relax the budget "
                        "and run again, or set drain.when_budget_blocks: wait in the inventory to wait for it"
                        % (plan_eviction.pod_ref(pod), err.message)
                    ) from None
                refusal[:] = [err.message]
                return False, "pod %s: its PodDisruptionBudget allows no disruption now (%s), trying again" % (
                    plan_eviction.pod_ref(pod),
                    err.message,
                )
            self.writes += 1
            return True, done_text

        if not self._waiter(deadline, subject).until(probe):
            raise DrainError(
                "pod %s cannot be evicted: its PodDisruptionBudget allows no disruption now (%s) and "
                "still refused after %ds. Scale the workload or relax the budget, or raise drain.timeout in "
                "the inventory, then run again"
                % (plan_eviction.pod_ref(pod), refusal[0] if refusal else "429", self.timeout)
            )
        self.progress.update(subject, done_text)  # shown once: the waiter said it already after a refusal

    def evict(self, node_names: Sequence[str]) -> List[str]:
        """Evict the GPU pods of the nodes and wait until they are gone; returns the evicted pods (ns/name).

        One deadline (`timeout`) covers the evictions and the wait. Pods already terminating are waited for
        too; DaemonSet and static pods that use GPUs are reported through `warn` and left alone."""
        deadline = self.clock() + self.timeout
        subject = "draining %s" % ", ".join(node_names)
        evicted: List[str] = []
        pending: Dict[str, str] = {}  # uid -> ns/name
        chosen = []
        for name in node_names:
            evict, wait_for, skipped = plan_eviction.pods_to_evict(self.pods_on(name), name, self.skip_pods)
            for pod, why in skipped:
                self.warn("node %s: pod %s uses GPUs but is not evicted: %s" % (name, plan_eviction.pod_ref(pod), why))
            for pod, _why in wait_for:
                pending[pod["metadata"].get("uid")] = plan_eviction.pod_ref(pod)
            chosen += [pod for pod, _why in evict]
        if not chosen and not pending:
            return evicted
        self.progress.start(subject, "%d GPU pod(s) to evict, %d terminating" % (len(chosen), len(pending)))
        for index, pod in enumerate(chosen):
            self._evict_one(pod, deadline, subject, len(chosen) - index)
            evicted.append(plan_eviction.pod_ref(pod))
            pending[pod["metadata"].get("uid")] = plan_eviction.pod_ref(pod)
        if pending:
            self._wait_gone(node_names, pending, deadline, subject)
        self.progress.done(subject, "drained: %d GPU pod(s) evicted" % len(evicted))
        return evicted

    def _wait_gone(self, node_names: Sequence[str], pending: Dict[str, str], deadline: float, subject: str) -> None:
        def probe():
            lease_check(self.client, "waiting for %s" % subject)  # a run that lost its lease stops within a poll
            live = set()
            for name in node_names:
                live.update(p["metadata"].get("uid") for p in self.pods_on(name))
            for uid in [u for u in pending if u not in live]:
                del pending[uid]
            if not pending:
                return True, "the evicted pods are gone"
            return False, "%d evicted pod(s) still terminating: %s" % (
                len(pending),
                ", ".join(sorted(pending.values())[:3]) + (", ..." if len(pending) > 3 else ""),
            )

        if not self._waiter(deadline, subject).until(probe):
            raise DrainError(
                "pods evicted from %s are still there after %ds: %s. Check their finalizers and "
                "termination grace periods (drain.grace_period in the inventory shortens it), then run again"
                % (", ".join(node_names), self.timeout, ", ".join(sorted(pending.values())))
            )

    def drain(self, node_names: Sequence[str]) -> Dict[str, List[str]]:
        """Cordon the nodes, then evict their GPU pods and wait for them. The nodes stay cordoned: the caller
        uncordons them (mig_layout, after the change) or removes them (nodegroup)."""
        cordoned = [name for name in node_names if self.cordon(name, self.seen.get(name)) in ("cordoned", "ours")]
        return {"cordoned": cordoned, "evicted": self.evict(node_names)}
