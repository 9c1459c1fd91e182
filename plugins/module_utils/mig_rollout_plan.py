# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling MIG layout changes through NVIDIA's MIG manager: pure planning, no I/O.

The MIG manager (GPU Operator, NVIDIA/mig-parted; reference nvidia-dra-mig-imex.md §2) reads a
mig-parted ``version: v1`` document from a ConfigMap and applies the config named by the node label
``nvidia.com/mig.config``, reporting in ``nvidia.com/mig.config.state`` (pending, rebooting, success,
failed). It reacts to *changes* of the config label only.

What this module decides (gpupool.core.mig_layout does the I/O):

* **configs** - the mig-parted entries of each static-MIG pool, rendered by pool_summary (never
  re-derived here), keyed by the pool's ``mig_config_name``; `merge_document` puts them into the
  ConfigMap's document next to the configs others wrote, which stay untouched.
* **per node** - `classify`: nothing to do (label is the pool's config, state success, and the config's
  content is what the node was last switched to), ``configure`` (label missing or another config),
  ``reconfigure`` (label right but the config's content changed since: the label is removed and set
  again, the only way to make the manager re-read it), ``wait`` (already switching), ``blocked``
  (state failed: a person must look first), ``skip`` (NotReady).
* **waves** - nodes to change, at most ``max_unavailable`` per wave, those already switching first.
* **evictions** - which pods on a node use GPUs (extended resources ``nvidia.com/gpu*``,
  ``nvidia.com/mig-*``, ``gpupool.io/*``, or DRA resource claims) and must leave before the switch.

The content a node was switched to is recorded on the node in the ``gpupool.io/mig-config-digest``
annotation (a digest of the config's entries), written together with the label.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re

try:
    import yaml
    YAML_IMPORT_ERROR = None
except ImportError as _exc:  # modules report it with missing_required_lib()
    yaml = None
    YAML_IMPORT_ERROR = _exc

from ansible_collections.gpupool.core.plugins.module_utils.k8s_objects import node_ready
from ansible_collections.gpupool.core.plugins.module_utils.mig_planner import InfeasibleLayout, mig_parted_config
from ansible_collections.gpupool.core.plugins.module_utils.pool_summary import pool_mig_entries, pool_placements

CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
DIGEST_ANNOTATION = "gpupool.io/mig-config-digest"
CORDON_ANNOTATION = "gpupool.io/cordoned-by"
CORDON_VALUE = "mig-layout"
CONFIGS_ANNOTATION = "gpupool.io/mig-configs"  # on the ConfigMap: config names gpupool wrote there
CONFIG_KEY = "config.yaml"
BUILTIN_CONFIG = "all-disabled"
DONE_STATES = ("success",)
FAILED_STATES = ("failed",)
BUSY_STATES = ("pending", "rebooting")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
GPU_RESOURCE = re.compile(r"^(nvidia\.com/(gpu|mig-).*|gpupool\.io/.+)$")

# Node actions
NONE, CONFIGURE, RECONFIGURE, WAIT, BLOCKED, SKIP = "none", "configure", "reconfigure", "wait", "blocked", "skip"
CHANGING = (CONFIGURE, RECONFIGURE, WAIT)


class RolloutError(ValueError):
    """The rollout cannot start: each problem as (where, message). Nothing was changed."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self):
        lines = ["%d problem(s) prevent the MIG layout rollout; nothing was changed:" % len(self.problems)]
        lines += ["  - %s: %s" % (p, m) for p, m in self.problems]
        return "\n".join(lines)


# ---- configs -------------------------------------------------------------------------------------------

def config_digest(entries):
    """Short digest of a config's mig-parted entries (order of keys does not matter)."""
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def pool_config(pool):
    """(config name, mig-parted entries) of one static-MIG pool, as pool_summary renders them.

    Plans every GPU's layout with the placement planner first: an infeasible layout raises
    RolloutError (load_cluster already refuses it; this keeps the module safe on its own)."""
    try:
        pool_placements(pool)
    except InfeasibleLayout as exc:
        raise RolloutError([("pools[%s].mig" % pool.name, exc.reason)])
    name = pool.mig_config_name
    doc = mig_parted_config({name: pool_mig_entries(pool)})
    return name, doc["mig-configs"][name]


def desired_configs(pools):
    """{config name: {"pools": [pool names], "entries": [...], "digest": str}} for the static-MIG pools.

    Two pools may share a config name only with identical entries."""
    out, problems = {}, []
    for pool in pools:
        if pool.state != "present" or pool.mig.mode != "static":
            continue
        name, entries = pool_config(pool)
        if not LABEL_VALUE.match(name) or len(name) > 63:
            problems.append(("pools[%s].mig.config_name" % pool.name,
                             "%r cannot be a node label value (at most 63 characters of [A-Za-z0-9-_.], starting and "
                             "ending alphanumeric); choose another config_name" % name))
            continue
        if name in out:
            if out[name]["entries"] != entries:
                problems.append(("pools[%s].mig.config_name" % pool.name,
                                 "MIG config %r is also used by pool %s with a different layout; give one of the "
                                 "pools its own mig.config_name" % (name, ", ".join(out[name]["pools"]))))
                continue
            out[name]["pools"].append(pool.name)
            continue
        out[name] = {"pools": [pool.name], "entries": entries, "digest": config_digest(entries)}
    if problems:
        raise RolloutError(problems)
    return out


def parse_document(text, where="the ConfigMap"):
    """The mig-parted document in the ConfigMap's config.yaml (None or empty: a new document)."""
    if text is None or not str(text).strip():
        return {"version": "v1", "mig-configs": {}}
    if yaml is None:
        raise RolloutError([(where, "PyYAML is needed to read the mig-parted config")])
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RolloutError([(where, "key %s is not YAML (%s); fix or remove it so gpupool can add its configs "
                             "without losing anyone else's" % (CONFIG_KEY, str(exc).splitlines()[0]))])
    if not isinstance(doc, dict) or not isinstance(doc.get("mig-configs", {}) or {}, dict):
        raise RolloutError([(where, "key %s is not a mig-parted document (a mapping with version: v1 and "
                             "mig-configs); fix it so gpupool can merge its configs" % CONFIG_KEY)])
    if doc.get("version", "v1") != "v1":
        raise RolloutError([(where, "mig-parted config version %r is not supported (only v1)" % doc.get("version"))])
    doc = dict(doc)
    doc["version"] = "v1"
    doc["mig-configs"] = dict(doc.get("mig-configs") or {})
    return doc


def render_document(doc):
    if yaml is None:
        raise RolloutError([("mig-parted config", "PyYAML is needed to write the mig-parted config")])
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


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
            problems.append((where, "MIG config %r already exists there with other content and was not written by "
                             "gpupool; rename the pool's mig.config_name, or remove that config from the ConfigMap "
                             "if gpupool should own it" % name))
            continue
        configs[name] = copy.deepcopy(entries)
    if problems:
        raise RolloutError(problems)
    for name in sorted(prune):
        if name in configs and name not in desired:
            del configs[name]
            changes[name] = "deleted"
    if BUILTIN_CONFIG not in configs:
        # The manager's default label value; kept so a node reset to it always finds it (never pruned).
        configs[BUILTIN_CONFIG] = [{"devices": "all", "mig-enabled": False}]
    names = sorted((set(owned) | set(desired)) - set(n for n, c in changes.items() if c == "deleted"))
    return new, names, changes


def ours_view(doc, names):
    """{name: entries} of `names` in a document (for diffs)."""
    configs = (doc or {}).get("mig-configs") or {}
    return dict((n, copy.deepcopy(configs[n])) for n in sorted(names) if n in configs)


# ---- nodes -----------------------------------------------------------------------------------------------

def _meta(node):
    return node.get("metadata") or {}


def node_state(node):
    """What matters about a node for the rollout."""
    meta = _meta(node)
    labels = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    return {"name": meta.get("name"), "ready": node_ready(node),
            "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
            "config": labels.get(CONFIG_LABEL), "state": labels.get(STATE_LABEL),
            "digest": ann.get(DIGEST_ANNOTATION), "cordoned_by_us": ann.get(CORDON_ANNOTATION) == CORDON_VALUE}


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
    return [names[i:i + max_unavailable] for i in range(0, len(names), max_unavailable)]


def plan_pool(pool_name, config_name, digest, nodes, max_unavailable, config_changed=False, retry_failed=False):
    """Plan one pool: every node's action, and waves of the nodes to change."""
    rows = []
    for node in sorted(nodes, key=lambda n: _meta(n).get("name")):
        st = node_state(node)
        action, reason = classify(node, config_name, digest, config_changed, retry_failed)
        row = {"name": st["name"], "action": action, "reason": reason, "ready": st["ready"],
               "before": {"config": st["config"], "state": st["state"], "digest": st["digest"]}}
        # A node left cordoned by an interrupted earlier run gets uncordoned once it is done.
        row["uncordon"] = action == NONE and st["cordoned_by_us"]
        rows.append(row)
    changing = [(r["name"], r["action"]) for r in rows if r["action"] in CHANGING]
    return {"pool": pool_name, "config_name": config_name, "digest": digest, "nodes": rows,
            "waves": waves(changing, max_unavailable),
            "blocked": [r["name"] for r in rows if r["action"] == BLOCKED],
            "skipped": [r["name"] for r in rows if r["action"] == SKIP]}


def blocked_problems(plans, namespace="gpu-operator"):
    out = []
    for p in plans:
        for name in p["blocked"]:
            out.append(("pool %s, node %s" % (p["pool"], name),
                        "the MIG manager reported %s=failed for config %s. Read the nvidia-mig-manager log on %s "
                        "(kubectl -n %s logs -l app=nvidia-mig-manager --field-selector spec.nodeName=%s), fix the "
                        "cause, then rerun with retry_failed: true"
                        % (STATE_LABEL, p["config_name"], name, namespace, name)))
    return out


# ---- node writes (merge patches) ------------------------------------------------------------------------

def label_patch(config_name, digest):
    """Set the config label (clearing the old state, so only the manager's next answer counts)."""
    return {"metadata": {"labels": {CONFIG_LABEL: config_name, STATE_LABEL: None},
                         "annotations": {DIGEST_ANNOTATION: digest}}}


def unlabel_patch():
    """First half of a reconfigure: the manager acts on label changes only."""
    return {"metadata": {"labels": {CONFIG_LABEL: None, STATE_LABEL: None}}}


def cordon_patch():
    return {"metadata": {"annotations": {CORDON_ANNOTATION: CORDON_VALUE}}, "spec": {"unschedulable": True}}


def uncordon_patch():
    return {"metadata": {"annotations": {CORDON_ANNOTATION: None}}, "spec": {"unschedulable": None}}


def node_diff_view(config, state, digest):
    """What the module changes on a node, as shown in --diff."""
    labels = {CONFIG_LABEL: config, STATE_LABEL: state}
    return {"metadata": {"labels": dict((k, v) for k, v in labels.items() if v is not None),
                         "annotations": {DIGEST_ANNOTATION: digest} if digest else {}}}


# ---- pods to evict ----------------------------------------------------------------------------------------

def gpu_use(pod):
    """Why a pod uses GPUs (a short sentence), or None."""
    spec = pod.get("spec") or {}
    names = set()
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or []:
            res = c.get("resources") or {}
            for kind in ("limits", "requests"):
                names.update(k for k in (res.get(kind) or {}) if GPU_RESOURCE.match(k))
    if names:
        return "requests %s" % ", ".join(sorted(names))
    claims = [c.get("name") for c in spec.get("resourceClaims") or []]
    if claims:
        return "has resource claim(s) %s" % ", ".join(str(c) for c in claims)
    return None


def pods_to_evict(pods, node_name):
    """Pods on `node_name` that must leave before its MIG layout changes.

    Returns (evict, wait_for, skipped): evict: [(pod, reason)]; wait_for: GPU pods already terminating;
    skipped: [(pod, why)] - GPU pods that eviction does not apply to (DaemonSet pods, which the MIG manager
    pauses itself; static/mirror pods). Finished pods (Succeeded/Failed) hold no GPU and are ignored."""
    evict, wait_for, skipped = [], [], []
    for pod in sorted(pods, key=lambda p: (_meta(p).get("namespace") or "", _meta(p).get("name"))):
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        why = gpu_use(pod)
        if why is None:
            continue
        meta = _meta(pod)
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            skipped.append((pod, "DaemonSet pod (the MIG manager pauses GPU operands itself)"))
        elif "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            skipped.append((pod, "static pod (cannot be evicted through the API)"))
        elif meta.get("deletionTimestamp"):
            wait_for.append((pod, why))
        else:
            evict.append((pod, why))
    return evict, wait_for, skipped


def pod_ref(pod):
    meta = _meta(pod)
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def eviction(pod, grace_period=None):
    meta = _meta(pod)
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}}
    opts = {}
    if grace_period is not None:
        opts["gracePeriodSeconds"] = int(grace_period)
    if meta.get("uid"):
        opts["preconditions"] = {"uid": meta["uid"]}
    if opts:
        body["deleteOptions"] = opts
    return body


# ---- progress -------------------------------------------------------------------------------------------

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
