# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a message lists the names someone could have meant: closest first, a few inline, all on the lines below.

"unknown GPU model 'A10O'" followed by nineteen catalog keys on one 500-character line buries the one that was
meant. So a message names the closest few in its sentence, and when there are more it ends with every name on
lines of their own (at most `WIDTH` characters each), closest first. Used by the MIG catalog and placement and by
every model check that says "has no X" or "unknown X" (each of those names what there is). Lives here, at the
bottom of the pipeline, because mig/ words messages too.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import Iterable, List

INLINE = 6  # a list this long stays in the sentence
SHORT = 3  # of a longer list, the sentence names the closest few; all follow on the lines below
WIDTH = 120  # characters per line of the full list


def closest_first(given: object, names: Iterable[object]) -> List[str]:
    """`names` (each once) ordered by how alike they are to `given` (difflib, case ignored); alike names keep
    their own order."""
    wanted = str(given).lower()
    unique = list(dict.fromkeys(str(n) for n in names))
    return sorted(unique, key=lambda n: -difflib.SequenceMatcher(None, wanted, n.lower()).ratio())


def inline(given: object, names: Iterable[object], limit: int = INLINE) -> str:
    """'a, b, c': the names, closest to `given` first; more than `limit`: the closest `SHORT` and 'N more below'
    (the message then ends with `below`)."""
    ordered = closest_first(given, names)
    if not ordered:
        return "none"
    if len(ordered) <= limit:
        return ", ".join(ordered)
    return "%s and %d more below" % (", ".join(ordered[:SHORT]), len(ordered) - SHORT)


def below(label: str, given: object, names: Iterable[object], limit: int = INLINE) -> str:
    """'' when `inline` showed every name; else a newline and '<label>: all names', closest first, wrapped at
    `WIDTH`: the end of a message whose sentence used `inline`."""
    ordered = closest_first(given, names)
    if len(ordered) <= limit:
        return ""
    text = "%s (%d, closest first): %s" % (label, len(ordered), ", ".join(ordered))
    return "\n" + "\n".join(textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False))
