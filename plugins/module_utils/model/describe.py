# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How an inventory value appears in a message: what kind of value it is, and a repr cut to a readable length.

A message must point at the value, not reproduce it: a whole pool pasted where a string was expected would
bury the one line that says what to fix.
"""

from __future__ import annotations

LIMIT = 60


def cut(value: object, limit: int = LIMIT) -> str:
    """repr(value), cut to `limit` characters with the full length noted."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return "%s... (%d characters)" % (text[:limit], len(text))


def kind_of(value: object) -> str:
    """'a string', 'a mapping', ... as YAML users name them."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a %s" % type(value).__name__


def got(value: object) -> str:
    """'got a string 'static'' for the end of a message."""
    if value is None:
        return "got nothing (null)"
    if isinstance(value, bool):
        return "got %s (YAML reads yes/no/on/off as booleans)" % str(value).lower()
    return "got %s %s" % (kind_of(value), cut(value))
