# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ComputeDomains (resource.nvidia.com) wanted by pools with multi-node NVLink."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.model.compute_domain_checks import COMPUTE_DOMAIN_MODES
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import channel_template_name, compute_domain_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ownership import ownership_labels


def compute_domain(pool, api_version="resource.nvidia.com/v1beta1", at="gpupool_cluster.pools[0]", owner=None):
    cd = pool.nvlink.compute_domain
    obj = {
        "apiVersion": api_version,
        "kind": "ComputeDomain",
        "metadata": {
            "name": compute_domain_name(pool),
            "namespace": cd.namespace,
            "labels": ownership_labels(pool.name, owner),
        },
        "spec": {
            "channel": {
                "resourceClaimTemplate": {"name": channel_template_name(pool)},
                "allocationMode": cd.allocation_mode,
            }
        },
    }
    return Desired(obj, pool.name, at + ".nvlink.compute_domain", {})


def cluster_compute_domains(cluster, pools=None, api_version="resource.nvidia.com/v1beta1", root="gpupool_cluster"):
    """ComputeDomains of the pools in scope of a validated cluster (names and clashes: model/compute_domain_checks.py)."""
    scope = {p.name for p in select_pools(cluster, pools, root)}
    out = []
    for i, pool in enumerate(cluster.pools):
        if pool.state == "present" and pool.nvlink.mode in COMPUTE_DOMAIN_MODES and pool.name in scope:
            out.append(compute_domain(pool, api_version, "%s.pools[%d]" % (root, i), cluster.owner_id))
    return out
