"""gpupool.core.nodegroup / nodegroup_info against the Magnum API emulator.

The real module code and the unmodified openstacksdk talk HTTP to the emulator: two end-to-end runs
through ansible-playbook, the rest by running the steps in-process as their action plugins do (faster).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from ansible_collections.gpupool.core.plugins.action import nodegroup, nodegroup_info
from tests.integration import k8s_helpers as h
from tests.support.steps import run_action

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".build" / "collections"
WRITES = ("POST", "PATCH", "PUT", "DELETE")


def run(module, check=False, diff=False, **args):
    """A step in-process with these arguments, as its action plugin runs it; returns its result."""
    return run_action(module, _ansible_check_mode=check, _ansible_diff=diff, **args)


def ng_task(magnum, **args):
    return run(nodegroup, cloud=magnum.cloud_name, cluster="k8s", **args)


def magnum_writes(magnum):
    return [(r["method"], r["path"]) for r in magnum.magnum_requests(writes_only=True)]


def sent_versions(magnum):
    """(the microversions the nodegroup step's list was sent at, those of every other call but GET /v1/).
    The step's first call is its list, sent at 1.9 (what the nodegroup API needs); its headers give the
    server's range, and every later call is sent at the negotiated version."""
    lists, others = set(), set()
    for r in magnum.magnum_requests():
        if r["path"] != "/v1":
            step_list = r["method"] == "GET" and r["path"] == "/v1/clusters/k8s/nodegroups"
            (lists if step_list else others).add(r["headers"].get("OpenStack-API-Version"))
    return lists, others


# ------------------------------------------------------------------------------------- ansible-playbook
def playbook(tmp_path, magnum, tasks, check=False, diff=False):
    """Run tasks on localhost with ansible-playbook; each registers ``r<i>``; returns the list of results."""
    plays = [{"hosts": "localhost", "gather_facts": False, "tasks": []}]
    for i, task in enumerate(tasks):
        task = dict(task, register="r%d" % i)
        plays[0]["tasks"].append(task)
    plays[0]["tasks"].append(
        {
            "ansible.builtin.copy": {
                "content": "{{ [%s] | to_json }}" % ", ".join("r%d" % i for i in range(len(tasks))),
                "dest": str(tmp_path / "results.json"),
            },
            "check_mode": False,
            "diff": False,
        }
    )
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    (tmp_path / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    "hosts": {
                        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                    }
                }
            }
        )
    )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        OS_CLIENT_CONFIG_FILE=str(magnum.clouds_yaml),
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_DEPRECATION_WARNINGS="0",
        PYTHONPATH=os.pathsep.join([str(COLLECTIONS), str(ROOT)]),
    )
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        str(tmp_path / "hosts.yml"),
        str(tmp_path / "play.yml"),
    ]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return json.loads((tmp_path / "results.json").read_text()), proc.stdout


