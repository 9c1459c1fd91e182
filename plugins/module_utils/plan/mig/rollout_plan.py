# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One gpupool.core.mig_layout run: what it plans (the pools' configs, each pool's nodes and waves, how each
pool drains) and, filled in by k8s/mig_rollout.py as the rollout goes, what it did; `result()` is the step's
result, at the end or with a failure.

Pure: it reads the nodes and the pods the runner hands it and never sends a request. The node decisions
themselves (each node's action, the waves) are plan/mig/rollout.py's; what happens inside a wave is
plan/mig/waves.py's.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_configs import static_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL, mig_config_name
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout_text as plan_rollout_text
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    CONFIGURE,
    RECONFIGURE,
    desired_configs,
    plan_pool,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import PoolPlan, Wave
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import (
    DrainSettings,
    drain_settings,
    pod_ref,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_matcher


class RolloutOptions(NamedTuple):
    """The options of gpupool.core.mig_layout that shape a rollout (the module documentation says each)."""

    cordon: bool = True
    drain: Optional[bool] = None
    drain_timeout: Optional[int] = None
    drain_grace_period: Optional[int] = None
    wait_timeout: int = 1800
    wait_sleep: float = 5.0
    relabel_delay: float = 5.0
    retry_failed: bool = False
    prune: bool = True
    limited: bool = False  # the pools option limits the run to some pools
    nodegroup_label: Optional[str] = NODEGROUP_LABEL
    name_pattern: Optional[str] = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "RolloutOptions":
        names = [name for name in cls._fields if name != "limited"]
        return cls(limited=bool(params.get("pools")), **{name: params[name] for name in names})


def skipped_reason(pool: Any) -> str:
    """Why a pool in scope has no rollout."""
    why = "state absent" if pool.state != "present" else "mig.mode is %s" % pool.mig.mode
    return "no static MIG layout (%s)" % why


def not_ready_warning(pool_name: str, node_name: str) -> str:
    return "pool %s: node %s is NotReady and needs a MIG change; skipped (rerun when it is Ready)" % (
        pool_name,
        node_name,
    )


class RolloutPlan:
    """The rollout of the static MIG pools in `scope`; its attributes are the step's result as it grows.

    Building it plans every pool's layout (desired_configs raises Problems for one that does not fit)
    before any request."""

    def __init__(self, cluster: Any, scope: Sequence[Any], options: RolloutOptions, check: bool) -> None:
        self.scope = list(scope)
        self.options = options
        self.check = check
        self.mig_manager = cluster.mig_manager
        self.owner = cluster.owner_id  # whose record of configs in the ConfigMap this run writes (config_map.py)
        self.static = static_pools(self.scope)
        self.configs = desired_configs(self.static)
        # Each pool drains as its drain policy says (the inventory's, with the drain options on top); the
        # cluster's policy is the uncordon's (settings of a drain that only uncordons).
        self.settings: Dict[str, DrainSettings] = {
            pool.name: self._drain_settings(drain_policy(cluster, pool)) for pool in self.static
        }
        self.cluster_settings = self._drain_settings(drain_policy(cluster))
        self.changed = False
        self.diff: List[dict] = []
        self.waves: List[Wave] = []
        self.failed_nodes: List[str] = []
        self.skipped_pools: Dict[str, str] = {}  # {pool in scope without a rollout: why}
        self.assignments: Dict[str, Dict[str, Optional[str]]] = {}  # {pool with MIG groups: {node: its group}}
        self.plans: List[PoolPlan] = []
        self.config_map: Dict[str, Any] = {
            "name": self.mig_manager.config_map,
            "namespace": self.mig_manager.namespace,
            "action": "unchanged",
            "configs": {},
        }
        self.documents: Optional[Tuple[dict, dict]] = None  # the ConfigMap's document as first read, as merged

    def _drain_settings(self, policy: Any) -> DrainSettings:
        o = self.options
        return drain_settings(policy, o.drain, o.drain_timeout, o.drain_grace_period)

    @property
    def desired(self) -> Dict[str, List[dict]]:
        """{config name: mig-parted entries} this run writes."""
        return {name: config.entries for name, config in self.configs.items()}

    @property
    def config_paths(self) -> Dict[str, str]:
        """{config name: the inventory key that names it (its first pool's mig.config_name)}, for refusals."""
        out: Dict[str, str] = {}
        for pool in self.static:
            out.setdefault(mig_config_name(pool), pool_path("gpupool_cluster", pool) + ".mig.config_name")
            for k, group in enumerate(pool.group_names()):
                out.setdefault(
                    mig_config_name(pool, group), pool_path("gpupool_cluster", pool) + ".mig.groups[%d].name" % k
                )
        return out

    @property
    def prunes(self) -> bool:
        """Configs no pool wants are pruned only when the run sees every pool."""
        return self.options.prune and not self.options.limited

    def drains(self, pool_name: str) -> bool:
        """Whether the waves of the pool evict their GPU pods first (its drain policy)."""
        return self.settings[pool_name].enabled

    def cordons(self, pool_name: str) -> bool:
        return self.options.cordon or self.drains(pool_name)

    def selector(self, pool: Any) -> str:
        return node_matcher(pool, self.options.nodegroup_label, self.options.name_pattern).describe

    # ---- plan ------------------------------------------------------------------------------------------
    def plan_pools(self, assigned: Dict[str, List[dict]], changed_configs: Sequence[str]) -> List[str]:
        """Every pool's entry in the result and each static pool's plan, from its nodes (assign_nodes);
        changed_configs: the configs whose entries this run writes anew. Returns warnings (NotReady nodes
        that need a change are skipped)."""
        warnings = []
        for pool in self.scope:
            if pool.state != "present" or pool.mig.mode != "static":
                self.skipped_pools[pool.name] = skipped_reason(pool)
                continue
            nodes = assigned[pool.name]
            # which node carries which layout: plan/mig/node_groups decides it for every step (stable)
            assignment = assign_groups(pool, nodes) if pool.mig.groups else {}
            plans = []
            for group in [None] + pool.group_names():
                members = [n for n in nodes if assignment.get(n["metadata"]["name"]) == group]
                plans.append(self._plan_nodes(pool, group, members, changed_configs))
            if any(plan.blocked for plan in plans):
                # A node the MIG manager failed on blocks its own pool only (all its groups): no wave of this pool
                # runs (its done nodes still get their leftover cordons lifted); the other pools roll on, and the
                # step fails at the end naming the node (blocked_problems).
                for plan in plans:
                    plan.waves = []
            self.plans += plans
            if pool.mig.groups:
                self.assignments[pool.name] = {name: assignment[name] for name in sorted(assignment)}
            for plan in plans:
                warnings += [not_ready_warning(pool.name, node) for node in plan.skipped]
        return warnings

    def _plan_nodes(
        self, pool: Any, group: Optional[str], nodes: List[dict], changed_configs: Sequence[str]
    ) -> PoolPlan:
        """The plan of the pool's nodes that carry its own layout (group None) or MIG group `group`'s."""
        name = mig_config_name(pool, group)
        return plan_pool(
            pool.name,
            name,
            self.configs[name].digest,
            nodes,
            self.mig_manager.max_unavailable,
            config_changed=name in changed_configs,
            retry_failed=self.options.retry_failed,
            group=group,
            selector=self.selector(pool),
        )

    @property
    def pools(self) -> Dict[str, dict]:
        """The result's `pools`: per pool in scope its plan's entry (with its groups'), or why it has none."""
        out: Dict[str, dict] = {}
        for pool in self.scope:
            if pool.name in self.skipped_pools:
                out[pool.name] = {"skipped": self.skipped_pools[pool.name]}
                continue
            plans = [plan for plan in self.plans if plan.pool == pool.name]
            if not plans:
                continue  # not planned yet (a failure before the plan)
            entry = plans[0].as_dict()
            if pool.name in self.assignments:
                entry["assignment"] = dict(self.assignments[pool.name])
                entry["groups"] = {plan.group: plan.as_dict() for plan in plans[1:]}
            out[pool.name] = entry
        return out

    def add_wave(self, plan: PoolPlan, index: int, pods: Optional[Dict[str, Tuple[list, list]]] = None) -> Wave:
        """Wave `index` of a pool's plan, added to the run's waves; pods: {node: (pods evicted, GPU pods left)}
        of a pool that drains."""
        nodes = list(plan.waves[index])
        entry = Wave(
            pool=plan.pool,
            index=index,
            group=plan.group,
            nodes=nodes,
            actions={r.name: r.action for r in plan.nodes if r.name in nodes},
            result="planned" if self.check else "not started",
        )
        if pods is not None:
            entry.evict = [pod_ref(pod) for n in nodes for pod in pods[n][0]]
            entry.skip = [pod_ref(pod) for n in nodes for pod in pods[n][1]]
        self.waves.append(entry)
        return entry

    def plan_of(self, entry: Wave) -> PoolPlan:
        return next(p for p in self.plans if (p.pool, p.group) == (entry.pool, entry.group))

    def changes_in_check(self, entry: Wave) -> bool:
        """Whether a wave would change anything (check mode): a node to label, or its nodes to cordon."""
        changing = any(a in (CONFIGURE, RECONFIGURE) for a in entry.actions.values())
        return changing or self.cordons(entry.pool)

    def later_nodes(self, entry: Wave) -> List[str]:
        """The nodes of the waves after `entry`: not touched when it stops the rollout."""
        later: List[str] = []
        after = False
        for wave in self.waves:
            if wave is entry:
                after = True
            elif after:
                later += wave.nodes
        return later

    # ---- the result ----------------------------------------------------------------------------------------
    def rollout_text(self) -> str:
        """The waves as text for --diff (plan/mig/rollout_text.py); '' before the plan or without waves."""
        if self.documents is None or not self.waves:
            return ""
        read, merged = self.documents  # pylint: disable=unpacking-non-sequence  # not None: checked above
        before = dict(((read or {}).get("mig-configs") or {}))
        after = dict(((merged or {}).get("mig-configs") or {}))
        after.update(self.desired)
        return plan_rollout_text.rollout_text(
            self.plans, self.waves, after, before, self.cordons, self.drains, self.mig_manager.max_unavailable
        )

    def result(self, diff_mode: bool) -> Dict[str, Any]:
        out: Dict[str, Any] = dict(
            changed=self.changed,
            config_map=self.config_map,
            pools=self.pools,
            waves=[wave.as_dict() for wave in self.waves],
            failed_nodes=list(self.failed_nodes),
            skipped_nodes=sorted(n for p in self.plans for n in p.skipped),
            blocked_nodes=sorted(n for p in self.plans for n in p.blocked),
        )
        if diff_mode:
            out["diff"] = self.diff
            text = self.rollout_text()
            if text:  # the plan first: what the node diffs below amount to
                out["diff"] = [{"prepared": text}] + self.diff
        return out
