# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes label selectors in their text form (``kubectl -l``), parsed and matched without an API server.

The drain policy names the pods it must never evict with one (``drain.skip_pods``). The grammar is that of
k8s.io/apimachinery/pkg/labels (Parse): requirements separated by commas, each ``key``, ``!key``,
``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)`` or ``key notin (a,b)``; keys are qualified
names, values label values. The numeric ``key>1`` / ``key<1`` forms exist for node affinity only and are
refused here. Matching follows labels.Requirement.Matches: ``!=`` and ``notin`` also match a pod without the
key.
"""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    LABEL_VALUE_RULE,
    is_label_key,
    is_label_value,
    label_key_rule,
)


class Requirement(NamedTuple):
    key: str
    operator: str  # exists | not_exists | in | not_in (= and == are "in" one value, != is "not_in" one value)
    values: Tuple[str, ...]


# One requirement: "!key", "key", "key op value" or "key in|notin (values)". Commas inside () belong to the set.
_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^!=<>\s]+)\s*(==|=|!=)\s*(\S*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^!=<>\s(),]+)\s*$")


def _split(text: str) -> List[str]:
    """The requirements of a selector: split at the commas that are not inside a value set."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _key(key: str, part: str) -> str:
    if not is_label_key(key):
        raise ValueError("%r in %r is not a label key: use %s" % (key, part.strip(), label_key_rule(key)))
    return key


def _value(value: str, part: str) -> str:
    if not is_label_value(value):
        raise ValueError("%r in %r is not a label value: %s" % (value, part.strip(), LABEL_VALUE_RULE))
    return value


def parse(text: str) -> List[Requirement]:
    """The requirements of a selector such as ``app=inference,tier in (a,b),!batch``; ValueError says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("an empty selector matches every pod; leave the key out instead")
    out = []
    for part in _split(text):
        if not part.strip():
            raise ValueError("%r has an empty requirement (two commas, or one at an end)" % text)
        if re.search(r"[<>]", part):
            raise ValueError(
                "%r: the numeric operators < and > are only for node affinity; use =, !=, in, notin, "
                "key or !key" % part.strip()
            )
        match = _SET.match(part)
        if match:
            values = tuple(v.strip() for v in match.group(3).split(","))
            if values == ("",):
                raise ValueError(
                    "%r: a value set needs at least one value, e.g. %s in (a,b)" % (part.strip(), match.group(1))
                )
            for value in values:
                _value(value, part)
            op = "in" if match.group(2) == "in" else "not_in"
            out.append(Requirement(_key(match.group(1), part), op, values))
            continue
        match = _EQUALITY.match(part)
        if match:
            op = "not_in" if match.group(2) == "!=" else "in"
            out.append(Requirement(_key(match.group(1), part), op, (_value(match.group(3), part),)))
            continue
        match = _EXISTS.match(part)
        if match:
            op = "not_exists" if match.group(1) else "exists"
            out.append(Requirement(_key(match.group(2), part), op, ()))
            continue
        raise ValueError(
            "%r is not a label selector requirement: use key=value, key!=value, key in (a,b), "
            "key notin (a,b), key or !key" % part.strip()
        )
    return out


def matches(requirements: List[Requirement], labels: Dict[str, str]) -> bool:
    """Whether labels satisfy every requirement (an empty requirement list matches nothing here: see parse)."""
    if not requirements:
        return False
    labels = labels or {}
    for req in requirements:
        present = req.key in labels
        if req.operator == "exists" and not present:
            return False
        if req.operator == "not_exists" and present:
            return False
        if req.operator == "in" and (not present or labels[req.key] not in req.values):
            return False
        if req.operator == "not_in" and present and labels[req.key] in req.values:
            return False
    return True


def selector_matches(text: str, labels: Dict[str, str]) -> bool:
    """matches(parse(text), labels): for a selector the model has already accepted."""
    return matches(parse(text), labels)