def test_playbook_lifecycle_create_idempotent_resize_patch_delete(tmp_path, magnum):
    base = {"cloud": magnum.cloud_name, "cluster": "k8s", "name": "gpu-a100"}
    tasks = [
        {
            "gpupool.core.nodegroup": dict(
                base, flavor="g4.a100", node_count=2, max_node_count=4, labels={"nvidia_gpu_enabled": True}
            )
        },
        {
            "gpupool.core.nodegroup": dict(
                base, flavor="g4.a100", node_count=2, max_node_count=4, labels={"nvidia_gpu_enabled": True}
            )
        },
        {"gpupool.core.nodegroup": dict(base, node_count=4)},
        {"gpupool.core.nodegroup": dict(base, node_count=1)},
        {"gpupool.core.nodegroup": dict(base, min_node_count=1, max_node_count=6)},
        {"gpupool.core.nodegroup_info": {"cloud": magnum.cloud_name, "cluster": "k8s"}},
        {"gpupool.core.nodegroup": dict(base, state="absent")},
        {"gpupool.core.nodegroup": dict(base, state="absent")},
    ]
    results, _ = playbook(tmp_path, magnum, tasks)
    create, again, up, down, patch, info, delete, delete_again = results
    assert create["changed"] and create["nodegroup"]["status"] == "CREATE_COMPLETE"
    assert create["nodegroup"]["labels"]["nvidia_gpu_enabled"] == "true"
    assert create["nodegroup"]["labels"]["kube_tag"] == "v1.29.2", "merge_labels keeps the cluster labels"
    assert again["changed"] is False and again["actions"] == []
    assert up["changed"] and up["nodegroup"]["node_count"] == 4 and len(up["nodegroup"]["node_addresses"]) == 4
    assert down["changed"] and down["nodegroup"]["node_count"] == 1
    assert patch["changed"] and [a["action"] for a in patch["actions"]] == ["patch"]
    assert (patch["nodegroup"]["min_node_count"], patch["nodegroup"]["max_node_count"]) == (1, 6)
    assert [n["name"] for n in info["nodegroups"]] == ["default-master", "default-worker", "gpu-a100"]
    assert delete["changed"] and delete_again["changed"] is False
    assert magnum.nodes_of("k8s", "default-worker")  # untouched
    assert sent_versions(magnum) == ({"container-infra 1.9"}, {"container-infra 1.14"})
    assert [m for m, _ in magnum_writes(magnum)] == ["POST", "POST", "POST", "PATCH", "DELETE"]


def test_playbook_check_mode_with_diff_writes_nothing(tmp_path, magnum):
    base = {"cloud": magnum.cloud_name, "cluster": "k8s"}
    tasks = [
        {"gpupool.core.nodegroup": dict(base, name="gpu", flavor="g1", node_count=2)},
        {"gpupool.core.nodegroup": dict(base, name="default-worker", node_count=5)},
    ]
    results, stdout = playbook(tmp_path, magnum, tasks, check=True, diff=True)
    assert all(r["changed"] for r in results)
    assert results[0]["actions"][0]["action"] == "create"
    assert results[1]["actions"][0]["request"]["node_count"] == 5
    assert "--- before: nodegroup 'default-worker' of cluster 'k8s'" in stdout
    # ansible.cfg: callback_result_format = yaml, so the diff is of YAML documents
    assert "\n-    node_count: 2\n+    node_count: 5\n" in stdout
    assert magnum_writes(magnum) == []


