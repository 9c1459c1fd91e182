# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain settings: the cluster's policy (`drain`) and a pool's changes to it (`pools[].drain`)."""

from __future__ import annotations

from typing import Literal, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.label_selector import parse as parse_selector
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import Field, Strict, field_validator


def _selector(value):
    if value is not None:
        parse_selector(value)  # ValueError: the message names the requirement that is wrong
    return value


class DrainPolicy(Strict):
    """How nodes are drained before a shrink removes them, their MIG layout changes or their nodegroup is deleted.

    A drain cordons the nodes, evicts the pods that use GPUs (through the Eviction API, so PodDisruptionBudgets
    apply) and waits for them to go."""

    enabled: bool = Field(
        True, description="Drain first. Off: nodes are removed or reconfigured with their GPU pods still running."
    )
    timeout: int = Field(
        600,
        ge=1,
        le=86400,
        description="Seconds for one drain (the nodes a shrink or a delete "
        "removes, or one MIG wave): evictions a PodDisruptionBudget refuses and waiting for the "
        "evicted pods to go.",
    )
    grace_period: Optional[int] = Field(
        None,
        ge=0,
        le=86400,
        description="Grace period of evicted pods, in seconds; default: each pod's own terminationGracePeriodSeconds.",
    )
    skip_pods: Optional[str] = Field(
        None,
        description="Label selector (kubectl syntax, e.g. `gpupool.io/drain=skip` "
        "or `app in (monitor)`) of GPU pods never evicted: they are named in a warning "
        "and stay until their node goes or changes under them.",
    )
    when_budget_blocks: Literal["wait", "fail"] = Field(
        "wait",
        description="A PodDisruptionBudget refuses an eviction: `wait` tries again until `timeout`, then "
        "fails; `fail` fails at once. Either way the node stays cordoned and nothing is removed or reconfigured.",
    )

    _v_selector = field_validator("skip_pods")(classmethod(lambda cls, v: _selector(v)))


class PoolDrain(Strict):
    """A pool's changes to the cluster's drain policy: only the keys given here differ from `drain` of the cluster."""

    enabled: Optional[bool] = Field(None, description="Default: the cluster's drain.enabled.")
    timeout: Optional[int] = Field(None, ge=1, le=86400, description="Default: the cluster's drain.timeout.")
    grace_period: Optional[int] = Field(
        None, ge=0, le=86400, description="Default: the cluster's drain.grace_period; null here: each pod's own."
    )
    skip_pods: Optional[str] = Field(
        None, description="Default: the cluster's drain.skip_pods; null here: no pod is skipped."
    )
    when_budget_blocks: Optional[Literal["wait", "fail"]] = Field(
        None, description="Default: the cluster's drain.when_budget_blocks."
    )

    _v_selector = field_validator("skip_pods")(classmethod(lambda cls, v: _selector(v)))
