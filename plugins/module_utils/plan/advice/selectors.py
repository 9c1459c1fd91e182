# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CEL selector shapes the advisor reads, to say which published devices a DeviceClass it did not make selects.

Not a CEL evaluator: only conjunctions (``&&``) of the comparisons gpupool's own classes use (plan/objects/cel.py)
and hand-written classes most often use:

    device.driver == 'gpu.nvidia.com'
    device.attributes['gpu.nvidia.com'].profile == '3g.20gb'          (a string, int or bool literal)
    device.attributes['gpu.nvidia.com'].productName in ['A', 'B']

Anything else (``||``, ``!``, functions, capacities) is "not understood": `parse` returns None and the advisor
says it does not evaluate that class rather than guess. An attribute in the driver's own domain may be published
without the domain (what the NVIDIA driver does: ``type``, ``profile``), as the API server resolves it.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Optional, Tuple

_STRING = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_LITERAL = r"(?:%s|-?\d+|true|false)" % _STRING
_ATTR = r"device\.attributes\[(%s)\]\.([A-Za-z][A-Za-z0-9_]*)" % _STRING
_EQ = re.compile(r"^(?:device\.driver|%s)\s*==\s*(%s)$" % (_ATTR, _LITERAL))
_DRIVER_EQ = re.compile(r"^device\.driver\s*==\s*(%s)$" % _STRING)
_IN = re.compile(r"^%s\s+in\s+\[((?:\s*%s\s*,?)*)\]$" % (_ATTR, _LITERAL))
_ITEM = re.compile(_LITERAL)

Term = Tuple[Optional[str], Optional[str], List[Any]]  # (domain or None for the driver, attribute, allowed values)


def _value(text: str) -> Any:
    if text[:1] in "'\"":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if text in ("true", "false"):
        return text == "true"
    return int(text)


def _terms(expression: str) -> Optional[List[Term]]:
    text = expression.strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if "||" in text or not text:
        return None
    out: List[Term] = []
    for part in text.split("&&"):
        part = part.strip()
        while part.startswith("(") and part.endswith(")"):
            part = part[1:-1].strip()
        driver = _DRIVER_EQ.match(part)
        if driver:
            out.append((None, None, [_value(driver.group(1))]))
            continue
        eq = _EQ.match(part)
        if eq and eq.group(1):
            out.append((_value(eq.group(1)), eq.group(2), [_value(eq.group(3))]))
            continue
        inside = _IN.match(part)
        if inside:
            values = [_value(v) for v in _ITEM.findall(inside.group(3))]
            out.append((_value(inside.group(1)), inside.group(2), values))
            continue
        return None
    return out


def _attribute(device: dict, driver: str, domain: str, name: str) -> Any:
    attrs = (device.get("basic") or device).get("attributes") or {}
    value = attrs.get("%s/%s" % (domain, name))
    if value is None and domain == driver:
        value = attrs.get(name)
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version"):
            if key in value:
                return value[key]
    return value


def parse(expressions: List[str]) -> Optional[Callable[[str, dict], bool]]:
    """A predicate (driver, device) -> selected, for selectors that are all of the shapes above; else None."""
    terms: List[Term] = []
    for expression in expressions:
        parsed = _terms(expression)
        if parsed is None:
            return None
        terms += parsed

    def selects(driver: str, device: dict) -> bool:
        for domain, name, allowed in terms:
            if name is None:
                if driver not in allowed:
                    return False
            elif _attribute(device, driver, domain, name) not in allowed:
                return False
        return True

    return selects
