# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ComputeDomains gpupool.core.compute_domain converged, waited for until the DRA driver's compute-domain
controller says they are Ready: one GET per ComputeDomain and look, through the one waiter (plan/waiting.py,
handed in as the step's `wait_for`, which says what it waits for)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import COMPUTE_DOMAIN


def compute_domain_status(obj: Optional[dict]) -> Optional[str]:
    """status.status of a ComputeDomain as the driver's controller writes it (Ready, NotReady), None before that."""
    return ((obj or {}).get("status") or {}).get("status")


def wait_ready(
    engine: Any, results: List[Any], wait_for: Callable[..., Any], timeout: float, sleep: float
) -> List[str]:
    """Wait until every ComputeDomain of `results` (apply-engine Results; deleted and failed ones left out) is Ready;
    each Result's `object` is the ComputeDomain as last read. Returns the wait's log; raises GpupoolError with what
    to check when the wait timed out."""
    pending = [r for r in results if r.action not in ("deleted", "failed")]
    waiting: List[Any] = []

    def probe():
        waiting[:] = []
        for r in pending:
            r.object = engine.get(COMPUTE_DOMAIN, r.name, r.namespace)
            if compute_domain_status(r.object) != "Ready":
                waiting.append(r)
        status = "%d/%d ComputeDomain(s) Ready" % (len(pending) - len(waiting), len(pending))
        if waiting:
            status += "; waiting for " + ", ".join(
                "%s/%s (%s)" % (r.namespace, r.name, compute_domain_status(r.object) or "no status") for r in waiting
            )
        return not waiting, status

    result = wait_for("ComputeDomains", probe, timeout, sleep)
    if not result.done:
        raise GpupoolError(
            "%d ComputeDomain(s) not Ready after %ds: %s. Check the DRA driver's compute-domain controller and the "
            "IMEX daemon pods in its namespace (kubectl get computedomain -A, kubectl -n <driver namespace> get pods)"
            % (
                len(waiting),
                timeout,
                ", ".join(
                    "%s/%s (status %s)" % (r.namespace, r.name, compute_domain_status(r.object) or "unset")
                    for r in waiting
                ),
            ),
            wait_log=result.log,
        )
    return result.log
