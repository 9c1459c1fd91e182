# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Ansible hosts and groups a validated cluster expands into (the inventory plugin gpupool.core.pools).

Pure: the plugin reads Nodes (Kubernetes) or nodegroups (Magnum) and hands them here. One host per cluster,
run on the controller; one host per GPU node of a present pool, in the group ``pool_<name>``. Nodes are
matched to pools exactly as the modules match them (plan/nodes/pool_nodes.py: node_selector, the Magnum nodegroup
label, name_pattern), so the inventory and the converge can never disagree on which node is whose.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.names import NODEGROUP_LABEL, nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import assign_nodes, node_ready

CLUSTERS_GROUP = "gpupool_clusters"
NODES_GROUP = "gpupool_nodes"
# The group site.yml's host IMEX play runs on (roles/imex): nodes of the multi-node NVLink pools.
IMEX_NODES_GROUP = "gpupool_imex_nodes"
NVLINK_MODES = ("compute_domain", "host_imex")


def pool_group(pool_name: str) -> str:
    """``pool_<name>``; a DNS name's dashes become ``_`` (Ansible warns about any other character in group
    names, and a group name is also a Jinja name in ``groups.pool_gpu_t4``). Pool names are DNS labels, so no
    two pools share a group by this."""
    return "pool_" + re.sub(r"[^A-Za-z0-9_]", "_", pool_name)


def internal_address(node: dict) -> Optional[str]:
    """The Node's InternalIP (what kubelet reports and the cluster network reaches), else None."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP" and address.get("address"):
            return address["address"]
    return None


def node_host(cluster, pool, name: str, address: Optional[str], source: str, ready: Optional[bool] = None) -> dict:
    """One GPU node as a host: its name, its variables and its groups."""
    variables = {
        "gpupool_cluster_name": cluster.name,
        "gpupool_cluster_host": cluster.name,
        "gpupool_pool": pool.name,
        "gpupool_node_source": source,
    }
    if address:
        variables["ansible_host"] = address
    if ready is not None:
        variables["gpupool_node_ready"] = ready
    groups = [pool_group(pool.name), NODES_GROUP]
    if pool.nvlink.mode in NVLINK_MODES:  # its host nvidia-imex service is masked or configured by mode
        groups.append(IMEX_NODES_GROUP)
    return {"name": name, "vars": variables, "groups": groups}


def hosts_from_nodes(
    cluster, nodes: List[dict], nodegroup_label: str = NODEGROUP_LABEL, name_pattern: Optional[str] = None
) -> Tuple[List[dict], List[str]]:
    """(hosts, warnings) from the cluster's Kubernetes Nodes. Every present pool of a validated cluster can find
    its nodes (the model refuses a pool with neither nodegroup nor node_selector); a node two pools claim is
    Problems, as in the modules."""
    pools = cluster.present_pools
    assigned = assign_nodes(pools, nodes, nodegroup_label, name_pattern)
    hosts = []
    for pool in pools:
        for node in assigned[pool.name]:
            name = node["metadata"]["name"]
            hosts.append(node_host(cluster, pool, name, internal_address(node), "kubernetes", node_ready(node)))
    return hosts, []


def hosts_from_nodegroups(cluster, nodegroups: Dict[str, Optional[dict]]) -> Tuple[List[dict], List[str]]:
    """(hosts, warnings) from Magnum: ``nodegroups`` maps each pool's nodegroup name to its full view (None
    when Magnum has no such nodegroup). Magnum knows addresses, not Kubernetes node names, so the address is
    the host's name; pools without a nodegroup get no hosts from Magnum."""
    hosts, warnings = [], []
    for pool in cluster.present_pools:
        name = nodegroup_name(pool)
        if name is None:
            continue
        view = nodegroups.get(name)
        if view is None:
            warnings.append("%s: pool %s: Magnum has no nodegroup %s yet" % (cluster.name, pool.name, name))
            continue
        for address in view.get("node_addresses") or []:
            hosts.append(node_host(cluster, pool, address, address, "magnum"))
    return hosts, warnings


def groups_of(cluster) -> List[str]:
    """Every group the cluster's declared pools make, present or not, so a play on an empty pool group
    finds it (an empty group, not a "could not match supplied host pattern" warning)."""
    return [pool_group(pool.name) for pool in cluster.present_pools]