# ------------------------------------------------------------------------------------- in-process
def test_create_then_second_run_is_unchanged_and_header_is_sent(magnum):
    first = ng_task(magnum, name="gpu", flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": "true"})
    assert first["changed"] and first["nodegroup"]["status"] == "CREATE_COMPLETE", first
    assert any("CREATE_COMPLETE" in line and "done" in line for line in first["progress"])
    second = ng_task(magnum, name="gpu", flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": "true"})
    assert second["changed"] is False
    post = [r for r in magnum.magnum_requests() if r["method"] == "POST"]
    assert len(post) == 1 and post[0]["headers"]["OpenStack-API-Version"] == "container-infra 1.14"
    assert post[0]["body"]["merge_labels"] is True


def test_old_magnum_gets_its_own_maximum_and_the_short_service_name(magnum_factory):
    emu = magnum_factory(release="2025.1")
    result = run(nodegroup, cloud=emu.cloud_name, cluster="k8s", name="gpu", node_count=0)
    assert result["changed"] and result["microversion"] == "1.11", result
    assert sent_versions(emu) == ({"container-infra 1.9"}, {"container-infra 1.11"})
    refused = run(nodegroup, cloud=emu.cloud_name, cluster="k8s", name="gpu2", node_labels={"a": "b"})
    assert refused["failed"] and "only supports 1.11" in refused["msg"]


def test_resize_up_and_down_and_min_max(magnum):
    ng_task(magnum, name="gpu", node_count=1)
    up = ng_task(magnum, name="gpu", node_count=3, max_node_count=3, diff=True)
    assert [a["action"] for a in up["actions"]] == ["resize", "patch"]
    assert up["diff"]["before"]["node_count"] == 1 and up["diff"]["after"]["node_count"] == 3
    assert len(magnum.nodes_of("k8s", "gpu")) == 3
    down = ng_task(magnum, name="gpu", node_count=1, min_node_count=1)
    assert down["changed"] and down["nodegroup"]["node_count"] == 1 and down["nodegroup"]["min_node_count"] == 1
    assert [n.name[-6:] for n in magnum.nodes_of("k8s", "gpu")] == ["node-0"]
    narrow = ng_task(magnum, name="gpu", node_count=2, min_node_count=2, max_node_count=2)
    assert narrow["nodegroup"]["node_count"] == 2, narrow


def test_injected_503s_are_retried(magnum):
    magnum.set_faults(error_count=2)
    result = ng_task(magnum, name="gpu", node_count=1)
    assert result["changed"] and "failed" not in result, result
    assert sum("HTTP 503, retry" in line for line in result["progress"]) == 2
    assert [r["status"] for r in magnum.magnum_requests()[:3]] == [503, 503, 200]


def test_create_failed_is_reported_with_its_reason(magnum):
    magnum.fail_next(
        "create",
        nodegroup="gpu",
        reason="Quota exceeded for instances: Requested 2, but already used 10 of 10 instances",
    )
    result = ng_task(magnum, name="gpu", node_count=2)
    assert result["failed"] and result["changed"] is True
    assert "ended in CREATE_FAILED: Quota exceeded for instances" in result["msg"]
    assert result["status"] == "CREATE_FAILED" and "Quota exceeded" in result["status_reason"]
    again = ng_task(magnum, name="gpu", node_count=2)
    assert again["failed"] and "delete it with state=absent" in again["msg"]
    assert ng_task(magnum, name="gpu", state="absent")["changed"]
    assert ng_task(magnum, name="gpu", node_count=2)["changed"]


def test_timeout_is_reported_with_the_last_status(magnum):
    magnum.set_delay(delay=30)
    start = time.monotonic()
    result = ng_task(magnum, name="gpu", wait_timeout=1)
    assert result["failed"] and time.monotonic() - start < 15
    assert "Timed out after 1s" in result["msg"] and "CREATE_IN_PROGRESS" in result["msg"]
    assert result["status"] == "CREATE_IN_PROGRESS"


def test_duplicate_409_is_reported_clearly(magnum_factory):
    emu = magnum_factory(conductor_lag=20)  # the row is not visible yet, the name is taken
    first = run(nodegroup, cloud=emu.cloud_name, cluster="k8s", name="gpu", wait=False)
    assert first["changed"]
    second = run(nodegroup, cloud=emu.cloud_name, cluster="k8s", name="gpu", wait=False)
    assert second["failed"] and "HTTP 409" in second["msg"]
    assert "A node group with name gpu already exists in the cluster k8s" in second["msg"]


def test_out_of_bounds_resize_is_reported_clearly(magnum):
    ng_task(magnum, name="gpu", node_count=2, max_node_count=3)
    result = ng_task(magnum, name="gpu", node_count=5)
    assert result["failed"]
    assert "node_count 5 is outside [min_node_count 0 (current), max_node_count 3 (current)]" in result["msg"]
    assert [m for m, _ in magnum_writes(magnum)] == ["POST"]


def test_immutable_change_is_refused(magnum):
    ng_task(magnum, name="gpu", flavor="g1", node_count=1)
    result = ng_task(magnum, name="gpu", flavor="g2", node_count=1)
    assert result["failed"] and "flavor is 'g1', the task asks for 'g2'" in result["msg"]
    assert "Create a nodegroup with another name" in result["msg"]
    assert [m for m, _ in magnum_writes(magnum)] == ["POST"]


def test_check_mode_sends_no_write(magnum):
    ng_task(magnum, name="gpu", node_count=1)
    magnum.clear_requests()
    for args in (
        {"name": "new", "node_count": 2},
        {"name": "gpu", "node_count": 3},
        {"name": "gpu", "max_node_count": 9},
        {"name": "gpu", "state": "absent"},
    ):
        result = ng_task(magnum, check=True, diff=True, **args)
        assert result["changed"] and result["diff"]["before"] != result["diff"]["after"]
    assert magnum.magnum_requests() and magnum_writes(magnum) == []


def test_wait_false_then_the_next_run_waits_for_it_to_settle(magnum):
    first = ng_task(magnum, name="gpu", node_count=1, wait=False)
    assert first["changed"] and first["nodegroup"]["status"] == "CREATE_IN_PROGRESS"
    second = ng_task(magnum, name="gpu", node_count=2)
    assert second["changed"] and second["nodegroup"]["node_count"] == 2
    assert any("settle" in line for line in second["progress"]) or second["nodegroup"]["status"] == "UPDATE_COMPLETE"


def test_delete_and_default_nodegroup(magnum):
    ng_task(magnum, name="gpu")
    gone = ng_task(magnum, name="gpu", state="absent")
    assert gone["changed"] and gone["nodegroup"] == {}
    refused = ng_task(magnum, name="default-worker", state="absent")
    assert refused["failed"] and "default nodegroup" in refused["msg"]


def test_node_labels_and_taints_on_1_14(magnum):
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    created = ng_task(magnum, name="gpu", node_labels={"pool": "a100"}, node_taints=taints)
    assert created["nodegroup"]["node_labels"] == {"pool": "a100"}
    assert ng_task(magnum, name="gpu", node_labels={"pool": "a100"}, node_taints=taints)["changed"] is False
    changed = ng_task(magnum, name="gpu", node_labels={"pool": "h100"})
    assert changed["changed"] and changed["nodegroup"]["node_labels"] == {"pool": "h100"}


def test_info(magnum):
    ng_task(magnum, name="gpu", node_count=1)
    listing = run(nodegroup_info, cloud=magnum.cloud_name, cluster="k8s")
    assert [n["name"] for n in listing["nodegroups"]] == ["default-master", "default-worker", "gpu"]
    workers = run(nodegroup_info, cloud=magnum.cloud_name, cluster="k8s", role="worker", detail=True)
    assert [n["name"] for n in workers["nodegroups"]] == ["default-worker", "gpu"]
    assert all("labels" in n for n in workers["nodegroups"])
    one = run(nodegroup_info, cloud=magnum.cloud_name, cluster="k8s", name="gpu")
    assert one["nodegroups"][0]["node_addresses"]
    assert magnum_writes(magnum) == [("POST", "/v1/clusters/k8s/nodegroups")]


def test_cloud_dict_works_like_clouds_yaml(magnum):
    result = run(nodegroup_info, cloud=magnum.cloud_config(), cluster="k8s")
    assert len(result["nodegroups"]) == 2
    assert magnum.password not in json.dumps(result)


# ------------------------------------------------------------------------------------- drain
def test_shrink_with_drain_on_a_real_apiserver(magnum_factory, control_plane, tmp_path):
    """The emulator's hook registers the nodegroup's Nodes in a real kube-apiserver (as kubelets would);
    a shrink with drain cordons the chosen nodes, evicts their GPU pods and removes exactly those servers."""
    from kubernetes import client

    emu = magnum_factory(clusters=[{"name": "drain-test", "node_count": 1}], seed=7)
    core = client.CoreV1Api(control_plane.api_client())

    def register(cluster, ng, event):
        if ng["name"] != "gpu":
            return
        for node in event.added:
            core.create_node(
                client.V1Node(
                    metadata=client.V1ObjectMeta(name=node.name, labels=node.labels),
                    spec=client.V1NodeSpec(provider_id=node.provider_id),
                )
            )
        for node in event.removed:
            core.delete_node(node.name)

    emu.on_nodegroup_change(register)
    assert run(nodegroup, cloud=emu.cloud_name, cluster="drain-test", name="gpu", node_count=3)["changed"]
    n0, n1, n2 = emu.nodes_of("drain-test", "gpu")
    ns = "drain-%d" % int(time.time() * 1000)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    h.wait_for_default_service_account(core, ns)

    def pod(name, node, gpu=True):
        resources = client.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"} if gpu else {"cpu": "1"})
        core.create_namespaced_pod(
            ns,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name=name),
                spec=client.V1PodSpec(
                    node_name=node.name,
                    termination_grace_period_seconds=0,
                    containers=[client.V1Container(name="c", image="registry.example/cuda:12", resources=resources)],
                ),
            ),
        )

    pod("train-a", n0)
    pod("train-b", n1)
    pod("train-c", n1)
    pod("train-d", n2)
    pod("web", n0, gpu=False)
    try:
        result = run(
            nodegroup,
            cloud=emu.cloud_name,
            cluster="drain-test",
            name="gpu",
            node_count=1,
            drain=True,
            kubeconfig=str(control_plane.kubeconfig),
            drain_timeout=60,
        )
        assert result["changed"], result
        assert result["drain"]["victims"] == [n2.name, n0.name]
        assert result["drain"]["nodes_to_remove"] == [n2.server_id, n0.server_id]
        assert sorted(p["name"] for p in result["drain"]["evict"]) == ["train-a", "train-d"]
        assert [n.name for n in emu.nodes_of("drain-test", "gpu")] == [n1.name]
        left = sorted(p.metadata.name for p in core.list_namespaced_pod(ns).items)
        assert left == ["train-b", "train-c", "web"], "GPU pods evicted, others left alone"
        assert [n.metadata.name for n in core.list_node(label_selector="magnum.openstack.org/nodegroup=gpu").items] == [
            n1.name
        ]
        requests_ = [r for r in emu.magnum_requests(writes_only=True) if r["path"].endswith("/resize")]
        assert requests_[-1]["body"]["nodes_to_remove"] == [n2.server_id, n0.server_id]
    finally:
        core.delete_namespace(ns)
        for node in core.list_node(label_selector="magnum.openstack.org/nodegroup=gpu").items:
            core.delete_node(node.metadata.name)


