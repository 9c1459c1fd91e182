# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ComputeDomains that pools with multi-node NVLink want: valid names and namespaces, one pool each."""

from __future__ import annotations

from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.names import channel_template_name, compute_domain_name
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import (
    DNS_LABEL_RULE,
    DNS_SUBDOMAIN_RULE,
    is_dns_label,
    is_dns_subdomain,
)

# Pools whose nodes form an IMEX domain and so want a ComputeDomain: with host-managed IMEX the host runs
# nvidia-imex, and the driver still hands out the domain's channel through the ComputeDomain's template.
COMPUTE_DOMAIN_MODES = ("compute_domain", "host_imex")


def compute_domain_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """ComputeDomain and channel template names are DNS subdomains, the namespace a DNS label, and no two pools want the same ComputeDomain."""
    out, claims = [], Claims()
    for pool in cluster.pools:
        if pool.state != "present" or pool.nvlink.mode not in COMPUTE_DOMAIN_MODES:
            continue
        at = pool_path(root, pool) + ".nvlink.compute_domain"
        domain = pool.nvlink.compute_domain
        key = (domain.namespace, compute_domain_name(pool))
        clash = claims.clash(key, at, pool.name)
        if clash:
            if not clash.same_owner:  # a duplicate pool name: pool_name_problems says it once
                out.append(
                    (
                        at + (".name" if domain.name else ""),
                        "ComputeDomain %s/%s is also wanted by %s; give "
                        "each pool its own compute_domain.name" % (key[0], key[1], clash.holder),
                    )
                )
            continue
        for what, value, explicit in (
            ("name", key[1], domain.name),
            ("channel_template", channel_template_name(pool), domain.channel_template),
        ):
            if not is_dns_subdomain(value) and (explicit or is_dns_label(pool.name)):
                fix = (
                    "choose another %s" % what if explicit else "shorten the pool name or set compute_domain.%s" % what
                )
                out.append(
                    (at + "." + what, "%r is not a valid object name (%s); %s" % (value, DNS_SUBDOMAIN_RULE, fix))
                )
        if not is_dns_label(domain.namespace):
            out.append(
                (at + ".namespace", "%r is not a valid namespace name (%s)" % (domain.namespace, DNS_LABEL_RULE))
            )
    return out
