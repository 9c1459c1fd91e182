"""gpupool.core.mig_layout end to end: ansible-playbook against the real kube-apiserver of the sandbox, with the
MIG manager simulator acting on the node labels and the DRA driver simulator republishing ResourceSlices.

The tests of this file run in order on one set of nodes (a nodegroup of three 2 x A100-40GB nodes): first
rollout (check mode, then real), a no-op rerun, a rolling layout change with drain, a failure injected on the
middle node, then an infeasible layout. Writes are counted in the apiserver's audit log.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, VENV_BIN

pytestmark = [pytest.mark.controlplane, pytest.mark.sandbox]
ADMIN = "gpupool-admin"
MIG_SIM = "testbed:mig-manager-simulator"
NG_LABEL = "magnum.openstack.org/nodegroup"
NG = "miglay-a100"
POOL = "miglay-a100"
CONFIG = "gpupool-" + POOL
NODES = ["miglay-a100-0", "miglay-a100-1", "miglay-a100-2"]
FLAVOR = "g4.p2.40g"  # 2 x A100-40GB
NS = "miglay-test"
FIRST = {"3g.20gb": 1, "2g.10gb": 2}
SECOND = {"1g.5gb": 7}
THIRD = {"7g.40gb": 1}
FOREIGN = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 4}}]
FAST = {"wait_sleep": 0.2, "relabel_delay": 1.0, "wait_timeout": 60}


def cluster(sandbox, layout, max_unavailable=1):
    return {
        "name": "miglay",
        "kubeconfig": str(sandbox.kubeconfig),
        "magnum": {"cloud": "unused", "cluster": "unused"},
        "mig_manager": {
            "config_map": sandbox.mig_config_map,
            "namespace": sandbox.mig_namespace,
            "max_unavailable": max_unavailable,
        },
        "pools": [
            {
                "name": POOL,
                "nodegroup": {"name": NG, "flavor": FLAVOR, "node_count": len(NODES)},
                "gpu": {"model": "A100-40GB", "per_node": 2},
                "mig": {"mode": "static", "layout": copy.deepcopy(layout)},
            }
        ],
    }


def task(**extra):
    args = {"cluster": "{{ gpupool_cluster }}"}
    args.update(FAST)
    args.update(extra)
    return ("gpupool.core.mig_layout", args)


def config_map(cp, sandbox):
    import yaml

    cm = h.kubectl_json(cp, "-n", sandbox.mig_namespace, "get", "configmap", sandbox.mig_config_map)
    return cm, yaml.safe_load(cm["data"]["config.yaml"])


def put_foreign_config(cp, sandbox, name, entries):
    """Another tool writes its own config into the shared ConfigMap (read-modify-write, like gpupool)."""
    import yaml
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(cp.api_client())
    try:
        cm = api.read_namespaced_config_map(sandbox.mig_config_map, sandbox.mig_namespace).to_dict()
        doc = yaml.safe_load((cm.get("data") or {}).get("config.yaml") or "") or {"version": "v1", "mig-configs": {}}
        doc.setdefault("mig-configs", {})[name] = entries
        api.patch_namespaced_config_map(
            sandbox.mig_config_map,
            sandbox.mig_namespace,
            {"data": {"config.yaml": yaml.safe_dump(doc)}},
            field_manager="someone-else",
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
        doc = {"version": "v1", "mig-configs": {name: entries}}
        api.create_namespaced_config_map(
            sandbox.mig_namespace,
            {"metadata": {"name": sandbox.mig_config_map}, "data": {"config.yaml": yaml.safe_dump(doc)}},
            field_manager="someone-else",
        )


def node(cp, name):
    return h.kubectl_json(cp, "get", "node", name)


def labels(cp, name):
    return node(cp, name)["metadata"].get("labels") or {}


def layouts(sandbox, name):
    return sandbox.mig.layout(name)


def node_writes(window, user, name):
    return list(window.writes(user=user, resource="nodes", name=name))


def ts(event):
    return event["requestReceivedTimestamp"]


def evictions_of(window, pod_name):
    return [
        e
        for e in (window.writes(user=ADMIN, resource="pods", name=pod_name) if pod_name else [])
        if (e.get("objectRef") or {}).get("subresource") == "eviction"
    ]


def patches_in_order(window, user, name):
    """The user's patches of a node, in the order the apiserver received them (each with its logged body)."""
    return sorted(window.select(verbs={"patch"}, user=user, resource="nodes", name=name), key=ts)


