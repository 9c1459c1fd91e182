"""Unit tests of gpupool.core.nodegroup and nodegroup_info with requests-mock.

Like openstacksdk's own unit tests: a fake Keystone v3 token with a service catalog, then the Magnum
URIs the module must call, in order, with the bodies and headers it must send. The real
openstacksdk/keystoneauth code runs; only the HTTP transport is mocked.
"""

from __future__ import annotations

import json

import pytest

requests_mock = pytest.importorskip("requests_mock")
pytest.importorskip("openstack")


from ansible_collections.gpupool.core.plugins.action import nodegroup, nodegroup_info  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import NotFound  # noqa: E402
from ansible_collections.gpupool.core.plugins.module_utils.openstack import connection as openstack_client
from ansible_collections.gpupool.core.plugins.module_utils.openstack import magnum as magnum_api
from tests.support.steps import run_action  # noqa: E402

AUTH_URL = "https://identity.example.com/v3"
MAGNUM = "https://magnum.example.com/v1"
CID = "0b7b2c9e-1f49-4bd1-8f5a-6b6c0e0f7a11"
# The nodegroup step addresses the Magnum cluster as the inventory (or its cluster option) names it; Magnum
# resolves a name or a uuid alike. nodegroup_info reads the cluster and uses its uuid.
C = "k8s"
NGID = "5d12f6fd-a0e8-4f5e-9b8c-3a9c3f6d2b1e"
CLOUD = {
    "auth": {
        "auth_url": AUTH_URL,
        "username": "demo",
        "password": "secret",
        "project_name": "gpu",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
    },
    "region_name": "RegionOne",
    "identity_api_version": 3,
}
CLUSTER = {
    "uuid": CID,
    "name": "k8s",
    "status": "CREATE_COMPLETE",
    "flavor_id": "m1",
    "labels": {"kube_tag": "v1.29", "cern_enabled": "true"},
}
WRITES = ("POST", "PATCH", "PUT", "DELETE")
LIST_FIELDS = ("uuid", "name", "flavor_id", "node_count", "role", "is_default", "image_id", "status", "stack_id")


def mv_headers(max_version="1.12", service="container-infra"):
    return {
        "OpenStack-API-Minimum-Version": "%s 1.1" % service,
        "OpenStack-API-Maximum-Version": "%s %s" % (service, max_version),
    }


def token_body():
    def endpoints(url):
        return [
            {"id": i, "interface": i, "region": "RegionOne", "region_id": "RegionOne", "url": url}
            for i in ("public", "internal", "admin")
        ]

    return {
        "token": {
            "methods": ["password"],
            "expires_at": "2099-01-01T00:00:00.000000Z",
            "issued_at": "2026-01-01T00:00:00Z",
            "user": {"id": "u1", "name": "demo", "domain": {"id": "default", "name": "Default"}},
            "project": {"id": "p1", "name": "gpu", "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": "r1", "name": "member"}],
            "audit_ids": ["a"],
            "catalog": [
                {"type": "identity", "name": "keystone", "id": "k", "endpoints": endpoints(AUTH_URL)},
                {"type": "container-infra", "name": "magnum", "id": "m", "endpoints": endpoints(MAGNUM)},
            ],
        }
    }


def ng(**kw):
    out = {
        "uuid": NGID,
        "name": "gpu",
        "cluster_id": CID,
        "role": "worker",
        "flavor_id": "g1",
        "image_id": "img",
        "node_count": 2,
        "min_node_count": 0,
        "max_node_count": None,
        "docker_volume_size": None,
        "is_default": False,
        "labels": {"kube_tag": "v1.29", "cern_enabled": "true", "nvidia_gpu_enabled": "true"},
        "status": "CREATE_COMPLETE",
        "status_reason": None,
        "node_addresses": [],
    }
    out.update(kw)
    return out


def errors(status, detail):
    return {
        "errors": [
            {
                "request_id": "",
                "code": "client",
                "status": status,
                "title": detail.split(".")[0],
                "detail": detail,
                "links": [],
            }
        ]
    }


@pytest.fixture
def sleeps(monkeypatch):
    """No real sleeping: record the delays instead."""
    slept = []
    monkeypatch.setattr(magnum_api, "_sleep", slept.append)
    return slept


@pytest.fixture
def api(sleeps):
    """requests-mock with Keystone and Magnum's microversion root registered."""
    with requests_mock.Mocker() as m:
        m.get(
            AUTH_URL,
            json={"version": {"id": "v3.14", "status": "stable", "links": [{"rel": "self", "href": AUTH_URL + "/"}]}},
        )
        m.post(AUTH_URL + "/auth/tokens", json=token_body(), headers={"X-Subject-Token": "tok"}, status_code=201)
        m.get(MAGNUM + "/", json={"id": "v1"}, headers=mv_headers())
        m.get(MAGNUM + "/clusters/k8s", json=CLUSTER, headers=mv_headers())
        listed(m)  # the cluster has no nodegroup of ours unless a test says so
        yield m


def listed(m, *nodegroups, cluster=C):
    """The cluster's nodegroup list (Magnum's abbreviated list view) shows these; like every Magnum response it
    carries the server's microversion range."""
    m.get(
        MAGNUM + "/clusters/%s/nodegroups" % cluster,
        json={"nodegroups": [{k: n.get(k) for k in LIST_FIELDS} for n in nodegroups], "next": None},
        headers=mv_headers(),
    )


def existing(m, *nodegroups):
    """These nodegroups exist: in the list, and each in full under its name."""
    listed(m, *nodegroups)
    for n in nodegroups:
        m.get(ng_url(n["name"]), json=n)


def lists(m):
    return [r for r in magnum_calls(m) if r.method == "GET" and r.path == "/v1/clusters/%s/nodegroups" % C]


def magnum_calls(m):
    return [r for r in m.request_history if r.url.startswith(MAGNUM)]


def writes(m):
    return [(r.method, r.path) for r in magnum_calls(m) if r.method in WRITES]


def run(module, check=False, diff=False, **args):
    """Run the step in-process as its action plugin does; return its result."""
    args = dict({"cloud": CLOUD}, **args)
    return run_action(module, _ansible_check_mode=check, _ansible_diff=diff, **args)


def ng_url(ident=NGID, cluster=C):
    return "%s/clusters/%s/nodegroups/%s" % (MAGNUM, cluster, ident)


