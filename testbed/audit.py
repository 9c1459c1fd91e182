"""Read the kube-apiserver audit log: what requests hit the server between two points in time.

Used by tests ("a no-op converge writes nothing", "check mode writes nothing") and benchmarks:

    mark = cp.audit.mark()
    ...do something...
    window = cp.audit.since(mark)
    assert window.writes(user="gpupool-test") == []

A mark is a byte offset into the JSON-lines log. The apiserver runs with --audit-log-mode=blocking,
so an event is written to the file before the request proceeds; the RequestReceived event of a
request the client has seen answered is therefore always on disk. Its ResponseComplete event is
written just after the response body, so `since()` waits (briefly) until every non-long-running
request received in the window has completed before it returns.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
LONG_RUNNING_VERBS = frozenset({"watch"})


@dataclass(frozen=True)
class Mark:
    offset: int


class Window:
    """The requests received after a mark, one ResponseComplete event each."""

    def __init__(self, events: list[dict]):
        self.events = events  # every audit event in the window, all stages
        received = {e["auditID"] for e in events if e.get("stage") == "RequestReceived"}
        self.requests = [e for e in events if e.get("stage") == "ResponseComplete" and e["auditID"] in received]

    def select(
        self, *, verbs=None, user=None, resource=None, namespace=None, name=None, include_dry_run=False
    ) -> list[dict]:
        out = []
        for e in self.requests:
            ref = e.get("objectRef") or {}
            if verbs is not None and e.get("verb") not in verbs:
                continue
            if user is not None and e.get("user", {}).get("username") != user:
                continue
            if resource is not None and ref.get("resource") != resource:
                continue
            if namespace is not None and ref.get("namespace") != namespace:
                continue
            if name is not None and ref.get("name") != name:
                continue
            # Server-side dry-run goes through admission but persists nothing: not a write.
            if not include_dry_run and is_dry_run(e):
                continue
            out.append(e)
        return out

    def writes(self, **filters) -> list[dict]:
        """Mutating requests (create/update/patch/delete/deletecollection), failed ones included."""
        return self.select(verbs=WRITE_VERBS, **filters)

    def counts(self, **filters) -> Counter:
        """Counter keyed by (verb, resource, user) - for reports and benchmarks."""
        return Counter(
            (e.get("verb"), (e.get("objectRef") or {}).get("resource"), e.get("user", {}).get("username"))
            for e in self.select(**filters)
        )


def is_dry_run(event) -> bool:
    """Whether the server treated the request as a dry run.

    A DELETE that carries a DeleteOptions body takes dryRun from the body and
    ignores the URI's ?dryRun= (found the hard way); deletes are logged at
    Request level so the body is here to read.
    """
    body = event.get("requestObject")
    if event.get("verb") in ("delete", "deletecollection") and isinstance(body, dict):
        return "All" in (body.get("dryRun") or [])
    return "dryRun=" in event.get("requestURI", "")


class AuditLog:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def mark(self) -> Mark:
        try:
            return Mark(self.path.stat().st_size)
        except FileNotFoundError:
            return Mark(0)

    def _read(self, offset: int) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return []
        data = data[: data.rfind(b"\n") + 1]  # a line still being written is not an event yet
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def since(self, mark: Mark, settle_timeout: float = 5.0) -> Window:
        deadline = time.monotonic() + settle_timeout
        while True:
            events = self._read(mark.offset)
            if not _in_flight(events) or time.monotonic() > deadline:
                return Window(events)
            time.sleep(0.02)


def _in_flight(events: list[dict]) -> set[str]:
    """auditIDs received but not yet completed, ignoring watches and other streaming requests."""
    pending, done = set(), set()
    for e in events:
        stage = e.get("stage")
        if stage == "RequestReceived" and e.get("verb") not in LONG_RUNNING_VERBS:
            pending.add(e["auditID"])
        elif stage in ("ResponseComplete", "ResponseStarted", "Panic"):
            done.add(e["auditID"])
    return pending - done
