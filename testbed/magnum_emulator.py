"""Magnum API EMULATOR: Keystone v3 + Magnum v1 (clusters, nodegroups, resize) on loopback.

An emulator, not OpenStack. It lets the real openstacksdk (unmodified) and the collection's modules
talk HTTP to something that follows Magnum's documented and coded behaviour, as gathered in
/work/shared/reference/magnum-nodegroups.md (the rules and what they model are listed in
testbed/magnum_model.py and docs/testbed-magnum.md):

- Keystone v3 password auth: POST /identity/v3/auth/tokens returns a token and a service catalog
  with an ``identity`` and a ``container-infra`` endpoint (Magnum's catalog type);
- Magnum v1: GET /v1/clusters[/{id}], GET/POST /v1/clusters/{id}/nodegroups,
  GET/PATCH/DELETE /v1/clusters/{id}/nodegroups/{ng}, POST /v1/clusters/{id}/actions/resize, with
  the OpenStack-API-Version microversion rules and the min/max headers on every /v1 response,
  202 on writes, asynchronous statuses, {"errors": [...]} bodies;
- test controls under /_emulator/ (faults, requests log, state, nodes).

Embedded::

    emu = MagnumEmulator(delay=0.3).start()          # thread, free port on 127.0.0.1
    path = emu.write_clouds_yaml(tmp_path / "clouds.yaml")   # cloud name: emu.cloud_name
    emu.on_nodegroup_change(lambda cluster, ng, event: ...)  # node simulator hook
    emu.set_faults(error_count=2)                   # next two Magnum calls: 503
    emu.fail_next("create", reason="Quota exceeded for instances")
    emu.stop()

CLI: ``python -m testbed.magnum_emulator [--port 0] [--delay 0.3] [--release master]
[--clusters seed.yaml] [--clouds-yaml clouds.yaml]``.
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import json
import logging
import re
import signal
import socket
import sys
import threading
import time
import uuid as _uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from testbed.magnum_model import MIN_VERSION, RELEASES, ApiError, Cloud, Faults, Node, NodegroupEvent, vstr

__all__ = ["MagnumEmulator", "Node", "NodegroupEvent", "Faults", "RELEASES"]

LOG = logging.getLogger("testbed.magnum_emulator")
MAGNUM_WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")
REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class MagnumEmulator:
    """Keystone + Magnum emulator on a ThreadingHTTPServer (see the module docstring)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        delay: float = 0.3,
        conductor_lag: float = 0.05,
        release: str = "master",
        max_version: str | None = None,
        clusters: list[dict[str, Any]] | None = None,
        flavors: list[str] | None = None,
        username: str = "demo",
        password: str = "secret",
        project_name: str = "gpu-project",
        domain: str = "Default",
        region: str = "RegionOne",
        cloud_name: str = "magnum-emulator",
        seed: int = 0,
    ):
        self.cloud = Cloud(
            delay=delay,
            conductor_lag=conductor_lag,
            release=release,
            max_version=max_version,
            seed=seed,
            clusters=clusters,
            flavors=flavors,
        )
        self.host, self.port = host, port
        self.username, self.password, self.project_name = username, password, project_name
        self.domain, self.region, self.cloud_name = domain, region, cloud_name
        self.clouds_yaml: Path | None = None
        self.tokens: dict[str, float] = {}
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "MagnumEmulator":
        """Start (or, after stop(), restart on the same port: the cloud's state is kept, as Magnum's
        database outlives its API and conductor processes)."""
        handler = type("Handler", (_Handler,), {"emu": self})
        self._httpd = _Server((self.host, self.port), handler)
        self.port = self._httpd.server_address[1]
        self._stop.clear()
        self._threads = [
            threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="magnum-emulator-http",
                daemon=True,
            ),
            threading.Thread(
                target=self.cloud.run_due, args=(self._stop,), name="magnum-emulator-conductor", daemon=True
            ),
        ]
        for t in self._threads:
            t.start()
        LOG.info(
            "Magnum emulator on %s (release %s, max microversion %s)",
            self.url,
            self.cloud.release,
            self.cloud.max_version,
        )
        return self

    def stop(self) -> None:
        self._stop.set()
        with self.cloud.lock:
            self.cloud._cond.notify_all()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            # A stopped API answers nothing: kept-alive client connections are cut, as a dying
            # process's are (otherwise their handler threads would go on serving them).
            self._httpd.drop_connections()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> "MagnumEmulator":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ addresses and clouds.yaml
    @property
    def url(self) -> str:
        return "http://%s:%d" % (self.host, self.port)

    @property
    def auth_url(self) -> str:
        return self.url + "/identity/v3"

    @property
    def magnum_url(self) -> str:
        return self.url + "/v1"

    def cloud_config(self) -> dict[str, Any]:
        """The cloud as a clouds.yaml entry (also usable as the modules' ``cloud`` dict)."""
        return {
            "auth": {
                "auth_url": self.auth_url,
                "username": self.username,
                "password": self.password,
                "project_name": self.project_name,
                "user_domain_name": self.domain,
                "project_domain_name": self.domain,
            },
            "auth_type": "password",
            "region_name": self.region,
            "identity_api_version": 3,
            "interface": "public",
        }

    def write_clouds_yaml(self, path: str | Path) -> Path:
        """Write a clouds.yaml with one cloud named ``cloud_name`` (JSON is valid YAML)."""
        path = Path(path)
        path.write_text(json.dumps({"clouds": {self.cloud_name: self.cloud_config()}}, indent=2) + "\n")
        self.clouds_yaml = path
        return path

    # ------------------------------------------------------------------ Python test API
    def on_nodegroup_change(
        self, callback: Callable[[dict, dict, NodegroupEvent], Any], replay: bool = True
    ) -> Callable:
        """Register ``callback(cluster, nodegroup, event)``; called when a nodegroup reaches
        CREATE_COMPLETE, is resized, updated, deleted or fails. cluster/nodegroup are API views
        (dicts), event a NodegroupEvent (kind, nodes, added, removed). With replay, existing
        complete nodegroups are reported at once as kind ``existing``. Usable as a decorator."""
        self.cloud.add_hook(callback, replay=replay)
        return callback

    def nodes_of(self, cluster: str, nodegroup: str) -> list[Node]:
        """Current nodes (servers) of a nodegroup, cluster and nodegroup by name or uuid."""
        with self.cloud.lock:
            c = self.cloud.find_cluster(cluster)
            return list(self.cloud.find_ng(c, nodegroup)["_nodes"])

    def add_cluster(self, name: str, **kwargs: Any) -> dict:
        """Seed one more cluster (same keywords as a --clusters entry)."""
        return self.cloud.add_cluster(name, **kwargs)

    def cluster(self, ident: str) -> dict:
        with self.cloud.lock:
            return self.cloud.cluster_view(self.cloud.find_cluster(ident))

    def nodegroup(self, cluster: str, nodegroup: str) -> dict:
        with self.cloud.lock:
            c = self.cloud.find_cluster(cluster)
            return self.cloud.ng_view(c, self.cloud.find_ng(c, nodegroup), (1, 99))

    def set_faults(self, **kwargs: Any) -> Faults:
        """Replace the fault settings (see Faults); unknown keys raise TypeError."""
        with self.cloud.lock:
            self.cloud.faults = Faults(**kwargs)
            return self.cloud.faults

    def reset_faults(self) -> None:
        self.set_faults()

    def fail_next(
        self, operation: str, nodegroup: str | None = None, reason: str | None = None, count: int = 1
    ) -> None:
        """Make the next ``operation`` (create, update, resize, delete) end in *_FAILED with ``reason``."""
        if operation not in ("create", "update", "resize", "delete"):
            raise ValueError("operation must be create, update, resize or delete")
        with self.cloud.lock:
            self.cloud.faults.failures.append(
                {"operation": operation, "nodegroup": nodegroup, "reason": reason, "count": count}
            )

    def set_delay(self, delay: float | None = None, conductor_lag: float | None = None) -> None:
        with self.cloud.lock:
            if delay is not None:
                self.cloud.delay = delay
            if conductor_lag is not None:
                self.cloud.conductor_lag = conductor_lag

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every scheduled status transition has happened."""
        self.cloud.settle(timeout)

    def magnum_requests(self, writes_only: bool = False) -> list[dict[str, Any]]:
        """Recorded Magnum API requests (method, path, query, headers, body, status)."""
        with self.cloud.lock:
            reqs = [r for r in self.requests if r["path"].startswith("/v1")]
        return [r for r in reqs if not writes_only or r["method"] in MAGNUM_WRITE_METHODS]

    def clear_requests(self) -> None:
        with self.cloud.lock:
            self.requests.clear()

    # ------------------------------------------------------------------ fault decision
    def _fault_for(self, method: str, path: str) -> tuple[float, int | None]:
        with self.cloud.lock:
            f = self.cloud.faults
            if not re.search(f.match, "%s %s" % (method, path)):
                return 0.0, None
            status = None
            if f.error_count > 0:
                f.error_count -= 1
                status = f.error_status
            elif f.error_rate > 0 and self.cloud.rng.random() < f.error_rate:
                status = f.error_status
            return f.latency, status


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its open connections, so stop() can cut them."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: set = set()
        self._open_lock = threading.Lock()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open.discard(request)

    def drop_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        LOG.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    emu: MagnumEmulator
    protocol_version = "HTTP/1.1"
    server_version = "MagnumEmulator/1.0"
    _record: dict[str, Any] | None = None  # the request being answered, logged as its answer leaves

    def log_message(self, fmt: str, *args: Any) -> None:  # keep test output quiet
        LOG.debug("%s - %s", self.address_string(), fmt % args)

    # -------------------------------------------------------------- plumbing
    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, "The request body is not valid JSON.")

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self._status = status
        self._log_request()  # before the answer leaves: the client's next request is logged after this one
        self.send_response(status, REASONS.get(status))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    def _log_request(self) -> None:
        record, self._record = self._record, None
        if record is not None:
            record["status"] = self._status
            with self.emu.cloud.lock:
                self.emu.requests.append(record)

    def _error(self, err: ApiError, headers: dict[str, str] | None = None) -> None:
        # ParsableErrorMiddleware: title is the faultstring up to the first '.', detail the whole text.
        item = {
            "request_id": "req-" + str(_uuid.uuid4()),
            "code": err.code,
            "status": err.status,
            "title": err.detail.split(".", 1)[0],
            "detail": err.detail,
            "links": [],
        }
        item.update(err.extra)
        self._send(err.status, {"errors": [item]}, headers)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        emu = self.emu
        parts = urlsplit(self.path)
        path, query = parts.path.rstrip("/") or "/", parse_qs(parts.query)
        self._status = 0
        self._mv_headers = None
        body = None
        record = self._record = {
            "time": time.time(),
            "method": self.command,
            "path": path,
            "query": parts.query,
            "headers": {k: v for k, v in self.headers.items() if k.lower() not in ("x-auth-token", "authorization")},
            "body": None,
        }
        try:
            body = self._body()
            record["body"] = body if not path.startswith("/identity") else "<redacted>"
            latency, fault = emu._fault_for(self.command, path)
            if latency:
                time.sleep(latency)
            if fault:
                raise ApiError(fault, "Injected fault: the service is unavailable, try again later.", code="server")
            if path.startswith("/_emulator"):
                self._admin(path, body)
            elif path.startswith("/identity"):
                self._keystone(path, body)
            elif path == "/":
                self._magnum_root()
            elif path == "/v1" or path.startswith("/v1/"):
                self._magnum(path, query, body)
            else:
                raise ApiError(404, "The resource could not be found.")
        except ApiError as err:
            headers = getattr(self, "_mv_headers", None) if path.startswith("/v1") else None
            self._error(err, headers)
        except Exception as exc:  # pragma: no cover - a bug in the emulator
            LOG.exception("emulator error")
            self._error(ApiError(500, "Emulator bug: %r" % exc, code="server"))
        finally:
            self._log_request()  # a request that got no answer (the emulator failed to send one)

    # -------------------------------------------------------------- Keystone v3
    def _keystone_version(self) -> dict:
        return {
            "id": "v3.14",
            "status": "stable",
            "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": self.emu.auth_url + "/"}],
            "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
        }

    def _keystone(self, path: str, body: Any) -> None:
        if path == "/identity" and self.command == "GET":
            return self._send(300, {"versions": {"values": [self._keystone_version()]}})
        if path == "/identity/v3" and self.command == "GET":
            return self._send(200, {"version": self._keystone_version()})
        if path == "/identity/v3/auth/tokens" and self.command == "POST":
            return self._issue_token(body)
        raise ApiError(404, "The resource could not be found.")

    def _issue_token(self, body: Any) -> None:
        emu = self.emu
        unauthorized = ApiError(401, "The request you have made requires authentication.")
        try:
            ident = body["auth"]["identity"]
            user = ident["password"]["user"]
            ok = (
                "password" in ident["methods"]
                and user.get("password") == emu.password
                and emu.username in (user.get("name"), user.get("id"))
            )
        except (KeyError, TypeError):
            ok = False
        if not ok:
            return self._send(401, {"error": {"code": 401, "title": "Unauthorized", "message": unauthorized.detail}})
        token = _uuid.uuid4().hex
        now = _dt.datetime.now(_dt.timezone.utc)
        emu.tokens[token] = time.time() + 3600
        project_id = emu.cloud.project_id
        domain = {"id": "default", "name": emu.domain}

        def endpoints(url: str) -> list[dict]:
            return [
                {"id": _uuid.uuid4().hex, "interface": i, "region": emu.region, "region_id": emu.region, "url": url}
                for i in ("public", "internal", "admin")
            ]

        self._send(
            201,
            {
                "token": {
                    "methods": ["password"],
                    "user": {
                        "id": "u-" + emu.username,
                        "name": emu.username,
                        "domain": domain,
                        "password_expires_at": None,
                    },
                    "project": {"id": project_id, "name": emu.project_name, "domain": domain},
                    "roles": [{"id": "r-member", "name": "member"}, {"id": "r-reader", "name": "reader"}],
                    "audit_ids": [_uuid.uuid4().hex[:22]],
                    "is_domain": False,
                    "issued_at": now.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                    "expires_at": (now + _dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                    "catalog": [
                        {
                            "id": "svc-keystone",
                            "type": "identity",
                            "name": "keystone",
                            "endpoints": endpoints(emu.url + "/identity"),
                        },
                        {
                            "id": "svc-magnum",
                            "type": "container-infra",
                            "name": "magnum",
                            "endpoints": endpoints(emu.magnum_url),
                        },
                    ],
                }
            },
            {"X-Subject-Token": token},
        )

    def _authorized(self) -> None:
        token = self.headers.get("X-Auth-Token")
        if not token or self.emu.tokens.get(token, 0) < time.time():
            raise ApiError(401, "Authentication required")

    # -------------------------------------------------------------- Magnum
    def _magnum_root(self) -> None:
        cloud = self.emu.cloud
        self._send(
            200,
            {
                "name": "OpenStack Magnum API",
                "description": "Magnum is an OpenStack project which aims to provide container cluster management.",
                "versions": [
                    {
                        "id": "v1",
                        "status": "CURRENT",
                        "min_version": MIN_VERSION,
                        "max_version": cloud.max_version,
                        "links": [{"href": self.emu.magnum_url + "/", "rel": "self"}],
                    }
                ],
            },
        )

    def _magnum(self, path: str, query: dict[str, list[str]], body: Any) -> None:
        cloud = self.emu.cloud
        svc = cloud.header_service
        # v1 Controller._route: min and max on every response, also on errors (reference §1).
        self._mv_headers = {
            "OpenStack-API-Minimum-Version": "%s %s" % (svc, MIN_VERSION),
            "OpenStack-API-Maximum-Version": "%s %s" % (svc, cloud.max_version),
            "Vary": "OpenStack-API-Version",
        }
        self._authorized()
        version = cloud.negotiate(self.headers.get("OpenStack-API-Version"))
        headers = dict(self._mv_headers, **{"OpenStack-API-Version": "%s %s" % (svc, vstr(version))})
        self._mv_headers = headers
        seg = path.split("/")[2:]  # after "", "v1"
        m = self.command
        q = {k: v[-1] for k, v in query.items()}
        if not seg:
            if m != "GET":
                raise ApiError(405, "Method not allowed.")
            return self._send(
                200,
                {
                    "id": "v1",
                    "media_types": [{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}],
                    "links": [{"href": self.emu.magnum_url + "/", "rel": "self"}],
                    "clusters": [{"href": self.emu.magnum_url + "/clusters/", "rel": "self"}],
                },
                headers,
            )
        if seg[0] != "clusters":
            raise ApiError(404, "The resource could not be found.")
        with cloud.lock:  # the conductor thread changes the same dicts
            status, payload = self._magnum_resources(seg, m, q, body, version)
        self._send(status, payload, headers)

    def _magnum_resources(
        self, seg: list[str], m: str, q: dict[str, str], body: Any, version: tuple
    ) -> tuple[int, Any]:
        """(status, body) of a Magnum resource request; called with the state lock held."""
        cloud = self.emu.cloud
        path = "/v1/" + "/".join(seg)
        if len(seg) == 1 and m == "GET":
            return 200, {
                "clusters": [cloud.cluster_view(c, expand=False) for c in cloud.clusters.values()],
                "next": None,
            }
        if len(seg) == 2 and m == "GET":
            return 200, cloud.cluster_view(cloud.find_cluster(seg[1]))
        if len(seg) == 4 and seg[2] == "actions" and seg[3] == "resize" and m == "POST":
            return 202, cloud.resize(seg[1], body, version)
        if len(seg) >= 3 and seg[2] == "nodegroups":
            if len(seg) == 3 and m == "GET":
                try:
                    limit = int(q["limit"]) if "limit" in q else None
                except ValueError:
                    raise ApiError(400, "Invalid input for field/attribute limit.")
                return 200, cloud.list_ngs(seg[1], version, q.get("role"), limit, q.get("marker"), self.emu.url)
            if len(seg) == 3 and m == "POST":
                return 202, cloud.create_ng(seg[1], body, version)
            if len(seg) == 4 and m == "GET":
                return 200, cloud.show_ng(seg[1], seg[3], version)
            if len(seg) == 4 and m == "PATCH":
                return 202, cloud.patch_ng(seg[1], seg[3], body, version)
            if len(seg) == 4 and m == "DELETE":
                cloud.delete_ng(seg[1], seg[3], version)
                return 204, None
        raise ApiError(405 if len(seg) <= 4 else 404, "The method %s is not supported for %s." % (m, path))

    # -------------------------------------------------------------- test controls
    def _admin(self, path: str, body: Any) -> None:
        emu, m = self.emu, self.command
        if path == "/_emulator/faults":
            if m == "GET":
                return self._send(200, emu.cloud.faults.to_dict())
            if m == "POST":
                try:
                    faults = emu.set_faults(**(body or {}))
                except TypeError as exc:
                    raise ApiError(400, "Unknown fault setting: %s" % exc)
                return self._send(200, faults.to_dict())
            if m == "DELETE":
                emu.reset_faults()
                return self._send(204)
        if path == "/_emulator/failures" and m == "POST":
            try:
                emu.fail_next(**(body or {}))
            except (TypeError, ValueError) as exc:
                raise ApiError(400, str(exc))
            return self._send(200, emu.cloud.faults.to_dict())
        if path == "/_emulator/config" and m == "POST":
            emu.set_delay(**(body or {}))
            return self._send(200, {"delay": emu.cloud.delay, "conductor_lag": emu.cloud.conductor_lag})
        if path == "/_emulator/requests":
            if m == "GET":
                with emu.cloud.lock:
                    return self._send(200, {"requests": copy.deepcopy(emu.requests)})
            if m == "DELETE":
                emu.clear_requests()
                return self._send(204)
        if path == "/_emulator/state" and m == "GET":
            with emu.cloud.lock:
                state = []
                for c in emu.cloud.clusters.values():
                    view = emu.cloud.cluster_view(c)
                    view["nodegroups"] = [
                        dict(emu.cloud.ng_view(c, ng, (1, 99)), nodes=[n.__dict__ for n in ng["_nodes"]])
                        for ng in c["nodegroups"].values()
                        if ng["_visible"]
                    ]
                    state.append(view)
            return self._send(
                200, {"release": emu.cloud.release, "max_version": emu.cloud.max_version, "clusters": state}
            )
        raise ApiError(404, "Unknown emulator control %s %s" % (m, path))


def _load_clusters(path: str | None) -> list[dict[str, Any]] | None:
    if not path:
        return None
    import yaml  # PyYAML is a collection requirement

    data = yaml.safe_load(Path(path).read_text())
    return data["clusters"] if isinstance(data, dict) else data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m testbed.magnum_emulator",
        description="Magnum API emulator (Keystone v3 + Magnum v1 nodegroups) on loopback.",
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--delay", type=float, default=0.3, help="seconds an operation stays *_IN_PROGRESS")
    ap.add_argument(
        "--conductor-lag", type=float, default=0.05, help="seconds before the conductor picks an operation up"
    )
    ap.add_argument(
        "--release",
        choices=sorted(RELEASES),
        default="master",
        help="Magnum release whose microversion range and service names to emulate",
    )
    ap.add_argument("--max-version", help="override the maximum microversion, e.g. 1.10")
    ap.add_argument("--clusters", help="YAML file: a list of clusters (name, labels, node_count, ...)")
    ap.add_argument("--clouds-yaml", help="write a clouds.yaml for the emulator here")
    ap.add_argument("--cloud-name", default="magnum-emulator")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    emu = MagnumEmulator(
        host=args.host,
        port=args.port,
        delay=args.delay,
        conductor_lag=args.conductor_lag,
        release=args.release,
        max_version=args.max_version,
        clusters=_load_clusters(args.clusters),
        cloud_name=args.cloud_name,
    ).start()
    if args.clouds_yaml:
        emu.write_clouds_yaml(args.clouds_yaml)
        print("clouds.yaml: %s (cloud %s)" % (args.clouds_yaml, args.cloud_name), flush=True)
    print(
        "Magnum emulator: %s  keystone %s  magnum %s  (Ctrl-C stops)" % (emu.url, emu.auth_url, emu.magnum_url),
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