# ------------------------------------------------------------------------------------------- create
def test_create_waits_for_complete_and_sends_the_container_infra_header(api, sleeps):
    api.get(
        ng_url("gpu"),
        [
            {"status_code": 404, "json": errors(404, "Nodegroup gpu could not be found.")},
            {"status_code": 404, "json": errors(404, "Nodegroup gpu could not be found.")},
        ],
    )
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=ng(status="CREATE_IN_PROGRESS"))
    api.get(ng_url(), [{"json": ng(status="CREATE_IN_PROGRESS")}, {"json": ng()}])
    result = run(nodegroup, cluster="k8s", name="gpu", flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": True})
    assert result["changed"] is True, result
    assert result["nodegroup"]["status"] == "CREATE_COMPLETE"
    assert result["microversion"] == "1.12"
    post = [r for r in magnum_calls(api) if r.method == "POST"][0]
    assert post.json() == {
        "name": "gpu",
        "flavor_id": "g1",
        "node_count": 2,
        "labels": {"nvidia_gpu_enabled": "true"},
        "merge_labels": True,
    }
    first, later = magnum_calls(api)[0], magnum_calls(api)[1:]
    assert (
        first.path == "/v1/clusters/k8s/nodegroups" and first.headers["OpenStack-API-Version"] == "container-infra 1.9"
    )
    assert "/v1/clusters/k8s" in [r.path for r in later], "a create reads the cluster (its flavor, image, labels)"
    for r in later:
        assert r.headers["OpenStack-API-Version"] == "container-infra 1.12", (r.method, r.url)
    assert sleeps, "the waiter polls with sleeps in between"
    assert any("CREATE_COMPLETE" in line for line in result["progress"])


def test_second_run_with_the_same_settings_changes_nothing(api):
    existing(api, ng())
    result = run(nodegroup, cluster="k8s", name="gpu", flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": True})
    assert result["changed"] is False and result["actions"] == []
    assert writes(api) == []


def test_microversion_follows_the_server_maximum(api):
    api.get(MAGNUM + "/", json={"id": "v1"}, headers=mv_headers("1.14", "container-infrastructure-management"))
    api.get(ng_url("gpu", CID), json=ng(node_labels={}, node_taints=[]))
    result = run(nodegroup_info, cluster="k8s", name="gpu")
    assert result["microversion"] == "1.14"
    assert magnum_calls(api)[-1].headers["OpenStack-API-Version"] == "container-infra 1.14"


def test_a_no_op_reads_the_list_and_the_nodegroup_only(api):
    """No version document and no cluster read: the list's headers give the microversion (the list is sent at
    1.9, what the nodegroup API needs anyway), the nodegroup's full view the values to compare."""
    existing(api, ng())
    result = run(nodegroup, cluster="k8s", name="gpu", flavor="g1", node_count=2, labels={"nvidia_gpu_enabled": True})
    assert result["changed"] is False and result["microversion"] == "1.12"
    calls = [(r.method, r.path, r.headers["OpenStack-API-Version"]) for r in magnum_calls(api)]
    assert calls == [
        ("GET", "/v1/clusters/k8s/nodegroups", "container-infra 1.9"),
        ("GET", "/v1/clusters/k8s/nodegroups/gpu", "container-infra 1.12"),
    ]


def test_server_without_nodegroup_api_is_reported(api):
    api.get(
        MAGNUM + "/clusters/k8s/nodegroups",
        status_code=406,
        json=errors(406, "Version 1.9 was requested but the minor version is not supported by this service."),
        headers=mv_headers("1.8"),
    )
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "nodegroups need 1.9" in result["msg"], result["msg"]


def test_no_maximum_header_is_reported(api):
    api.get(MAGNUM + "/clusters/k8s/nodegroups", json={"nodegroups": [], "next": None})
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "OpenStack-API-Maximum-Version" in result["msg"]


def test_503_is_retried_with_backoff(api, sleeps):
    existing(api, ng())
    api.get(
        MAGNUM + "/clusters/k8s/nodegroups",
        [
            {"status_code": 503, "text": "busy"},
            {"status_code": 503, "text": "busy"},
            {"json": {"nodegroups": [{k: ng().get(k) for k in LIST_FIELDS}], "next": None}, "headers": mv_headers()},
        ],
    )
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["changed"] is False and "failed" not in result
    assert sleeps[:2] == [0.5, 1.0]
    assert sum("HTTP 503, retry" in line for line in result["progress"]) == 2


def test_503_on_create_is_retried_and_a_409_then_means_it_was_ours(api):
    # not in the list when planned; there once the 409 makes the module look again
    api.get(ng_url("gpu"), json=ng())
    api.post(
        MAGNUM + "/clusters/%s/nodegroups" % C,
        [
            {"status_code": 503, "text": "busy"},
            {"status_code": 409, "json": errors(409, "A node group with name gpu already exists in the cluster k8s.")},
        ],
    )
    api.get(ng_url(), json=ng())
    result = run(nodegroup, cluster="k8s", name="gpu", flavor="g1")
    assert result["changed"] is True and "failed" not in result, result
    assert [method for method, dummy in writes(api)] == ["POST", "POST"]


def test_500_on_a_write_is_not_retried(api):
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=500, json=errors(500, "Internal error."))
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "HTTP 500" in result["msg"] and "Internal error." in result["msg"]
    assert len(writes(api)) == 1
    assert result["changed"] is False


def test_retries_give_up_with_the_last_error(api):
    api.get(MAGNUM + "/clusters/k8s/nodegroups", status_code=503, json=errors(503, "Service Unavailable."))
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "HTTP 503" in result["msg"] and "after 6 attempts" in result["msg"]


def test_create_failed_is_reported_with_status_reason(api):
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=ng(status="CREATE_IN_PROGRESS"))
    api.get(
        ng_url(),
        [
            {"json": ng(status="CREATE_IN_PROGRESS")},
            {"json": ng(status="CREATE_FAILED", status_reason="Quota exceeded for instances")},
        ],
    )
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and result["changed"] is True
    assert "CREATE_FAILED: Quota exceeded for instances" in result["msg"]
    assert "state=absent" in result["msg"]
    assert result["status"] == "CREATE_FAILED" and result["status_reason"] == "Quota exceeded for instances"


def test_timeout_reports_the_last_status(api, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(magnum_api, "_clock", lambda: now[0])
    monkeypatch.setattr(magnum_api, "_sleep", lambda s: now.__setitem__(0, now[0] + s))
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=ng(status="CREATE_IN_PROGRESS"))
    api.get(ng_url(), json=ng(status="CREATE_IN_PROGRESS"))
    result = run(nodegroup, cluster="k8s", name="gpu", wait_timeout=30)
    assert result["failed"]
    assert "Timed out after 30s" in result["msg"] and "last status was CREATE_IN_PROGRESS" in result["msg"]
    assert result["status"] == "CREATE_IN_PROGRESS"
    assert 29.9 <= now[0] <= 30.1


