"""Fault-injecting front for the real kube-apiserver: a SIMULATOR of an overloaded API path.

It models what a client meets between itself and a busy control plane, on loopback:

- HTTP 429 Too Many Requests with a Retry-After header, as API Priority and Fairness answers a
  request it will not queue (the body is the apiserver's Status object for that case);
- 500/502/503/504, as an apiserver in trouble or the load balancer in front of it answers;
- a response that never comes (the connection stays open and silent), so the client's own read
  timeout has to fire.

Every other request is forwarded unchanged to the apiserver over TLS with the client certificate
of the identity the proxy was started for (as `kubectl proxy` does), so the audit log still names
that identity and counts exactly the requests that reached the server. The client talks plain HTTP
to the proxy with the kubeconfig `FaultProxy.kubeconfig` writes.

    proxy = FaultProxy(cp, cp.mint_kubeconfig("alice", ["system:masters"])).start()
    proxy.inject(status=429, count=3, retry_after=1, match=r"^PATCH /api/v1/nodes/")
    proxy.inject(hang=3.0, count=1)
    proxy.log        # [(method, path, what happened)] what happened: an int status, "hang"
    proxy.stop()
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

STATUS_TEXT = {
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class FaultProxy:
    def __init__(self, control_plane, kubeconfig: str | os.PathLike):
        """kubeconfig: the identity whose client certificate forwards the requests."""
        self.cp = control_plane
        self.faults: list[dict] = []
        self.log: list[tuple[str, str, object]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._tmp = tempfile.mkdtemp(prefix="gpupool-fault-proxy-")
        cfg = yaml.safe_load(Path(kubeconfig).read_text())
        user = cfg["users"][0]["user"]
        cert, key = Path(self._tmp, "client.crt"), Path(self._tmp, "client.key")
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        key.chmod(0o600)
        self._context = ssl.create_default_context(cafile=str(control_plane.ca_file))
        self._context.load_cert_chain(str(cert), str(key))
        upstream = re.match(r"https://([^:/]+):(\d+)", control_plane.server)
        self._upstream = (upstream.group(1), int(upstream.group(2)))

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "FaultProxy":
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self._httpd.server_address[1]

    def write_kubeconfig(self, path: str | os.PathLike) -> Path:
        """A kubeconfig that points at the proxy (plain HTTP, no credentials: the proxy adds them)."""
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "fault-proxy",
            "clusters": [{"name": "fault-proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "fault-proxy", "user": {}}],
            "contexts": [{"name": "fault-proxy", "context": {"cluster": "fault-proxy", "user": "fault-proxy"}}],
        }
        path = Path(path)
        path.write_text(yaml.safe_dump(cfg))
        return path

    # ---- faults ----------------------------------------------------------------------------------
    def inject(
        self,
        *,
        status: int | None = None,
        hang: float | None = None,
        count: int = 1,
        retry_after: int | None = None,
        match: str = "",
    ) -> None:
        """The next `count` requests whose "METHOD /path?query" matches `match` (a regex) get `status`
        (with Retry-After when given) or no answer for `hang` seconds before the connection closes."""
        if (status is None) == (hang is None):
            raise ValueError("give exactly one of status or hang")
        with self._lock:
            self.faults.append(
                {"status": status, "hang": hang, "count": count, "retry_after": retry_after, "match": re.compile(match)}
            )

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take(self, line: str) -> dict | None:
        with self._lock:
            for fault in self.faults:
                if fault["match"].search(line):
                    fault["count"] -= 1
                    if fault["count"] <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _record(self, method: str, path: str, what) -> None:
        with self._lock:
            self.log.append((method, path, what))

    def forward(self, method: str, path: str, headers: dict, body: bytes | None) -> tuple[int, list, bytes]:
        conn = http.client.HTTPSConnection(*self._upstream, context=self._context, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_HEADERS], resp.read()
        finally:
            conn.close()


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        fault = self.proxy._take("%s %s" % (self.command, self.path))
        if fault is not None and fault["hang"] is not None:
            self.proxy._record(self.command, self.path, "hang")
            time.sleep(fault["hang"])
            self.close_connection = True
            return
        if fault is not None:
            status = fault["status"]
            self.proxy._record(self.command, self.path, status)
            message = (
                "Too many requests, please try again later."
                if status == 429
                else "injected fault: the API server is unavailable"
            )
            payload = json.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": message,
                    "reason": STATUS_TEXT.get(status, "InternalError"),
                    "details": {"retryAfterSeconds": fault["retry_after"] or 0},
                    "code": status,
                }
            ).encode()
            self.send_response(status)
            if fault["retry_after"] is not None:
                self.send_header("Retry-After", str(fault["retry_after"]))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS | {"authorization"}}
        try:
            status, out_headers, payload = self.proxy.forward(self.command, self.path, headers, body)
        except OSError as exc:  # the apiserver is down: the client sees a gateway error, as through an LB
            status, out_headers, payload = 502, [("Content-Type", "text/plain")], str(exc).encode()
        self.proxy._record(self.command, self.path, status)
        self.send_response(status)
        for k, v in out_headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle
