"""The supported Kubernetes range (k8s/support.py): the version gpupool speaks, or one sentence that says what the
cluster serves, what gpupool needs and what to switch on for that release. A real 1.32/1.33 server without DRA meets
it end to end in tests/integration/test_k8s_releases.py."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.support import (
    SUPPORTED,
    UnsupportedCluster,
    check_cluster,
    newer_than_tested,
    parse_minor,
    server_warning,
    supported_range,
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


def test_the_warning_is_said_once_per_run_by_the_step_that_takes_the_lease():
    """site.yml's steps each connect (check_cluster), but only run_lease (state acquired) calls server_warning."""
    import inspect

    from ansible_collections.gpupool.core.plugins.action import run_lease
    from ansible_collections.gpupool.core.plugins.module_utils import module

    assert "server_warning" in inspect.getsource(run_lease.RunLeaseModule.run)
    assert "server_warning" not in inspect.getsource(module)


def test_1_33_is_told_both_beta_versions():
    with pytest.raises(UnsupportedCluster) as err:
        check_cluster(Cluster([], "v1.33.13"))
    assert "--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true" in err.value.describe()


def test_older_than_1_32_is_told_to_upgrade():
    with pytest.raises(UnsupportedCluster) as err:
        check_cluster(Cluster(["v1alpha3"], "v1.31.9"))
    text = err.value.describe()
    assert "(Kubernetes 1.31) serves resource.k8s.io v1alpha3 only" in text
    assert "upgrade the cluster to Kubernetes 1.32 or newer (1.31 has no DRA API gpupool speaks)" in text


def test_a_newer_release_with_v1_switched_off_is_told_where_to_look():
    with pytest.raises(UnsupportedCluster) as err:
        check_cluster(Cluster([], "v1.36.2"))
    assert "resource.k8s.io/v1 is on by default from Kubernetes 1.34" in err.value.describe()
    assert "--runtime-config=resource.k8s.io/v1=false" in err.value.describe()


def test_an_unreadable_version_still_says_what_to_switch_on():
    with pytest.raises(UnsupportedCluster) as err:
        check_cluster(Cluster([]))
    text = err.value.describe()
    assert "(a Kubernetes release gpupool could not read) does not serve resource.k8s.io at all" in text
    assert "on 1.32 with the feature gate DynamicResourceAllocation=true" in text


def test_the_range_is_stated_once():
    assert SUPPORTED.oldest == SUPPORTED.tested[0] and SUPPORTED.newest_tested == SUPPORTED.tested[-1]
    assert supported_range() == "1.32-1.37"
    assert parse_minor({"major": "1", "minor": "32+", "gitVersion": ""}) == (1, 32)
    assert parse_minor({"gitVersion": "v1.33.13-eks-abc"}) == (1, 33)
    assert parse_minor({}) is None


def test_readme_and_galaxy_state_the_same_range():
    import os

    root = os.path.dirname(os.path.abspath(__file__))
    while not os.path.exists(os.path.join(root, "galaxy.yml")):
        root = os.path.dirname(root)
    oldest, newest = (".".join(map(str, m)) for m in (SUPPORTED.oldest, SUPPORTED.newest_tested))
    tested = ", ".join(".".join(map(str, m)) for m in SUPPORTED.tested[:-1]) + " and %s" % newest
    readme = open(os.path.join(root, "README.md")).read()
    assert "**Kubernetes %s–%s**" % (oldest, newest) in readme
    assert "tested on %s." % tested in readme.replace("\n", " ")
    assert "Kubernetes %s-%s" % (oldest, newest) in open(os.path.join(root, "galaxy.yml")).read()