def test_wait_false_returns_after_the_request(api, sleeps):
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=ng(status="CREATE_IN_PROGRESS"))
    result = run(nodegroup, cluster="k8s", name="gpu", wait=False)
    assert result["changed"] and result["nodegroup"]["status"] == "CREATE_IN_PROGRESS"
    assert sleeps == []


def test_duplicate_name_409_is_reported(api):
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    api.post(
        MAGNUM + "/clusters/%s/nodegroups" % C,
        status_code=409,
        json=errors(409, "A node group with name gpu already exists in the cluster k8s."),
    )
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"]
    assert "HTTP 409: A node group with name gpu already exists in the cluster k8s." in result["msg"]


def test_cluster_not_found(api):
    """The step's first request is the list: Magnum answers 404 when the cluster is not there (nodegroup_info's
    first one is the cluster itself)."""
    for path in ("/clusters/nope/nodegroups", "/clusters/nope"):
        api.get(
            MAGNUM + path, status_code=404, json=errors(404, "Cluster nope could not be found."), headers=mv_headers()
        )
    for step in (nodegroup, nodegroup_info):
        result = run(step, cluster="nope", name="gpu")
        assert result["failed"] and "Cluster 'nope' not found" in result["msg"] and "coe cluster list" in result["msg"]
    assert [r.path for r in magnum_calls(api)] == ["/v1/clusters/nope/nodegroups", "/v1/", "/v1/clusters/nope"]


# ------------------------------------------------------------------------------------------- update
def test_resize_up_goes_through_the_resize_action(api):
    existing(api, ng())
    api.post(MAGNUM + "/clusters/%s/actions/resize" % C, status_code=202, json={"uuid": CID})
    api.get(
        ng_url(),
        [
            {"json": ng()},
            {"json": ng(status="UPDATE_IN_PROGRESS", node_count=4)},
            {"json": ng(status="UPDATE_COMPLETE", node_count=4)},
        ],
    )
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=4, diff=True)
    assert result["changed"] and result["nodegroup"]["node_count"] == 4
    (resize,) = [r for r in magnum_calls(api) if r.method == "POST"]
    assert resize.json() == {"node_count": 4, "nodegroup": NGID}
    assert resize.headers["OpenStack-API-Version"] == "container-infra 1.12"
    assert result["diff"]["before"]["node_count"] == 2 and result["diff"]["after"]["node_count"] == 4


def test_out_of_bounds_resize_from_the_server_is_reported(api):
    existing(api, ng())
    api.post(
        MAGNUM + "/clusters/%s/actions/resize" % C,
        status_code=400,
        json=errors(400, "Resizing gpu outside the allowed range: min_node_count = 0, max_node_count = 3"),
    )
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=4)
    assert result["failed"] and "outside the allowed range" in result["msg"] and "HTTP 400" in result["msg"]


def test_out_of_bounds_resize_is_refused_before_any_request(api):
    existing(api, ng(max_node_count=3))
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=5)
    assert (
        result["failed"]
        and "node_count 5 is outside" in result["msg"]
        and "max_node_count 3 (current)" in result["msg"]
    )
    assert writes(api) == []


def test_min_max_go_through_json_patch(api):
    existing(api, ng())
    api.patch(ng_url(), status_code=202, json=ng(min_node_count=1, max_node_count=5))
    api.get(
        ng_url(),
        [
            {"json": ng(status="UPDATE_IN_PROGRESS", min_node_count=1, max_node_count=5)},
            {"json": ng(status="UPDATE_COMPLETE", min_node_count=1, max_node_count=5)},
        ],
    )
    result = run(nodegroup, cluster="k8s", name="gpu", min_node_count=1, max_node_count=5)
    assert result["changed"]
    (patch,) = [r for r in magnum_calls(api) if r.method == "PATCH"]
    assert patch.json() == [
        {"op": "replace", "path": "/min_node_count", "value": 1},
        {"op": "replace", "path": "/max_node_count", "value": 5},
    ]


@pytest.mark.parametrize(
    "args, words",
    [
        ({"flavor": "g2"}, "flavor is 'g1', the task asks for 'g2'"),
        ({"labels": {"nvidia_gpu_enabled": False}}, "labels nvidia_gpu_enabled"),
        ({"docker_volume_size": 80}, "docker_volume_size"),
        ({"role": "infra"}, "role is 'worker'"),
    ],
)
def test_immutable_change_is_refused_with_a_clear_message(api, args, words):
    existing(api, ng())
    result = run(nodegroup, cluster="k8s", name="gpu", **args)
    msg = " ".join(result["msg"].split())  # failures are wrapped at 200 characters a line
    assert result["failed"] and words in msg
    assert "Magnum cannot change the flavor, image, labels, docker volume size or role" in msg
    assert all(len(line) <= 200 for line in result["msg"].splitlines())
    assert writes(api) == []


def test_node_labels_on_an_old_server_are_refused(api):
    existing(api, ng())
    result = run(nodegroup, cluster="k8s", name="gpu", node_labels={"pool": "a100"})
    assert result["failed"] and "microversion 1.14" in result["msg"] and "only supports 1.12" in result["msg"]


# ------------------------------------------------------------------------------------------- check mode
@pytest.mark.parametrize(
    "args, observed",
    [
        ({"node_count": 3}, None),
        ({"node_count": 4}, ng()),
        ({"min_node_count": 1}, ng()),
        ({"state": "absent"}, ng()),
    ],
)
def test_check_mode_reports_the_plan_and_writes_nothing(api, args, observed):
    if observed is None:
        api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    else:
        existing(api, observed)
    result = run(nodegroup, check=True, diff=True, cluster="k8s", name="gpu", **args)
    assert result["changed"] is True and result["actions"]
    assert "diff" in result
    assert writes(api) == []


# ------------------------------------------------------------------------------------------- delete
def test_delete_waits_for_404(api):
    existing(api, ng())
    api.delete(ng_url(), status_code=204)
    api.get(
        ng_url(),
        [
            {"json": ng(status="DELETE_IN_PROGRESS")},
            {"status_code": 404, "json": errors(404, "Nodegroup could not be found.")},
        ],
    )
    result = run(nodegroup, cluster="k8s", name="gpu", state="absent")
    assert result["changed"] and result["nodegroup"] == {}
    assert writes(api) == [("DELETE", "/v1/clusters/%s/nodegroups/%s" % (C, NGID))]


