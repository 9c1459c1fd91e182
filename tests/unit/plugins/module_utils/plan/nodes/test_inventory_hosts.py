# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts and groups of the inventory plugin, from Nodes or Magnum nodegroups: pure, no server."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import inventory_hosts as ih

NG = "magnum.openstack.org/nodegroup"
CLUSTER = {
    "name": "c1",
    "magnum": {"cloud": "site", "cluster": "k8s"},
    "pools": [
        {"name": "gpu-t4", "nodegroup": {"flavor": "g2.5xlarge", "node_count": 2}, "gpu": {"model": "T4"}},
        {
            "name": "gpu-h100",
            "nodegroup": {"flavor": "g5.h100x4", "name": "h100-ng"},
            "gpu": {"model": "H100-80GB", "per_node": 4},
        },
        {"name": "lab", "node_selector": {"lab": "yes"}, "gpu": {"model": "T4"}},
        {"name": "gone", "state": "absent", "nodegroup": {"flavor": "g2.5xlarge"}, "gpu": {"model": "T4"}},
    ],
}


def node(name, labels, address="10.0.0.1", ready="True"):
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "addresses": [
                {"type": "Hostname", "address": name},
                {"type": "ExternalIP", "address": "1.2.3.4"},
                {"type": "InternalIP", "address": address},
            ],
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


@pytest.fixture
def cluster():
    return load_cluster(CLUSTER)


def test_group_names_are_valid_ansible_group_names():
    assert ih.pool_group("gpu-t4") == "pool_gpu_t4"
    assert ih.pool_group("a100") == "pool_a100"


def test_every_present_pool_has_a_group_even_when_empty(cluster):
    assert ih.groups_of(cluster) == ["pool_gpu_t4", "pool_gpu_h100", "pool_lab"]


def test_nodes_go_to_the_pool_the_modules_would_assign_them_to(cluster):
    nodes = [
        node("t4-0", {NG: "gpu-t4"}, "10.0.0.10"),
        node("t4-1", {NG: "gpu-t4"}, "10.0.0.11", ready="False"),
        node("h-0", {NG: "h100-ng"}, "10.0.0.20"),
        node("lab-0", {"lab": "yes"}, "10.0.0.30"),
        node("gone-0", {NG: "gone"}),
        node("cpu-0", {NG: "default-worker"}),
    ]
    hosts, warnings = ih.hosts_from_nodes(cluster, nodes)
    assert warnings == []
    by_name = {h["name"]: h for h in hosts}
    assert sorted(by_name) == ["h-0", "lab-0", "t4-0", "t4-1"]
    assert by_name["t4-1"] == {
        "name": "t4-1",
        "groups": ["pool_gpu_t4", "gpupool_nodes"],
        "vars": {
            "ansible_host": "10.0.0.11",
            "gpupool_cluster_name": "c1",
            "gpupool_cluster_host": "c1",
            "gpupool_pool": "gpu-t4",
            "gpupool_node_source": "kubernetes",
            "gpupool_node_ready": False,
        },
    }
    assert by_name["h-0"]["groups"][0] == "pool_gpu_h100" and by_name["h-0"]["vars"]["ansible_host"] == "10.0.0.20"
    assert by_name["lab-0"]["vars"]["gpupool_node_ready"] is True


def test_a_node_without_internal_ip_has_no_ansible_host(cluster):
    bare = {"metadata": {"name": "t4-0", "labels": {NG: "gpu-t4"}}, "status": {}}
    (host,), warnings = ih.hosts_from_nodes(cluster, [bare])
    assert warnings == []
    assert "ansible_host" not in host["vars"] and host["vars"]["gpupool_node_ready"] is False


def test_name_pattern_adds_nodes_by_name(cluster):
    hosts, warnings = ih.hosts_from_nodes(cluster, [node("c1-gpu-t4-3", {})], name_pattern="-{nodegroup}-\\d+$")
    assert warnings == []
    assert [(h["name"], h["vars"]["gpupool_pool"]) for h in hosts] == [("c1-gpu-t4-3", "gpu-t4")]


def test_a_node_matched_by_two_pools_is_refused():
    data = {
        "name": "c3",
        "pools": [
            {"name": "a", "node_selector": {"x": "1"}, "gpu": {"model": "T4"}},
            {"name": "b", "node_selector": {"x": "1"}, "gpu": {"model": "T4"}},
        ],
    }
    with pytest.raises(Problems) as err:
        ih.hosts_from_nodes(load_cluster(data), [node("n", {"x": "1"})])
    assert "node n matches pools a and b" in str(err.value)


def test_magnum_addresses_become_hosts_of_the_nodegroups_pool(cluster):
    views = {"gpu-t4": {"node_addresses": ["10.0.0.12", "10.0.0.13"]}, "h100-ng": None}
    hosts, warnings = ih.hosts_from_nodegroups(cluster, views)
    assert [(h["name"], h["vars"]["ansible_host"], h["groups"][0]) for h in hosts] == [
        ("10.0.0.12", "10.0.0.12", "pool_gpu_t4"),
        ("10.0.0.13", "10.0.0.13", "pool_gpu_t4"),
    ]
    assert all(h["vars"]["gpupool_node_source"] == "magnum" and "gpupool_node_ready" not in h["vars"] for h in hosts)
    assert warnings == ["c1: pool gpu-h100: Magnum has no nodegroup h100-ng yet"]


def test_nodes_of_multi_node_nvlink_pools_are_in_the_imex_group():
    """site.yml's host IMEX play runs on gpupool_imex_nodes: an NVLink pool's nodes are there, others are not."""
    declared = dict(CLUSTER)
    declared["pools"] = CLUSTER["pools"][:1] + [
        {
            "name": "gpu-gb200",
            "nodegroup": {"flavor": "g6.gb200x4", "node_count": 2},
            "gpu": {"model": "GB200", "per_node": 4},
            "nvlink": {"mode": "compute_domain", "compute_domain": {"name": "gb200-domain"}},
        }
    ]
    nodes = [node("t4-0", {NG: "gpu-t4"}), node("gb-0", {NG: "gpu-gb200"}, "10.0.0.40")]
    hosts, _warnings = ih.hosts_from_nodes(load_cluster(declared), nodes)
    groups = {h["name"]: h["groups"] for h in hosts}
    assert groups == {
        "t4-0": ["pool_gpu_t4", "gpupool_nodes"],
        "gb-0": ["pool_gpu_gb200", "gpupool_nodes", ih.IMEX_NODES_GROUP],
    }
    assert ih.IMEX_NODES_GROUP == "gpupool_imex_nodes"