@pytest.fixture(scope="module")
def bed(sandbox, tmp_path_factory):
    cp = sandbox.cp
    from kubernetes import client

    h.ensure_namespace(cp, NS)
    core = client.CoreV1Api(cp.api_client())
    h.wait_for_default_service_account(core, NS)
    # The DRA driver's kubelet plugin on these nodes only: the real DaemonSet controller makes a pod per node, the
    # scheduler binds it, the node simulator runs it, and the DRA driver simulator publishes the node's slices.
    client.AppsV1Api(cp.api_client()).create_namespaced_daemon_set(
        NS,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "miglay-kubelet-plugin"},
            "spec": {
                "selector": {"matchLabels": {"app": "miglay-plugin"}},
                "template": {
                    "metadata": {"labels": {"app": "miglay-plugin"}},
                    "spec": {
                        "nodeSelector": {NG_LABEL: NG},
                        "containers": [{"name": "gpus", "image": "registry.example/dra:v0.5.1"}],
                    },
                },
            },
        },
    )
    for name in NODES:
        sandbox.nodes.register_node(name, FLAVOR, nodegroup=NG)
    put_foreign_config(cp, sandbox, "team-x", FOREIGN)
    play = h.GpupoolPlay(cp, tmp_path_factory.mktemp("mig-layout"), cluster(sandbox, FIRST))
    yield {"cp": cp, "play": play, "sandbox": sandbox}
    sandbox.mig.clear_faults()
    for name in NODES:
        try:
            sandbox.nodes.remove_node(name)
        except Exception:
            pass
    cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_ansible_doc_renders_both_modules():
    names = ["gpupool.core.mig_layout", "gpupool.core.pool_info"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    proc = subprocess.run(
        [os.path.join(VENV_BIN, "ansible-doc"), "--json"] + names, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert docs["gpupool.core.mig_layout"]["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert docs["gpupool.core.mig_layout"]["doc"]["attributes"]["diff_mode"]["support"] == "full"
    assert docs["gpupool.core.pool_info"]["doc"]["attributes"]["check_mode"]["support"] == "full"
    for name in names:
        for opt in ("kubeconfig", "context", "host", "cluster", "pools", "nodegroup_label"):
            assert opt in docs[name]["doc"]["options"], (name, opt)
        assert docs[name]["examples"] and docs[name]["return"]


def test_first_rollout_check_mode_writes_nothing_and_predicts_the_real_diff(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    (check,), _res, check_window = play.run([task()], check=True)
    assert not check.get("failed"), check.get("msg")
    assert check["changed"] is True
    assert check_window.writes(user=ADMIN) == []
    assert [w["nodes"] for w in check["waves"]] == [[n] for n in NODES]
    assert all(w["result"] == "planned" for w in check["waves"])
    assert check["config_map"]["configs"][CONFIG] == "created"
    for name in NODES:
        assert mig_config_of(cp, name) is None  # nothing was labelled

    (real,), res, window = play.run([task()])
    assert not real.get("failed"), real.get("msg")
    assert real["changed"] is True
    assert h.comparable_diff(check) == h.comparable_diff(real)  # the diff check mode showed is what was applied
    assert [w["result"] for w in real["waves"]] == ["success"] * 3
    assert real["failed_nodes"] == []
    # The ConfigMap holds our config next to the other tool's, which is unchanged.
    cm, doc = config_map(cp, sandbox)
    assert doc["mig-configs"]["team-x"] == FOREIGN
    assert doc["mig-configs"][CONFIG] == [{"devices": "all", "mig-enabled": True, "mig-devices": FIRST}]
    assert CONFIG in cm["metadata"]["annotations"]["mig-configs.gpupool.io/miglay"]  # the owner: the cluster name
    for name in NODES:
        lab = labels(cp, name)
        assert lab["nvidia.com/mig.config"] == CONFIG and lab["nvidia.com/mig.config.state"] == "success"
        assert layouts(sandbox, name) == {0: FIRST, 1: FIRST}
        assert not node(cp, name)["spec"].get("unschedulable")  # uncordoned again
    # writes: one ConfigMap write; per node two patches, whatever the drain policy (the inventory's default
    # drains, but these nodes have no GPU pod to evict): the cordon with the config label, the uncordon
    counts = h.write_counts(window, ADMIN)
    assert counts == {("patch", "configmaps"): 1, ("patch", "nodes"): 6} or counts == {
        ("create", "configmaps"): 1,
        ("patch", "nodes"): 6,
    }, counts
    for name in NODES:
        cordon, uncordon = patches_in_order(window, ADMIN, name)
        body = cordon["requestObject"]
        # one write: the cordon, the cordon ledger's record (who, why) and the config label with its digest
        assert body["spec"] == {"unschedulable": True}, body
        assert body["metadata"]["labels"]["nvidia.com/mig.config"] == CONFIG
        assert body["metadata"]["annotations"]["gpupool.io/cordoned-by"] == "mig-layout"
        assert body["metadata"]["annotations"]["gpupool.io/cordon-reason"] == "mig-layout:%s:%s" % (POOL, CONFIG)
        # (gpupool.io/cordon-run, which run: only a run under the run lease records it, as site.yml's do)
        assert body["metadata"]["annotations"]["gpupool.io/mig-config-digest"] == real["pools"][POOL]["digest"]
        assert uncordon["requestObject"]["spec"] == {"unschedulable": None}
        assert "labels" not in uncordon["requestObject"]["metadata"]
        # the MIG manager acted on the label of the first write, and the uncordon waited for its answer
        sim = [ts(e) for e in node_writes(window, MIG_SIM, name)]
        assert sim and ts(cordon) < min(sim) and max(sim) < ts(uncordon), name
    # reads: no GET per node before cordoning, the waves watched by label-selected LISTs
    node_gets = list(window.select(verbs={"get"}, user=ADMIN, resource="nodes"))
    assert node_gets == [], [e["requestURI"] for e in node_gets]
    lists = [e["requestURI"] for e in window.select(verbs={"list"}, user=ADMIN, resource="nodes")]
    assert len([u for u in lists if "labelSelector=nvidia.com%2Fmig.config%3D" in u]) >= 3  # at least one per wave


def mig_config_of(cp, name):
    return labels(cp, name).get("nvidia.com/mig.config")


def test_second_run_changes_nothing_and_writes_nothing(bed):
    play = bed["play"]
    (check, real), _res, window = play.run([task(), task()], check=False)
    for r in (check, real):
        assert not r.get("failed"), r.get("msg")
        assert r["changed"] is False
        assert r["waves"] == [] and r["config_map"]["action"] == "unchanged"
        assert r.get("diff") == []
        assert all(n["action"] == "none" for n in r["pools"][POOL]["nodes"])
    assert window.writes(user=ADMIN) == []


def test_layout_change_rolls_node_by_node_and_evicts_gpu_pods(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    from kubernetes import client

    core = client.CoreV1Api(cp.api_client())

    def mkpod(name, node_name, limits=None, claims=None):
        spec = {
            "nodeName": node_name,
            "containers": [
                {"name": "c", "image": "registry.example/app:1", "resources": {"limits": limits} if limits else {}}
            ],
            "tolerations": [{"operator": "Exists"}],
        }
        if claims:
            spec["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
        core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": spec})

    mkpod("train", NODES[1], limits={"nvidia.com/gpu": "1"})
    mkpod("infer", NODES[2], claims=["a100-claim"])
    mkpod("web", NODES[1], limits={"cpu": "100m"})

    play.cluster = cluster(sandbox, SECOND)
    (check,), _res, check_window = play.run([task(drain=True, drain_grace_period=0)], check=True)
    assert not check.get("failed"), check.get("msg")
    assert check_window.writes(user=ADMIN) == []
    assert [(w["nodes"], w["evict"]) for w in check["waves"]] == [
        ([NODES[0]], []),
        ([NODES[1]], [NS + "/train"]),
        ([NODES[2]], [NS + "/infer"]),
    ]
    assert all(a == "reconfigure" for w in check["waves"] for a in w["actions"].values())

    (real,), _res, window = play.run([task(drain=True, drain_grace_period=0)])
    assert not real.get("failed"), real.get("msg")
    assert h.comparable_diff(check) == h.comparable_diff(real)
    waves = real["waves"]
    assert [w["nodes"] for w in waves] == [[n] for n in NODES]
    assert [w["evicted"] for w in waves] == [[], [NS + "/train"], [NS + "/infer"]]
    # One node at a time: a wave starts after the previous one finished.
    for before, after in zip(waves, waves[1:]):
        assert after["started"] >= before["finished"]
    # ... and the audit log agrees: gpupool's first write to node i+1 comes after the MIG manager reported
    # success on node i, and the MIG manager touched node i+1 only after gpupool labelled it.
    for prev, nxt in zip(NODES, NODES[1:]):
        prev_sim = node_writes(window, MIG_SIM, prev)
        nxt_admin = node_writes(window, ADMIN, nxt)
        assert prev_sim and nxt_admin
        assert min(ts(e) for e in nxt_admin) > max(ts(e) for e in prev_sim), (prev, nxt)
        assert min(ts(e) for e in node_writes(window, MIG_SIM, nxt)) > min(ts(e) for e in nxt_admin)
    # relabel: the label's removal goes with the cordon (the MIG manager ignores an unset label, so it may go
    # before the drain), the label once the GPU pods are gone, the uncordon: three patches per node
    assert [len(node_writes(window, ADMIN, n)) for n in NODES] == [3, 3, 3]
    for name in NODES:
        cordon, label, _uncordon = patches_in_order(window, ADMIN, name)
        assert cordon["requestObject"]["spec"] == {"unschedulable": True}
        assert cordon["requestObject"]["metadata"]["labels"] == {
            "nvidia.com/mig.config": None,
            "nvidia.com/mig.config.state": None,
        }
        assert label["requestObject"]["metadata"]["labels"]["nvidia.com/mig.config"] == CONFIG
        pod_name = {NODES[1]: "train", NODES[2]: "infer"}.get(name)
        for eviction in evictions_of(window, pod_name):  # the label is set again only after the GPU pod went
            assert ts(cordon) < ts(eviction) < ts(label), name
    evictions = [
        e
        for e in window.writes(user=ADMIN, resource="pods")
        if (e.get("objectRef") or {}).get("subresource") == "eviction"
    ]
    assert sorted(e["objectRef"]["name"] for e in evictions) == ["infer", "train"]
    pods = core.list_namespaced_pod(NS).items
    daemon = [p for p in pods if any(o.kind == "DaemonSet" for o in p.metadata.owner_references or [])]
    assert daemon  # the plugin pods of the real DaemonSet controller: never evicted (asserted above), left alone
    assert sorted(p.metadata.name for p in pods if p not in daemon) == ["web"]  # the pod without GPUs stays
    for name in NODES:
        assert layouts(sandbox, name) == {0: SECOND, 1: SECOND}
        assert labels(cp, name)["nvidia.com/mig.config.state"] == "success"
        assert not node(cp, name)["spec"].get("unschedulable")
    _cm, doc = config_map(cp, sandbox)
    assert doc["mig-configs"]["team-x"] == FOREIGN


def test_failed_node_stops_the_rollout_and_leaves_the_rest_untouched(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    sandbox.mig.inject_fault(node=NODES[1], count=1)
    before = {n: node(cp, n) for n in NODES}
    play.cluster = cluster(sandbox, THIRD)
    (res,), _out, window = play.run([task()])
    assert res.get("failed") is True
    assert NODES[1] in res["msg"] and "failed" in res["msg"] and "retry_failed: true" in res["msg"]
    assert "Not touched: %s" % NODES[2] in res["msg"]
    assert res["failed_nodes"] == [NODES[1]]
    assert [w["result"] for w in res["waves"]] == ["success", "failed", "not started"]
    assert layouts(sandbox, NODES[0]) == {0: THIRD, 1: THIRD}
    assert layouts(sandbox, NODES[1]) == {0: SECOND, 1: SECOND}  # a failed apply keeps the old layout
    assert layouts(sandbox, NODES[2]) == {0: SECOND, 1: SECOND}
    assert node_writes(window, ADMIN, NODES[2]) == []  # untouched
    after = node(cp, NODES[2])["metadata"]
    assert (after["labels"], after.get("annotations")) == (
        before[NODES[2]]["metadata"]["labels"],
        before[NODES[2]]["metadata"].get("annotations"),
    )
    assert labels(cp, NODES[1])["nvidia.com/mig.config.state"] == "failed"
    assert node(cp, NODES[1])["spec"].get("unschedulable") is True  # left cordoned for a person to look

    # Rerun without retry_failed: stops before any write, naming the node.
    (blocked,), _out, window = play.run([task()])
    assert blocked.get("failed") is True and NODES[1] in blocked["msg"] and "nothing was changed" in blocked["msg"]
    assert window.writes(user=ADMIN) == []

    # With retry_failed the rollout finishes (the fault fired once) and the failed node is uncordoned.
    (retry,), _out, _window = play.run([task(retry_failed=True)])
    assert not retry.get("failed"), retry.get("msg")
    assert [w["nodes"] for w in retry["waves"]] == [[NODES[1]], [NODES[2]]]
    for name in NODES:
        assert layouts(sandbox, name) == {0: THIRD, 1: THIRD}
        assert not node(cp, name)["spec"].get("unschedulable")


def test_infeasible_layout_fails_before_any_request(bed):
    play, sandbox = bed["play"], bed["sandbox"]
    play.cluster = cluster(sandbox, {"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1})
    (check, real), _out, window = play.run([task(), task()], check=False)
    for r in (check, real):
        assert r.get("failed") is True
        assert "nothing was changed" in r["msg"] and "compute slices" in r["msg"]
    assert window.select(user=ADMIN) == []  # not even a read: the planner refused it first
    play.cluster = cluster(sandbox, THIRD)


def test_others_changes_to_the_configmap_survive_a_layout_change(bed):
    cp, play, sandbox = bed["cp"], bed["play"], bed["sandbox"]
    changed = [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.10gb": 3}}]
    put_foreign_config(cp, sandbox, "team-x", changed)
    play.cluster = cluster(sandbox, FIRST, max_unavailable=3)
    (res,), _out, _window = play.run([task(cordon=False)])
    assert not res.get("failed"), res.get("msg")
    assert [w["nodes"] for w in res["waves"]] == [NODES]  # max_unavailable 3: one wave
    _cm, doc = config_map(cp, sandbox)
    assert doc["mig-configs"]["team-x"] == changed
    assert doc["mig-configs"][CONFIG][0]["mig-devices"] == FIRST
    for name in NODES:
        assert layouts(sandbox, name) == {0: FIRST, 1: FIRST}


def test_a_failed_node_holds_back_only_its_own_pool(sandbox, tmp_path):
    """A node in state failed blocks its own pool's waves; the other pool rolls on, and the step fails at the end
    naming the node (issue #24: it used to stop every pool before any write)."""
    cp = sandbox.cp
    pools, nodes = ["miglay-blk-a", "miglay-blk-b"], ["miglay-blk-a-0", "miglay-blk-b-0"]
    for pool, name in zip(pools, nodes):
        sandbox.nodes.register_node(name, FLAVOR, nodegroup=pool)
    inventory = cluster(sandbox, FIRST)
    inventory["pools"] = [
        {
            "name": pool,
            "nodegroup": {"name": pool, "flavor": FLAVOR, "node_count": 1},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": copy.deepcopy(FIRST)},
        }
        for pool in pools
    ]
    play = h.GpupoolPlay(cp, tmp_path, inventory)
    try:
        sandbox.mig.inject_fault(node=nodes[0], count=1)
        (first,), _out, _window = play.run([task(prune=False)])
        assert first.get("failed") is True and first["failed_nodes"] == [nodes[0]]
        assert [w["result"] for w in first["waves"]] == ["failed", "not started"]  # a failure mid-run still stops

        (second,), _out, window = play.run([task(prune=False)])
        assert second.get("failed") is True and second["blocked_nodes"] == [nodes[0]]
        assert "held back their pool's rollout" in second["msg"] and nodes[0] in second["msg"]
        assert "retry_failed: true" in second["msg"]
        assert second["pools"][pools[0]]["blocked"] == [nodes[0]] and second["pools"][pools[0]]["waves"] == []
        assert [(w["pool"], w["result"]) for w in second["waves"]] == [(pools[1], "success")]
        assert layouts(sandbox, nodes[1]) == {0: FIRST, 1: FIRST}
        assert not node(cp, nodes[1])["spec"].get("unschedulable")
        assert node_writes(window, ADMIN, nodes[0]) == []  # the failed node is left for a person
        assert labels(cp, nodes[0])["nvidia.com/mig.config.state"] == "failed"
        assert all(len(line) <= 200 for line in second["msg"].splitlines())
    finally:
        sandbox.mig.clear_faults()
        for name in nodes:
            sandbox.nodes.remove_node(name)


def test_a_new_node_with_a_gpu_pod_gets_its_label_only_after_the_drain(sandbox, tmp_path):
    """The config label goes with the cordon only when the node has nothing to evict (its pods are read just before
    the cordon): a node running a GPU pod is cordoned, drained, then labelled - three patches, the eviction between
    the first two - while its idle neighbour in the same wave takes two."""
    cp = sandbox.cp
    from kubernetes import client

    pool, nodes = "miglay-busy", ["miglay-busy-0", "miglay-busy-1"]
    for name in nodes:
        sandbox.nodes.register_node(name, FLAVOR, nodegroup=pool)
    core = client.CoreV1Api(cp.api_client())
    h.ensure_namespace(cp, NS)
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "busy-train"},
            "spec": {
                "nodeName": nodes[0],
                "containers": [
                    {"name": "c", "image": "registry.example/app:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
                "tolerations": [{"operator": "Exists"}],
            },
        },
    )
    inventory = cluster(sandbox, FIRST, max_unavailable=2)
    inventory["pools"] = [
        {
            "name": pool,
            "nodegroup": {"name": pool, "flavor": FLAVOR, "node_count": 2},
            "gpu": {"model": "A100-40GB", "per_node": 2},
            "mig": {"mode": "static", "layout": copy.deepcopy(FIRST)},
        }
    ]
    play = h.GpupoolPlay(cp, tmp_path, inventory)
    try:
        (res,), _out, window = play.run([task(prune=False, drain_grace_period=0)])
        assert not res.get("failed"), res.get("msg")
        assert [w["nodes"] for w in res["waves"]] == [nodes]  # one wave: both nodes side by side
        assert res["waves"][0]["evicted"] == [NS + "/busy-train"]
        config = "gpupool-" + pool
        busy, idle = (patches_in_order(window, ADMIN, name) for name in nodes)
        assert [len(busy), len(idle)] == [3, 2]
        cordon, label, _uncordon = busy
        assert cordon["requestObject"]["spec"] == {"unschedulable": True}
        assert "labels" not in cordon["requestObject"]["metadata"]  # the GPU pod still ran: no label yet
        assert cordon["requestObject"]["metadata"]["annotations"]["gpupool.io/cordon-reason"] == (
            "mig-layout:%s:%s" % (pool, config)
        )
        assert label["requestObject"]["metadata"]["labels"]["nvidia.com/mig.config"] == config
        (eviction,) = evictions_of(window, "busy-train")
        assert ts(cordon) < ts(eviction) < ts(label)
        assert idle[0]["requestObject"]["metadata"]["labels"]["nvidia.com/mig.config"] == config
        for name in nodes:
            assert layouts(sandbox, name) == {0: FIRST, 1: FIRST}
            assert not node(cp, name)["spec"].get("unschedulable")
    finally:
        from kubernetes.client.rest import ApiException

        try:  # evicted by a passing run; still there when the run failed before its drain
            core.delete_namespaced_pod("busy-train", NS, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise
        for name in nodes:
            sandbox.nodes.remove_node(name)