# ------------------------------------------------------------------------------------- cluster + pools
def inventory(magnum, *pools, labels=None, cluster="k8s", kubeconfig=None):
    """A gpupool_cluster whose Magnum section points at the emulator (the cloud as a dict, as the sandbox writes it)."""
    out = {
        "name": "emu",
        "magnum": {"cloud": magnum.cloud_config(), "cluster": cluster, "labels": labels or {}},
        "pools": list(pools),
    }
    if kubeconfig:
        out["kubeconfig"] = kubeconfig
    return out


def pool(name, state="present", **group):
    return {
        "name": name,
        "state": state,
        "gpu": {"model": "A100-40GB", "per_node": 2},
        "nodegroup": dict({"flavor": "g4.p2.40g"}, **group),
    }


def nodegroup_lists(magnum):
    return [r for r in magnum.magnum_requests() if r["method"] == "GET" and r["path"].endswith("/nodegroups")]


def test_pools_converge_in_one_run_with_one_list_and_the_second_run_writes_nothing(magnum):
    cluster = inventory(
        magnum,
        pool("gpu-a"),
        pool("gpu-b", node_count=2, max_node_count=3),
        pool("gpu-c", node_count=0),
        labels={"nvidia_gpu_enabled": True},
    )
    first = run(nodegroup, cluster=cluster)
    assert first["changed"] and "failed" not in first, first
    assert sorted(first["pools"]) == ["gpu-a", "gpu-b", "gpu-c"]
    assert [first["pools"][n]["nodegroup"]["node_count"] for n in ("gpu-a", "gpu-b", "gpu-c")] == [1, 2, 0]
    assert all(first["pools"][n]["nodegroup"]["labels"]["nvidia_gpu_enabled"] == "true" for n in first["pools"])
    assert all(first["pools"][n]["nodegroup"]["labels"]["kube_tag"] == "v1.29.2" for n in first["pools"])
    assert len(nodegroup_lists(magnum)) == 1
    magnum.clear_requests()
    second = run(nodegroup, cluster=cluster, check=True)
    third = run(nodegroup, cluster=cluster)
    assert second["changed"] is False and third["changed"] is False, third
    assert magnum_writes(magnum) == [] and len(nodegroup_lists(magnum)) == 2
    assert magnum.password not in json.dumps(third)


