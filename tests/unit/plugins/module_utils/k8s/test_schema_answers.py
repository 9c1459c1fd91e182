"""A server's answer about its schema - a field newer than its Kubernetes release - is FieldNotInSchema: sent once,
never retried, and no reason to stop the run's later requests (k8s/client.py). The answers are the ones real
kube-apiservers give (kubernetes-dra-versions.md: 1.32's server-side apply of DeviceClass extendedResourceName);
the real 1.32 server answers it in tests/integration/test_k8s_releases.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.answers import schema_fields
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import (
    FieldNotInSchema,
    K8sClient,
    K8sError,
)

SSA_500 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "failed to create typed patch object (/gpupool-extended-resource-probe; resource.k8s.io/v1beta1, "
    "Kind=DeviceClass): .spec.extendedResourceName: field not declared in schema",
    "code": 500,
}
STRICT_400 = {
    "kind": "Status",
    "status": "Failure",
    "message": 'DeviceClass in version "v1beta1" cannot be handled as a DeviceClass: strict decoding error: '
    'unknown field "spec.extendedResourceName"',
    "reason": "BadRequest",
    "code": 400,
}
ETCD_500 = {"kind": "Status", "status": "Failure", "message": "etcdserver: request timed out", "code": 500}


class Server:
    """Answers each request with the next scripted (status, body); 200 {} once the script is spent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent = []

    def request(self, method, url, **_kw):
        self.sent.append((method, url))
        status, body = self.answers.pop(0) if self.answers else (200, {})
        return SimpleNamespace(status=status, data=json.dumps(body).encode(), reason="", headers={})


def client(server):
    api = SimpleNamespace(rest_client=SimpleNamespace(pool_manager=server))
    cfg = SimpleNamespace(host="https://api.example:6443", auth_settings=lambda: {}, username=None, password=None)
    return K8sClient(api, cfg, retries=5, sleep=lambda _s: None)


def test_a_server_side_apply_of_an_unknown_field_is_a_schema_answer_sent_once():
    server = Server((500, SSA_500))
    c = client(server)
    with pytest.raises(FieldNotInSchema) as err:
        c.request("PATCH", "/apis/resource.k8s.io/v1beta1/deviceclasses/probe", query={"dryRun": "All"}, body={})
    assert len(server.sent) == 1  # not retried
    assert err.value.fields == (".spec.extendedResourceName",)
    assert err.value.status == 500
    text = err.value.describe()
    assert text.startswith("the API server at https://api.example:6443 does not know .spec.extendedResourceName ")
    assert "the field is newer than this cluster's Kubernetes release" in text
    assert "not a server in trouble" in text and "overloaded" not in text
    # the run goes on: the next request is sent (a server in trouble would stop them all)
    assert c.request("GET", "/apis/resource.k8s.io/v1beta1/deviceclasses") == {}
    assert len(server.sent) == 2


def test_strict_decoding_of_an_unknown_field_is_a_schema_answer_too():
    with pytest.raises(FieldNotInSchema) as err:
        client(Server((400, STRICT_400))).request("POST", "/apis/resource.k8s.io/v1beta1/deviceclasses", body={})
    assert err.value.fields == (".spec.extendedResourceName",)


def test_any_other_500_is_still_retried_and_then_stops_the_run():
    server = Server(*[(500, ETCD_500)] * 6)
    c = client(server)
    with pytest.raises(K8sError) as err:
        c.request("GET", "/api/v1/nodes")
    assert not isinstance(err.value, FieldNotInSchema)
    assert len(server.sent) == 6  # 1 + 5 retries
    assert "overloaded or failing" in err.value.describe()
    with pytest.raises(K8sError):
        c.request("GET", "/api/v1/nodes")
    assert len(server.sent) == 6  # not sent: the server was in trouble a moment ago


@pytest.mark.parametrize(
    "message, fields",
    [
        (SSA_500["message"], [".spec.extendedResourceName"]),
        (
            "errors:\n  .spec.devices.requests[0].firstAvailable: field not declared in schema\n"
            "  .spec.devices.requests[1].firstAvailable: field not declared in schema",
            [".spec.devices.requests[0].firstAvailable", ".spec.devices.requests[1].firstAvailable"],
        ),
        ('strict decoding error: unknown field "spec.a", unknown field "spec.b"', [".spec.a", ".spec.b"]),
        ("etcdserver: request timed out", []),
        ('unknown field "spec.a"', []),  # only strict decoding says it this way as an error
    ],
)
def test_schema_fields_are_read_from_the_answer(message, fields):
    assert schema_fields(json.dumps({"message": message}).encode()) == fields