def test_delete_of_missing_nodegroup_changes_nothing(api):
    api.get(ng_url("gpu"), status_code=404, json=errors(404, "not found"))
    result = run(nodegroup, cluster="k8s", name="gpu", state="absent")
    assert result["changed"] is False and writes(api) == []


def test_default_nodegroup_is_not_deleted(api):
    existing(api, ng(name="default-worker", is_default=True))
    result = run(nodegroup, cluster="k8s", name="default-worker", state="absent")
    assert result["failed"] and "default nodegroup" in result["msg"]
    assert writes(api) == []


# ------------------------------------------------------------------------------------------- drain
def k8s_error(status, message):
    from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError

    return {404: NotFound, 409: Conflict}.get(status, K8sError)(message, status=status)


def k8s_node(i, cordoned=False):
    return {
        "metadata": {"name": "k8s-gpu-abc-node-%d" % i, "labels": {"magnum.openstack.org/nodegroup": "gpu"}},
        "spec": dict({"providerID": "openstack:///srv-%d" % i}, **({"unschedulable": True} if cordoned else {})),
    }


def k8s_pod(name, node_index, gpu=True):
    limits = {"nvidia.com/gpu": "1"} if gpu else {"cpu": "1"}
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": "uid-" + name},
        "spec": {"nodeName": "k8s-gpu-abc-node-%d" % node_index, "containers": [{"resources": {"limits": limits}}]},
    }


@pytest.fixture
def kube(monkeypatch):
    """The drain's Kubernetes API: the simulator; records the connection options the module passed."""
    from tests.unit.plugins.module_utils.k8s.kube_api_simulator import KubeApiSimulator

    sim = KubeApiSimulator(
        k8s_error,
        nodes=[k8s_node(i) for i in range(3)],
        pods=[k8s_pod("job-1", 1), k8s_pod("web-0", 0, gpu=False), k8s_pod("job-2b", 2, gpu=False)],
    )
    sim.connections = []

    def connect(params, cluster=None):
        sim.connections.append(({k: params.get(k) for k in ("kubeconfig", "context")}, cluster))
        return sim

    monkeypatch.setattr(nodegroup, "k8s_connect", connect)
    return sim


def test_shrink_with_drain_cordons_evicts_then_names_the_servers(api, kube):
    order = []
    real_request = kube.request

    def request(method, path, **kw):
        if method != "GET":
            order.append((method, path.rsplit("/", 1)[-1]))
        return real_request(method, path, **kw)

    kube.request = request
    existing(api, ng(node_count=3))
    api.post(MAGNUM + "/clusters/%s/actions/resize" % C, status_code=202, json={"uuid": CID})
    api.get(ng_url(), json=ng(status="UPDATE_COMPLETE", node_count=1))
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=1, drain=True, kubeconfig="/dev/null")
    assert result["changed"], result
    # node-1 has the GPU pod, so node-2 (newest) and node-0 go; both cordoned, nothing of theirs uses GPUs
    assert order == [("PATCH", "k8s-gpu-abc-node-2"), ("PATCH", "k8s-gpu-abc-node-0")]
    assert kube.nodes["k8s-gpu-abc-node-2"]["spec"]["unschedulable"] is True
    assert kube.connections == [({"kubeconfig": "/dev/null", "context": None}, None)]
    (resize_req,) = [r for r in magnum_calls(api) if r.method == "POST"]
    assert resize_req.json() == {"node_count": 1, "nodegroup": NGID, "nodes_to_remove": ["srv-2", "srv-0"]}
    assert result["drain"]["victims"] == ["k8s-gpu-abc-node-2", "k8s-gpu-abc-node-0"]
    assert result["drain"]["evicted"] == []
    assert result["actions"][0]["request"]["nodes_to_remove"] == ["srv-2", "srv-0"]


def test_shrink_evicts_the_gpu_pods_of_the_chosen_nodes_before_the_resize(api, kube):
    kube.pods[("ml", "job-0")] = k8s_pod("job-0", 0)
    kube.pods[("ml", "job-2")] = k8s_pod("job-2", 2)
    kube.pods[("ml", "job-2c")] = k8s_pod("job-2c", 2)
    existing(api, ng(node_count=3))
    api.post(MAGNUM + "/clusters/%s/actions/resize" % C, status_code=202, json={"uuid": CID})
    api.get(ng_url(), json=ng(status="UPDATE_COMPLETE", node_count=2))
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=2, drain=True)
    # node-0 and node-1 have one GPU pod each, fewer than node-2's two; of those the newest goes
    assert result["drain"]["victims"] == ["k8s-gpu-abc-node-1"]
    assert result["drain"]["evicted"] == ["ml/job-1"]
    assert ("ml", "job-1") not in kube.pods and ("ml", "job-0") in kube.pods and ("ml", "job-2") in kube.pods
    assert result["actions"][0]["request"]["nodes_to_remove"] == ["srv-1"]


def test_check_mode_plans_the_drain_without_writing(api, kube):
    existing(api, ng(node_count=3))
    result = run(nodegroup, check=True, cluster="k8s", name="gpu", node_count=2, drain=True)
    assert result["changed"] and result["drain"]["victims"] == ["k8s-gpu-abc-node-2"]
    assert kube.writes() == [] and writes(api) == []


def test_drain_without_a_shrink_never_connects_to_kubernetes(api, kube):
    existing(api, ng())
    assert run(nodegroup, cluster="k8s", name="gpu", node_count=2, min_node_count=0, drain=True)["changed"] is False
    assert kube.connections == [] and kube.requests == []


def test_drain_cannot_choose_when_nodes_are_missing_and_nothing_is_resized(api, kube):
    existing(api, ng(node_count=5))
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=1, drain=True)
    assert result["failed"] and "only 3 of its nodes are registered" in result["msg"]
    assert writes(api) == [] and kube.writes() == []


def test_drain_options_are_checked_before_any_request(api):
    result = run(nodegroup, cluster="k8s", name="gpu", drain=True, drain_timeout=0)
    assert result["failed"] and "drain_timeout: must be at least 1, got 0" in result["msg"]
    assert magnum_calls(api) == []


# ------------------------------------------------------------------------------------------- connection
def test_cloud_dict_and_auth_options_are_not_mixed(api):
    result = run(nodegroup, cluster="k8s", name="gpu", region_name="RegionTwo")
    assert result["failed"] and "region_name must be left out" in result["msg"]


