"""`make demo`'s tenant pod (testbed/demo_tenant.py) when the scheduler can NOT serve it: the demo reports the
scheduler's own reason instead of a device. (The served case runs in test_demo.py, on the converged example.)

The pod's ResourceClaim is made by the real resourceclaim controller from a template over a DeviceClass that
matches no published device; the real kube-scheduler leaves the pod Pending and says why in PodScheduled.
"""

from __future__ import annotations

import uuid

import pytest

from testbed import demo_tenant, dra_api
from testbed.simulator_client import Kube
from tests.integration import k8s_helpers as h

# Version sensitive (resource.k8s.io claims and slices, v1beta1 on 1.32): run on every release of the matrix.
pytestmark = [pytest.mark.sandbox, pytest.mark.dra_api]


wait_for = h.wait_for


@pytest.fixture
def tenant(sandbox):
    """A tenant namespace with a ResourceClaimTemplate over a DeviceClass no device matches."""
    kube = Kube(sandbox.kubeconfig, "test-demo-tenant")
    version = dra_api.served_version(kube)
    tag = uuid.uuid4().hex[:6]
    namespace, device_class = "tenant-%s" % tag, "nothing-%s" % tag
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    kube.create(
        dra_api.path(version, "deviceclasses"),
        {
            "apiVersion": "%s/%s" % (dra_api.GROUP, version),
            "kind": "DeviceClass",
            "metadata": {"name": device_class},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nobody.example.com"'}}]},
        },
    )
    template = {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-nothing", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}},
    }
    kube.create(dra_api.path(version, "resourceclaimtemplates", namespace), dra_api.claim_to(version, template))
    # The pod's ServiceAccount admission needs the namespace's default ServiceAccount (the real controller's).
    wait_for(
        "the default ServiceAccount", lambda: kube.get("/api/v1/namespaces/%s/serviceaccounts/default" % namespace)
    )
    yield kube, namespace, "one-nothing"
    kube.delete("/api/v1/namespaces/" + namespace)
    kube.delete(dra_api.path(version, "deviceclasses", name=device_class))


def test_a_pod_the_scheduler_cannot_serve_is_reported_with_the_schedulers_reason(tenant):
    kube, namespace, template = tenant
    demo_tenant.create_pod(kube, demo_tenant.pod_manifest("demo-pending", namespace, template))

    def verdict():
        # Before the resourceclaim controller made the claim the scheduler says it waits for it; the verdict on the
        # claim itself is the DynamicResources plugin's "cannot allocate all claims".
        pod = kube.get("/api/v1/namespaces/%s/pods/demo-pending" % namespace)
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and "cannot allocate all claims" in cond.get("message", ""):
                return cond

    cond = wait_for("the scheduler's verdict on the pod's claim", verdict)
    with pytest.raises(demo_tenant.StillPending) as caught:
        demo_tenant.wait_for_allocation(kube, namespace, "demo-pending", timeout=0)
    assert str(caught.value) == "pod %s/demo-pending still Pending after 0s: PodScheduled=%s, %s: %s" % (
        namespace,
        cond["status"],
        cond["reason"],
        cond["message"],
    )
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    # The claim came from the template through the resourceclaim controller, and nothing allocated it.
    pod = kube.get("/api/v1/namespaces/%s/pods/demo-pending" % namespace)
    (status,) = pod["status"]["resourceClaimStatuses"]
    version = dra_api.served_version(kube)
    claim = kube.get(dra_api.path(version, "resourceclaims", namespace, status["resourceClaimName"]))
    assert claim["metadata"]["ownerReferences"][0]["name"] == "demo-pending"
    assert not (claim.get("status") or {}).get("allocation")
