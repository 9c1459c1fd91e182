# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What happens inside one wave of a MIG rollout, decided without I/O: which node writes go together, which
nodes are relabelled and labelled, how the nodes' states are read from a LIST, how the wave ends, what a
person reads about it (progress lines, --diff, the failure message). k8s/mig_rollout.py sends the writes
and reads in the order this file's functions say.

A wave is the rollout_data.Wave RolloutPlan.add_wave made (pool, index, nodes, actions, result); the runner fills in
started/finished, the nodes it cordoned, unlabelled and labelled, the pods it evicted and the nodes' final states.

Writes per node: the cordon carries the first label write the node needs (the config label, or a reconfigure's
removal of it), so a node that changes layout is patched twice (cordon+label, uncordon) and one that is reconfigured
three times (cordon+unlabel, label, uncordon); only a node with GPU pods to evict first gets its label in a write of
its own, after the drain.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import CONFIG_LABEL, STATE_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    CONFIGURE,
    RECONFIGURE,
    label_patch,
    node_diff_view,
    unlabel_patch,
    wave_progress,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import PoolPlan, Wave

# What plan/mig/rollout.wave_progress says => the node's final state in the wave; "busy" is not final.
_FINAL = {"done": "success", "failed": "failed", "gone": "gone", "relabelled": "relabelled"}


def subject(plan: PoolPlan, entry: Wave) -> str:
    """How progress lines name a wave: MIG wave 1/2 of gpu-a100-mig."""
    return "MIG wave %d/%d of %s" % (entry.index + 1, len(plan.waves), plan.who)


def start_status(wave: Sequence[str], drains: bool) -> str:
    """The first progress line of a wave: its nodes and what happens to them."""
    return "%s %s" % (", ".join(wave), "cordon, drain, then MIG" if drains else "MIG")


def cordon_write(action: str, idle: bool, config: str, digest: str) -> Optional[dict]:
    """The label write to send in the cordon's own patch, or None.

    configure: the config label, when nothing has to happen first (`idle`: the pool does not drain, or the drain
    finds no GPU pod to evict on the node, as on a new node); the MIG manager may start at once, and the node takes
    no new pods from the same write on. reconfigure: the label's removal, whatever runs on the node (the MIG
    manager does nothing while the label is unset); the label is set again after the drain and relabel_delay."""
    if action == CONFIGURE and idle:
        return label_patch(config, digest)
    if action == RECONFIGURE:
        return unlabel_patch()
    return None


def needs_pods_read(action: str, drains: bool) -> bool:
    """Whether the runner reads the node's pods before its cordon: only to decide a configure's cordon_write."""
    return drains and action == CONFIGURE


def after_cordon(done: Optional[str], sent: Optional[dict]) -> Tuple[bool, bool, bool]:
    """(cordoned by gpupool, changed, label write done) after k8s/drain.Drain.cordon answered `done` for a node
    whose cordon carried `sent` (cordon_write; None: none).

    "ours": left cordoned by an earlier failed run, so this run uncordons it too; None: the node is gone,
    so its label write was not sent either."""
    written = sent is not None and done is not None
    return done in ("cordoned", "ours"), done == "cordoned" or written, written


def record_cordon_write(entry: Wave, name: str, sent: dict, when: float) -> None:
    """Remember what the cordon's patch did to the node's config label: set it, or removed it."""
    if (sent["metadata"]["labels"] or {}).get(CONFIG_LABEL) is None:
        entry.unlabelled[name] = when
    else:
        entry.labelled[name] = when


def to_relabel(entry: Wave) -> List[str]:
    """The nodes whose config label is still to remove first (the cordon did not): their config keeps its name but
    changes content, and the MIG manager acts only on label changes."""
    return [n for n in entry.nodes if entry.actions[n] == RECONFIGURE and n not in entry.unlabelled]


def relabel_pause(entry: Wave, delay: float, now: float) -> float:
    """Seconds to wait before setting the label again on the wave's unlabelled nodes: `delay` after the last
    removal, so the MIG manager sees the label go (the drain in between counts)."""
    if not entry.unlabelled:
        return 0.0
    return max(0.0, delay - (now - max(entry.unlabelled.values())))


def to_label(entry: Wave) -> List[str]:
    """The nodes still to label with the pool's config (those the cordon did not label already)."""
    return [n for n in entry.nodes if entry.actions[n] in (CONFIGURE, RECONFIGURE) and n not in entry.labelled]