def test_unknown_cloud_name_is_reported(api, tmp_path, monkeypatch):
    empty = tmp_path / "clouds.yaml"
    empty.write_text("clouds: {}\n")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(empty))
    result = run(nodegroup, cloud="nope", cluster="k8s", name="gpu")
    assert result["failed"] and "for cloud 'nope'" in result["msg"] and "clouds.yaml" in result["msg"]


def test_missing_openstacksdk_is_reported(api, monkeypatch):
    monkeypatch.setattr(openstack_client, "HAS_OPENSTACKSDK", False)
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "openstacksdk" in result["msg"]


def test_bad_password_is_reported(api):
    api.post(
        AUTH_URL + "/auth/tokens",
        status_code=401,
        json={
            "error": {
                "code": 401,
                "title": "Unauthorized",
                "message": "The request you have made requires authentication.",
            }
        },
    )
    result = run(nodegroup, cluster="k8s", name="gpu")
    assert result["failed"] and "Authentication failed" in result["msg"]


def test_password_is_not_logged(api):
    existing(api, ng())
    result = run(nodegroup, cluster="k8s", name="gpu", auth_type=None)
    assert "secret" not in json.dumps(result["invocation"])


# ------------------------------------------------------------------------------------------- info
def test_info_lists_every_page(api):
    first = [ng(uuid="a", name="default-master", role="master"), ng(uuid="b", name="default-worker")]
    api.get(
        MAGNUM + "/clusters/%s/nodegroups" % CID,
        [
            {"json": {"nodegroups": first, "next": MAGNUM + "/clusters/%s/nodegroups?limit=2&marker=b" % CID}},
            {"json": {"nodegroups": [ng(uuid="c", name="gpu")], "next": None}},
        ],
    )
    result = run(nodegroup_info, cluster="k8s")
    assert [n["name"] for n in result["nodegroups"]] == ["default-master", "default-worker", "gpu"]
    assert result["changed"] is False and result["cluster"]["name"] == "k8s"


def test_info_detail_and_role(api):
    api.get(MAGNUM + "/clusters/%s/nodegroups" % CID, json={"nodegroups": [{"uuid": "b", "name": "w"}], "next": None})
    api.get(ng_url("b", CID), json=ng(uuid="b", name="w", labels={"x": "1"}))
    result = run(nodegroup_info, cluster="k8s", role="worker", detail=True)
    assert result["nodegroups"][0]["labels"] == {"x": "1"}
    assert "role=worker" in [r for r in magnum_calls(api) if r.path.endswith("/nodegroups")][0].url


def test_info_missing_name_is_an_empty_list(api):
    api.get(ng_url("nope", CID), status_code=404, json=errors(404, "not found"))
    assert run(nodegroup_info, cluster="k8s", name="nope")["nodegroups"] == []


def test_406_explains_the_microversion(api):
    api.get(
        ng_url("gpu", CID), status_code=406, json=errors(406, "Invalid service type for OpenStack-API-Version header")
    )
    result = run(nodegroup_info, cluster="k8s", name="gpu")
    assert result["failed"] and "HTTP 406" in result["msg"] and "microversion 1.12 was sent" in result["msg"]


# ------------------------------------------------------------------------------------------- cluster + pools
def inventory(*pools, labels=None, cloud=None):
    """A gpupool_cluster inventory whose Magnum section names the mocked cloud and cluster."""
    return {
        "name": "k8s-gpu",
        "magnum": {"cloud": cloud or CLOUD, "cluster": "k8s", "labels": labels or {}},
        "pools": list(pools),
    }


def pool(name, state="present", **group):
    return {"name": name, "state": state, "gpu": {"model": "A100-40GB"}, "nodegroup": dict({"flavor": "g1"}, **group)}


def run_pools(cluster, check=False, diff=False, **args):
    """The step with the inventory as cluster (the cloud comes from it, not from the cloud option)."""
    return run_action(nodegroup, _ansible_check_mode=check, _ansible_diff=diff, cluster=cluster, **args)


A = "5d12f6fd-0000-4f5e-9b8c-00000000000a"
B = "5d12f6fd-0000-4f5e-9b8c-00000000000b"


OWNER = "gpupool.io/owner"


def mine(**kw):
    """A nodegroup the inventory k8s-gpu created: its owner in its Magnum labels."""
    out = ng(**kw)
    out["labels"] = dict(out["labels"] or {}, **{OWNER: "k8s-gpu"})
    return out


def test_one_call_converges_every_pool_with_one_list(api):
    # gpu-a exists and matches (model defaults: node_count 1, min 0, role worker), gpu-b is missing
    existing(api, mine(uuid=A, name="gpu-a", node_count=1, labels={"kube_tag": "v1.29", "cern_enabled": "true"}))
    api.post(
        MAGNUM + "/clusters/%s/nodegroups" % C,
        status_code=202,
        json=mine(uuid=B, name="gpu-b", status="CREATE_IN_PROGRESS"),
    )
    api.get(ng_url(B), json=mine(uuid=B, name="gpu-b", node_count=1))
    result = run_pools(inventory(pool("gpu-a"), pool("gpu-b")))
    assert result["changed"] is True and "failed" not in result, result
    assert result["pools"]["gpu-a"]["changed"] is False and result["pools"]["gpu-a"]["actions"] == []
    assert [a["action"] for a in result["pools"]["gpu-b"]["actions"]] == ["create"]
    assert result["pools"]["gpu-b"]["nodegroup"]["status"] == "CREATE_COMPLETE"
    assert len(lists(api)) == 1
    # only the existing nodegroup is read in full; the missing one is known missing from the list
    assert [
        r.path.rsplit("/", 1)[-1]
        for r in magnum_calls(api)
        if r.method == "GET" and "/nodegroups/" in r.path and not r.path.endswith(B)
    ] == ["gpu-a"]
    (post,) = [r for r in magnum_calls(api) if r.method == "POST"]
    assert post.json() == {
        "name": "gpu-b",
        "flavor_id": "g1",
        "node_count": 1,
        "min_node_count": 0,
        "role": "worker",
        # the owner, in the one field Magnum keeps and no PATCH changes; merged, so the cluster's labels stay
        "labels": {OWNER: "k8s-gpu"},
        "merge_labels": True,
    }
    assert result["orphaned"] == []


