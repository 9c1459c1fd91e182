# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One gpupool run at a time per cluster: a coordination.k8s.io Lease owned by gpupool.

Two runs of playbooks/site.yml on one cluster (an AWX job launched twice, two operators) would roll the
same MIG waves and fight over the same objects. The run takes a Lease first (default
``kube-system/gpupool-run``), renews it between steps and deletes it at the end:

* free (absent), released, or expired (``renewTime + leaseDurationSeconds`` in the past: a run that was
  killed never renews it) -> taken, with a write that carries the resourceVersion it was read at, so of two
  runs taking it at the same moment exactly one wins (the other gets 409, reads again, finds it held);
* held by this run (same holderIdentity) -> renewed (renewTime now);
* held by another run and not expired -> `LeaseHeld`, a sentence naming the holder, when it was taken and
  renewed, and when it expires by itself; the caller may wait and try again.

Times are the controller's clock (UTC) in the Lease's MicroTime format; a run's clock only has to agree
with another's within a fraction of the lease duration (minutes by default). Releasing deletes the Lease
with the resourceVersion as precondition, so a lease another run took over meanwhile is never deleted.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.model.names import MANAGED_BY

GROUP, VERSION, PLURAL = "coordination.k8s.io", "v1", "leases"
MICROTIME = "%Y-%m-%dT%H:%M:%S.%fZ"
RUN_ANNOTATION = "gpupool.io/run"  # who started the holding run, in words, for `kubectl describe lease`


class LeaseHeld(K8sError):
    """Another run holds the lease and it has not expired."""

    def __init__(self, message: str, holder: str, expires_in: float, hint: str = "") -> None:
        super().__init__(message, status=409, hint=hint)
        self.holder = holder
        self.expires_in = expires_in


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def microtime(when: datetime.datetime) -> str:
    return when.astimezone(datetime.timezone.utc).strftime(MICROTIME)


def parse_time(text: Optional[str]) -> Optional[datetime.datetime]:
    if not text:
        return None
    for fmt in (MICROTIME, "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            continue
    return None


def state_of(lease: Optional[dict], holder: str, now: datetime.datetime) -> Tuple[str, float]:
    """("free" | "mine" | "expired" | "held", seconds until it expires) of a Lease as read at `now`."""
    if lease is None:
        return "free", 0.0
    spec = lease.get("spec") or {}
    current = spec.get("holderIdentity")
    if not current:
        return "free", 0.0
    if current == holder:
        return "mine", 0.0
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = float(spec.get("leaseDurationSeconds") or 0)
    if renewed is None:
        return "expired", 0.0
    left = (renewed - now).total_seconds() + duration
    return ("held", left) if left > 0 else ("expired", 0.0)


def lease_body(
    name: str,
    namespace: str,
    holder: str,
    duration: int,
    now: datetime.datetime,
    run: str,
    previous: Optional[dict] = None,
) -> dict:
    """The Lease as this run holds it (a renewal keeps its acquireTime and resourceVersion precondition)."""
    prev_spec = (previous or {}).get("spec") or {}
    renewing = prev_spec.get("holderIdentity") == holder
    meta: Dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": dict(MANAGED_BY),
        "annotations": {RUN_ANNOTATION: run},
    }
    if previous is not None:
        meta["resourceVersion"] = previous["metadata"]["resourceVersion"]
    transitions = int(prev_spec.get("leaseTransitions") or 0) + (0 if renewing or previous is None else 1)
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(duration),
            "acquireTime": prev_spec.get("acquireTime") if renewing else microtime(now),
            "renewTime": microtime(now),
            "leaseTransitions": transitions,
        },
    }


def held_message(lease: dict, namespace: str, name: str, expires_in: float) -> Tuple[str, str]:
    spec = lease.get("spec") or {}
    run = ((lease.get("metadata") or {}).get("annotations") or {}).get(RUN_ANNOTATION)
    message = (
        "another gpupool run holds the lease %s/%s: holder %s%s, taken %s, last renewed %s; it expires by itself "
        "in %ds if that run stops renewing it"
        % (
            namespace,
            name,
            spec.get("holderIdentity"),
            " (%s)" % run if run else "",
            spec.get("acquireTime") or "?",
            spec.get("renewTime") or "?",
            int(expires_in),
        )
    )
    hint = (
        "wait for that run to finish and run again (or give lease_wait seconds to wait for it); if that run was "
        "killed, the lease expires on its own, or delete it once you are sure no run is active: kubectl -n %s "
        "delete lease %s" % (namespace, name)
    )
    return message, hint


