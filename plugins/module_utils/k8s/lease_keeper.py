# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run lease kept alive while a step runs, and every write stopped once it is lost.

A step that writes (a MIG wave, a drain, a Magnum shrink, a helm upgrade) can run longer than the lease
(k8s/lease.py): renewing it only when a step starts let a second run take it over while the first was still
writing. As client-go's leader election does, a `LeaseKeeper` renews the lease in the background, a third of
its duration apart, and the holder stops working the moment it is lost:

* renewed: the Lease still names this run as holder; it is written again with the resourceVersion it was read
  at, so a run that took it over meanwhile is never overwritten;
* lost: another holder took it, or it was deleted or released (this run must not take it back: another run may
  have held it meanwhile), or renewals failed (the API server unreachable) until the lease would expire by
  itself. A lease past its expiry that still names this run is renewed, as client-go does: nobody held it
  meanwhile, since taking it over writes another holder and releasing it deletes it;
* after a loss, `check()` raises `LeaseLost` before the step's next write: every write goes through it
  (K8sClient.request, the Magnum client, helm), and so does every wait between two probes. What was written
  before is a state the next run finishes (the cordon ledger, the MIG rollout, a pending helm release).

The keeper renews through its own K8sClient over the step client's connection pool (urllib3's pool is
thread-safe; the client's retry state and run view are not shared).
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Callable, Dict, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import Conflict, K8sClient, K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import (
    RunLease,
    _holder,
    lease_body,
    microtime,
    state_of,
)


class LeaseLost(K8sError):
    """This run no longer holds its run lease: the step stops before its next write."""


def renew(lease: RunLease) -> Dict[str, Any]:
    """Renew a lease this run holds, or raise LeaseLost: never take it back once it is not ours any more."""
    for _attempt in range(3):
        try:
            current = lease.client.request("GET", lease._path())
        except NotFound:
            current = None
        now = lease.clock()
        state, _left = state_of(current, lease.holder, now)
        if state != "mine":
            raise LeaseLost(lost_message(lease, current, state), status=409)
        body = lease_body(lease.name, lease.namespace, lease.holder, lease.duration, now, lease.run, current)
        try:
            lease.client.request("PUT", lease._path(), query={"fieldManager": "gpupool"}, body=body)
        except Conflict:
            continue  # written meanwhile (by whom, the next read says)
        return {"action": "renewed", "renewed": microtime(now)}
    raise K8sError(
        "the run lease %s/%s kept changing while this run renewed it" % (lease.namespace, lease.name),
        hint="another run is taking it; this run stops before its next write",
    )


def lost_message(lease: RunLease, current: Optional[dict], state: str) -> str:
    where = "%s/%s" % (lease.namespace, lease.name)
    if _holder(current):  # held or expired, another run's now either way
        return "this run lost its run lease %s to %s" % (where, _holder(current))
    return "this run's run lease %s was deleted or released" % where


class LeaseKeeper:
    """Renews `lease` every `interval` seconds in a daemon thread; `check()` raises once the lease is lost."""

    def __init__(
        self,
        lease: RunLease,
        interval: Optional[float] = None,
        monotonic: Callable[[], float] = time.monotonic,
        renew_once: Callable[[RunLease], Any] = renew,
        age: float = 0.0,
    ) -> None:
        self.lease = lease
        self.interval = float(interval if interval is not None else max(1.0, lease.duration / 3.0))
        self._monotonic = monotonic
        self._renew = renew_once
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        # the step checked (and renewed when old) the lease just before; `age` ago is when it was last renewed
        self._last_renewed = monotonic() - max(0.0, float(age))
        self.renewals = 0
        self.lost: Optional[str] = None
        self.lost_at: Optional[str] = None
        self.last_error: Optional[str] = None

    # ---- the thread --------------------------------------------------------------------------------
    def start(self) -> "LeaseKeeper":
        self._thread = threading.Thread(target=self._loop, name="gpupool-lease-keeper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval) and self.lost is None:
            self.renew_now()

    def renew_now(self) -> None:
        """One renewal; a loss is remembered for `check()`. A failure that is not a loss (the API server did not
        answer) becomes a loss only once the lease would have expired since the last renewal."""
        if self.lost is not None:
            return
        started = self._monotonic()  # before the renewTime it writes: the lease lasts at most duration from here
        try:
            self._renew(self.lease)
        except LeaseLost as exc:
            self._lose(exc.message)
            return
        except (K8sError, OSError) as exc:
            self.last_error = getattr(exc, "message", None) or str(exc)
            if self._monotonic() - self._last_renewed >= self.lease.duration:
                self._lose(
                    "this run could not renew its run lease %s/%s for %ds (last error: %s); it may have expired and "
                    "been taken" % (self.lease.namespace, self.lease.name, self.lease.duration, self.last_error)
                )
            return
        self.renewals += 1
        self.last_error = None
        self._last_renewed = started

    def _lose(self, why: str) -> None:
        self.lost = why
        self.lost_at = microtime(datetime.datetime.now(datetime.timezone.utc))

    # ---- what the step calls -------------------------------------------------------------------------
    def check(self, what: str = "") -> None:
        """Before a write (or between two looks of a wait): raise LeaseLost once the lease is lost."""
        if self.lost is None and self._monotonic() - self._last_renewed >= self.lease.duration:
            # the renewal thread is late or its request hangs: the lease may have expired and been taken already
            self._lose(
                "this run's run lease %s/%s went unrenewed for %ds (last error: %s); it may have expired and been "
                "taken" % (self.lease.namespace, self.lease.name, self.lease.duration, self.last_error or "none")
            )
        if self.lost is None:
            return
        raise LeaseLost(
            "%s (noticed %s); it stopped before %s" % (self.lost, self.lost_at, what or "its next write"),
            status=409,
            hint="nothing is left that the next run cannot finish (the cordon ledger, the MIG rollout and a pending "
            "helm release are taken over): wait for the run that holds the lease, then run again",
        )


def keeper_client(client: K8sClient) -> K8sClient:
    """A K8sClient for the renewal thread: the same connection pool and credentials, its own retry state and no
    run view (a renewal must not touch the step's lists); few retries, since the next renewal comes soon."""
    return K8sClient(client.api, client.cfg, timeout=min(client.timeout, 10.0), retries=2, source=client.source)