def test_pool_inventory_with_nothing_to_do_writes_nothing(api):
    existing(
        api,
        mine(
            uuid=A,
            name="gpu-a",
            node_count=2,
            max_node_count=4,
            labels={"kube_tag": "v1.29", "cern_enabled": "true", "nvidia_gpu_enabled": "true"},
        ),
    )
    result = run_pools(inventory(pool("gpu-a", node_count=2, max_node_count=4), labels={"nvidia_gpu_enabled": True}))
    assert result["changed"] is False and result["pools"]["gpu-a"]["actions"] == []
    assert writes(api) == []


def test_a_failing_pool_does_not_hide_or_block_the_others(api):
    existing(api, mine(uuid=A, name="gpu-a", flavor_id="g1"), mine(uuid=B, name="gpu-b", node_count=1))
    api.post(MAGNUM + "/clusters/%s/actions/resize" % C, status_code=202, json={"uuid": CID})
    api.get(ng_url(B), json=mine(uuid=B, name="gpu-b", node_count=3, status="UPDATE_COMPLETE"))
    result = run_pools(inventory(pool("gpu-a", flavor="g2", node_count=2), pool("gpu-b", node_count=3)))
    assert result["failed"] is True and result["changed"] is True
    assert result["pools"]["gpu-a"]["failed"] is True
    assert "flavor is 'g1', the task asks for 'g2'" in result["pools"]["gpu-a"]["msg"]
    assert result["pools"]["gpu-b"]["changed"] is True and "failed" not in result["pools"]["gpu-b"]
    assert result["pools"]["gpu-b"]["nodegroup"]["node_count"] == 3
    assert result["msg"].startswith("The nodegroups of 1 pool(s) failed (gpu-a); 1 other pool(s) were converged")
    assert writes(api) == [("POST", "/v1/clusters/%s/actions/resize" % C)]


def test_a_cluster_wide_label_change_is_drift_not_a_failure(api):
    existing(
        api,
        mine(uuid=A, name="gpu-a", node_count=1, labels={"kube_tag": "v1.29", "nvidia_gpu_enabled": "true"}),
        mine(uuid=B, name="gpu-b", node_count=1, labels={"kube_tag": "v1.29", "nvidia_gpu_enabled": "true"}),
    )
    labels = {"kube_tag": "v1.30", "nvidia_gpu_enabled": True}
    result = run_pools(inventory(pool("gpu-a"), pool("gpu-b"), labels=labels))
    assert "failed" not in result and result["changed"] is False, result
    for name in ("gpu-a", "gpu-b"):
        assert result["pools"][name]["label_drift"] == {"kube_tag": {"nodegroup": "v1.29", "inventory": "v1.30"}}
    assert writes(api) == []


def test_a_pools_own_label_change_still_fails_that_pool(api):
    existing(api, mine(uuid=A, name="gpu-a", node_count=1, labels={"nvidia_gpu_enabled": "true"}))
    result = run_pools(inventory(pool("gpu-a", labels={"nvidia_gpu_enabled": False})))
    assert result["failed"] and "labels nvidia_gpu_enabled differ" in result["pools"]["gpu-a"]["msg"]


def test_new_nodegroup_gets_the_cluster_labels_under_the_pools(api):
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=mine(uuid=A, name="gpu-a"))
    api.get(ng_url(A), json=mine(uuid=A, name="gpu-a", node_count=1))
    run_pools(inventory(pool("gpu-a", labels={"a": "pool"}), labels={"a": "cluster", "b": "cluster"}))
    (post,) = [r for r in magnum_calls(api) if r.method == "POST"]
    assert post.json()["labels"] == {"a": "pool", "b": "cluster", OWNER: "k8s-gpu"}
    assert post.json()["merge_labels"] is True


def test_absent_pool_deletes_its_nodegroup_and_orphans_are_reported(api, kube):
    existing(
        api,
        mine(uuid=A, name="gpu-a"),
        mine(uuid=B, name="gpu-old"),
        mine(uuid="dw", name="default-worker", is_default=True),
    )
    api.delete(ng_url(A), status_code=204)
    api.get(ng_url(A), status_code=404, json=errors(404, "Nodegroup could not be found."))
    result = run_pools(dict(inventory(pool("gpu-a", state="absent")), allow_empty=True))
    assert result["pools"]["gpu-a"]["changed"] and result["pools"]["gpu-a"]["nodegroup"] == {}
    assert result["orphaned"] == ["gpu-old"] and result["pruned"] == {}
    assert writes(api) == [("DELETE", "/v1/clusters/%s/nodegroups/%s" % (C, A))]
    # the inventory's drain policy (on by default) looked for the nodes to drain first: gpu-a had none
    assert result["pools"]["gpu-a"]["drain"]["victims"] == [] and kube.writes() == []


def test_pools_selects_and_leaves_orphans_unreported(api):
    existing(api, mine(uuid=A, name="gpu-a", node_count=1), mine(uuid=B, name="gpu-b", node_count=1))
    result = run_pools(inventory(pool("gpu-a"), pool("gpu-b", flavor="g9")), pools=["gpu-a"])
    assert list(result["pools"]) == ["gpu-a"] and "orphaned" not in result and "failed" not in result


def test_check_mode_and_diff_over_pools_write_nothing(api):
    existing(api, mine(uuid=A, name="gpu-a", node_count=1))
    result = run_pools(inventory(pool("gpu-a", node_count=3), pool("gpu-b")), check=True, diff=True)
    assert result["changed"] is True and writes(api) == []
    assert [d["before_header"] for d in result["diff"]] == [
        "nodegroup 'gpu-a' of cluster 'k8s'",
        "nodegroup 'gpu-b' of cluster 'k8s'",
    ]
    assert result["diff"][0]["after"]["node_count"] == 3 and result["diff"][1]["before"] == {}
    assert result["pools"]["gpu-a"]["nodegroup"]["node_count"] == 3


def test_pool_without_nodegroup_is_skipped(api):
    selector_pool = {"name": "gpu-metal", "gpu": {"model": "A100-40GB"}, "node_selector": {"rack": "r1"}}
    result = run_pools(inventory(selector_pool))
    assert result["pools"] == {"gpu-metal": {"skipped": "no nodegroup: its nodes are found by node_selector"}}
    assert result["changed"] is False


def test_bad_inventory_fails_before_any_request_with_the_path(api):
    result = run_pools(inventory(pool("gpu-a", node_count=5, max_node_count=2)))
    assert result["failed"] and "gpupool_cluster.pools[0]" in result["msg"] and "max_node_count" in result["msg"]
    assert magnum_calls(api) == []


def test_unknown_pool_name_fails_before_any_request(api):
    result = run_pools(inventory(pool("gpu-a")), pools=["gpu-x"])
    assert result["failed"] and "'gpu-x' not in" in result["msg"]
    assert magnum_calls(api) == []


