# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Control and invisible characters anywhere in an inventory's names, labels, selectors, flavors and paths, refused
before anything else.

YAML lets them in without a word: a block scalar (``name: |``) keeps its trailing newline, a double-quoted "\\t" is a
tab. A pool named "gpu-t4\\n" passes no Kubernetes or Magnum check, and a node_selector value "t4\\n" matches no node,
so every node of the pool would be orphaned and cordoned. Every string and key of the inventory is checked here,
once, with a message that names the character and the fix, except the free-form subtrees (chart values, the
Magnum cloud dict, which may hold a password) and CEL selectors, where a newline or a tab is only whitespace.
Invisible characters (a no-break or zero-width space, a bidi control: lookalikes.is_invisible) are refused the same
way: a flavor 'g4.p2.40g' with a trailing U+00A0 looks right and is "not found" by Magnum in the middle of a run.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import (
    FREE_FORM,
    describe_chars,
    invisible_problem,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import control_problem

Loc = Tuple[Union[str, int], ...]
Problem = Tuple[str, str]

# CEL expressions (device_classes.extra[].selectors) may span lines: whitespace is theirs, other control
# characters are not.
CEL_KEYS = ("selectors",)
CEL_WHITESPACE = "\n\r\t"
# Values no syntax rule checks (Nova and Magnum names, GPU models the catalog matches loosely, NVML product names): a look-alike character there is refused
# here, naming it (elsewhere the key's own rule refuses it and lookalikes.scan adds the same note).
UNCHECKED_NAMES = ("flavor", "image", "role", "cluster", "model", "product_names", "labels")


def control_character_problems(
    data: object, root: str, path_of: Callable[[str, Sequence[Union[str, int]]], str]
) -> Tuple[List[Problem], Dict[str, str]]:
    """([(path, message)] for each key or string with a control character, {path: holder path}).

    path_of(root, loc) renders a path the way shape errors do. The second value maps each problem's path to the
    path of the field (mapping or list) that holds it, or to itself: a shape or semantic problem reported there
    says the same thing less precisely (load.py drops it)."""
    problems: List[Problem] = []
    parents: Dict[str, str] = {}

    def report(loc: Loc, message: str) -> None:
        at = path_of(root, loc)
        problems.append((at, message))
        # the field that holds it (node_selector, product_names), never a pool entry or the root: a problem of
        # the whole pool is another problem
        holder = loc[:-1]
        parents[at] = path_of(root, holder) if holder and isinstance(holder[-1], str) else at

    def walk(value: object, loc: Loc, cel: bool, what: str, unchecked: bool = False) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    why = control_problem(key, "key") or invisible_problem(key, "key")
                    why = why or (unchecked and not key.isascii() and describe_chars(key)) or None
                    if why:
                        report(loc + (key,), "the key " + why)
                if key in FREE_FORM:
                    continue
                walk(
                    item,
                    loc + (key,),
                    key in CEL_KEYS,
                    "name" if str(key).endswith("name") else "value",
                    unchecked or key in UNCHECKED_NAMES,  # a Magnum labels map: its keys and values
                )
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, loc + (index,), cel, what, unchecked)
        elif isinstance(value, str):
            why = control_problem(value, "CEL expression", CEL_WHITESPACE) if cel else control_problem(value, what)
            if why:
                report(loc, why)
            elif invisible_problem(value, what):
                report(loc, invisible_problem(value, what))
            elif unchecked and not value.isascii():
                report(loc, describe_chars(value) or "%r is not ASCII; retype it" % value)

    walk(data, (), False, "value")
    return problems, parents
