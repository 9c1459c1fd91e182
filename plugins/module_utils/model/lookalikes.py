# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Non-ASCII characters that look like ASCII ones, in keys and names.

A Cyrillic 'о' in `nоde_count` or a non-breaking hyphen pasted from a web page into a pool name gives a message
("unknown key", "not a DNS label") that a person cannot see the reason for: the text looks right. Every key and
name the collection reads is ASCII, so each non-ASCII character there is named with its code point.
"""

from __future__ import annotations

import unicodedata
from typing import Dict, Optional

# Characters that NFKD does not map to ASCII but that read as ASCII letters or punctuation
# (the common ones of Unicode's confusables.txt: Cyrillic, Greek, dashes, quotes, invisible spaces).
LOOKS_LIKE = {
    "\u0430": "a",
    "\u0435": "e",
    "\u043e": "o",
    "\u0440": "p",
    "\u0441": "c",
    "\u0443": "y",
    "\u0445": "x",
    "\u0456": "i",
    "\u0455": "s",
    "\u0458": "j",
    "\u04bb": "h",
    "\u0501": "d",
    "\u04cf": "l",
    "\u051b": "q",
    "\u051d": "w",
    "\u0410": "A",
    "\u0412": "B",
    "\u0415": "E",
    "\u041a": "K",
    "\u041c": "M",
    "\u041d": "H",
    "\u041e": "O",
    "\u0420": "P",
    "\u0421": "C",
    "\u0422": "T",
    "\u0425": "X",
    "\u0406": "I",
    "\u03bf": "o",
    "\u03b1": "a",
    "\u03bd": "v",
    "\u03c1": "p",
    "\u03b9": "i",
    "\u03ba": "k",
    "\u03c4": "t",
    "\u039f": "O",
    "\u0391": "A",
    "\u0392": "B",
    "\u0395": "E",
    "\u0397": "H",
    "\u0399": "I",
    "\u039a": "K",
    "\u039c": "M",
    "\u039d": "N",
    "\u03a1": "P",
    "\u03a4": "T",
    "\u03a5": "Y",
    "\u03a7": "X",
    "\u0396": "Z",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u00ad": "",
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\u2060": "",
    "\ufeff": "",
    "\u00a0": " ",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2024": ".",
    "\u3002": ".",
}

# Subtrees whose keys and values are not names: chart values and Magnum labels are free-form, and a cloud
# dict may hold a password that must never appear in a message.
FREE_FORM = ("values", "cloud")


def ascii_twin(char: str) -> Optional[str]:
    """The ASCII character `char` looks like ('' for an invisible one), or None when it looks like none."""
    if char in LOOKS_LIKE:
        return LOOKS_LIKE[char]
    folded = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    return folded if folded else None


def describe_chars(text: str) -> Optional[str]:
    """A sentence naming the non-ASCII characters of `text`, or None when it is ASCII."""
    parts = []
    for position, char in enumerate(text):
        if ord(char) < 128:
            continue
        name = unicodedata.name(char, "an unnamed character")
        twin = ascii_twin(char)
        if twin == "":
            parts.append("an invisible U+%04X %s at position %d" % (ord(char), name, position + 1))
        elif twin:
            parts.append("U+%04X %s at position %d, which looks like %r" % (ord(char), name, position + 1, twin))
        else:
            parts.append("U+%04X %s at position %d" % (ord(char), name, position + 1))
        if len(parts) == 3:
            break
    if not parts:
        return None
    fixed = "".join(LOOKS_LIKE.get(c, ascii_twin(c) or c) if ord(c) >= 128 else c for c in text)
    hint = "; retype it in ASCII" + (" (%r)" % fixed if fixed.isascii() and fixed != text else "")
    return "%r contains %s%s" % (text, ", ".join(parts), hint)


def is_invisible(char: str) -> bool:
    """A character that shows as nothing or as a plain space but is not one: format characters (zero-width spaces
    and joiners, the byte-order mark, the soft hyphen, bidi embedding/override/isolate controls: Unicode category
    Cf) and every space separator other than U+0020 (the no-break space pasted from a web page or a spreadsheet,
    the thin and ideographic spaces: Zs). Neither Kubernetes nor Magnum/Nova accept one in a name, a label or a
    flavor (Nova refuses a name with leading or trailing whitespace; a flavor with a trailing U+00A0 is simply
    "not found", in the middle of a run)."""
    category = unicodedata.category(char)
    return category == "Cf" or (category == "Zs" and char != " ")


def invisible_problem(text: str, what: str = "value") -> Optional[str]:
    """Why `text` is refused for an invisible character (naming each with its code point and position, and the
    text to write instead), or None when it has none."""
    found = [(i, c) for i, c in enumerate(text) if is_invisible(c)]
    if not found:
        return None
    parts = [
        "an invisible U+%04X %s at position %d" % (ord(c), unicodedata.name(c, "format character"), i + 1)
        for i, c in found[:3]
    ]
    more = " and %d more" % (len(found) - 3) if len(found) > 3 else ""
    fixed = "".join(" " if unicodedata.category(c) == "Zs" else "" if is_invisible(c) else c for c in text).strip()
    them = "it" if len(found) == 1 else "them"
    return "%r contains %s%s (pasted text carries them): remove %s; write the %s as %r" % (
        text,
        ", ".join(parts),
        more,
        them,
        what,
        fixed,
    )


def lookalike_of(given: object, names) -> str:
    """'' or, when `given` reads as one of `names` but differs from it by look-alike or invisible characters,
    a sentence that names each such character with its code point: "pool 'gpu-а100' not in pools; known pools:
    gpu-a100" shows two names a person cannot tell apart."""
    if not isinstance(given, str) or given.isascii():
        return ""
    folded = ascii_fold(given).replace(" ", "") if any(is_invisible(c) for c in given) else ascii_fold(given)
    for name in names:
        if str(name) == folded and str(name) != given:
            odd = [(i, c) for i, c in enumerate(given) if ord(c) >= 128]
            told = ", ".join(
                "U+%04X %s at position %d" % (ord(c), unicodedata.name(c, "an unnamed character"), i + 1)
                for i, c in odd[:3]
            )
            return " (%r looks like %r but holds %s; retype it in ASCII)" % (given, str(name), told)
    return ""


def ascii_fold(text: str) -> str:
    """`text` with look-alikes replaced by their ASCII twins (for did-you-mean comparisons)."""
    return "".join(c if ord(c) < 128 else (ascii_twin(c) or c) for c in text)


def scan(data: object, root: str, path_of) -> Dict[str, str]:
    """{path: note} for every key and every string value (outside the free-form subtrees) with non-ASCII
    characters.

    path_of(root, loc) renders an inventory path the way shape errors do, so a note can join the problem
    reported at the same path."""
    notes: Dict[str, str] = {}

    def describe(text: str) -> Optional[str]:
        # invisible characters are refused on their own, with the text to write (control_chars.py)
        if all(ord(c) < 128 or is_invisible(c) for c in text):
            return None
        return describe_chars(text)

    def walk(value, loc):
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    note = describe(key)
                    if note:
                        notes[path_of(root, loc + (key,))] = "The key " + note + "."
                if key in FREE_FORM:
                    continue
                if isinstance(item, str):
                    note = describe(item)
                    if note:
                        notes[path_of(root, loc + (key,))] = "The value " + note + "."
                walk(item, loc + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    note = describe(item)
                    if note:
                        notes[path_of(root, loc + (index,))] = "The value " + note + "."
                walk(item, loc + (index,))

    walk(data, ())
    return notes
