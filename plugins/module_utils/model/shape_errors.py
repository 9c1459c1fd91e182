# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pydantic validation errors -> (path, message) pairs a person can act on.

Paths are written the way the inventory is (``gpupool_cluster.pools[1] (gpu-a100).mig.layout``). A wrong type
says what is expected with a one-line example (``mig: {mode: static, layout: {...}}``) and shows the value
found, cut short; unknown keys get a did-you-mean hint and the keys allowed at that place. No pydantic
wording ("Input should be a valid dictionary or instance of Mig") reaches the user.
"""

from __future__ import annotations

import difflib
import re
from typing import Dict, List, Sequence, Tuple, Union

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut, got
from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import ascii_fold
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import inventory_path
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import BaseModel

# One line of inventory per key whose value is a structure: what the user should have written.
EXAMPLES: Dict[str, str] = {
    "gpupool_cluster": "gpupool_cluster: {name: cern-gpu, pools: [...]}",
    "pools": "pools: [{name: gpu-a100, gpu: {model: A100-40GB}, nodegroup: {flavor: g4.p2.40g}}]",
    "pools[]": "- {name: gpu-a100, gpu: {model: A100-40GB}, nodegroup: {flavor: g4.p2.40g}}",
    "magnum": "magnum: {cloud: openstack, cluster: k8s-gpu}",
    "cloud": "cloud: openstack",
    "dra_driver": "dra_driver: {version: '0.5.1', nvidia_driver_root: /run/nvidia/driver}",
    "feature_gates": "feature_gates: {TimeSlicingSettings: true}",
    "values": "values: {kubeletPlugin: {priorityClassName: system-node-critical}}",
    "mig_manager": "mig_manager: {config_map: gpupool-mig-parted-config, namespace: gpu-operator}",
    "nodegroup": "nodegroup: {flavor: g4.p2.40g, node_count: 2}",
    "gpu": "gpu: {model: A100-40GB, per_node: 2}",
    "mig": "mig: {mode: static, layout: {3g.20gb: 1, 2g.10gb: 2}}",
    "layout": "layout: {3g.20gb: 1, 2g.10gb: 2}",
    "layouts": "layouts: {0: {7g.40gb: 1}, 1: {1g.5gb: 7}}",
    "layouts[]": "layouts: {0: {7g.40gb: 1}}",
    "sharing": "sharing: {time_slicing: {interval: Medium}}",
    "time_slicing": "time_slicing: {interval: Medium}",
    "mps": "mps: {active_thread_percentage: 50}",
    "device_classes": "device_classes: {extra: [{name: a100-big, min_memory: 40Gi}]}",
    "extra": "extra: [{name: a100-big, min_memory: 40Gi}]",
    "extra[]": "- {name: a100-big, min_memory: 40Gi}",
    "selectors": "selectors: [\"device.attributes['gpu.nvidia.com'].brand == 'Nvidia'\"]",
    "nvlink": "nvlink: {mode: compute_domain, compute_domain: {name: gb200-domain, namespace: ml}}",
    "compute_domain": "compute_domain: {name: gb200-domain, namespace: ml}",
    "imex_nodes": "imex_nodes: [10.0.0.1, 10.0.0.2]",
    "taints": "taints: [{key: example.com/team, value: ml, effect: NoSchedule}]",
    "taints[]": "- {key: example.com/team, value: ml, effect: NoSchedule}",
    "node_labels": "node_labels: {example.com/team: ml}",
    "node_selector": "node_selector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}",
    "labels": "labels: {nvidia_gpu_enabled: 'true'}",
    "tenants": "tenants: [{namespace: team-a, templates: [{name: one-t4, pool: gpu-t4}]}]",
    "tenants[]": "- {namespace: team-a, templates: [{name: one-t4, pool: gpu-t4}]}",
    "templates": "templates: [{name: a100-slice, pool: gpu-a100-mig, mig_profile: 3g.20gb}]",
    "templates[]": "- {name: a100-slice, pool: gpu-a100-mig, mig_profile: 3g.20gb}",
    "drain": "drain: {timeout: 900, skip_pods: gpupool.io/drain=skip, when_budget_blocks: fail}",
}

# What each pydantic type error expects, in words.
EXPECTED = {
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
}

# Names pydantic puts into a location for the member of a union it tried (str, dict[str,any], ...).
_UNION_MEMBER = re.compile(r"^(str|int|bool|float|none|dict\[.*\]|list\[.*\]|function-.*|literal\[.*\]|[A-Z]\w*)$")


def _owner_at(loc: Sequence[Union[str, int]], model=Cluster):
    """The pydantic model class that owns the key at `loc` below `model` (for typo hints and allowed keys)."""
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        found = None
        stack = [field.annotation]
        while stack and found is None:
            ann = stack.pop(0)
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                found = ann
            stack.extend(getattr(ann, "__args__", ()))
        if found is None:
            return None
        model = found
    return model


def _clean_loc(loc, data):
    """The location without pydantic's union-member names, walking the raw data to tell keys from them."""
    out, node = [], data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            out.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            out.append(part)
        elif isinstance(part, str) and _UNION_MEMBER.match(part):
            continue
        else:
            out.append(part)
            node = None
    return tuple(out)


