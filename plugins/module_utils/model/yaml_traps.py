# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What YAML 1.1 reads differently from what a person wrote, in the `gpupool_cluster` of an inventory file.

ansible-core loads inventories with PyYAML, a YAML 1.1 reader, and once loaded the value is all the model sees:

* ``node_count: 010`` is the octal number 8 (YAML 1.1 reads a leading 0 as octal; YAML 1.2 and JSON do not);
* ``timeout: 1:30`` is the base-60 number 90 (sexagesimal);
* ``gpu: on`` in a node_selector is the boolean true, and its label value becomes "True", which no node carries;
* a tab in a plain scalar is kept inside the value.

The composed node tree (PyYAML's composer, before anything is constructed) still has each scalar as written, with
its line, so each is refused with its file, line and the form to write. Chart values (``values``) and the Magnum
cloud (``cloud``) are left alone: the chart's own values may mean an octal file mode, and a cloud holds secrets.

The same walk counts the data as the model will see it, aliases expanded: a file of a few kilobytes can expand to
millions of values (each alias of an anchor that holds aliases multiplies), and is refused with the bound before
anything copies it (bounds.MAX_EXPANDED_VALUES). Pure: text in, findings out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import MAX_EXPANDED_VALUES, expanded_problem
from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import FREE_FORM
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import BaseModel
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import (
    MERGE_TAG,
    _entry_name,
    _render,
    compose_documents,
    yaml,
)

ROOT_KEY = "gpupool_cluster"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"

# PyYAML's resolvers (yaml/resolver.py), the YAML 1.1 forms that YAML 1.2 reads otherwise.
OCTAL = re.compile(r"\A[-+]?0[0-7_]+\Z")
SEXAGESIMAL = re.compile(r"\A[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")
WORD_BOOLEANS = ("yes", "no", "on", "off", "y", "n")


@functools.lru_cache(maxsize=1)
def boolean_keys() -> Tuple[frozenset, frozenset]:
    """(keys whose value is true or false, keys whose value maps names to true or false) in the model, where
    `yes`/`no`/`on`/`off` mean what they say; read from the pydantic models themselves so that a new boolean
    setting is known here at once (Magnum labels take true as well as text, so `yes` there is true as meant).
    Computed on first use: importing the module needs no pydantic (ansible-test's import check runs without it)."""
    scalars: Set[str] = set()
    maps: Set[str] = set()
    stack, seen = [Cluster], set()
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, field in model.model_fields.items():
            key = field.alias or name
            members = [
                a for a in (getattr(field.annotation, "__args__", None) or (field.annotation,)) if a is not type(None)
            ]
            if getattr(field.annotation, "__origin__", None) is dict:
                item = field.annotation.__args__[1]
                if bool in (getattr(item, "__args__", None) or (item,)):
                    maps.add(key)
            elif bool in members:
                scalars.add(key)
            todo = list(members)
            while todo:
                ann = todo.pop()
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    stack.append(ann)
                todo.extend(getattr(ann, "__args__", ()))
    return frozenset(scalars), frozenset(maps)


@dataclass(frozen=True)
class YamlTrap:
    """A scalar YAML 1.1 reads otherwise than written, or a file whose data expands past the bound."""

    file: str
    line: int
    path: str
    message: str

    @property
    def where(self) -> str:
        return "%s:%d: %s" % (self.file, self.line, self.path) if self.path else "%s:%d" % (self.file, self.line)


def find_yaml_traps(text: str, file: str) -> List[YamlTrap]:
    """Every YAML 1.1 trap in the `gpupool_cluster` mapping of each document of `text`, and a finding for data
    that expands past MAX_EXPANDED_VALUES. Text that is not YAML gives nothing (ansible-core reports it)."""
    documents = compose_documents(text)  # the tree the duplicate-key check composed already
    found: List[YamlTrap] = []
    sizes: Dict[int, int] = {}
    for document in documents:
        if not isinstance(document, yaml.MappingNode):
            continue
        for key_node, value_node in document.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.value == ROOT_KEY):
                continue
            total = _expanded(value_node, sizes, set())
            if total > MAX_EXPANDED_VALUES:
                line = value_node.start_mark.line + 1
                found.append(YamlTrap(file, line, ROOT_KEY, expanded_problem(total)))
                continue  # its scalars are not looked at: the data is not what its author meant
            _walk(value_node, [ROOT_KEY], file, found, set())
    return sorted(found, key=lambda t: (t.line, t.path))


def _expanded(node, sizes: Dict[int, int], active: Set[int]) -> int:
    """How many values `node` is once its aliases are expanded (memoized per node: an anchor is counted once and
    multiplied by the aliases that repeat it). A recursive alias (PyYAML refuses those) counts once."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in active:
        return 1
    active.add(key)
    if isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded(k, sizes, active) + _expanded(v, sizes, active) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded(item, sizes, active) for item in node.value)
    else:
        total = 1
    active.discard(key)
    sizes[key] = total
    return total


def _walk(node, loc: List[str], file: str, found: List[YamlTrap], seen: Set[int]) -> None:
    if id(node) in seen:  # an alias: checked where its anchor is written
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            label = "<<" if key_node.tag == MERGE_TAG else str(getattr(key_node, "value", "?"))
            if label in FREE_FORM:
                continue
            if isinstance(value_node, yaml.ScalarNode):
                trap = _trap(value_node, label, loc[-1] in boolean_keys()[1])
                if trap:
                    found.append(YamlTrap(file, value_node.start_mark.line + 1, _render(loc + [label]), trap))
                continue
            _walk(value_node, loc + [label], file, found, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            name = _entry_name(loc[-1] if loc else None, item)  # a pool's name, as the model's paths show it
            at = "[%d]" % index + (" (%s)" % name if name else "")
            if isinstance(item, yaml.ScalarNode):
                trap = _trap(item, "", False)
                if trap:
                    found.append(YamlTrap(file, item.start_mark.line + 1, _render(loc + [at]), trap))
                continue
            _walk(item, loc + [at], file, found, seen)


def _trap(node, key: str, in_boolean_map: bool) -> Optional[str]:
    """Why the plain scalar `node` (the value of `key`) is refused, with what to write; None when it reads as
    written. Quoted scalars are what the person meant, always."""
    if node.style:  # '...', "...", |, >
        return None
    written = node.value
    if "\t" in written:
        return "%r holds a tab, which YAML keeps inside the value; write spaces, or remove it" % written
    if node.tag == INT_TAG and OCTAL.match(written):
        value = int(written.replace("_", ""), 8)
        decimal = written.lstrip("+-0").replace("_", "") or "0"
        return (
            "%s is read as %d: YAML 1.1 reads a leading 0 as octal; write %s (or '%s' in quotes if a string is meant)"
            % (written, value, ("-" if written.startswith("-") else "") + decimal, written)
        )
    if node.tag in (INT_TAG, FLOAT_TAG) and SEXAGESIMAL.match(written):
        value = yaml.constructor.SafeConstructor().construct_object(node)
        return "%s is read as %s: YAML 1.1 reads a:b as a number in base 60; write %s, or '%s' in quotes for text" % (
            written,
            value,
            value,
            written,
        )
    if (
        node.tag == BOOL_TAG
        and written.lower() in WORD_BOOLEANS
        and key not in boolean_keys()[0]
        and not in_boolean_map
    ):
        meant = "true" if written.lower() in ("yes", "on", "y") else "false"
        return (
            "%s is read as the boolean %s (YAML 1.1), not the text %r; write '%s' in quotes for text, or %s for a "
            "boolean" % (written, meant, written, written, meant)
        )
    return None
