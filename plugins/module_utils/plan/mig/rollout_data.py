# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The typed data a MIG rollout passes from plan/mig/ to k8s/mig_rollout.py: each node's row, a pool's plan (or one
MIG group's), and a wave as it is planned and then run.

The step's result is made of their `as_dict()` only, at the end (its shape is the RETURN documentation of
plugins/modules/mig_layout.py); inside the collection nothing reads them by string keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class DesiredConfig:
    """One MIG config this run wants in the MIG manager's ConfigMap: its mig-parted entries, their digest (recorded on
    each node switched to it) and the pools (or MIG groups' pools) that use it."""

    entries: List[dict]
    digest: str
    pools: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Before:
    """A node's MIG labels and digest as the plan read them."""

    config: Optional[str] = None
    state: Optional[str] = None
    digest: Optional[str] = None

    def as_dict(self) -> Dict[str, Optional[str]]:
        return {"config": self.config, "state": self.state, "digest": self.digest}


@dataclass(frozen=True)
class NodeRow:
    """One node of a plan: what the rollout does to it (plan/mig/rollout.py's actions) and why."""

    name: str
    action: str
    reason: str = ""
    ready: bool = True
    before: Before = Before()
    uncordon: bool = False  # done, and left cordoned by an interrupted earlier run: uncordoned now

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "action": self.action,
            "reason": self.reason,
            "ready": self.ready,
            "before": self.before.as_dict(),
            "uncordon": self.uncordon,
        }


@dataclass
class PoolPlan:
    """The plan of a pool's nodes that carry its own layout (group None) or one MIG group's."""

    pool: str
    config_name: str
    digest: str
    nodes: List[NodeRow] = field(default_factory=list)
    waves: List[List[str]] = field(default_factory=list)
    blocked: List[str] = field(default_factory=list)  # nodes the MIG manager failed on: no wave of the pool runs
    skipped: List[str] = field(default_factory=list)  # NotReady nodes that need a change
    group: Optional[str] = None
    selector: str = ""

    @property
    def who(self) -> str:
        """'gpu-a100', or 'gpu-a100 group small' for the nodes of a MIG group."""
        return self.pool if self.group is None else "%s group %s" % (self.pool, self.group)

    def row(self, name: str) -> Optional[NodeRow]:
        return next((r for r in self.nodes if r.name == name), None)

    def as_dict(self) -> Dict[str, Any]:
        """The result's entry of the plan (a pool's own layout, or one MIG group of it)."""
        out: Dict[str, Any] = {
            "config_name": self.config_name,
            "digest": self.digest,
            "selector": self.selector,
            "nodes": [r.as_dict() for r in self.nodes],
            "waves": [list(w) for w in self.waves],
        }
        if self.blocked:
            out["blocked"] = list(self.blocked)
        return out


@dataclass
class Wave:
    """One wave of a pool's plan: planned by RolloutPlan.add_wave, filled in by the runner as it goes."""

    pool: str
    index: int
    nodes: List[str]
    actions: Dict[str, str]  # {node: its action}
    result: str  # planned | not started | success | failed | timeout | error
    group: Optional[str] = None
    evict: Optional[List[Any]] = None  # a draining pool's GPU pods to evict (ns/name refs), as planned
    skip: Optional[List[Any]] = None  # ... and those the drain policy leaves alone
    started: Optional[float] = None
    finished: Optional[float] = None
    cordoned: List[str] = field(default_factory=list)  # by this run (or an interrupted one of gpupool's)
    labelled: Dict[str, float] = field(default_factory=dict)  # {node: when its config label was set}
    unlabelled: Dict[str, float] = field(default_factory=dict)  # {node: when the label was removed} (reconfigure)
    evicted: Optional[List[str]] = None
    states: Optional[Dict[str, str]] = None  # each node's final state
    last_state: Dict[str, Optional[str]] = field(default_factory=dict)  # nodes that timed out: their last state

    def as_dict(self) -> Dict[str, Any]:
        """The result's entry of the wave: the keys it has reached (the module's RETURN documentation)."""
        out: Dict[str, Any] = {"pool": self.pool, "index": self.index}
        if self.group is not None:
            out["group"] = self.group
        out.update(nodes=list(self.nodes), actions=dict(self.actions), result=self.result)
        if self.evict is not None:
            out.update(evict=list(self.evict), skip=list(self.skip or []))
        if self.started is not None:
            out.update(started=self.started, cordoned=list(self.cordoned), labelled=dict(self.labelled))
        if self.evicted is not None:
            out["evicted"] = list(self.evicted)
        if self.states is not None:
            out["states"] = dict(self.states)
        if self.finished is not None:
            out["finished"] = self.finished
        if self.last_state:
            out["last_state"] = dict(self.last_state)
        return out