def _example(loc, model=Cluster) -> str:
    """A one-line example for the key at `loc`, or '' when none is known."""
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return EXAMPLES["gpupool_cluster"]
    key = names[-1]
    if isinstance(loc[-1], int):
        return EXAMPLES.get(key + "[]", "")
    if key in EXAMPLES:
        return EXAMPLES[key]
    owner = _owner_at(loc, model)
    field = owner.model_fields.get(key) if owner else None
    if (
        field is not None
        and not field.is_required()
        and field.default not in (None, "")
        and not isinstance(field.default, bool)
    ):
        return "%s: %s" % (key, field.default)
    if field is not None and field.annotation is bool:
        return "%s: true" % key
    return ""


def _type_message(kinds: List[str], loc, value, model=Cluster) -> str:
    expected = " or ".join(dict.fromkeys(kinds))
    text = "must be %s" % expected
    example = _example(loc, model)
    if example:
        text += ", e.g. `%s`" % example
    text += "; %s" % got(value)
    if kinds == ["a string"] and isinstance(value, (bool, int, float)):
        text += "; quote it to keep it a string"
    return text


def _literal_message(error) -> str:
    expected = (error.get("ctx") or {}).get("expected") or ""
    return "%s is not allowed: use %s" % (cut(error.get("input")), expected)


def _value_at(data, loc):
    node = data
    for part in loc:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node


def _unknown_key_message(loc, model=Cluster) -> str:
    owner = _owner_at(loc, model)
    known = list(owner.model_fields) if owner else []
    key = str(loc[-1])
    close = difflib.get_close_matches(ascii_fold(key), known, n=1)
    text = "unknown key %s" % cut(key)
    text += "; did you mean %r?" % close[0] if close else ""
    if known:
        text += " Allowed here: %s.%s" % (
            inline(ascii_fold(key), known),
            below("keys allowed here", ascii_fold(key), known),
        )
    return text


def _bound_message(error) -> str:
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "greater_than_equal":
        return "must be %s or more; %s" % (ctx.get("ge"), got(error.get("input")))
    if kind == "greater_than":
        return "must be more than %s; %s" % (ctx.get("gt"), got(error.get("input")))
    if kind == "less_than_equal":
        return "must be at most %s; %s" % (ctx.get("le"), got(error.get("input")))
    if kind == "less_than":
        return "must be less than %s; %s" % (ctx.get("lt"), got(error.get("input")))
    if kind == "string_too_short":
        return "must not be empty"
    return ""


# Keys whose value is a number of seconds: a duration written with a unit ('45m') is told in seconds.
SECONDS_KEYS = ("timeout", "wait_timeout", "interval_seconds", "relabel_delay", "duration")
_DURATION = re.compile(
    r"\A\s*([0-9]+(?:\.[0-9]+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hours?|d|days?)\s*\Z", re.I
)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration_hint(key: str, value: object) -> str:
    """'; drain.timeout is in seconds: write 2700 for 45m' when a duration was written with a unit."""
    if key not in SECONDS_KEYS or not isinstance(value, str):
        return ""
    match = _DURATION.match(value)
    if not match:
        return "; %s is a number of seconds, e.g. `%s: 900` for 15 minutes" % (key, key)
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)[0].lower()]
    return "; %s is a number of seconds without a unit: write `%s: %d` for %s" % (key, key, seconds, value.strip())


def _bound_hint(loc, error) -> str:
    """What a person meant by a value out of bounds, when it is a known idiom: -1 for "no limit"."""
    key = str(loc[-1]) if loc else ""
    value = error.get("input")
    if key.startswith("max_") and isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return '; there is no -1 for "no limit": leave %s out for no limit' % key
    return ""


def pydantic_problems(err, root: str, data: object = None, model=Cluster) -> List[Tuple[str, str]]:
    """(path, message) for every error of a pydantic ValidationError raised on the raw inventory `data`
    (validated as `model`: the Cluster, or a part such as a ClaimTemplate given on its own)."""
    problems: List[list] = []
    type_problem: Dict[tuple, list] = {}
    for error in err.errors():
        loc = _clean_loc(tuple(error["loc"]), data)
        kind = error["type"]
        path = inventory_path(root, loc, data)
        if kind in EXPECTED:
            # A union (str or mapping, ...) reports one error per member: say them in one sentence.
            if loc not in type_problem:
                type_problem[loc] = [path, []]
                problems.append(type_problem[loc])
            type_problem[loc][1].append(EXPECTED[kind])
        elif kind == "extra_forbidden":
            problems.append([path, _unknown_key_message(loc, model)])
        elif kind == "missing":
            example = _example(loc, model)
            problems.append([path, "required key is missing" + (", e.g. `%s`" % example if example else "")])
        elif kind == "literal_error":
            problems.append([path, _literal_message(error)])
        elif _bound_message(error):
            problems.append([path, _bound_message(error) + _bound_hint(loc, error)])
        elif kind == "value_error":
            problems.append([path, str((error.get("ctx") or {}).get("error") or error["msg"])])
        else:
            # A pydantic error type this table does not know yet: its wording, without pydantic's prefix.
            text = error["msg"].replace("Input should be", "must be").replace("Value error, ", "")
            problems.append([path, "%s; %s" % (text, got(error.get("input")))])
    for loc, entry in type_problem.items():
        value = _value_at(data, loc)
        entry[1] = _type_message(entry[1], loc, value, model) + _duration_hint(str(loc[-1]) if loc else "", value)
    return [(entry[0], entry[1]) for entry in problems]
