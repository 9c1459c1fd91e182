# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keys written twice in one YAML mapping, told apart from keys a ``<<`` merge brings in.

A mapping that names a key twice (two ``mig:`` in one pool) loads as if the first were not there: YAML keeps
the last value and says nothing. That must be refused. But a key that *overrides* a merged one is standard
YAML and what platform teams write::

    a100: &a100 {flavor: g4.p2.40g, node_count: 1}
    pools:
      - nodegroup: {<<: *a100, node_count: 2}     # node_count 2: the mapping's own key wins

ansible-core cannot tell the two apart: its duplicate check (``duplicate_dict_key``) runs after PyYAML has
flattened the merge into the mapping, so the override looks like a second ``node_count`` and ``error`` refuses a
valid inventory (``warn`` warns about it). gpupool reads the file's node tree *before* any merge instead (PyYAML's
composer: every key with its line), so it sees what the person wrote. Pure: text in, findings out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, Hashable, List, Optional, Set, Tuple, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import MAX_FILE_BYTES, file_size_problem
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import ENTRY_NAME

try:
    import yaml

    _Loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
except ImportError:  # the validate step reports a missing PyYAML itself
    yaml = None
    _Loader = None

MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class DuplicateKey:
    """A key written a second time in one mapping: where (file, line), which key (path), where it was first."""

    file: str
    line: int
    first_line: int
    path: str
    key: str

    @property
    def where(self) -> str:
        """'host_vars/c1/gpupool.yml:12: gpupool_cluster.pools[0] (gpu-t4).mig': a problem's path."""
        return "%s:%d: %s" % (self.file, self.line, self.path)

    @property
    def message(self) -> str:
        if self.key == "<<":
            return (
                "written twice (first at line %d): merge several mappings with one key, `<<: [*first, *second]`"
                % self.first_line
            )
        return (
            "written twice (first at line %d): YAML keeps only the last one, silently; delete one (a key that "
            "overrides a `<<` merge is fine)" % self.first_line
        )


@dataclass(frozen=True)
class TooLarge:
    """A YAML file over bounds.MAX_FILE_BYTES: not read (composing 50 MB takes minutes), refused with its size."""

    file: str
    size: int

    @property
    def where(self) -> str:
        return self.file

    @property
    def message(self) -> str:
        return file_size_problem(self.size)


def too_large(file: str, size: int) -> Optional[TooLarge]:
    """The finding for a file of `size` bytes, or None when gpupool reads it."""
    return TooLarge(file, size) if size > MAX_FILE_BYTES else None


def find_duplicate_keys(text: str, file: str) -> List[DuplicateKey]:
    """Every key written twice in one mapping of the YAML `text` (all its documents), in file order.

    Not duplicates: keys that come from a ``<<`` merge and are written again in the mapping (an override),
    a key in two mappings of one merge list (``<<: [*a, *b]``; which value PyYAML, and so ansible-core, keeps
    depends on its release - 6.0.2 the first, as the YAML merge spec says, 6.0.4 the last: docs/inventory.md),
    the same mapping reached again
    through an alias (it is checked once, where its anchor is). Quoted and plain spellings of
    one key (``"gpu"`` and ``gpu``) are one key, as they are once loaded. Text that is not YAML gives nothing:
    ansible-core reports it with its own position when it loads the file."""
    found: List[DuplicateKey] = []
    documents = compose_documents(text)
    seen: Set[int] = set()
    for document in documents:
        if document is not None:
            _walk(document, [], file, found, seen)
    return sorted(found, key=lambda d: (d.line, d.path))


@functools.lru_cache(maxsize=4)
def compose_documents(text: str) -> tuple:
    """The node trees of every document of `text` (PyYAML's composer, before any merge or construction), or ()
    when it is not YAML. Cached: the duplicate-key and the YAML 1.1 checks read the same file's tree, which they
    never change."""
    if yaml is None:
        return ()
    try:
        return tuple(yaml.compose_all(text, Loader=_Loader))
    except yaml.YAMLError:
        return ()


def problems_of(duplicates: List[Union[DuplicateKey, TooLarge]]) -> List[Tuple[str, str]]:
    """(path, message) pairs for `model.errors.Problems`."""
    return [(d.where, d.message) for d in duplicates]


def _walk(node, loc: List[str], file: str, found: List[DuplicateKey], seen: Set[int]) -> None:
    if id(node) in seen:  # an alias: the anchored node was (or is being) checked where it is written
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: Dict[Hashable, int] = {}
        for key_node, value_node in node.value:
            key = _identity(key_node)
            line = key_node.start_mark.line + 1
            label = _key_label(key_node)
            if key in first:
                found.append(DuplicateKey(file, line, first[key], _render(loc + [label]), label))
            else:
                first[key] = line
            _walk(value_node, loc + [label], file, found, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            at = "[%d]" % index
            name = _entry_name(loc[-1] if loc else None, item)
            _walk(item, loc + [at + (" (%s)" % name if name else "")], file, found, seen)


def _identity(node) -> Hashable:
    """The key as it is once loaded: "gpu" and gpu are one key, '1' and 1 are two (a string and a number)."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag == MERGE_TAG:
            return ("<<",)
        try:
            value = yaml.constructor.SafeConstructor().construct_object(node)
            hash(value)
            return ("scalar", value)
        except (yaml.YAMLError, TypeError, ValueError):  # a tag such as !vault: compare what is written
            return ("scalar", node.tag, node.value)
    if isinstance(node, yaml.SequenceNode):
        return ("sequence",) + tuple(_identity(item) for item in node.value)
    return ("mapping",) + tuple((_identity(k), _identity(v)) for k, v in node.value)


def _key_label(node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return "<<" if node.tag == MERGE_TAG else str(node.value)
    return "?complex key at line %d" % (node.start_mark.line + 1)


def _entry_name(parent: Optional[str], item) -> str:
    """The name people know a list entry by (a pool's name, a tenant's namespace), as model.paths writes it."""
    key = ENTRY_NAME.get(parent or "")
    if key is None or not isinstance(item, yaml.MappingNode):
        return ""
    for key_node, value_node in item.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key and isinstance(value_node, yaml.ScalarNode):
            return str(value_node.value)
    return ""


def _render(loc: List[str]) -> str:
    out = ""
    for part in loc:
        if part.startswith("["):
            out += part
        elif part == "<<" or re.fullmatch(r"\w+", part):
            out += ("." if out else "") + part
        else:
            out += "[%r]" % part
    return out