class RunLease:
    """Take, renew and release one Lease through a K8sClient (see the module docstring)."""

    def __init__(
        self,
        client,
        namespace: str,
        name: str,
        holder: str,
        duration: int,
        run: str = "",
        check_mode: bool = False,
        clock: Callable[[], datetime.datetime] = utc_now,
    ) -> None:
        self.client, self.namespace, self.name = client, namespace, name
        self.holder, self.duration, self.run = holder, int(duration), run or holder
        self.check_mode = check_mode
        self.clock = clock

    def _path(self, named: bool = True) -> str:
        return self.client.path(GROUP, VERSION, PLURAL, self.namespace, self.name if named else None)

    def read(self) -> Optional[dict]:
        try:
            return self.client.request("GET", self._path())
        except NotFound:
            return None

    def acquire(self, attempts: int = 5) -> Dict[str, Any]:
        """Take or renew the lease; returns {"action": created|taken|renewed|would take, ...}. Raises LeaseHeld."""
        for _attempt in range(attempts):
            lease = self.read()
            now = self.clock()
            state, left = state_of(lease, self.holder, now)
            if state == "held":
                message, hint = held_message(lease, self.namespace, self.name, left)
                raise LeaseHeld(message, (lease.get("spec") or {}).get("holderIdentity"), left, hint)
            action = {"free": "created" if lease is None else "taken", "expired": "taken", "mine": "renewed"}[state]
            if self.check_mode:  # check mode never writes: say what a real run would do
                return {"action": "would be " + action, "holder": self.holder, "previous": _holder(lease)}
            body = lease_body(self.name, self.namespace, self.holder, self.duration, now, self.run, lease)
            try:
                if lease is None:
                    self.client.request("POST", self._path(named=False), query={"fieldManager": "gpupool"}, body=body)
                else:
                    self.client.request("PUT", self._path(), query={"fieldManager": "gpupool"}, body=body)
            except Conflict:
                continue  # another run wrote it between our read and our write: read again
            return {
                "action": action,
                "holder": self.holder,
                "previous": _holder(lease),
                "expires": microtime(now + datetime.timedelta(seconds=self.duration)),
            }
        raise K8sError(
            "the lease %s/%s kept changing while gpupool tried to take it (%d attempts)"
            % (self.namespace, self.name, attempts),
            hint="another run is taking it; run again later",
        )

    def hold(self) -> Dict[str, Any]:
        """For each step of a run: fail (LeaseHeld) unless this run holds the lease; renew it once a third of its
        duration has passed since the last renewal (so a no-op step costs one read, no write)."""
        lease = self.read()
        now = self.clock()
        state, left = state_of(lease, self.holder, now)
        if state != "mine":
            if state == "held":
                message, hint = held_message(lease, self.namespace, self.name, left)
                raise LeaseHeld("this run lost its lease: " + message, _holder(lease), left, hint)
            # free or expired: this run's lease was deleted or ran out meanwhile; take it again if nobody has
            return self.acquire()
        renewed = parse_time((lease.get("spec") or {}).get("renewTime")) or now
        if (now - renewed).total_seconds() < self.duration / 3.0 or self.check_mode:
            # age: how long ago it was last renewed (the LeaseKeeper counts the lease's life from then)
            return {"action": "held", "holder": self.holder, "age": max(0.0, (now - renewed).total_seconds())}
        return self.acquire()

    def release(self) -> Dict[str, Any]:
        """Delete the lease if this run holds it (a lease another run took over is left alone)."""
        lease = self.read()
        if _holder(lease) != self.holder:
            return {"action": "not held", "holder": _holder(lease)}
        if self.check_mode:
            return {"action": "would be released", "holder": self.holder}
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"resourceVersion": lease["metadata"]["resourceVersion"]},
        }
        try:
            self.client.request("DELETE", self._path(), body=body)
        except (NotFound, Conflict):
            return {"action": "not held", "holder": _holder(self.read())}
        return {"action": "released", "holder": self.holder}


def _holder(lease: Optional[dict]) -> Optional[str]:
    return ((lease or {}).get("spec") or {}).get("holderIdentity") if lease else None
