# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes name syntax (DNS labels and subdomains, label keys and values, quantities), as the API server checks it.

The rules are those of k8s.io/apimachinery/pkg/util/validation: a DNS label is at most 63 characters, a DNS
subdomain at most 253, a label value at most 63, a qualified name (label key, taint key) an optional DNS-subdomain
prefix and a name of at most 63 characters.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut

# Every pattern is anchored with \A and \Z and used with fullmatch: `$` also matches before a trailing newline, so
# "gpu-t4\n" (a YAML block scalar `|` keeps the newline) would pass for a DNS label and fail later at Magnum or the
# API server. No character class below holds a control character, so each checker refuses them all.
DNS_LABEL = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")


# Kubernetes label key: optional DNS-subdomain prefix + name (63 chars).
LABEL_KEY = re.compile(
    r"\A([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)


LABEL_VALUE = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?\Z")


QUANTITY = re.compile(r"\A[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?\Z")


DNS_SUBDOMAIN = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


QUALIFIED_NAME = re.compile(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")

COMPUTE_CAPABILITY = re.compile(r"\A[0-9]+\.[0-9]+\Z")


_QUANTITY_FACTOR = {
    "": 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


def quantity_bytes(text: str) -> float:
    """The number a Kubernetes quantity (as QUANTITY accepts it) stands for: '80Gi' -> 85899345920."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", text)
    if not match:
        raise ValueError("%r is not a Kubernetes quantity such as 40Gi" % text)
    return float(match.group(1)) * _QUANTITY_FACTOR[match.group(2) or ""]


DNS_LABEL_RULE = "at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
DNS_SUBDOMAIN_RULE = (
    "at most 253 characters of lowercase letters, digits, '-' and '.', each dot-separated part "
    "starting and ending with a letter or digit"
)
LABEL_VALUE_RULE = "at most 63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit (or empty)"
LABEL_KEY_RULE = (
    "an optional DNS-subdomain prefix and '/', then at most 63 characters of [A-Za-z0-9-_.] "
    "starting and ending with a letter or digit, e.g. example.com/team"
)


def label_key_rule(text: object) -> str:
    """LABEL_KEY_RULE, led by what is wrong with `text` when it is a length: a 300-character prefix looks like any
    other mistake in a message that does not say the limit."""
    if isinstance(text, str):
        prefix, name = text.rsplit("/", 1) if "/" in text else ("", text)
        if len(prefix) > 253:
            return "a prefix of at most 253 characters (this one has %d), then '/' and a name: %s" % (
                len(prefix),
                LABEL_KEY_RULE,
            )
        if len(name) > 63:
            return "a name of at most 63 characters after the prefix (this one has %d): %s" % (
                len(name),
                LABEL_KEY_RULE,
            )
    return LABEL_KEY_RULE


def is_dns_label(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 63 and bool(DNS_LABEL.fullmatch(text))


def is_dns_subdomain(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 253 and bool(DNS_SUBDOMAIN.fullmatch(text))


def is_label_value(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 63 and bool(LABEL_VALUE.fullmatch(text))


def is_label_key(text: str) -> bool:
    """A qualified name: label keys, taint keys and DRA attribute names (prefix at most 253 characters)."""
    if not isinstance(text, str) or not LABEL_KEY.fullmatch(text):
        return False
    prefix = text.rsplit("/", 1)[0] if "/" in text else ""
    return len(prefix) <= 253


def extended_resource_problem(name: str) -> Optional[str]:
    """Why `name` cannot be an extended resource name (DeviceClass spec.extendedResourceName), or None.

    The API server wants <domain>/<name>: the domain a DNS subdomain outside kubernetes.io (other than the
    requests. prefix), the name a qualified name of at most 63 characters."""
    if "/" not in name:
        return "it has no domain: use <domain>/<name>, e.g. example.com/gpu"
    domain, short = name.split("/", 1)
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return "the kubernetes.io domain is reserved: use your own domain, e.g. example.com/%s" % short
    if domain.startswith("requests."):
        return "the requests. prefix is reserved for quotas"
    # The API server checks "requests." + name as a qualified name (quota form), so the domain loses 9 characters.
    if not is_dns_subdomain("requests." + domain):
        return "the domain %r is not a DNS subdomain of at most 244 characters (%s)" % (domain, DNS_SUBDOMAIN_RULE)
    if len(short) > 63 or not QUALIFIED_NAME.fullmatch(short):
        return "the name %r must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric" % short
    return None


# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: never part of a name, a label, a
# selector or a path. YAML lets them in quietly: a block scalar (`name: |`) keeps its trailing newline, a quoted
# "\t" or "\0" is a tab or a NUL.
def is_control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def has_control(text: object) -> bool:
    return isinstance(text, str) and any(is_control(c) for c in text)


_CHAR_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL", "\x7f": "a DEL"}


def control_problem(text: str, what: str = "value", allowed: str = "") -> Optional[str]:
    """Why `text` is refused for its control characters (with the fix), or None when it has none.

    `what` names the text in the fix ("value", "key"): "...; write the value on one line". `allowed`: control
    characters that are whitespace where the text is used (a CEL expression's newlines and tabs)."""
    found = [(i, c) for i, c in enumerate(text) if is_control(c) and c not in allowed]
    if not found:
        return None
    shown = cut(text)
    core = text.rstrip("\n\r")
    if core != text and not has_control(core) and not allowed:
        return (
            "%s ends with a newline: remove the trailing newline: a YAML block scalar (|) keeps it; write the %s "
            "on one line (or use |-)" % (shown, what)
        )
    first = ", ".join(
        "%s (U+%04X) at position %d" % (_CHAR_NAMES.get(c, "a control character"), ord(c), i + 1) for i, c in found[:3]
    )
    more = " and %d more" % (len(found) - 3) if len(found) > 3 else ""
    them = "it" if len(found) == 1 else "them"
    rule = "may span lines but holds no other control character" if allowed else "must be plain text on one line"
    return "%s contains %s%s: remove %s; the %s %s" % (shown, first, more, them, what, rule)
