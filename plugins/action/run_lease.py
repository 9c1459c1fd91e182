# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.run_lease, run in the controller (its documentation: plugins/modules/run_lease.py)."""

from __future__ import annotations

import socket
import uuid

from ansible_collections.gpupool.core.plugins.module_utils.k8s import private_dir
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import LeaseHeld, RunLease, microtime, utc_now
from ansible_collections.gpupool.core.plugins.module_utils.k8s.run_view import RunView
from ansible_collections.gpupool.core.plugins.module_utils.k8s.support import server_warning
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.run_cluster import RunCluster
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction


def default_holder():
    return "gpupool@%s/%s" % (socket.gethostname(), uuid.uuid4().hex[:8])


class RunLeaseModule(KubernetesModule):
    argument_spec = dict(
        state=dict(type="str", choices=["acquired", "released"], default="acquired"),
        name=dict(type="str", default="gpupool-run"),
        namespace=dict(type="str", default="kube-system"),
        holder=dict(type="str"),
        duration=dict(type="int", default=30),
        wait=dict(type="int", default=0),
        wait_sleep=dict(type="float", default=5.0),
    )

    def prepare(self):
        super().prepare()
        if self.params["state"] == "released" and not self.params["holder"]:
            raise GpupoolError(
                "state=released needs the holder that took the lease: pass holder, the holder value "
                "the acquiring task returned"
            )
        self.params["holder"] = self.params["holder"] or default_holder()
        self.params["run_lease"] = None  # this module handles the lease itself

    def run(self):
        p = self.params
        lease = RunLease(
            self.client,
            p["namespace"],
            p["name"],
            p["holder"],
            p["duration"],
            run="started %s by cluster %s" % (microtime(utc_now()), self.cluster.name),
            check_mode=self.check_mode,
        )
        if p["state"] == "released":
            out = lease.release()
            RunView(self.client.host, p["holder"]).forget()  # the run is over: its lists go with it
            RunCluster(p["holder"]).forget()  # and its inventory verdicts
            return dict(out, changed=out["action"] == "released")
        outcome = {}

        def probe():
            try:
                outcome.update(lease.acquire())
                return True, "taken"
            except LeaseHeld as exc:
                outcome["held"] = exc
                return False, exc.message

        result = self.wait_for(
            "run lease %s/%s" % (p["namespace"], p["name"]), probe, max(0, p["wait"]), p["wait_sleep"]
        )
        if not result.done:
            raise outcome["held"]
        outcome.pop("held", None)
        RunCluster(p["holder"]).record(p["cluster"])  # checked in prepare(): the run's later steps need not again
        private_dir.sweep()  # credential files a killed run left (k8s/private_dir.py) go as the next run starts
        # once per run: the step that takes the lease says it, the steps under the lease do not
        newer = server_warning(self.client)
        if newer:
            self.warn(newer)
        return dict(
            outcome,
            changed=outcome["action"] in ("created", "taken"),
            waited=round(result.elapsed, 1),
            lease={"name": p["name"], "namespace": p["namespace"], "holder": p["holder"], "duration": p["duration"]},
        )


class ActionModule(StepAction):
    step = RunLeaseModule
