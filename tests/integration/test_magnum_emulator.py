"""The Magnum API emulator follows Magnum's rules (reference: magnum-nodegroups.md §1).

Raw HTTP with requests, so every status code, header and body is visible; plus a check that the
unmodified openstacksdk works against it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


class Api:
    """Tiny Magnum client for these tests: token, microversion header, JSON."""

    def __init__(self, emu, version="1.14", service="container-infra"):
        self.emu, self.version, self.service = emu, version, service
        body = {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {
                        "user": {"name": emu.username, "password": emu.password, "domain": {"name": "Default"}}
                    },
                },
                "scope": {"project": {"name": emu.project_name, "domain": {"name": "Default"}}},
            }
        }
        resp = requests.post(emu.auth_url + "/auth/tokens", json=body, timeout=10)
        assert resp.status_code == 201, resp.text
        self.token = resp.headers["X-Subject-Token"]
        self.catalog = resp.json()["token"]["catalog"]

    def __call__(self, method, path, body=None, version="default", headers=None):
        hdrs = {"X-Auth-Token": self.token}
        version = self.version if version == "default" else version
        if version:
            hdrs["OpenStack-API-Version"] = "%s %s" % (self.service, version)
        hdrs.update(headers or {})
        return requests.request(method, self.emu.magnum_url + path, json=body, headers=hdrs, timeout=10)

    def cluster(self, name="k8s"):
        return self("GET", "/clusters/" + name).json()

    def ng(self, name, cluster="k8s"):
        return self("GET", "/clusters/%s/nodegroups/%s" % (cluster, name))

    def wait_status(self, name, statuses, cluster="k8s", timeout=5.0):
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            resp = self.ng(name, cluster)
            status = resp.json().get("status") if resp.status_code == 200 else resp.status_code
            if not seen or seen[-1] != status:
                seen.append(status)
            if status in statuses:
                return seen
            time.sleep(0.02)
        raise AssertionError("never reached %s, saw %s" % (statuses, seen))


def detail(resp):
    return resp.json()["errors"][0]["detail"]


@pytest.fixture
def api(magnum):
    return Api(magnum)


@pytest.fixture
def slow(magnum_factory):
    """An emulator whose operations stay *_IN_PROGRESS for 1 s, long enough to be seen on a busy machine."""
    emu = magnum_factory(delay=1.0)
    return emu, Api(emu)


# ------------------------------------------------------------------------------------------- Keystone
def test_keystone_password_auth_and_catalog(magnum, api):
    types = {s["type"]: s["endpoints"][0]["url"] for s in api.catalog}
    assert types == {"identity": magnum.url + "/identity", "container-infra": magnum.magnum_url}
    bad = requests.post(
        magnum.auth_url + "/auth/tokens",
        timeout=10,
        json={
            "auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "demo", "password": "wrong"}}}}
        },
    )
    assert bad.status_code == 401 and "requires authentication" in bad.json()["error"]["message"]


def test_magnum_needs_a_token(magnum):
    resp = requests.get(magnum.magnum_url + "/clusters", timeout=10)
    assert resp.status_code == 401 and resp.json()["errors"][0]["status"] == 401


# ------------------------------------------------------------------------------------------- microversions
def test_min_max_headers_on_every_v1_response_also_errors(api):
    for resp in (api("GET", "/clusters"), api("GET", "/clusters/nope"), api("GET", "/", version=None)):
        assert resp.headers["OpenStack-API-Minimum-Version"].endswith(" 1.1")
        assert resp.headers["OpenStack-API-Maximum-Version"].endswith(" 1.14")


def test_no_header_means_1_1_and_nodegroups_answer_406(api):
    resp = api("GET", "/clusters/k8s/nodegroups", version=None)
    assert resp.status_code == 406
    err = resp.json()["errors"][0]
    assert err["code"] == "magnum.microversion-unsupported" and err["max_version"] == "1.14"
    assert "1.9" in err["detail"]
    assert api("GET", "/clusters", version=None).status_code == 200  # clusters exist in 1.1
    assert api("GET", "/clusters/k8s/nodegroups", version="1.8").status_code == 406
    assert api("GET", "/clusters/k8s/nodegroups", version="1.9").status_code == 200


@pytest.mark.parametrize(
    "release, long_name_ok, maximum",
    [("2025.1", False, "1.11"), ("2025.2", False, "1.12"), ("2026.1", True, "1.12"), ("master", True, "1.14")],
)
def test_service_names_and_maximum_per_release(magnum_factory, release, long_name_ok, maximum):
    emu = magnum_factory(release=release)
    short = Api(emu, version=maximum)
    resp = short("GET", "/clusters/k8s/nodegroups")
    assert resp.status_code == 200 and resp.headers["OpenStack-API-Version"].endswith(maximum)
    assert resp.headers["OpenStack-API-Maximum-Version"].endswith(" " + maximum)
    too_new = "1.%d" % (int(maximum.split(".")[1]) + 1)
    assert short("GET", "/clusters/k8s/nodegroups", version=too_new).status_code == 406
    assert short("GET", "/clusters", version="latest").headers["OpenStack-API-Version"].endswith(maximum)
    long = Api(emu, version="1.10", service="container-infrastructure-management")
    assert (long("GET", "/clusters/k8s/nodegroups").status_code == 200) is long_name_ok


# ------------------------------------------------------------------------------------------- clusters
def test_seeded_cluster_with_default_nodegroups(magnum, api):
    cluster = api.cluster()
    assert cluster["status"] == "CREATE_COMPLETE" and cluster["labels"]["kube_tag"]
    assert cluster["node_count"] == 2 and cluster["master_count"] == 1
    listing = api("GET", "/clusters/k8s/nodegroups").json()
    assert [(n["name"], n["role"], n["is_default"]) for n in listing["nodegroups"]] == [
        ("default-master", "master", True),
        ("default-worker", "worker", True),
    ]
    assert set(listing["nodegroups"][0]) == {
        "uuid",
        "name",
        "flavor_id",
        "node_count",
        "role",
        "is_default",
        "image_id",
        "status",
        "stack_id",
    }
    nodes = magnum.nodes_of("k8s", "default-worker")
    assert [n.name for n in nodes] == [nodes[0].name[:-1] + "0", nodes[0].name[:-1] + "1"]
    assert re.match(r"^k8s-default-worker-[a-z0-9]{5}-node-0$", nodes[0].name)
    assert re.match(r"^k8s-default-master-[a-z0-9]{5}-master-0$", magnum.nodes_of("k8s", "default-master")[0].name)
    assert api.ng("default-worker").json()["node_addresses"] == [n.address for n in nodes]


def test_custom_seed_clusters(magnum_factory):
    emu = magnum_factory(
        clusters=[{"name": "a", "labels": {"x": "1"}, "node_count": 0}, {"name": "b", "api_address": None}]
    )
    api = Api(emu)
    assert [c["name"] for c in api("GET", "/clusters").json()["clusters"]] == ["a", "b"]
    assert api.cluster("a")["labels"] == {"x": "1"} and api.cluster("a")["node_count"] == 0
    resp = api("POST", "/clusters/b/nodegroups", {"name": "gpu"})
    assert resp.status_code == 409 and "api_address" in detail(resp)


def test_the_unmodified_sdk_reads_clusters(magnum):
    import openstack

    conn = openstack.connect(cloud=magnum.cloud_name)
    clusters = list(conn.container_infrastructure_management.clusters())
    assert [c.name for c in clusters] == ["k8s"]
    assert conn.get_coe_cluster("k8s").node_count == 2


# ------------------------------------------------------------------------------------------- create
def test_create_returns_202_with_the_body_then_runs_asynchronously(slow):
    magnum, api = slow
    events = []
    magnum.on_nodegroup_change(
        lambda c, ng, ev: events.append((ng["name"], ev.kind, ng["status"], [n.name for n in ev.added])), replay=False
    )
    resp = api("POST", "/clusters/k8s/nodegroups", {"name": "gpu", "node_count": 2, "flavor_id": "g1"})
    assert resp.status_code == 202
    body = resp.json()
    assert re.match(r"^[0-9a-f-]{36}$", body["uuid"]) and body["is_default"] is False
    assert body["status"] == "CREATE_IN_PROGRESS" and body["flavor_id"] == "g1"
    seen = api.wait_status("gpu", ["CREATE_COMPLETE"])
    assert seen[-2:] == ["CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
    ng = api.ng("gpu").json()
    assert len(ng["node_addresses"]) == 2 and ng["image_id"] == "fedora-coreos-40"
    assert events == [("gpu", "created", "CREATE_COMPLETE", [n.name for n in magnum.nodes_of("k8s", "gpu")])]
    assert api.cluster()["status"] == "UPDATE_COMPLETE" and api.cluster()["node_count"] == 4


def test_new_row_is_invisible_until_the_conductor_writes_it(magnum_factory):
    emu = magnum_factory(conductor_lag=2.0)
    api = Api(emu)
    assert api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"}).status_code == 202
    assert api.ng("gpu").status_code == 404
    assert api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"}).status_code == 409
    api.wait_status("gpu", ["CREATE_COMPLETE"])


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"name": "a"}, "cluster"),
        ({"name": "a", "labels": {"nvidia_gpu_enabled": "true"}}, "only"),
        ({"name": "a", "labels": {"nvidia_gpu_enabled": "true"}, "merge_labels": True}, "merged"),
    ],
)
def test_labels_vs_merge_labels(api, body, expected):
    cluster_labels = api.cluster()["labels"]
    ng = api("POST", "/clusters/k8s/nodegroups", body).json()
    want = {
        "cluster": cluster_labels,
        "only": {"nvidia_gpu_enabled": "true"},
        "merged": dict(cluster_labels, nvidia_gpu_enabled="true"),
    }[expected]
    assert ng["labels"] == want
    api.wait_status("a", ["CREATE_COMPLETE"])
    shown = api.ng("a").json()
    if expected == "only":
        assert shown["labels_skipped"] == {k: v for k, v in cluster_labels.items() if k != "nvidia_gpu_enabled"}
        assert shown["labels_overridden"] == {"nvidia_gpu_enabled": "false"}
    if expected == "merged":
        assert shown["labels_skipped"] == {} and shown["labels_overridden"] == {"nvidia_gpu_enabled": "false"}


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"name": "default-worker"}, 409, "already exists in the cluster k8s"),
        ({"name": "x", "node_count": 5, "max_node_count": 3}, 409, "node_count (5) should be less or equal to max"),
        ({"name": "x", "min_node_count": 3, "max_node_count": 2, "node_count": 2}, 409, "min_node_count (3)"),
        ({"name": "x", "role": "master"}, 400, "master nodegroups"),
        ({"name": "x", "node_count": -1}, 400, "node_count"),
        ({"name": "x", "bogus": 1}, 400, "Unknown attribute"),
        ({"name": "x", "node_labels": {"a": "b"}, "role": "master"}, 400, "master"),
        ({"name": "x", "node_labels": {"kubernetes.io/foo": "b"}}, 400, "restricted namespace"),
        ({"name": "x", "node_taints": [{"key": "a", "effect": "Never"}]}, 400, "effect"),
    ],
)
def test_create_rules(api, body, status, words):
    resp = api("POST", "/clusters/k8s/nodegroups", body)
    assert resp.status_code == status, resp.text
    assert words in detail(resp)
    err = resp.json()["errors"][0]
    assert set(err) >= {"request_id", "code", "status", "title", "detail", "links"} and err["status"] == status


def test_zero_nodes_need_1_10(api):
    resp = api("POST", "/clusters/k8s/nodegroups", {"name": "z", "node_count": 0}, version="1.9")
    assert resp.status_code == 400 and "zero" in detail(resp)
    assert api("POST", "/clusters/k8s/nodegroups", {"name": "z", "node_count": 0}, version="1.10").status_code == 202


def test_node_labels_need_1_14(magnum_factory):
    emu = magnum_factory()
    api = Api(emu)
    resp = api("POST", "/clusters/k8s/nodegroups", {"name": "x", "node_labels": {"a": "b"}}, version="1.12")
    assert resp.status_code == 406
    ok = api(
        "POST",
        "/clusters/k8s/nodegroups",
        {"name": "x", "node_labels": {"a": "b"}, "node_taints": [{"key": "gpu", "effect": "NoSchedule"}]},
    )
    assert ok.status_code == 202 and ok.json()["node_labels"] == {"a": "b"}
    assert "node_labels" not in api("GET", "/clusters/k8s/nodegroups/x", version="1.12").json()
    old = Api(magnum_factory(release="2025.2"), version="1.12")
    resp = old("POST", "/clusters/k8s/nodegroups", {"name": "x", "node_labels": {"a": "b"}})
    assert resp.status_code == 400 and "Unknown attribute" in detail(resp)


# ------------------------------------------------------------------------------------------- patch
@pytest.mark.parametrize(
    "ops, status, words",
    [
        ([{"op": "replace", "path": "/node_count", "value": 3}], 400, "internal attribute"),
        ([{"op": "replace", "path": "/labels", "value": "{'a': 'b'}"}], 400, "internal attribute"),
        ([{"op": "replace", "path": "/flavor_id", "value": "g2"}], 400, "internal attribute"),
        ([{"op": "move", "path": "/min_node_count", "value": 1}], 400, "op"),
        ([{"op": "replace", "path": "min_node_count", "value": 1}], 400, "path"),
        ([{"op": "replace", "path": "/max_node_count", "value": 1}], 409, "node_count (2) should be less or equal"),
        ([{"op": "replace", "path": "/min_node_count", "value": 3}], 409, "min_node_count (3)"),
        ([{"op": "replace", "path": "/node_labels", "value": {"a": "b"}}], 400, "Wrong type"),
    ],
)
def test_patch_rules(api, ops, status, words):
    resp = api("PATCH", "/clusters/k8s/nodegroups/default-worker", ops)
    assert resp.status_code == status, resp.text
    assert words in detail(resp)


def test_patch_min_max_and_node_labels(slow):
    magnum, api = slow
    resp = api(
        "PATCH",
        "/clusters/k8s/nodegroups/default-worker",
        [
            {"op": "replace", "path": "/max_node_count", "value": 5},
            {"op": "replace", "path": "/node_labels", "value": str({"workload": "gpu"})},
        ],
    )
    assert resp.status_code == 202 and resp.json()["max_node_count"] == 5
    seen = api.wait_status("default-worker", ["UPDATE_IN_PROGRESS"])
    seen += api.wait_status("default-worker", ["UPDATE_COMPLETE"])
    assert seen[-2:] == ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"]
    ng = api.ng("default-worker").json()
    assert ng["max_node_count"] == 5 and ng["node_labels"] == {"workload": "gpu"}
    resp = api(
        "PATCH",
        "/clusters/k8s/nodegroups/default-worker",
        [{"op": "replace", "path": "/node_labels", "value": "{}"}],
        version="1.13",
    )
    assert resp.status_code == 406


# ------------------------------------------------------------------------------------------- resize
def test_resize_bounds_and_microversions(api):
    api("PATCH", "/clusters/k8s/nodegroups/default-worker", [{"op": "replace", "path": "/max_node_count", "value": 3}])
    api.emu.settle()
    resp = api("POST", "/clusters/k8s/actions/resize", {"node_count": 4, "nodegroup": "default-worker"})
    assert resp.status_code == 400 and "outside the allowed range" in detail(resp)
    resp = api("POST", "/clusters/k8s/actions/resize", {"node_count": 0, "nodegroup": "default-worker"}, version="1.9")
    assert resp.status_code == 400 and "zero" in detail(resp)
    assert api("POST", "/clusters/k8s/actions/resize", {"node_count": 1}, version="1.6").status_code == 406
    resp = api("POST", "/clusters/k8s/actions/resize", {"node_count": 2, "nodegroup": "default-master"})
    assert resp.status_code == 400 and "master" in detail(resp)
    resp = api("POST", "/clusters/k8s/actions/resize", {"node_count": 3, "nodegroup": "default-worker"})
    assert resp.status_code == 202 and resp.json() == {"uuid": api.cluster()["uuid"]}
    assert api.ng("default-worker").json()["node_count"] == 2  # until the conductor picks it up
    api.emu.settle()
    ng = api.ng("default-worker").json()
    assert ng["node_count"] == 3 and ng["status"] == "UPDATE_COMPLETE" and len(ng["node_addresses"]) == 3


def test_resize_removes_the_named_servers_and_tells_the_hook(magnum, api):
    events = []
    magnum.on_nodegroup_change(lambda c, ng, ev: events.append(ev), replay=False)
    api("POST", "/clusters/k8s/actions/resize", {"node_count": 4})  # default worker without nodegroup
    magnum.settle()
    nodes = magnum.nodes_of("k8s", "default-worker")
    assert [n.name[-6:] for n in nodes] == ["node-0", "node-1", "node-2", "node-3"]
    assert events[-1].kind == "resized" and [n.name for n in events[-1].added] == [n.name for n in nodes[2:]]
    resp = api(
        "POST",
        "/clusters/k8s/actions/resize",
        {"node_count": 2, "nodegroup": "default-worker", "nodes_to_remove": [nodes[1].server_id, nodes[2].name]},
    )
    assert resp.status_code == 202
    magnum.settle()
    assert [n.name for n in magnum.nodes_of("k8s", "default-worker")] == [nodes[0].name, nodes[3].name]
    assert sorted(n.name for n in events[-1].removed) == sorted([nodes[1].name, nodes[2].name])
    bad = api(
        "POST",
        "/clusters/k8s/actions/resize",
        {"node_count": 1, "nodegroup": "default-worker", "nodes_to_remove": ["nope"]},
    )
    assert bad.status_code == 400


# ------------------------------------------------------------------------------------------- delete
def test_delete(slow):
    magnum, api = slow
    assert api("DELETE", "/clusters/k8s/nodegroups/default-worker").status_code == 400
    api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"})
    api.wait_status("gpu", ["CREATE_COMPLETE"])
    events = []
    magnum.on_nodegroup_change(lambda c, ng, ev: events.append((ev.kind, len(ev.removed))), replay=False)
    resp = api("DELETE", "/clusters/k8s/nodegroups/gpu")
    assert resp.status_code == 204 and resp.content == b""
    seen = api.wait_status("gpu", [404])
    assert seen[-2:] == ["DELETE_IN_PROGRESS", 404]
    assert events == [("deleted", 1)]
    assert api("DELETE", "/clusters/k8s/nodegroups/gpu").status_code == 404


# ------------------------------------------------------------------------------------------- faults
def test_injected_5xx_latency_and_request_log(magnum, api):
    magnum.set_faults(error_count=2, latency=0.1)
    start = time.monotonic()
    assert [api("GET", "/clusters").status_code for _ in range(3)] == [503, 503, 200]
    assert time.monotonic() - start >= 0.3
    assert api("GET", "/clusters").json()["clusters"]  # Keystone is not affected by default
    magnum.reset_faults()
    magnum.set_faults(error_rate=1.0, error_status=502, match=r"^POST ")
    assert api("GET", "/clusters").status_code == 200
    assert api("POST", "/clusters/k8s/nodegroups", {"name": "x"}).status_code == 502
    log = magnum.magnum_requests()
    assert log[-1]["method"] == "POST" and log[-1]["status"] == 502 and log[-1]["body"] == {"name": "x"}
    assert "X-Auth-Token" not in log[-1]["headers"]


def test_injected_failure_ends_in_failed_with_reason(magnum, api):
    magnum.fail_next("create", nodegroup="gpu", reason="Quota exceeded for instances")
    events = []
    magnum.on_nodegroup_change(lambda c, ng, ev: events.append((ev.kind, ng["status"], ev.status_reason)), replay=False)
    api("POST", "/clusters/k8s/nodegroups", {"name": "other"})
    api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"})
    api.wait_status("gpu", ["CREATE_FAILED"])
    api.wait_status("other", ["CREATE_COMPLETE"])
    ng = api.ng("gpu").json()
    assert ng["status_reason"] == "Quota exceeded for instances"
    magnum.settle()
    assert ("failed", "CREATE_FAILED", "Quota exceeded for instances") in events
    assert api.cluster()["status"] in ("UPDATE_FAILED", "UPDATE_COMPLETE")
    # a failed nodegroup refuses updates, and can be deleted
    resp = api("PATCH", "/clusters/k8s/nodegroups/gpu", [{"op": "replace", "path": "/max_node_count", "value": 4}])
    assert resp.status_code == 400 and "CREATE_FAILED" in detail(resp)
    assert api("DELETE", "/clusters/k8s/nodegroups/gpu").status_code == 204


def test_admin_endpoint_controls_faults(magnum, api):
    resp = requests.post(magnum.url + "/_emulator/faults", json={"error_count": 1}, timeout=10)
    assert resp.status_code == 200 and resp.json()["error_count"] == 1
    assert api("GET", "/clusters").status_code == 503
    assert api("GET", "/clusters").status_code == 200
    assert requests.post(magnum.url + "/_emulator/faults", json={"nope": 1}, timeout=10).status_code == 400
    resp = requests.post(
        magnum.url + "/_emulator/failures",
        timeout=10,
        json={"operation": "resize", "reason": "No valid host was found"},
    )
    assert resp.status_code == 200
    api("POST", "/clusters/k8s/actions/resize", {"node_count": 3})
    magnum.settle()
    assert api.ng("default-worker").json()["status_reason"] == "No valid host was found"
    assert requests.delete(magnum.url + "/_emulator/faults", timeout=10).status_code == 204
    state = requests.get(magnum.url + "/_emulator/state", timeout=10).json()
    assert state["max_version"] == "1.14" and state["clusters"][0]["nodegroups"][1]["nodes"]
    reqs = requests.get(magnum.url + "/_emulator/requests", timeout=10).json()["requests"]
    assert any(r["path"] == "/v1/clusters/k8s/actions/resize" for r in reqs)
    assert requests.post(magnum.url + "/_emulator/config", json={"delay": 0.1}, timeout=10).json()["delay"] == 0.1


# ------------------------------------------------------------------------------------------- hooks
def test_hooks_replay_existing_and_run_before_the_status_is_visible(magnum, api):
    existing = []
    magnum.on_nodegroup_change(lambda c, ng, ev: existing.append((ng["name"], ev.kind, len(ev.nodes))))
    assert sorted(existing) == [("default-master", "existing", 1), ("default-worker", "existing", 2)]
    seen_during_hook = []
    gate = threading.Event()

    def slow_hook(cluster, ng, event):
        if event.kind == "created":
            seen_during_hook.append(api.ng(ng["name"]).json()["status"])
            gate.set()

    magnum.on_nodegroup_change(slow_hook, replay=False)
    api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"})
    assert gate.wait(5)
    assert seen_during_hook == ["CREATE_IN_PROGRESS"]
    magnum.settle()
    node = magnum.nodes_of("k8s", "gpu")[0]
    assert node.labels == {"magnum.openstack.org/nodegroup": "gpu", "magnum.openstack.org/role": "worker"}
    assert node.provider_id == "openstack:///" + node.server_id


def test_a_broken_hook_does_not_stop_the_emulator(magnum, api):
    magnum.on_nodegroup_change(lambda c, ng, ev: 1 / 0, replay=False)
    api("POST", "/clusters/k8s/nodegroups", {"name": "gpu"})
    api.wait_status("gpu", ["CREATE_COMPLETE"])
    assert magnum.cloud.hook_errors and "ZeroDivisionError" in magnum.cloud.hook_errors[0]


# ------------------------------------------------------------------------------------------- CLI
def test_cli_serves_and_writes_clouds_yaml(tmp_path):
    clouds = tmp_path / "clouds.yaml"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testbed.magnum_emulator",
            "--port",
            "0",
            "--delay",
            "0.1",
            "--release",
            "2025.2",
            "--clouds-yaml",
            str(clouds),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline()
            match = re.search(r"Magnum emulator: (http://\S+)", line)
            url = match.group(1) if match else None
        assert url, "the CLI did not print its URL"
        config = json.loads(clouds.read_text())["clouds"]["magnum-emulator"]
        assert config["auth"]["auth_url"] == url + "/identity/v3"
        resp = requests.get(url + "/v1/", timeout=10)
        assert resp.headers["OpenStack-API-Maximum-Version"] == "container-infra 1.12"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
