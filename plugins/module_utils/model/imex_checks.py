# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host-managed IMEX members (nvlink.imex_nodes): IP addresses, each once, at most one domain's worth.

nvidia-imex's nodes_config.cfg takes the members' IP addresses. The imex step checks the list again on each GPU
node (plan/driver/imex.py member_problems, with the node's own address), but that is the last play of site.yml:
the model refuses a host name or a typo here, before any write.
"""

from __future__ import annotations

import ipaddress
from typing import List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.describe import cut
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_path

# MAX_NODES_PER_IMEX_DOMAIN of the DRA driver's ComputeDomain controller (plan/driver/imex.py says the same; the
# model cannot import plan/).
MAX_IMEX_DOMAIN_NODES = 18


def imex_node_problems(cluster, root: str) -> List[Tuple[str, str]]:
    """Every imex_nodes entry is an IPv4 or IPv6 address, none twice, at most 18 of them (one IMEX domain)."""
    out = []
    for pool in cluster.pools:
        at = pool_path(root, pool) + ".nvlink.imex_nodes"
        seen = set()
        for index, entry in enumerate(pool.nvlink.imex_nodes):
            try:
                address = ipaddress.ip_address(entry)
            except ValueError:
                out.append(
                    (
                        "%s[%d]" % (at, index),
                        "%s is not an IP address: nvidia-imex's nodes_config.cfg takes the members' IP addresses, "
                        "e.g. 10.0.0.11 (not a host name)" % cut(entry),
                    )
                )
                continue
            if address in seen:
                out.append(("%s[%d]" % (at, index), "%s is listed twice: list each member once" % address))
            seen.add(address)
        if len(seen) > MAX_IMEX_DOMAIN_NODES:
            out.append(
                (
                    at,
                    "%d members: an IMEX domain has at most %d nodes; split the nodes into pools of at most %d"
                    % (len(seen), MAX_IMEX_DOMAIN_NODES, MAX_IMEX_DOMAIN_NODES),
                )
            )
    return out
