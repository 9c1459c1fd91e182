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

Each later step of the run only holds it (`hold`): it never takes it again. A lease that no longer names this run
(taken over by another run, deleted, released) means this run lost it, whatever happened since - another run may
have written meanwhile - so the step stops before its first write (`LeaseLost`). A lease past its expiry that still
names this run is renewed: nobody took it meanwhile (taking it writes another holder, releasing deletes it), so no
other run wrote. `renewed_at` is when, by this process's monotonic clock, the lease's life last started (before
the request that renewed it was sent, or the lease's own renewTime as read): the step's fence counts from there
(k8s/lease_keeper.py).

Times are the controller's clock (UTC) in the Lease's MicroTime format; a run's clock only has to agree
with another's within a fraction of the lease duration (30 s by default). Releasing deletes the Lease
with the resourceVersion as precondition, so a lease another run took over meanwhile is never deleted.
"""

from __future__ import annotations

import datetime
import time
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


class LeaseLost(K8sError):
    """This run no longer holds its run lease: the step stops before its next write."""


LOST_HINT = (
    "nothing is left that the next run cannot finish (the cordon ledger, the MIG rollout and a pending helm release "
    "are taken over): wait for the run that holds the lease, then run again"
)


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
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.namespace, self.name = client, namespace, name
        self.holder, self.duration, self.run = holder, int(duration), run or holder
        self.check_mode = check_mode
        self.clock = clock
        self.monotonic = monotonic
        # monotonic time the lease's life last started as this object saw it (before the write that renewed it, or
        # its renewTime as read at a step's start); None until it took, renewed or held it
        self.renewed_at: Optional[float] = None

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
            sent = self.monotonic()  # the lease lasts at most its duration from before the write is sent
            try:
                if lease is None:
                    self.client.request("POST", self._path(named=False), query={"fieldManager": "gpupool"}, body=body)
                else:
                    self.client.request("PUT", self._path(), query={"fieldManager": "gpupool"}, body=body)
            except Conflict:
                continue  # another run wrote it between our read and our write: read again
            self.renewed_at = sent
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
        """For each step of a run: fail unless this run holds the lease; renew it once a third of its duration has
        passed since the last renewal (so a no-op step costs one read, no write). Never takes it again: a lease held
        by another run raises LeaseHeld, one that names another (expired) holder or none (deleted, released) raises
        LeaseLost - this run had it and lost it, and another run may have written since. Check mode took nothing
        (run_lease wrote nothing), so there a free or expired lease is what a real run would take."""
        lease = self.read()
        now, mono = self.clock(), self.monotonic()
        state, left = state_of(lease, self.holder, now)
        if state == "held":
            message, hint = held_message(lease, self.namespace, self.name, left)
            raise LeaseHeld("this run lost its lease: " + message, _holder(lease), left, hint)
        if state != "mine":
            if self.check_mode:
                return self.acquire()
            raise LeaseLost(
                lost_message(self.namespace, self.name, lease) + "; it stopped before its first write",
                status=409,
                hint=LOST_HINT,
            )
        renewed = parse_time((lease.get("spec") or {}).get("renewTime")) or now
        age = max(0.0, (now - renewed).total_seconds())
        if age < self.duration / 3.0 or self.check_mode:
            # age: how long ago it was last renewed (the LeaseKeeper counts the lease's life from then)
            self.renewed_at = mono - age
            return {"action": "held", "holder": self.holder, "age": age}
        # old, or even past its expiry (this run was paused between two steps) but still naming this run: nobody
        # took it meanwhile, so renewing it is safe; a lease taken between our read and our write is not taken back
        return self.renew()

    def renew(self) -> Dict[str, Any]:
        """Renew a lease this run holds, or raise LeaseLost: never take it back once it is not ours any more."""
        for _attempt in range(3):
            current = self.read()
            now = self.clock()
            state, _left = state_of(current, self.holder, now)
            if state != "mine":
                raise LeaseLost(lost_message(self.namespace, self.name, current), status=409, hint=LOST_HINT)
            body = lease_body(self.name, self.namespace, self.holder, self.duration, now, self.run, current)
            sent = self.monotonic()
            try:
                self.client.request("PUT", self._path(), query={"fieldManager": "gpupool"}, body=body)
            except Conflict:
                continue  # written meanwhile (by whom, the next read says)
            self.renewed_at = sent
            return {"action": "renewed", "holder": self.holder, "renewed": microtime(now)}
        raise K8sError(
            "the run lease %s/%s kept changing while this run renewed it" % (self.namespace, self.name),
            hint="another run is taking it; this run stops before its next write",
        )

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


def lost_message(namespace: str, name: str, current: Optional[dict]) -> str:
    """This run lost its lease: to whom (the holder the lease names now), or that it is gone."""
    where = "%s/%s" % (namespace, name)
    if _holder(current):  # held or expired, another run's now either way
        return "this run lost its run lease %s to %s" % (where, _holder(current))
    return "this run's run lease %s was deleted or released (by the run that took it over, or by hand)" % where


def _holder(lease: Optional[dict]) -> Optional[str]:
    return ((lease or {}).get("spec") or {}).get("holderIdentity") if lease else None
