"""Small JSON REST client the simulators use to talk to the real kube-apiserver (test bed only).

The kubernetes Python client does the kubeconfig, TLS and client-certificate work; this wrapper
sends plain dicts and returns plain dicts, so the simulators never depend on model classes (and
never on the collection's own client code, which is what they test). Each simulator gets its own
identity (a client certificate minted by the control plane) so the audit log tells them apart from
the collection: ``testbed:node-simulator``, ``testbed:dra-driver-simulator``, ...
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

SIMULATOR_GROUP = "system:masters"


class KubeError(Exception):
    def __init__(self, status: int, method: str, path: str, body):
        self.status, self.method, self.path, self.body = status, method, path, body
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__("%s %s: HTTP %s: %s" % (method, path, status, message))


class Kube:
    """A JSON client for one identity (kubeconfig); one per thread that uses it."""

    def __init__(self, kubeconfig: str | os.PathLike, field_manager: str, user_agent: str | None = None):
        from kubernetes import config

        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.api.user_agent = user_agent or field_manager
        self.field_manager = field_manager
        self.kubeconfig = str(kubeconfig)

    def request(
        self, method: str, path: str, body=None, query=None, content_type: str | None = None, timeout: float = 15.0
    ):
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        m, url, hdrs, data, _ = self.api.param_serialize(
            method, path, query_params=params or None, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        resp = self.api.call_api(m, url, header_params=hdrs, body=data, _request_timeout=timeout)
        raw = resp.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")
        if resp.status >= 400:
            raise KubeError(resp.status, method, path, payload)
        return payload

    # ---- verbs ---------------------------------------------------------------------------------
    def get(self, path: str):
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", path)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> list:
        out = self.request("GET", path, query={"labelSelector": label_selector, "fieldSelector": field_selector})
        return (out or {}).get("items") or []

    def create(self, path: str, body: dict):
        return self.request("POST", path, body=body, query={"fieldManager": self.field_manager})

    def replace(self, path: str, body: dict):
        return self.request("PUT", path, body=body, query={"fieldManager": self.field_manager})

    def patch(self, path: str, body, content_type: str = "application/merge-patch+json"):
        return self.request(
            "PATCH", path, body=body, content_type=content_type, query={"fieldManager": self.field_manager}
        )

    def delete(self, path: str, ignore_missing: bool = True):
        try:
            return self.request("DELETE", path)
        except KubeError as exc:
            if exc.status == 404 and ignore_missing:
                return None
            raise


def node_path(name: str = "") -> str:
    return "/api/v1/nodes" + ("/" + quote(name, safe="") if name else "")


def simulator_kubeconfig(control_plane, identity: str):
    """Kubeconfig for a simulator identity (in system:masters: it plays cluster components)."""
    return control_plane.mint_kubeconfig(identity, [SIMULATOR_GROUP])
