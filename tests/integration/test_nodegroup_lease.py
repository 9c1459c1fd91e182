"""The nodegroup step holds the run lease too (issue #24): against the Magnum emulator and a real kube-apiserver.

The step resizes and drains for minutes; before, it neither checked nor renewed the lease. Now it checks it before
its first Magnum request (a lease another run holds stops it with no Magnum write), renews it while it works, and
leaves the lease it holds to the playbook's release task.
"""

from __future__ import annotations

import datetime

from ansible_collections.gpupool.core.plugins.action import nodegroup
from tests.integration.test_nodegroup import inventory, magnum_writes, pool, run

NAMESPACE, NAME = "kube-system", "gpupool-run"


def now_microtime():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def put_lease(leases, holder, duration=600):
    from kubernetes import client

    try:
        leases.delete_namespaced_lease(NAME, NAMESPACE)
    except client.exceptions.ApiException as exc:
        assert exc.status == 404
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name=NAME, namespace=NAMESPACE),
        spec=client.V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=duration,
            acquire_time=now_microtime(),
            renew_time=now_microtime(),
        ),
    )
    leases.create_namespaced_lease(NAMESPACE, body)


def test_the_nodegroup_step_holds_the_run_lease_before_any_magnum_write(magnum_factory, control_plane):
    from kubernetes import client

    emu = magnum_factory(clusters=[{"name": "lease-test", "node_count": 1}], seed=5)
    leases = client.CoordinationV1Api(control_plane.api_client())
    cluster = inventory(
        emu, pool("gpu-leased", node_count=1), cluster="lease-test", kubeconfig=str(control_plane.kubeconfig)
    )
    lease = {"namespace": NAMESPACE, "name": NAME, "holder": "gpupool@test/mine", "duration": 60}

    try:
        put_lease(leases, "gpupool@other/theirs")  # another run holds it
        emu.clear_requests()
        refused = run(nodegroup, cluster=cluster, run_lease=lease)
        assert refused.get("failed"), refused
        folded = " ".join(refused["msg"].split())
        assert "another gpupool run holds the lease kube-system/gpupool-run: holder gpupool@other/theirs" in folded
        assert magnum_writes(emu) == []  # not one Magnum write
        assert leases.read_namespaced_lease(NAME, NAMESPACE).spec.holder_identity == "gpupool@other/theirs"

        put_lease(leases, lease["holder"], duration=60)  # this run holds it (run_lease took it)
        done = run(nodegroup, cluster=cluster, run_lease=lease)
        assert done["changed"] and "failed" not in done, done
        assert [m for m, _p in magnum_writes(emu)] == ["POST"]  # the nodegroup created
        after = leases.read_namespaced_lease(NAME, NAMESPACE)
        assert after.spec.holder_identity == lease["holder"]  # still held: the playbook's release task hands it back
    finally:  # the session's apiserver is shared: the next run must not meet this lease
        leases.delete_namespaced_lease(NAME, NAMESPACE)
