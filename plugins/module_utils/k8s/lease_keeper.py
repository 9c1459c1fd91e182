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
  before is a state the next run finishes (the cordon ledger, the MIG rollout, a pending helm release);
* the fence: `check()` also refuses once a whole duration has passed, by this process's monotonic clock, since the
  last renewal that reached the server (counted from before its request was sent; at a step's start, from the
  renewTime RunLease.hold read or the renewal it sent). A paused process (SIGSTOP, a frozen VM) resumes into a
  refusal before its renewal thread has said anything, and the check costs no request. Between two steps no
  thread of the run lives (each step is a worker process of its own): the next step's `hold` reads the lease.

The keeper renews through its own K8sClient over the step client's connection pool (urllib3's pool is
thread-safe; the client's retry state and run view are not shared).
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Callable, Dict, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sClient, K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import (  # noqa: F401 (LeaseLost: raised here)
    LOST_HINT,
    LeaseLost,
    RunLease,
    microtime,
)

RETRY_PERIOD = 2.0  # after a failed renewal, the next try comes this soon (client-go's retry period), not a third later


def renew(lease: RunLease) -> Dict[str, Any]:
    """Renew a lease this run holds, or raise LeaseLost: never take it back once it is not ours any more."""
    return lease.renew()


class LeaseKeeper:
    """Renews `lease` every `interval` seconds in a daemon thread; `check()` raises once the lease is lost."""

    def __init__(
        self,
        lease: RunLease,
        interval: Optional[float] = None,
        monotonic: Callable[[], float] = time.monotonic,
        renew_once: Callable[[RunLease], Any] = renew,
        age: float = 0.0,
        renewed_at: Optional[float] = None,
    ) -> None:
        self.lease = lease
        self.interval = float(interval if interval is not None else max(1.0, lease.duration / 3.0))
        self._monotonic = monotonic
        self._renew = renew_once
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.retry_period = min(self.interval, RETRY_PERIOD)
        # The step checked (and renewed when old) the lease just before (RunLease.hold): its life counts from
        # `renewed_at` (that RunLease's monotonic time), or from `age` seconds ago. The fence (`check`) counts from here.
        if renewed_at is not None:
            self._last_renewed = float(renewed_at)
        else:
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
        wait = self.interval
        while not self._stop.wait(wait) and self.lost is None:
            # a failed renewal is tried again soon: an API server hiccup shorter than the lease's remaining life is
            # ridden out (a 30 s lease renewed every 10 s survives an outage of about 20 s)
            wait = self.interval if self.renew_now() else self.retry_period

    def renew_now(self) -> bool:
        """One renewal (True when it reached the server); a loss is remembered for `check()`. A failure that is not a
        loss (the API server did not answer) becomes a loss only once the lease would have expired since the last
        renewal."""
        if self.lost is not None:
            return False
        started = self._monotonic()  # before the renewTime it writes: the lease lasts at most duration from here
        try:
            self._renew(self.lease)
        except LeaseLost as exc:
            self._lose(exc.message)
            return False
        except (K8sError, OSError) as exc:
            self.last_error = getattr(exc, "message", None) or str(exc)
            if self._monotonic() - self._last_renewed >= self.lease.duration:
                self._lose(
                    "this run could not renew its run lease %s/%s for %ds (last error: %s); it may have expired and "
                    "been taken" % (self.lease.namespace, self.lease.name, self.lease.duration, self.last_error)
                )
            return False
        self.renewals += 1
        self.last_error = None
        self._last_renewed = started
        return True

    def _lose(self, why: str) -> None:
        self.lost = why
        self.lost_at = microtime(datetime.datetime.now(datetime.timezone.utc))

    # ---- what the step calls -------------------------------------------------------------------------
    def deadline(self) -> float:
        """The monotonic time from which this run no longer holds its lease unless a renewal reaches the server."""
        return self._last_renewed + self.lease.duration

    def check(self, what: str = "") -> None:
        """The fence, before every write (and between two looks of a wait): raise LeaseLost once the lease is lost,
        or once a whole duration has passed since the last renewal that reached the server (counted from before its
        request was sent, by this process's monotonic clock: a process paused by SIGSTOP, a frozen VM or a long GC
        pause finds its lease gone here, whatever its renewal thread did not get to say). Costs no request."""
        if self.lost is None and self._monotonic() >= self.deadline():
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
            hint=LOST_HINT,
        )


def keeper_client(client: K8sClient) -> K8sClient:
    """A K8sClient for the renewal thread: the same connection pool and credentials, its own retry state and no
    run view (a renewal must not touch the step's lists); few retries, since the next renewal comes soon."""
    return K8sClient(client.api, client.cfg, timeout=min(client.timeout, 10.0), retries=2, source=client.source)
