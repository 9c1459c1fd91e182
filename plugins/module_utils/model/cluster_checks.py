# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's own identity: `name` and `owner` are DNS labels.

The name becomes a directory of the run's report (playbooks/report.yml), an Ansible host name and part of object
names; the owner (default: the name) the value of the label gpupool.io/owner. A DNS label is a valid label value,
a file name and a host name at once, and never a path: '../../tmp/x' or 'prod/eu' is refused.
"""

from __future__ import annotations

import difflib
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import lookalike_of
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL_RULE, has_control, is_dns_label


def cluster_identity_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """The cluster's name and owner are DNS labels: a report directory, a host name and a label value, never a path."""
    out = []
    for key, value, use in (
        ("name", cluster.name, "it names the run's report directory and the cluster's host"),
        ("owner", cluster.owner, "it is the value of the label gpupool.io/owner"),
    ):
        # a control character is reported with its own fix (model/control_chars.py)
        if value is None or is_dns_label(value) or has_control(value):
            continue
        suggestion = _as_label(value)
        fix = "e.g. %s" % suggestion if is_dns_label(suggestion) else "e.g. gpu-prod-eu1"
        out.append(
            (
                "%s.%s" % (root, key),
                "%s is not a DNS label: %s; use %s, %s" % (cut(value), use, DNS_LABEL_RULE, fix),
            )
        )
    return out


def orphan_guard_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Every pool that orphan_guard.confirm_pools names is a pool of this inventory."""
    # a misspelt name would confirm nothing, and node_pool would refuse the run the inventory meant to confirm
    names = [pool.name for pool in cluster.pools]
    out = []
    for index, name in enumerate(cluster.orphan_guard.confirm_pools):
        if name in names:
            continue
        close = difflib.get_close_matches(name, names, n=1)
        fix = "did you mean %s?" % close[0] if close else "use one of: %s" % (", ".join(names[:8]) or "no pools")
        out.append(
            (
                "%s.orphan_guard.confirm_pools[%d]" % (root, index),
                "%s is not a pool of this inventory%s; %s" % (cut(name), lookalike_of(name, names), fix),
            )
        )
    return out


def _as_label(text: str) -> str:
    out = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:63].rstrip("-")