def test_a_no_op_reads_the_list_once_and_each_existing_nodegroup_once(magnum):
    """Read once: a no-op of 4 pools asks Magnum for the cluster's nodegroup list once (its response headers carry
    the server's microversion range) and for the full view of each pool's nodegroup once (the list view is
    abbreviated: no min/max_node_count, labels, node_labels or node_taints to compare); no version document, no
    cluster show, no write."""
    cluster = inventory(
        magnum,
        pool("gpu-a"),
        pool("gpu-b", node_count=2, max_node_count=3),
        pool("gpu-c", node_count=0),
        pool("gpu-d", min_node_count=1, max_node_count=2),
        labels={"nvidia_gpu_enabled": True},
    )
    assert run(nodegroup, cluster=cluster)["changed"]
    start = time.time()  # the emulator logs a request once answered: the first run's last poll may come late
    again = run(nodegroup, cluster=cluster)
    assert again["changed"] is False and "failed" not in again, again
    requests = sorted((r["method"], r["path"]) for r in magnum.magnum_requests() if r["time"] >= start)
    shows = [("GET", "/v1/clusters/k8s/nodegroups/%s" % name) for name in ("gpu-a", "gpu-b", "gpu-c", "gpu-d")]
    assert requests == [("GET", "/v1/clusters/k8s/nodegroups")] + shows, requests