def test_flat_options_next_to_an_inventory_are_refused(api):
    result = run_pools(inventory(pool("gpu-a")), node_count=3, name="gpu-a")
    assert result["failed"] and "node_count: is for standalone use" in result["msg"]
    assert "name: is for standalone use" in result["msg"]
    assert magnum_calls(api) == []


def test_standalone_needs_a_name(api):
    result = run(nodegroup, cluster="k8s")
    assert result["failed"] and "name: is required when cluster is a Magnum cluster name" in result["msg"]


def test_the_inventory_clouds_password_is_not_logged(api):
    existing(api, mine(uuid=A, name="gpu-a", node_count=1))
    result = run_pools(inventory(pool("gpu-a")))
    assert "failed" not in result, result
    assert "secret" not in json.dumps(result)
    refused = run_pools(inventory(pool("gpu-a", node_count=-1)))
    assert refused["failed"] and "secret" not in json.dumps(refused)


# ------------------------------------------------------------------------------------------- drain policy, pruning
def warned(result):
    """The warnings of one run (Ansible 2.19 returns them as WarningSummary dicts)."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings") or []]


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Ansible keeps a module's warnings in a process-wide table (and hands them to the controller's display
    instead when an earlier test loaded controller code): start each of these tests with the table empty and in
    module mode, so a warning checked here is in the result and was given by this test's runs."""
    from ansible.module_utils import _internal
    from ansible.module_utils.common import warnings as ansible_warnings

    monkeypatch.setattr(_internal, "is_controller", False)
    ansible_warnings._global_warnings.clear()
    return ansible_warnings._global_warnings


def test_the_inventorys_drain_policy_drains_a_shrink_and_the_diff_lists_nodes_and_pods(api, kube, fresh_warnings):
    """No drain option: the pool's policy drains (on by default); skip_pods leaves the selected pod; --check --diff
    shows the nodes that stay and, per node that goes, the pods evicted first."""
    kube.pods[("ml", "job-2")] = k8s_pod("job-2", 2)
    kube.pods[("ml", "probe-2")] = dict(
        k8s_pod("probe-2", 2),
        metadata={"name": "probe-2", "namespace": "ml", "uid": "uid-probe-2", "labels": {"gpupool.io/drain": "skip"}},
    )
    existing(api, mine(node_count=3))
    cluster = dict(inventory(pool("gpu", node_count=2)), drain={"skip_pods": "gpupool.io/drain=skip"})
    check = run_pools(cluster, check=True, diff=True)
    assert check["changed"] and writes(api) == [] and kube.writes() == []
    # node-0 has no GPU pod, node-1 one, node-2 one (and a skipped one): node-2 is the newest of the fewest
    assert check["pools"]["gpu"]["drain"]["victims"] == ["k8s-gpu-abc-node-0"]
    preview = check["diff"][1]
    assert preview["before"] == {"nodes": ["k8s-gpu-abc-node-0", "k8s-gpu-abc-node-1", "k8s-gpu-abc-node-2"]}
    assert preview["after"] == {
        "nodes": ["k8s-gpu-abc-node-1", "k8s-gpu-abc-node-2"],
        "drained before removal": {"k8s-gpu-abc-node-0": {"evict": []}},
    }

    kube.pods.pop(("ml", "web-0"))
    kube.pods[("ml", "job-0")] = k8s_pod("job-0", 0)
    kube.pods[("ml", "job-1b")] = k8s_pod("job-1b", 1)
    check = run_pools(cluster, check=True, diff=True)
    assert check["diff"][1]["after"]["drained before removal"] == {
        "k8s-gpu-abc-node-2": {"evict": ["ml/job-2"], "skip": ["ml/probe-2"]}
    }
    assert check["pools"]["gpu"]["drain"]["skip"] == [
        {"node": "k8s-gpu-abc-node-2", "namespace": "ml", "name": "probe-2"}
    ]

    api.post(MAGNUM + "/clusters/%s/actions/resize" % C, status_code=202, json={"uuid": CID})
    api.get(ng_url(), json=mine(status="UPDATE_COMPLETE", node_count=2))
    result = run_pools(cluster)
    assert result["pools"]["gpu"]["drain"]["evicted"] == ["ml/job-2"], result
    assert ("ml", "probe-2") in kube.pods and ("ml", "job-2") not in kube.pods
    assert any(
        "ml/probe-2 uses GPUs but is not evicted: matches the drain policy's skip_pods" in w for w in warned(result)
    )


def test_a_pool_that_turns_draining_off_is_resized_without_kubernetes_and_says_so(api, kube, fresh_warnings):
    existing(api, mine(node_count=3))
    cluster = inventory(dict(pool("gpu", node_count=2), drain={"enabled": False}))
    check = run_pools(cluster, check=True)
    assert check["changed"] and "drain" not in check["pools"]["gpu"] and kube.requests == []
    assert any(
        "the drain policy is off (drain.enabled: false), so Magnum removes the nodes of its choosing" in w
        for w in warned(check)
    )
    # the option, when given, wins over the inventory
    assert run_pools(cluster, check=True, drain=True)["pools"]["gpu"]["drain"]["victims"]


def test_prune_deletes_only_the_orphaned_nodegroups_gpupool_made_after_a_drain(api, kube, fresh_warnings):
    # gpu-old: the pool label in its node_labels (made by gpupool at 1.14); gpu: its nodes carry gpupool.io/pool=gpu;
    # foreign: another inventory's nodegroup, never touched
    for name in kube.nodes:
        kube.nodes[name]["metadata"]["labels"]["gpupool.io/pool"] = "gpu"
    existing(
        api,
        mine(uuid=A, name="gpu-old", node_labels={"gpupool.io/pool": "gpu-old"}),
        mine(uuid=NGID, name="gpu", node_count=3),
        ng(uuid=B, name="foreign", labels={OWNER: "team-a"}),
        mine(uuid="dw", name="default-worker", is_default=True),
    )
    cluster = dict(inventory(pool("gpu-keep", flavor="g1")), magnum=dict(inventory()["magnum"], prune_nodegroups=True))
    api.post(MAGNUM + "/clusters/%s/nodegroups" % C, status_code=202, json=mine(uuid="k", name="gpu-keep"))
    check = run_pools(cluster, check=True, diff=True)
    assert "failed" not in check, check.get("msg")
    assert sorted(check["pruned"]) == ["gpu", "gpu-old"] and check["orphaned"] == []
    assert check["left"] == {"foreign": "leave nodegroup 'foreign' of cluster 'k8s': owned by 'team-a'"}
    assert check["pruned"]["gpu"]["pool"] == "gpu" and check["pruned"]["gpu-old"]["pool"] == "gpu-old"
    assert sorted(check["pruned"]["gpu"]["drain"]["victims"]) == sorted(kube.nodes)
    assert writes(api) == [] and kube.writes() == []
    assert not any("foreign" in w for w in warned(check)), "another owner's nodegroup is not ours to warn about"

    for ident in (A, NGID):
        api.delete(ng_url(ident), status_code=204)
        api.get(ng_url(ident), status_code=404, json=errors(404, "Nodegroup could not be found."))
    api.get(ng_url("k"), json=mine(uuid="k", name="gpu-keep", node_count=1))
    result = run_pools(cluster)
    assert "failed" not in result, result
    assert sorted(p for m, p in writes(api) if m == "DELETE") == sorted(
        "/v1/clusters/%s/nodegroups/%s" % (C, i) for i in (A, NGID)
    )
    assert all(kube.nodes[n]["spec"]["unschedulable"] for n in kube.nodes)  # drained (cordoned) before the delete
    assert result["pruned"]["gpu"]["drain"]["evicted"] == ["ml/job-1"]


