# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thin I/O for the Magnum nodegroup API over openstacksdk's authenticated session.

openstacksdk has no nodegroup resource, so the calls go through the SDK's
``container_infrastructure_management`` proxy (a keystoneauth Adapter: token, catalog endpoint,
TLS) as plain REST. Three things the SDK does not do for us:

- microversions: the server's maximum comes from the ``OpenStack-API-Maximum-Version`` response
  header; every call sends ``OpenStack-API-Version: container-infra <v>`` explicitly, because the
  SDK's own microversion support writes the long service type, which Magnum rejects with 406 before
  release 2026.1;
- retries with backoff on 429 (honouring Retry-After), 5xx and connection errors (writes only on
  429/502/503/504, not on 500: a 429 or a gateway error means the request was not carried out; and
  on failed connects/timeouts: every write here is idempotent, a repeated create shows up as 409);
- waiting for the asynchronous status (``*_IN_PROGRESS`` -> ``*_COMPLETE`` / ``*_FAILED``).

Beside it: the microversion choice (magnum_versions.py), when a wait is over (magnum_wait.py), the errors
(magnum_errors.py).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_errors import (
    MagnumConflict,
    MagnumError,
    MagnumNotFound,
    OperationFailed,
    WaitTimeout,
    cluster_not_found,
    http_error,
    transport_failure,
)
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_versions import (
    CLIENT_MAX_VERSION,
    MAX_HEADER,
    MIN_HEADER,
    NODEGROUP_MIN_VERSION,
    VERSION_HEADER,
    choose_microversion,
    parse_version,
    version_header,
)
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_wait import evaluate_wait, failed_hint
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import (
    IN_PROGRESS_STATES,
    Version,
    format_version,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter

RETRY_READ = frozenset((429, 500, 502, 503, 504))
RETRY_WRITE = frozenset((429, 502, 503, 504))
MAX_RETRY_AFTER = 60.0


def _sleep(seconds: float) -> None:  # patched by the unit tests
    time.sleep(seconds)


def _clock() -> float:
    return time.monotonic()


def _retry_after(resp: Any) -> float:
    """Seconds the server asked to wait (Retry-After in seconds), 0 when it did not say."""
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(resp.headers.get("Retry-After") or 0)))
    except (TypeError, ValueError):
        return 0.0


