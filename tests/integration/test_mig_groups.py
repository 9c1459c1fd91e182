"""MIG groups (mig.groups) end to end: gpupool.core.mig_layout through ansible-playbook against the real kube-apiserver
of the sandbox, the MIG manager simulator acting on the node labels.

A pool of four 2 x A100-40GB nodes rolls out its layout; then a group of one node gets another layout: only that
node is relabelled and drained (its GPU pod evicted, the other nodes' pods and labels untouched); the group grows to
two and shrinks back to one, moving exactly the node node_groups.assign_groups names; every second run changes
nothing. Writes are counted in the apiserver's audit log.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.integration import k8s_helpers as h

pytestmark = [pytest.mark.controlplane, pytest.mark.sandbox]
ADMIN = "gpupool-admin"
NG = "miggrp-a100"
POOL = "miggrp-a100"
CONFIG = "gpupool-" + POOL
GROUP = CONFIG + "-small"
NODES = ["miggrp-a100-%d" % i for i in range(4)]
FLAVOR = "g4.p2.40g"  # 2 x A100-40GB
NS = "miggrp-test"
POOL_LAYOUT = {"3g.20gb": 1, "2g.10gb": 2}
SMALL = {"1g.5gb": 7}
FAST = {"wait_sleep": 0.2, "relabel_delay": 1.0, "wait_timeout": 60, "drain": True, "drain_grace_period": 0}


def cluster(sandbox, group_nodes=None):
    mig = {"mode": "static", "layout": copy.deepcopy(POOL_LAYOUT)}
    if group_nodes:
        mig["groups"] = [{"name": "small", "nodes": group_nodes, "layout": copy.deepcopy(SMALL)}]
    return {
        "name": "miggrp",
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": "unused", "cluster": "unused"},
        "mig_manager": {"config_map": sandbox.mig_config_map, "namespace": sandbox.mig_namespace, "max_unavailable": 1},
        "pools": [
            {
                "name": POOL,
                "nodegroup": {"name": NG, "flavor": FLAVOR, "node_count": len(NODES)},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": mig,
            }
        ],
    }


def task():
    return ("gpupool.core.mig_layout", dict({"cluster": "{{ gpupool_cluster }}"}, **FAST))


def meta(cp, name):
    return h.kubectl_json(cp, "get", "node", name)["metadata"]


def configs(cp):
    return {n: (meta(cp, n).get("labels") or {}).get("nvidia.com/mig.config") for n in NODES}


def written_nodes(window):
    return sorted({name for _verb, resource, name in h.writes(window, ADMIN) if resource == "nodes"})


def evicted(window):
    return sorted(
        e["objectRef"]["name"]
        for e in window.writes(user=ADMIN, resource="pods")
        if (e.get("objectRef") or {}).get("subresource") == "eviction"
    )


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    cp = sandbox.cp
    from kubernetes import client

    h.ensure_namespace(cp, NS)
    core = client.CoreV1Api(cp.api_client())
    h.wait_for_default_service_account(core, NS)
    for name in NODES:
        sandbox.nodes.register_node(name, FLAVOR, nodegroup=NG)
    play = h.GpupoolPlay(cp, tmp_path_factory.mktemp("mig-groups"), cluster(sandbox))
    (first,), _res, _window = play.run([task()])
    assert not first.get("failed"), first.get("msg")
    yield {"cp": cp, "play": play, "sandbox": sandbox, "core": core}
    for name in NODES:
        try:
            sandbox.nodes.remove_node(name)
        except Exception:
            pass
    cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def gpu_pod(core, name, node_name):
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "nodeName": node_name,
                "containers": [
                    {"name": "c", "image": "registry.example/app:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
                "tolerations": [{"operator": "Exists"}],
            },
        },
    )


def test_a_group_of_one_relabels_and_drains_that_node_only(bed):
    cp, play, sandbox, core = bed["cp"], bed["play"], bed["sandbox"], bed["core"]
    assert configs(cp) == dict.fromkeys(NODES, CONFIG)  # the pool rolled out without groups
    gpu_pod(core, "on-group-node", NODES[0])
    gpu_pod(core, "on-pool-node", NODES[1])
    before = {n: meta(cp, n) for n in NODES[1:]}
    play.cluster = cluster(sandbox, group_nodes=1)

    (check,), _res, check_window = play.run([task()], check=True)
    assert not check.get("failed"), check.get("msg")
    assert check_window.writes(user=ADMIN) == []
    assert check["pools"][POOL]["assignment"] == {NODES[0]: "small", NODES[1]: None, NODES[2]: None, NODES[3]: None}
    assert [(w["nodes"], w.get("group"), w["evict"]) for w in check["waves"]] == [
        ([NODES[0]], "small", [NS + "/on-group-node"])
    ]
    text = check["diff"][0]["prepared"]
    assert "MIG groups of pool %s (nodes that keep their config are not touched):" % POOL in text
    assert "  group small (%s): %s\n    %s moves: %s -> %s\n" % (GROUP, NODES[0], NODES[0], CONFIG, GROUP) in text

    (real,), _res, window = play.run([task()])
    assert not real.get("failed"), real.get("msg")
    assert h.comparable_diff(check) == h.comparable_diff(real)
    assert written_nodes(window) == [NODES[0]]
    assert evicted(window) == ["on-group-node"]
    assert configs(cp) == {NODES[0]: GROUP, NODES[1]: CONFIG, NODES[2]: CONFIG, NODES[3]: CONFIG}
    assert sandbox.mig.layout(NODES[0]) == {0: SMALL, 1: SMALL}
    for name in NODES[1:]:
        assert sandbox.mig.layout(name) == {0: POOL_LAYOUT, 1: POOL_LAYOUT}
        after = meta(cp, name)
        assert (after["labels"], after.get("annotations")) == (
            before[name]["labels"],
            before[name].get("annotations"),
        )
    cm = h.kubectl_json(cp, "-n", sandbox.mig_namespace, "get", "configmap", sandbox.mig_config_map)
    doc = yaml.safe_load(cm["data"]["config.yaml"])
    assert doc["mig-configs"][GROUP] == [{"devices": "all", "mig-enabled": True, "mig-devices": SMALL}]
    assert doc["mig-configs"][CONFIG] == [{"devices": "all", "mig-enabled": True, "mig-devices": POOL_LAYOUT}]


def test_pool_info_expects_each_node_to_carry_its_groups_config(bed):
    (info,), _res, _window = bed["play"].run([("gpupool.core.pool_info", {"cluster": "{{ gpupool_cluster }}"})])
    assert not info.get("failed"), info.get("msg")
    pool = info["pools"][POOL]
    rows = {row["name"]: row for row in pool["nodes"]}
    assert {n: rows[n]["mig_group"] for n in NODES} == {
        NODES[0]: "small",
        NODES[1]: None,
        NODES[2]: None,
        NODES[3]: None,
    }
    assert rows[NODES[0]]["expected_layout"] == {"0": SMALL, "1": SMALL}
    assert rows[NODES[1]]["expected_layout"] == {"0": POOL_LAYOUT, "1": POOL_LAYOUT}
    # the group's node carries the group's config: no label mismatch (the simulated nodes publish no slices here)
    assert [m for m in pool["mismatches"] if m["kind"] == "mig_config_label"] == []


def assert_second_run_changes_nothing(play):
    (again,), _res, window = play.run([task()])
    assert not again.get("failed"), again.get("msg")
    assert again["changed"] is False and again["waves"] == []
    assert window.writes(user=ADMIN) == []


def test_second_run_changes_nothing(bed):
    assert_second_run_changes_nothing(bed["play"])


def test_growing_and_shrinking_the_group_moves_exactly_the_expected_nodes(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    play.cluster = cluster(sandbox, group_nodes=2)
    (grow,), _res, window = play.run([task()])
    assert not grow.get("failed"), grow.get("msg")
    assert written_nodes(window) == [NODES[1]]  # the member stays; the next node by name joins
    assert evicted(window) == ["on-pool-node"]
    assert configs(cp) == {NODES[0]: GROUP, NODES[1]: GROUP, NODES[2]: CONFIG, NODES[3]: CONFIG}
    assert sandbox.mig.layout(NODES[1]) == {0: SMALL, 1: SMALL}
    assert_second_run_changes_nothing(play)

    play.cluster = cluster(sandbox, group_nodes=1)
    (shrink,), _res, window = play.run([task()])
    assert not shrink.get("failed"), shrink.get("msg")
    assert written_nodes(window) == [NODES[1]]  # the lowest name stays in the group, the other goes back
    assert configs(cp) == {NODES[0]: GROUP, NODES[1]: CONFIG, NODES[2]: CONFIG, NODES[3]: CONFIG}
    assert sandbox.mig.layout(NODES[1]) == {0: POOL_LAYOUT, 1: POOL_LAYOUT}
    assert_second_run_changes_nothing(play)
