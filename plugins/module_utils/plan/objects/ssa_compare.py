# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure server-side-apply comparison: does a desired object differ from the live one in any field we own?

Used by the apply engine to decide writes locally, so a no-op converge makes zero writes.
"""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    FIELD_MANAGER,
    LABELS_ANNOTATION,
    TAINTS_ANNOTATION,
)

SERVER_FIELDS = (
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def strip(obj, keep_status=True):
    """The object as users see it in a diff: no server bookkeeping."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    if not keep_status:
        out.pop("status", None)
    return out


def diff_view(obj):
    """The object as a diff shows it: without apiVersion and kind, which the diff's header names. An object read
    from a LIST has neither (the list carries them), one returned by an apply has both: showing them would make
    every diff look as if they changed."""
    if not obj:
        return obj or {}
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def node_view(node):
    """What gpupool touches on a Node: labels, taints and the two annotations recording gpupool's."""
    if node is None:
        return None
    meta = node.get("metadata") or {}
    ours = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k == TAINTS_ANNOTATION or k == LABELS_ANNOTATION or k.startswith(LABELS_ANNOTATION + ".")
    }
    view = {
        "metadata": {"name": meta.get("name"), "labels": dict(meta.get("labels") or {})},
        "spec": {"taints": list((node.get("spec") or {}).get("taints") or [])},
    }
    if ours:
        view["metadata"]["annotations"] = ours
    return view


def _same_scalar(want, have):
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if isinstance(want, (int, float)) and isinstance(have, (int, float)):
        return float(want) == float(have)
    return want == have


def differences(desired, live, path=""):
    """Paths where `desired` is not contained in `live` (live may have extra, server-set keys)."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return [path or "."]
        out = []
        for key, value in desired.items():
            sub = "%s.%s" % (path, key)
            if key not in live:
                if value in (None, {}, []):
                    continue  # empty: the server omits it
                out.append(sub)
            else:
                out += differences(value, live[key], sub)
        return out
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return [path]
        out = []
        for i, (a, b) in enumerate(zip(desired, live)):
            out += differences(a, b, "%s[%d]" % (path, i))
        return out
    if desired is None:
        return [] if live is None else [path]
    return [] if _same_scalar(desired, live) else [path]


def desired_field_paths(obj, prefix=()):
    """Field paths an apply of `obj` would own (lists are leaves)."""
    out = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            p = prefix + (key,)
            out.add(p)
            if isinstance(value, dict):
                out |= desired_field_paths(value, p)
    return out


def fields_v1_paths(fields, prefix=()):
    """Field paths in a managedFields fieldsV1 (f:<name> keys; a list's k:/v:/i: children end the path)."""
    out = set()
    for key, value in (fields or {}).items():
        if not key.startswith("f:"):
            continue
        p = prefix + (key[2:],)
        out.add(p)
        if isinstance(value, dict) and value and all(k.startswith("f:") or k == "." for k in value):
            out |= fields_v1_paths(value, p)
    return out


def managed_entry(obj, manager=FIELD_MANAGER, operation="Apply"):
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("operation") == operation:
            return entry
    return None


def owned_paths(obj, manager=FIELD_MANAGER, operation="Apply"):
    entry = managed_entry(obj, manager, operation)
    return fields_v1_paths((entry or {}).get("fieldsV1") or {}) if entry else set()


def released_fields(desired, live, manager=FIELD_MANAGER):
    """Fields `manager` owns by apply on `live` that `desired` no longer sets (an apply would drop them)."""
    want = desired_field_paths({k: v for k, v in desired.items() if k not in ("apiVersion", "kind")})
    want.add(("metadata", "name"))
    want.add(("metadata", "namespace"))
    gone = []
    for path in owned_paths(live, manager):
        if path in want:
            continue
        # An owned parent of something we still set (e.g. f:metadata) is not a release.
        if any(w[: len(path)] == path for w in want):
            continue
        gone.append(".".join(path))
    return sorted(gone)


def needs_apply(desired, live, manager=FIELD_MANAGER):
    """(write needed?, reasons). Compares only what we set, plus what we would stop setting."""
    if live is None:
        return True, ["does not exist"]
    body = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind")}
    meta = dict(body.get("metadata") or {})
    for key in ("uid", "resourceVersion"):  # preconditions, not content
        meta.pop(key, None)
    body["metadata"] = meta
    diffs = differences(body, live)
    released = released_fields(desired, live, manager)
    reasons = ["%s differs" % d.lstrip(".") for d in diffs] + ["%s no longer set" % r for r in released]
    return bool(reasons), reasons


def owned_label_keys(obj, manager=FIELD_MANAGER):
    return {p[2] for p in owned_paths(obj, manager) if len(p) == 3 and p[:2] == ("metadata", "labels")}


def label_owners(obj, key, exclude=FIELD_MANAGER):
    """Field managers other than `exclude` whose managedFields own label `key` on `obj`."""
    out = []
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        manager = entry.get("manager")
        if manager != exclude and ("metadata", "labels", key) in fields_v1_paths(entry.get("fieldsV1") or {}):
            out.append(manager)
    return sorted(set(out))