def test_prune_leaves_another_owners_nodegroup_and_an_unowned_one_and_says_so_in_the_diff(api, kube, fresh_warnings):
    """Issue #32: owner B (prune_nodegroups on) shares the Magnum cluster with owner A. A's nodegroup 'gpu' has
    nodes labelled gpupool.io/pool=gpu and 'legacy' the pool label in its node_labels - what proved "gpupool made
    it" before owners - but only the Magnum label gpupool.io/owner says whose it is: neither is B's, so neither is
    drained or deleted, in check mode or not, and --diff says so."""
    for name in kube.nodes:
        kube.nodes[name]["metadata"]["labels"]["gpupool.io/pool"] = "gpu"
    existing(
        api,
        ng(uuid=NGID, name="gpu", node_count=3, labels={OWNER: "team-a"}),
        ng(uuid=A, name="legacy", node_labels={"gpupool.io/pool": "legacy"}),
        mine(uuid="k", name="gpu-keep", node_count=1),
    )
    cluster = dict(inventory(pool("gpu-keep", flavor="g1")), magnum=dict(inventory()["magnum"], prune_nodegroups=True))
    check = run_pools(cluster, check=True, diff=True)
    assert check["changed"] is False and check["pruned"] == {} and check["orphaned"] == ["legacy"], check
    assert check["left"] == {
        "gpu": "leave nodegroup 'gpu' of cluster 'k8s': owned by 'team-a'",
        "legacy": "leave nodegroup 'legacy' of cluster 'k8s': it has no owner (no Magnum label gpupool.io/owner), "
        "so prune_nodegroups does not delete it",
    }
    assert [d["prepared"] for d in check["diff"]] == [check["left"]["gpu"] + "\n", check["left"]["legacy"] + "\n"]
    assert any(
        "Magnum nodegroup legacy of cluster k8s is not pruned although prune_nodegroups is on: it has no owner" in w
        and "declare a pool with nodegroup {name: legacy, adopt: true} and state: absent" in w
        for w in warned(check)
    )
    assert kube.requests == [], "nothing of ours to drain: the nodes are not even read"
    result = run_pools(cluster)
    assert "failed" not in result and result["changed"] is False, result
    assert writes(api) == [] and kube.writes() == []
    assert not any(kube.nodes[n]["spec"].get("unschedulable") for n in kube.nodes)


def test_a_pool_never_changes_a_nodegroup_of_another_owner_or_of_none_unless_it_adopts_it(api, kube):
    existing(
        api,
        ng(uuid=A, name="gpu-a", node_count=3, labels={OWNER: "team-a"}),
        ng(uuid=B, name="gpu-b", node_count=3),
    )
    cluster = inventory(pool("gpu-a", node_count=1), pool("gpu-b", node_count=1, state="absent"))
    result = run_pools(cluster, check=True, diff=True)
    assert result["failed"] and writes(api) == [] and kube.writes() == []
    assert result["pools"]["gpu-a"]["msg"] == (
        "nodegroup 'gpu-a' of cluster 'k8s' was left as it is (no resize, patch, drain or delete): it is owned by "
        "'team-a' (its Magnum label gpupool.io/owner), not by this inventory's 'k8s-gpu'. Two inventories name the "
        "same nodegroup: give this pool another nodegroup.name, or remove the pool from one of them"
    )
    assert "it has no owner (no Magnum label gpupool.io/owner" in result["pools"]["gpu-b"]["msg"]
    assert (
        "set adopt: true in the nodegroup of pool gpu-b (gpupool_cluster.pools[1].nodegroup.adopt)"
        in (result["pools"]["gpu-b"]["msg"])
    )
    assert result["diff"] == [] and result["pools"]["gpu-a"]["actions"] == []
    # adopted: the unowned one is the pool's to delete (drained first); another owner's can never be adopted
    cluster["pools"] = [pool("gpu-a", node_count=1, adopt=True), pool("gpu-b", state="absent", adopt=True)]
    adopted = run_pools(cluster, check=True)
    assert adopted["pools"]["gpu-a"]["failed"] and "owned by 'team-a'" in adopted["pools"]["gpu-a"]["msg"]
    assert [a["action"] for a in adopted["pools"]["gpu-b"]["actions"]] == ["delete"]
    assert writes(api) == []


def test_standalone_never_changes_an_inventorys_nodegroup(api):
    existing(api, mine(node_count=3))
    result = run(nodegroup, cluster="k8s", name="gpu", node_count=1)
    assert result["failed"] and writes(api) == []
    assert "it is owned by 'k8s-gpu' (its Magnum label gpupool.io/owner), an inventory's nodegroup" in result["msg"]


def test_without_prune_an_orphan_is_only_reported(api, kube, fresh_warnings):
    existing(
        api,
        mine(uuid=A, name="gpu-old", node_labels={"gpupool.io/pool": "gpu-old"}),
        mine(uuid=NGID, name="gpu", node_count=1),
    )
    result = run_pools(inventory(pool("gpu")), check=True)
    assert result["orphaned"] == ["gpu-old"] and result["pruned"] == {} and kube.requests == []
    assert any(
        w.startswith("Magnum nodegroup gpu-old of cluster k8s belongs to no pool of the inventory")
        and "prune_nodegroups: true" in w
        for w in warned(result)
    )
