# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static MIG layout rollout: the pools' mig-parted configs merged into the MIG manager's ConfigMap,
each node's state, the waves of a rolling change and the node patches that drive it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Dict

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import (
    SpecError,
    mig_parted_config,
    parse_document,
    render_document,
)
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import InfeasibleLayout, plan
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import _lines as _problem_lines
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_configs import (
    mig_config_problems_of,
    pool_mig_entries,
    static_pools,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CONFIG_LABEL,
    CONFIGS_ANNOTATION,
    CORDON_ANNOTATION,
    CORDON_VALUE,
    DIGEST_ANNOTATION,
    STATE_LABEL,
    mig_config_name,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import pool_placements
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout_data import (
    Before,
    DesiredConfig,
    NodeRow,
    PoolPlan,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_ready

BUILTIN_CONFIG = "all-disabled"


DONE_STATES = ("success",)


FAILED_STATES = ("failed",)


BUSY_STATES = ("pending", "rebooting")


# Node actions
NONE, CONFIGURE, RECONFIGURE, WAIT, BLOCKED, SKIP = "none", "configure", "reconfigure", "wait", "blocked", "skip"


CHANGING = (CONFIGURE, RECONFIGURE, WAIT)


def config_digest(entries):
    """Short digest of a config's mig-parted entries (order of keys does not matter)."""
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def pool_config(pool, group=None):
    """(config name, mig-parted entries) of one static-MIG pool's nodes (group None) or of its MIG group `group`, as
    pool_summary renders them.

    Plans every GPU's layout with the placement planner first: an infeasible layout raises
    Problems (load_cluster already refuses it; this keeps the module safe on its own)."""
    try:
        pool_placements(pool)
        if group is not None:
            for index in range(pool.gpu.per_node):
                layout = pool.layout_for(index, group)
                if layout:
                    plan(pool.catalog_gpu, layout)
    except InfeasibleLayout as exc:
        raise Problems([("pools[%s].mig%s" % (pool.name, "" if group is None else ".groups (%s)" % group), exc.reason)])
    name = mig_config_name(pool, group)
    doc = mig_parted_config({name: pool_mig_entries(pool, group)})
    return name, doc["mig-configs"][name]


def desired_configs(pools, root="gpupool_cluster") -> Dict[str, DesiredConfig]:
    """{config name: DesiredConfig (entries, digest, pool names)} for the static-MIG pools and their MIG groups (a
    group's config is <pool's config>-<group>).

    Config names are label values and shared only with identical entries: the model's rule
    (model/mig_configs.py), run here too so the builder is safe on its own."""
    problems = mig_config_problems_of(pools, root)
    if problems:
        raise Problems(problems)
    out = {}
    for pool in static_pools(pools):
        groups = [None]
        for group in groups + pool.group_names():
            name, entries = pool_config(pool, group)
            if name in out:
                out[name].pools.append(pool.name)
                continue
            out[name] = DesiredConfig(entries=entries, digest=config_digest(entries), pools=[pool.name])
    return out


def owned_names(annotations):
    text = (annotations or {}).get(CONFIGS_ANNOTATION) or ""
    return [n for n in (x.strip() for x in text.split(",")) if n]


def merge_document(doc, desired, owned, prune=(), where="the ConfigMap"):
    """Merge gpupool's configs into a mig-parted document at the mig-configs level.

    doc: the parsed document (others' configs included); desired: {name: entries}; owned: names
    gpupool wrote before (the ConfigMap annotation); prune: owned names to remove.
    Returns (new doc, new owned names, {name: created|updated|unchanged|deleted|adopted}).
    A desired name that exists with other content and is not gpupool's is an error (someone
    else's config)."""
    new = copy.deepcopy(doc)
    configs = new.setdefault("mig-configs", {})
    owned = list(owned)
    changes, problems = {}, []
    for name in sorted(desired):
        entries = desired[name]
        if name not in configs:
            changes[name] = "created"
        elif configs[name] == entries:
            changes[name] = "unchanged" if name in owned else "adopted"
        elif name in owned:
            changes[name] = "updated"
        else:
            problems.append(
                (
                    where,
                    "MIG config %r already exists there with other content and was not written by "
                    "gpupool; rename the pool's mig.config_name, or remove that config from the ConfigMap "
                    "if gpupool should own it" % name,
                )
            )
            continue
        configs[name] = copy.deepcopy(entries)
    if problems:
        raise Problems(problems)
    for name in sorted(prune):
        if name in configs and name not in desired:
            del configs[name]
            changes[name] = "deleted"
    if BUILTIN_CONFIG not in configs:
        # The manager's default label value; kept so a node reset to it always finds it (never pruned).
        configs[BUILTIN_CONFIG] = [{"devices": "all", "mig-enabled": False}]
    names = sorted((set(owned) | set(desired)) - {n for n, c in changes.items() if c == "deleted"})
    return new, names, changes


def ours_view(doc, names):
    """{name: entries} of `names` in a document (for diffs)."""
    configs = (doc or {}).get("mig-configs") or {}
    return {n: copy.deepcopy(configs[n]) for n in sorted(names) if n in configs}


def _meta(node):
    return node.get("metadata") or {}


def node_state(node):
    """What matters about a node for the rollout."""
    meta = _meta(node)
    labels = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    return {
        "name": meta.get("name"),
        "ready": node_ready(node),
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "config": labels.get(CONFIG_LABEL),
        "state": labels.get(STATE_LABEL),
        "digest": ann.get(DIGEST_ANNOTATION),
        "cordoned_by_us": ann.get(CORDON_ANNOTATION) == CORDON_VALUE,
    }


def classify(node, config_name, digest, config_changed=False, retry_failed=False):
    """(action, reason) for one node of a pool whose config is `config_name` with entries `digest`.

    config_changed: the config's entries change in this run (a node that has the label but no digest
    annotation is then switched again: it cannot have the new content)."""
    st = node_state(node)
    if st["config"] != config_name:
        action, reason = CONFIGURE, ("%s is %s, wants %s" % (CONFIG_LABEL, st["config"] or "not set", config_name))
    else:
        stale = st["digest"] != digest if st["digest"] is not None else config_changed
        if stale:
            action, reason = RECONFIGURE, ("config %s changed since the node was switched to it" % config_name)
        elif st["state"] in DONE_STATES:
            return NONE, "at %s (state success)" % config_name
        elif st["state"] in FAILED_STATES:
            if retry_failed:
                action, reason = RECONFIGURE, "state failed; retrying (retry_failed)"
            else:
                return BLOCKED, ("the MIG manager reported %s=failed for %s" % (STATE_LABEL, config_name))
        else:
            action, reason = WAIT, ("switching to %s (state %s)" % (config_name, st["state"] or "not set yet"))
    if not st["ready"] and action != WAIT:
        return SKIP, reason + "; node is NotReady, so its MIG manager cannot act"
    return action, reason


def waves(changing, max_unavailable):
    """Nodes in waves of at most max_unavailable: those already switching (WAIT) first, then by name.

    changing: [(name, action)]."""
    if max_unavailable < 1:
        raise ValueError("max_unavailable must be at least 1")
    order = sorted(changing, key=lambda na: (na[1] != WAIT, na[0]))
    names = [na[0] for na in order]
    starts = range(0, len(names), max_unavailable)
    return [names[start:end] for start, end in ((s, s + max_unavailable) for s in starts)]


def plan_pool(
    pool_name,
    config_name,
    digest,
    nodes,
    max_unavailable,
    config_changed=False,
    retry_failed=False,
    group=None,
    selector="",
) -> PoolPlan:
    """Plan one pool (or one MIG group of it): every node's action, and waves of the nodes to change."""
    rows = []
    for node in sorted(nodes, key=lambda n: _meta(n).get("name")):
        st = node_state(node)
        action, reason = classify(node, config_name, digest, config_changed, retry_failed)
        rows.append(
            NodeRow(
                name=st["name"],
                action=action,
                reason=reason,
                ready=st["ready"],
                before=Before(st["config"], st["state"], st["digest"]),
                # A node left cordoned by an interrupted earlier run gets uncordoned once it is done.
                uncordon=action == NONE and st["cordoned_by_us"],
            )
        )
    changing = [(r.name, r.action) for r in rows if r.action in CHANGING]
    return PoolPlan(
        pool=pool_name,
        config_name=config_name,
        digest=digest,
        nodes=rows,
        waves=waves(changing, max_unavailable),
        blocked=[r.name for r in rows if r.action == BLOCKED],
        skipped=[r.name for r in rows if r.action == SKIP],
        group=group,
        selector=selector,
    )


def blocked_problems(plans, namespace="gpu-operator"):
    """One problem per failed node: its pool rolled no wave (the other pools did), and how to retry it."""
    out = []
    for p in plans:
        for name in p.blocked:
            out.append(
                (
                    "pool %s, node %s" % (p.pool, name),
                    "the MIG manager reported %s=failed for config %s, so this pool rolled no wave (the other "
                    "pools did). Read the nvidia-mig-manager log on %s "
                    "(kubectl -n %s logs -l app=nvidia-mig-manager --field-selector spec.nodeName=%s), fix the "
                    "cause, then rerun with retry_failed: true" % (STATE_LABEL, p.config_name, name, namespace, name),
                )
            )
    return out


class BlockedPools(Problems):
    """The step's failure when a failed node held its pool back: raised at the end, after the other pools rolled."""

    def render(self) -> str:
        lines = [
            "%d node(s) the MIG manager failed on held back their pool's rollout (the other pools rolled on); "
            "in those pools nothing was changed:" % len(self.problems)
        ]
        for path, message in self.problems:
            lines += _problem_lines("  - %s: " % path, message, indent="    ")
        return "\n".join(lines)


def label_patch(config_name, digest):
    """Set the config label (clearing the old state, so only the manager's next answer counts)."""
    return {
        "metadata": {
            "labels": {CONFIG_LABEL: config_name, STATE_LABEL: None},
            "annotations": {DIGEST_ANNOTATION: digest},
        }
    }


def unlabel_patch():
    """First half of a reconfigure: the manager acts on label changes only."""
    return {"metadata": {"labels": {CONFIG_LABEL: None, STATE_LABEL: None}}}


def node_diff_view(config, state, digest):
    """What the module changes on a node, as shown in --diff."""
    labels = {CONFIG_LABEL: config, STATE_LABEL: state}
    return {
        "metadata": {
            "labels": {k: v for k, v in labels.items() if v is not None},
            "annotations": {DIGEST_ANNOTATION: digest} if digest else {},
        }
    }


def wave_progress(nodes_now, config_name):
    """State of a wave: {name: done|failed|busy|gone|relabelled} from the nodes as read now.

    The old state label was cleared when gpupool set the config label, so a state seen now is the
    manager's answer to it. relabelled: someone else changed the config label meanwhile."""
    out = {}
    for name, node in nodes_now.items():
        if node is None:
            out[name] = "gone"
            continue
        st = node_state(node)
        if st["config"] != config_name:
            out[name] = "relabelled"
        elif st["state"] in DONE_STATES:
            out[name] = "done"
        elif st["state"] in FAILED_STATES:
            out[name] = "failed"
        else:
            out[name] = "busy"
    return out


def wave_status(wave, nodes_now, config_name):
    """One line for a person watching a wave: each node with the MIG manager's state for our config.

    "success" and "failed" are the manager's answers; "pending"/"rebooting"/... whatever it says meanwhile; no
    state yet reads "waiting for the MIG manager"; a node deleted or relabelled by someone else says so."""
    parts = []
    for name in wave:
        node = nodes_now.get(name)
        if node is None:
            parts.append("%s gone" % name)
            continue
        st = node_state(node)
        if st["config"] != config_name:
            parts.append("%s relabelled %s=%s by someone else" % (name, CONFIG_LABEL, st["config"]))
        else:
            parts.append("%s %s" % (name, st["state"] or "waiting for the MIG manager"))
    return ", ".join(parts)


def read_document(text, where="the ConfigMap"):
    """The MIG manager ConfigMap's mig-parted document, or Problems naming what to fix before we may merge."""
    try:
        return parse_document(text, where)
    except SpecError as exc:
        raise Problems([(exc.where, exc.message)], subject="prevent the MIG layout rollout")


def write_document(doc):
    try:
        return render_document(doc)
    except SpecError as exc:
        raise Problems([(exc.where, exc.message)], subject="prevent the MIG layout rollout")
