"""What differs between Kubernetes releases, met on the session's real kube-apiserver (1.37, or a release of the
compatibility matrix: `--k8s-version`/GPUPOOL_K8S_VERSION, `make test-compat`).

- DeviceClass extendedResourceName: 1.36 and 1.37 keep it; 1.34 and 1.35 drop it (DRAExtendedResource is alpha and
  off there); 1.32 and 1.33 do not have the field at all, and their server-side apply answers HTTP 500 "field not
  declared in schema".
  The device_class step asks once (a dry run), warns and publishes the classes without the field: never a retry,
  never "the API server is overloaded".
- A cluster that has not switched DRA on (1.32/1.33 started without the gate and runtime config) is refused by the
  first step before any write, with what it serves, what gpupool needs and what to switch on.
"""

from __future__ import annotations

import pytest

from tests.integration import k8s_helpers as h

pytestmark = [pytest.mark.controlplane, pytest.mark.dra_api]
ADMIN = "gpupool-admin"
PROBE = "gpupool-extended-resource-probe"


def run_step(module, **args):
    from tests.support.steps import run_action

    return run_action(module, **args)


def test_extended_resource_names_are_kept_or_left_out_with_a_warning(control_plane):
    from ansible_collections.gpupool.core.plugins.action import device_class

    cp, release = control_plane, control_plane.release
    pool = {
        "name": "rel-t4",
        "node_selector": {"rel": "t4"},
        "gpu": {"model": "T4"},
        "device_classes": {"extended_resource_names": True},
    }
    cluster = {"name": "rel", "kubeconfig": str(cp.kubeconfig), "pools": [pool]}
    try:
        mark = cp.audit.mark()
        result = run_step(device_class, cluster=cluster, pools=["rel-t4"])
        window = cp.audit.since(mark)
        assert not result.get("failed"), result.get("msg")
        assert result["api_version"] == "resource.k8s.io/" + release.resource_version
        assert result["extended_resource_names"] is release.extended_resource_name
        live = h.kubectl_json(cp, "get", "deviceclass", "rel-t4")
        assert live["spec"].get("extendedResourceName") == (
            "gpupool.io/rel-t4" if release.extended_resource_name else None
        )
        warnings = [w for w in result.get("warnings") or [] if "extendedResourceName" in w]
        if release.extended_resource_name:
            assert warnings == []
        else:
            assert warnings == [
                "the cluster does not keep DeviceClass extendedResourceName (Kubernetes before 1.34 lacks the field, "
                "1.34 and 1.35 have it behind the feature gate DRAExtendedResource); classes rel-t4 are published "
                "without it"
            ]
        # the support probe: one dry run, never retried (on 1.32/1.33 it is the 500 schema answer), never stored
        probes = window.select(verbs={"patch"}, user=ADMIN, name=PROBE, include_dry_run=True)
        codes = [e["responseStatus"]["code"] for e in probes]
        assert codes == [500] if release.minor in ("1.32", "1.33") else codes in ([200], [201]), codes
        assert window.writes(user=ADMIN, name=PROBE) == []
        assert h.writes(window) == [("patch", "deviceclasses", "rel-t4")]

        mark = cp.audit.mark()
        again = run_step(device_class, cluster=cluster, pools=["rel-t4"])
        assert not again.get("failed") and again["changed"] is False, again.get("msg")
        assert cp.audit.since(mark).writes(user=ADMIN) == []
    finally:
        cp.kubectl("delete", "deviceclass", "rel-t4", "--ignore-not-found")


def test_a_cluster_without_dra_is_refused_before_any_write(k8s_release):
    if not k8s_release.feature_gates:
        pytest.skip(
            "DRA is on by default on Kubernetes %s: a server without resource.k8s.io cannot be started there "
            "(kubernetes-dra-versions.md); the 1.32 and 1.33 runs of the matrix cover it" % k8s_release.minor
        )
    from ansible_collections.gpupool.core.plugins.action import node_pool
    from testbed.controlplane import ControlPlane

    cp = ControlPlane(dra=False).start()  # the session's release, as it comes: DRA not switched on
    try:
        assert cp.kubectl("get", "--raw", "/apis/resource.k8s.io", check=False).returncode != 0
        h.make_node(cp, "nodra-0", {"x": "t4"})
        pool = {"name": "nodra-t4", "node_selector": {"x": "t4"}, "gpu": {"model": "T4"}}
        cluster = {"name": "nodra", "kubeconfig": str(cp.kubeconfig), "pools": [pool]}
        mark = cp.audit.mark()
        result = run_step(node_pool, cluster=cluster)
        window = cp.audit.since(mark)
        assert result.get("failed"), result
        msg = " ".join(result["msg"].split())  # failures are wrapped at 200 characters a line
        assert all(len(line) <= 200 for line in result["msg"].splitlines())
        assert msg.startswith(
            "the API server at %s (Kubernetes %s) does not serve resource.k8s.io at all: gpupool needs Dynamic "
            "Resource Allocation, resource.k8s.io v1 or v1beta2 or v1beta1 (Kubernetes 1.32 or newer; supported and "
            "tested: 1.32-1.37); on Kubernetes %s switch DRA on with the feature gate DynamicResourceAllocation=true"
            % (cp.server, k8s_release.minor, k8s_release.minor)
        ), msg
        assert "--runtime-config=resource.k8s.io/v1beta1=true" in msg and msg.endswith("nothing was changed")
        assert window.writes(user=ADMIN) == []
        assert "gpupool.io/pool" not in h.core(cp).read_node("nodra-0").metadata.labels
    finally:
        cp.stop()
