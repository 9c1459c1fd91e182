"""The supported Kubernetes range (k8s/support.py): the version gpupool speaks, or one sentence that says what the
cluster serves, what gpupool needs and what to switch on for that release. A real 1.32/1.33 server without DRA meets
it end to end in tests/integration/test_k8s_releases.py."""

from __future__ import annotations

import inspect

import pytest

from ansible_collections.gpupool.core.plugins.action import run_lease
from ansible_collections.gpupool.core.plugins.module_utils import module
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError, NotFound
from ansible_collections.gpupool.core.plugins.module_utils.k8s.support import (
    UnsupportedCluster,
    check_cluster,
    newer_than_tested,
    server_warning,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import LINE_LIMIT
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import run_step


class Cluster:
    """What check_cluster asks: the served versions of a group, the server's /version."""

    def __init__(self, served, git_version=None):
        self.host = "https://api.example:6443"
        self.served = list(served)
        self.git_version = git_version
        self.asked = []

    def group_versions(self, group):
        self.asked.append(group)
        return self.served

    def server_version(self):
        if self.git_version is None:
            raise K8sError("GET /version: 403 forbidden", status=403)
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {"major": major, "minor": minor, "gitVersion": self.git_version}


@pytest.mark.parametrize(
    "served, speaks",
    [
        (["v1", "v1beta2", "v1beta1"], "v1"),
        (["v1beta2", "v1beta1"], "v1beta2"),  # 1.33
        (["v1beta1", "v1alpha3"], "v1beta1"),  # 1.32 with DRA on
    ],
)
def test_a_cluster_in_range_gets_the_newest_version_it_serves(served, speaks):
    cluster = Cluster(served, git_version=None)
    assert check_cluster(cluster) == speaks
    assert cluster.asked == ["resource.k8s.io"]  # /version is read only to explain a refusal


def test_1_32_without_dra_is_told_the_gate_and_the_runtime_config():
    with pytest.raises(UnsupportedCluster) as err:
        check_cluster(Cluster([], "v1.32.13"))
    text = err.value.describe()
    assert text == (
        "the API server at https://api.example:6443 (Kubernetes 1.32) does not serve resource.k8s.io at all: gpupool "
        "needs Dynamic Resource Allocation, resource.k8s.io v1 or v1beta2 or v1beta1 (Kubernetes 1.32 or newer; "
        "supported and tested: 1.32-1.37); on Kubernetes 1.32 switch DRA on with the feature gate "
        "DynamicResourceAllocation=true on kube-apiserver, kube-controller-manager, kube-scheduler and every kubelet, "
        "and on kube-apiserver --runtime-config=resource.k8s.io/v1beta1=true; nothing was changed"
    )
    # what the step says (the module base wraps every failed step's message): no line over 200 characters
    msg = run_step(type("Step", (GpupoolModule,), {"run": lambda self: check_cluster(Cluster([], "v1.32.13"))}), {})[
        "msg"
    ]
    assert max(len(line) for line in msg.splitlines()) <= LINE_LIMIT, msg
    assert msg.replace("\n  ", " ") == text


@pytest.mark.parametrize(
    "git_version, warns",
    [("v1.37.2", False), ("v1.32.13", False), ("v1.38.0", True), ("v2.0.1", True), ("v1.40.0-gke.100", True)],
)
def test_a_server_newer_than_the_tested_range_gets_a_warning(git_version, warns):
    """Only the version string is faked, at the client boundary (the test bed's apiserver reports its real one)."""
    warning = server_warning(Cluster(["v1"], git_version))
    assert (warning is not None) == warns
    if warns:
        minor = ".".join(git_version.lstrip("v").split(".")[:2])
        assert warning.startswith(
            "the API server runs Kubernetes %s, newer than the releases gpupool is tested on (1.32-1.37): the run "
            "goes on" % minor
        )
        assert len(warning) <= LINE_LIMIT


def test_an_unreadable_version_gets_no_warning():
    assert server_warning(Cluster(["v1"], None)) is None
    assert newer_than_tested({}) is None


class NoView:
    """The client's run view, as without a run lease: nothing kept between steps."""

    def flush(self):
        pass

    def forget(self):
        pass


class LeaseServer(Cluster):
    """A cluster that serves resource.k8s.io v1 and a Lease (GET 404, then what was written), release 1.40."""

    def __init__(self):
        super().__init__(["v1"], "v1.40.1")
        self.lease = None
        self.version_reads = 0
        self.view = NoView()

    @staticmethod
    def path(group, version, plural, namespace=None, name=None, subresource=None):
        return "/apis/%s/%s/namespaces/%s/%s%s" % (group, version, namespace, plural, "/" + name if name else "")

    def request(self, method, path, query=None, body=None, **_kw):
        if method == "GET":
            if self.lease is None:
                raise NotFound("not found", status=404)
            return self.lease
        self.lease = None if method == "DELETE" else dict(body, metadata=dict(body["metadata"], resourceVersion="2"))
        return self.lease

    def server_version(self):
        self.version_reads += 1
        return super().server_version()


def test_the_warning_is_said_once_per_run_by_the_step_that_takes_the_lease(monkeypatch):
    """Every step of site.yml connects (check_cluster); only run_lease, when it takes the lease, reads /version and
    warns. Only the version string is faked, at the client boundary (the test bed's apiserver reports its own)."""
    server = LeaseServer()
    monkeypatch.setattr(module, "k8s_connect", lambda params, cluster: server)
    cluster = {"name": "c1", "pools": [{"name": "gpu-t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}}]}
    taken = run_step(run_lease.RunLeaseModule, {"cluster": cluster, "holder": "run-1"})
    assert not taken.get("failed"), taken
    assert [w for w in taken.get("warnings", []) if "newer than the releases gpupool is tested on" in w] == [
        "the API server runs Kubernetes 1.40, newer than the releases gpupool is tested on (1.32-1.37): the run goes "
        "on; if a step fails, check the release notes for resource.k8s.io changes"
    ]
    released = run_step(run_lease.RunLeaseModule, {"cluster": cluster, "holder": "run-1", "state": "released"})
    assert not released.get("failed") and not released.get("warnings"), released
    assert server.version_reads == 1
    # the steps under the lease connect through the same step base, which never reads /version
    assert "server_warning" not in inspect.getsource(module)
