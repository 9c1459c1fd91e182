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
from typing import Optional

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# Kubernetes label key: optional DNS-subdomain prefix + name (63 chars).
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


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
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$", text)
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


def is_dns_label(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 63 and bool(DNS_LABEL.match(text))


def is_dns_subdomain(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 253 and bool(DNS_SUBDOMAIN.match(text))


def is_label_value(text: str) -> bool:
    return isinstance(text, str) and len(text) <= 63 and bool(LABEL_VALUE.match(text))


def is_label_key(text: str) -> bool:
    """A qualified name: label keys, taint keys and DRA attribute names (prefix at most 253 characters)."""
    if not isinstance(text, str) or not LABEL_KEY.match(text):
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
    if len(short) > 63 or not QUALIFIED_NAME.match(short):
        return "the name %r must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric" % short
    return None