class MagnumClient:
    """Magnum v1 clusters/nodegroups through ``conn.container_infrastructure_management``.

    ``log`` (callable taking a string) receives retries and waiting progress; ``events`` keeps them."""

    def __init__(
        self,
        conn: Any,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        poll_initial: float = 0.25,
        poll_max: float = 15.0,
        client_max: Version = CLIENT_MAX_VERSION,
        log: Optional[Callable[[str], None]] = None,
        progress: Any = None,
    ) -> None:
        self.conn = conn
        self.progress = progress  # plan.progress.Progress: what a wait waits for, while it waits
        self._adapter = None
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.poll_initial, self.poll_max = poll_initial, poll_max
        self.client_max = client_max
        self.version = None
        self.server_min = self.server_max = None
        self.events = []
        self._log = log
        # Called with "METHOD path" before every write (k8s/lease_keeper.py's check: a run that lost its run lease
        # sends no create, resize, patch or delete)
        self.write_guard = None
        self.retried = 0

    # ------------------------------------------------------------------------------ plumbing
    def log(self, text: str) -> None:
        self.events.append(text)
        if self._log:
            self._log(text)

    @property
    def adapter(self) -> Any:
        if self._adapter is None:
            self._adapter = self.conn.container_infrastructure_management
        return self._adapter

    @property
    def endpoint(self) -> str:
        try:
            return self.adapter.get_endpoint()
        except Exception:
            return "the Magnum (container-infra) endpoint"

    def _send(self, method, path, body=None, version=None):
        headers = {"Accept": "application/json"}
        if version is not None:
            headers[VERSION_HEADER] = version_header(version)
        kwargs = {"headers": headers, "raise_exc": False}
        if body is not None:
            kwargs["json"] = body
        return self.adapter.request(path, method, **kwargs)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: Tuple[int, ...] = (200,),
        version: Union[str, Version, None] = "negotiated",
    ) -> Any:
        """One API call with retries; returns the response for a status in ``ok``, raises MagnumError.

        The first call of a client that has not negotiated yet is sent at 1.9, the version the nodegroup API
        needs anyway, and its response headers (Magnum puts its range on every response, 406 included) pick
        the version of every later call: no request of its own for the version document."""
        write = method in ("POST", "PATCH", "PUT", "DELETE")
        adopt = False
        if version == "negotiated":
            if self.version is None and write:
                self.negotiate()  # never the case in this collection: every run reads before it writes
            adopt = self.version is None
            version = self.version or NODEGROUP_MIN_VERSION
        retryable = RETRY_WRITE if write else RETRY_READ
        attempt, delay = 0, self.backoff
        while True:
            attempt += 1
            if write and self.write_guard is not None:
                # before every attempt, outside the transport's try: a lost run lease is not a connection error
                self.write_guard("%s %s" % (method, path))
            try:
                resp = self._send(method, path, body, version)
            except Exception as exc:  # keystoneauth connection/auth errors
                failure = transport_failure(exc, method, path)
                if failure is None and attempt <= self.retries:
                    self._retry_note(method, path, attempt, delay, type(exc).__name__)
                    _sleep(delay)
                    delay = min(delay * 2, self.max_backoff)
                    continue
                raise failure or MagnumError(
                    "%s %s failed after %d attempts: %s. Check that %s is reachable from this host."
                    % (method, path, attempt, exc, self.endpoint),
                    method=method,
                    url=path,
                )
            if adopt and (resp.status_code in ok + (406,) or resp.headers.get(MAX_HEADER)):
                adopt = False
                self._adopt(resp)  # a 406 whose range rules 1.9 out says so here, as negotiate() would
            if resp.status_code in ok:
                return resp
            if resp.status_code in retryable and attempt <= self.retries:
                wait = max(delay, _retry_after(resp))
                self._retry_note(method, path, attempt, wait, "HTTP %d" % resp.status_code)
                _sleep(wait)
                delay = min(delay * 2, self.max_backoff)
                continue
            raise http_error(method, path, resp, attempt, version, (self.server_min, self.server_max))

    def _retry_note(self, method, path, attempt, delay, why):
        self.retried += 1
        self.log("%s %s: %s, retry %d/%d in %.1fs" % (method, path, why, attempt, self.retries, delay))

    # ------------------------------------------------------------------------------ microversion
    def negotiate(self) -> Version:
        """Read the server's microversion range from the headers of GET /v1/ and pick ours (a client that
        does not call it negotiates from the response to its first call instead)."""
        return self._adopt(self.request("GET", "/", version=None))

    def _adopt(self, resp):
        """The version to send from now on: the highest both sides know, from the response's range headers."""
        maximum, minimum = resp.headers.get(MAX_HEADER), resp.headers.get(MIN_HEADER)
        if not maximum:
            raise MagnumError(
                "%s did not send an %s header, so its microversion range is unknown; is this "
                "really Magnum?" % (self.endpoint, MAX_HEADER)
            )
        try:
            self.server_max = format_version(parse_version(maximum))
            self.server_min = format_version(parse_version(minimum)) if minimum else None
            self.version = choose_microversion(maximum, minimum, self.client_max, where="Magnum at %s" % self.endpoint)
        except ValueError as exc:
            if isinstance(exc, Problems):
                raise MagnumError(str(exc))
            raise MagnumError(
                "Cannot read the microversion headers of %s (%s: %r): %s" % (self.endpoint, MAX_HEADER, maximum, exc)
            )
        self.log(
            "microversion: server %s..%s, using %s" % (self.server_min, self.server_max, format_version(self.version))
        )
        return self.version

    # ------------------------------------------------------------------------------ resources
    def get_cluster(self, ident: str) -> Dict[str, Any]:
        try:
            return self.request("GET", "/clusters/%s" % ident).json()
        except MagnumNotFound as exc:
            raise cluster_not_found(ident, exc)

    def list_nodegroups(self, cluster_id: str, role: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every nodegroup of a cluster (abbreviated list view), following the ``next`` links. The cluster may
        be named by its uuid or its name (Magnum resolves either); a 404 means the cluster is not there."""
        path = "/clusters/%s/nodegroups" % cluster_id + ("?role=%s" % role if role else "")
        items, seen = [], set()
        while path and path not in seen:
            seen.add(path)
            try:
                data = self.request("GET", path).json()
            except MagnumNotFound as exc:
                raise cluster_not_found(cluster_id, exc)
            page = data.get("nodegroups") or []
            items.extend(page)
            path = data.get("next") if page else None  # absolute URL; keystoneauth uses it as is
        return items

    def get_nodegroup(self, cluster_id: str, ident: str) -> Optional[Dict[str, Any]]:
        """Full nodegroup view, or None on 404."""
        try:
            return self.request("GET", "/clusters/%s/nodegroups/%s" % (cluster_id, ident)).json()
        except MagnumNotFound:
            return None

    def create_nodegroup(self, cluster_id: str, body: Dict[str, Any]) -> Dict[str, Any]:
        before = self.retried
        try:
            return self.request("POST", "/clusters/%s/nodegroups" % cluster_id, body, ok=(200, 201, 202)).json()
        except MagnumConflict:
            if self.retried > before:
                # An earlier attempt reached the server after all: the nodegroup is ours.
                found = self.get_nodegroup(cluster_id, body["name"])
                if found is not None:
                    return found
            raise

    def patch_nodegroup(self, cluster_id: str, ident: str, ops: List[Dict[str, Any]]) -> Dict[str, Any]:
        return self.request("PATCH", "/clusters/%s/nodegroups/%s" % (cluster_id, ident), ops, ok=(200, 202)).json()

    def delete_nodegroup(self, cluster_id: str, ident: str) -> None:
        try:
            self.request("DELETE", "/clusters/%s/nodegroups/%s" % (cluster_id, ident), ok=(202, 204))
        except MagnumNotFound:
            pass  # gone already

    def resize(
        self, cluster_id: str, nodegroup: str, node_count: int, nodes_to_remove: Optional[Sequence[str]] = None
    ) -> Dict[str, Any]:
        body = {"node_count": node_count, "nodegroup": nodegroup}
        if nodes_to_remove:
            body["nodes_to_remove"] = list(nodes_to_remove)
        return self.request("POST", "/clusters/%s/actions/resize" % cluster_id, body, ok=(200, 202)).json()

    # ------------------------------------------------------------------------------ waiting
    def waiter(self, timeout: float, subject: Optional[str] = None) -> Waiter:
        """The one Waiter (plan/waiting.py): polls from poll_initial, growing by half up to poll_max.
        Clock and sleep are looked up at each call, so tests can replace them. With a subject, each status is
        a progress line (a line per change, a heartbeat every 5 s)."""

        def clock() -> float:
            return _clock()

        def pause(seconds: float) -> None:
            _sleep(seconds)

        return Waiter(
            timeout,
            sleep=self.poll_initial,
            backoff=1.5,
            max_sleep=max(self.poll_initial, self.poll_max),
            clock=clock,
            pause=pause,
            progress=(lambda status: self.progress.update(subject, status))
            if self.progress is not None and subject
            else None,
        )

    def wait(
        self,
        cluster_id: str,
        ident: str,
        expect: Dict[str, Any],
        timeout: float,
        what: str,
        initial_status: Optional[str] = None,
    ) -> Optional[Dict[str, Any]]:
        """Poll until ``expect`` (see openstack/magnum_wait.evaluate_wait) holds. Returns the nodegroup (None when
        gone) and logs each status change; raises OperationFailed on *_FAILED, WaitTimeout at the deadline."""
        start = _clock()
        state = {"seen_in_progress": False, "last": None, "ng": None}

        def probe() -> Tuple[bool, str]:
            if self.write_guard is not None:  # a run that lost its run lease stops waiting within a poll
                self.write_guard("waiting for %s" % what)
            ng = state["ng"] = self.get_nodegroup(cluster_id, ident)
            status = ng.get("status") if ng else None
            if status in IN_PROGRESS_STATES:
                state["seen_in_progress"] = True
            verdict, text = evaluate_wait(ng, expect, state["seen_in_progress"], initial_status)
            snapshot = (verdict, status, ng.get("node_count") if ng else None)
            if snapshot != state["last"]:
                state["last"] = snapshot
                self.log(
                    "%s: %s%s after %.1fs%s"
                    % (
                        what,
                        text,
                        " (%s nodes)" % ng.get("node_count") if ng else "",
                        _clock() - start,
                        " - done" if verdict == "done" else " - waiting" if verdict == "pending" else "",
                    )
                )
            if verdict == "failed":
                raise OperationFailed(
                    "%s ended in %s: %s. %s"
                    % (
                        what,
                        status,
                        ng.get("status_reason") or "Magnum gave no status_reason",
                        failed_hint(status),
                    ),
                    status=status,
                    detail=ng.get("status_reason"),
                )
            count = ng.get("node_count") if ng else None
            return verdict == "done", "%s%s" % (
                status or "not found",
                ", %s node(s)" % count if count is not None else "",
            )

        waited = self.waiter(timeout, subject=what).until(probe)
        if waited:
            if self.progress is not None:
                self.progress.done(what, waited.status)
            return state["ng"]
        ng = state["ng"]
        status = ng.get("status") if ng else None
        raise WaitTimeout(
            "Timed out after %ds waiting for %s: the last status was %s%s. Magnum may still finish it: "
            "run the task again later (it continues from the current state) or raise wait_timeout."
            % (
                timeout,
                what,
                status or "not found",
                " (%s)" % ng.get("status_reason") if ng and ng.get("status_reason") else "",
            ),
            status=status,
            detail=ng.get("status_reason") if ng else None,
        )

    def wait_settled(self, cluster_id: str, ident: str, timeout: float, what: str) -> Optional[Dict[str, Any]]:
        """Wait until a nodegroup is no longer *_IN_PROGRESS (None if it disappears)."""
        state = {"ng": None}

        def probe() -> Tuple[bool, str]:
            if self.write_guard is not None:  # a run that lost its run lease stops waiting within a poll
                self.write_guard("waiting for %s" % what)
            ng = state["ng"] = self.get_nodegroup(cluster_id, ident)
            if ng is None or ng.get("status") not in IN_PROGRESS_STATES:
                return True, "settled"
            self.log("%s is %s, waiting for it to settle before planning" % (what, ng.get("status")))
            return False, "%s (another operation), waiting for it to settle before planning" % ng.get("status")

        if self.waiter(timeout, subject=what).until(probe):
            return state["ng"]
        raise WaitTimeout(
            "Timed out after %ds waiting for %s to leave %s; run the task again later."
            % (timeout, what, state["ng"].get("status")),
            status=state["ng"].get("status"),
        )