def config_selector(config: str) -> str:
    """The label selector of the one LIST per round that watches a wave."""
    return "%s=%s" % (CONFIG_LABEL, config)


def settle(states: Dict[str, str], nodes_now: Dict[str, Optional[dict]], config: str) -> None:
    """Record the final state of each node of `nodes_now` (as read now; None: deleted) that has one."""
    for name, progress in wave_progress(nodes_now, config).items():
        if progress in _FINAL:
            states[name] = _FINAL[progress]


def timed_out(
    wave: Sequence[str], states: Dict[str, str], nodes_now: Dict[str, Optional[dict]]
) -> Dict[str, Optional[str]]:
    """{node: its last state label} of the nodes the wait ended without a final state for."""
    return {
        name: (((nodes_now.get(name) or {}).get("metadata") or {}).get("labels", {}).get(STATE_LABEL))
        for name in wave
        if name not in states
    }


def bad_nodes(wave: Sequence[str], states: Dict[str, str]) -> List[str]:
    return [n for n in wave if states[n] != "success"]


def wave_result(bad: Sequence[str], states: Dict[str, str]) -> str:
    """The wave's result: success, timeout (every bad node timed out) or failed."""
    if not bad:
        return "success"
    return "timeout" if all(states[n] == "timeout" for n in bad) else "failed"


def done_status(wave: Sequence[str]) -> str:
    return "done: %s success" % ", ".join(wave)


def stopped_status(bad: Sequence[str], states: Dict[str, str]) -> str:
    return "stopped: %s" % ", ".join("%s %s" % (n, states[n]) for n in bad)


def left_cordoned(text: str, cordoned: Sequence[str]) -> str:
    """An error that stopped a wave, with the nodes it leaves cordoned."""
    if not cordoned:
        return text
    return text + (
        " Cordoned by this run and left so: %s (a rerun continues the rollout and uncordons them)."
        % ", ".join(cordoned)
    )


def node_diffs(plan: PoolPlan, wave: Sequence[str], states: Dict[str, str]) -> List[dict]:
    """The --diff entries of the wave's nodes that get the config label: before, and after (the state each
    reached; success when not known, as in check mode)."""
    out = []
    for row in plan.nodes:
        if row.name not in wave or row.action not in (CONFIGURE, RECONFIGURE):
            continue
        before = row.before
        header = "Node %s (pool %s)" % (row.name, plan.who.replace(" group ", ", group "))
        out.append(
            {
                "before": node_diff_view(before.config, before.state, before.digest),
                "after": node_diff_view(plan.config_name, states.get(row.name, "success"), plan.digest),
                "before_header": header,
                "after_header": header,
            }
        )
    return out


def failure_message(
    plan: PoolPlan,
    entry: Wave,
    bad: Sequence[str],
    states: Dict[str, str],
    later: Sequence[str],
    wait_timeout: int,
    namespace: str,
) -> str:
    """Why the rollout of a pool stopped at this wave, what it did not touch, what stays cordoned, and where
    to look (the MIG manager's log on the first bad node)."""
    parts = []
    for name in bad:
        state = states[name]
        if state == "failed":
            parts.append("node %s reports %s=failed for config %s" % (name, STATE_LABEL, plan.config_name))
        elif state == "timeout":
            parts.append(
                "node %s did not reach %s=success within %ds (last state: %s)"
                % (name, STATE_LABEL, wait_timeout, entry.last_state.get(name) or "not set")
            )
        elif state == "gone":
            parts.append("node %s was deleted during the change" % name)
        else:
            parts.append("node %s got another %s while gpupool waited" % (name, CONFIG_LABEL))
    text = "MIG layout rollout of pool %s stopped: %s." % (plan.who, "; ".join(parts))
    if later:
        text += " Not touched: %s." % ", ".join(later)
    cordoned = [n for n in bad if n in entry.cordoned]
    if cordoned:
        text += " %s %s cordoned." % (", ".join(cordoned), "stays" if len(cordoned) == 1 else "stay")
    text += (
        " Read the nvidia-mig-manager log on the node (kubectl -n %s logs -l app=nvidia-mig-manager "
        "--field-selector spec.nodeName=%s), fix the cause, then rerun with retry_failed: true." % (namespace, bad[0])
    )
    return text
