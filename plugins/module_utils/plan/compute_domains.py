# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ComputeDomains (resource.nvidia.com) wanted by pools with multi-node NVLink.
"""
from __future__ import annotations


from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import select_pools
from ansible_collections.gpupool.core.plugins.module_utils.model.names import channel_template_name
from ansible_collections.gpupool.core.plugins.module_utils.model.names import compute_domain_name
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_SUBDOMAIN
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import Desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.ownership import ownership_labels


def compute_domain(pool, api_version="resource.nvidia.com/v1beta1", at="gpupool_cluster.pools[0]"):
    cd = pool.nvlink.compute_domain
    obj = {"apiVersion": api_version, "kind": "ComputeDomain",
           "metadata": {"name": compute_domain_name(pool), "namespace": cd.namespace,
                        "labels": ownership_labels(pool.name)},
           "spec": {"channel": {"resourceClaimTemplate": {"name": channel_template_name(pool)},
                                "allocationMode": cd.allocation_mode}}}
    return Desired(obj, pool.name, at + ".nvlink.compute_domain", {})


def cluster_compute_domains(cluster, pools=None, api_version="resource.nvidia.com/v1beta1", root="gpupool_cluster"):
    scope = set(p.name for p in select_pools(cluster, pools, root))
    problems, seen, out = [], {}, []
    for i, pool in enumerate(cluster.pools):
        if pool.state != "present" or pool.nvlink.mode != "compute_domain":
            continue
        d = compute_domain(pool, api_version, "%s.pools[%d]" % (root, i))
        key = (d.obj["metadata"]["namespace"], d.obj["metadata"]["name"])
        if key in seen:
            problems.append((d.origin, "ComputeDomain %s/%s is also wanted by %s; give each pool its own "
                             "compute_domain.name" % (key[0], key[1], seen[key])))
            continue
        seen[key] = d.origin
        for what, value in (("name", key[1]), ("channel_template", channel_template_name(pool))):
            if not DNS_SUBDOMAIN.match(value) or len(value) > 253:
                problems.append((d.origin + "." + what, "%r is not a valid object name" % value))
        if not DNS_LABEL.match(key[0]):
            problems.append((d.origin + ".namespace", "%r is not a valid namespace name" % key[0]))
        if pool.name in scope:
            out.append(d)
    if problems:
        raise Problems(problems)
    return out