def test_pools_one_failing_one_drifting_the_rest_converged_through_ansible_playbook(tmp_path, magnum):
    first = inventory(magnum, pool("gpu-a"), pool("gpu-b"), labels={"nvidia_gpu_enabled": True})
    later = inventory(
        magnum,
        pool("gpu-a", flavor="g5.h100x4"),
        pool("gpu-b", node_count=2),
        labels={"nvidia_gpu_enabled": True, "nvidia_driver": "580"},
    )
    tasks = [
        {"gpupool.core.nodegroup": {"cluster": first}},
        {"gpupool.core.nodegroup": {"cluster": later}, "ignore_errors": True},
    ]
    (created, changed), stdout = playbook(tmp_path, magnum, tasks)
    assert created["changed"] and sorted(created["pools"]) == ["gpu-a", "gpu-b"]
    assert changed["failed"] is True
    assert "flavor is 'g4.p2.40g', the task asks for 'g5.h100x4'" in changed["pools"]["gpu-a"]["msg"]
    assert changed["pools"]["gpu-b"]["nodegroup"]["node_count"] == 2 and changed["pools"]["gpu-b"]["changed"]
    drift = {"nvidia_driver": {"nodegroup": None, "inventory": "580"}}
    assert changed["pools"]["gpu-b"]["label_drift"] == drift and changed["pools"]["gpu-a"].get("label_drift") in (
        None,
        drift,
    )
    assert any(
        "gpu-b' of cluster 'k8s' keeps the Magnum label(s) it was created with: nvidia_driver=None "
        "(inventory: '580')" in str(w)
        for w in changed["warnings"]
    )
    assert len(magnum.nodes_of("k8s", "gpu-b")) == 2 and len(magnum.nodes_of("k8s", "gpu-a")) == 1


def test_absent_pool_is_drained_then_deleted_on_a_real_apiserver(magnum_factory, control_plane):
    """A pool set to state absent: with drain, its nodes are cordoned and their GPU pods evicted before Magnum
    deletes the nodegroup; the Kubernetes connection comes from the inventory's kubeconfig."""
    from kubernetes import client

    emu = magnum_factory(clusters=[{"name": "absent-test", "node_count": 1}], seed=3)
    core = client.CoreV1Api(control_plane.api_client())
    names = []

    def register(cluster, ng, event):
        if ng["name"] != "gpu-gone":
            return
        for node in event.added:
            names.append(node.name)
            core.create_node(
                client.V1Node(
                    metadata=client.V1ObjectMeta(name=node.name, labels=node.labels),
                    spec=client.V1NodeSpec(provider_id=node.provider_id),
                )
            )

    emu.on_nodegroup_change(register)
    kubeconfig = str(control_plane.kubeconfig)
    present = inventory(emu, pool("gpu-gone", node_count=2), cluster="absent-test", kubeconfig=kubeconfig)
    assert run(nodegroup, cluster=present)["changed"]
    ns = "absent-%d" % int(time.time() * 1000)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    h.wait_for_default_service_account(core, ns)
    for i, node_name in enumerate(names):
        core.create_namespaced_pod(
            ns,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="train-%d" % i),
                spec=client.V1PodSpec(
                    node_name=node_name,
                    termination_grace_period_seconds=0,
                    containers=[
                        client.V1Container(
                            name="c",
                            image="registry.example/cuda:12",
                            resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"}),
                        )
                    ],
                ),
            ),
        )
    try:
        absent = dict(
            inventory(
                emu, pool("gpu-gone", state="absent", node_count=2), cluster="absent-test", kubeconfig=kubeconfig
            ),
            allow_empty=True,
        )
        planned = run(nodegroup, cluster=absent, drain=True, check=True)
        assert planned["changed"] and sorted(planned["pools"]["gpu-gone"]["drain"]["victims"]) == sorted(names)
        assert core.list_namespaced_pod(ns).items, "check mode evicts nothing"
        result = run(nodegroup, cluster=absent, drain=True, drain_timeout=60)
        assert result["changed"] and "failed" not in result, result
        assert sorted(result["pools"]["gpu-gone"]["drain"]["evicted"]) == ["%s/train-0" % ns, "%s/train-1" % ns]
        assert core.list_namespaced_pod(ns).items == []
        assert all(core.read_node(n).spec.unschedulable for n in names)
        assert all(core.read_node(n).metadata.annotations["gpupool.io/cordoned-by"] == "nodegroup" for n in names)
        writes = magnum_writes(emu)
        assert writes[-1][0] == "DELETE" and result["pools"]["gpu-gone"]["nodegroup"] == {}
    finally:
        core.delete_namespace(ns)
        for name in names:
            try:
                core.delete_node(name)
            except client.exceptions.ApiException:
                pass


def test_the_owner_rides_in_the_labels_magnum_keeps_and_an_unowned_nodegroup_is_adopted_only_on_purpose(magnum):
    """#32 against the emulator (Magnum's label rules: labels fixed at create, /labels not patchable). A pool's new
    nodegroup carries gpupool.io/owner with the cluster's labels kept; a nodegroup made by hand (no owner label) is
    left by a pool until the pool adopts it; a standalone task never resizes the inventory's nodegroup."""
    assert ng_task(magnum, name="gpu-hand", flavor="g4.p2.40g", node_count=1)["changed"]
    cluster = inventory(magnum, pool("gpu-a"), pool("gpu-hand", node_count=2), labels={"nvidia_gpu_enabled": True})
    magnum.clear_requests()
    first = run(nodegroup, cluster=cluster)
    assert first["failed"] and first["pools"]["gpu-a"]["changed"], first
    labels = first["pools"]["gpu-a"]["nodegroup"]["labels"]
    assert labels["gpupool.io/owner"] == "emu" and labels["kube_tag"] == "v1.29.2", labels
    assert "it has no owner (no Magnum label gpupool.io/owner" in first["pools"]["gpu-hand"]["msg"]
    assert "adopt: true in the nodegroup of pool gpu-hand" in first["pools"]["gpu-hand"]["msg"]
    assert [m for m, p in magnum_writes(magnum) if "gpu-hand" in p or m != "POST"] == []
    assert magnum.nodegroup("k8s", "gpu-hand")["node_count"] == 1

    cluster["pools"][1]["nodegroup"]["adopt"] = True
    adopted = run(nodegroup, cluster=cluster)
    assert "failed" not in adopted and adopted["pools"]["gpu-hand"]["changed"], adopted
    assert magnum.nodegroup("k8s", "gpu-hand")["node_count"] == 2
    assert "gpupool.io/owner" not in magnum.nodegroup("k8s", "gpu-hand")["labels"]  # Magnum cannot add it

    magnum.clear_requests()
    standalone = ng_task(magnum, name="gpu-a", node_count=3)
    assert standalone["failed"] and "it is owned by 'emu'" in standalone["msg"] and magnum_writes(magnum) == []
