"""plugins/module_utils/k8s/helm.py against the real helm binary, a real chart repository on loopback
(testbed/chart_repo.py: the DRA driver SIMULATION chart at 0.4.1 and 0.5.1) and the real kube-apiserver.

No simulator runs here (nothing waits for pods): installs use wait=False; the module's tests on the
sandbox cover rollouts.
"""

from __future__ import annotations

import os
import uuid

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpupool.core.plugins.module_utils.k8s.crds import apply_crds
from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm import ChartRef, Helm, HelmError
from testbed.controlplane import ADMIN_USER

CHART = "dra-driver-nvidia-gpu"
CRDS = {"computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com"}
BASE = {"gpuResourcesEnabledOverride": True, "resources": {"computeDomains": {"enabled": False}}}


@pytest.fixture
def helm(control_plane, dra_chart_repo):
    with Helm(dra_chart_repo.helm, kubeconfig=str(control_plane.kubeconfig), env=control_plane.env()) as h:
        yield h


def ref(repo, version="0.5.1", **kw):
    return ChartRef(CHART, version, repo=repo.url, **kw)


def namespace():
    return "dra-%s" % uuid.uuid4().hex[:8]


def test_show_chart_and_crds_from_the_repository(helm, dra_chart_repo):
    assert helm.show_chart(ref(dra_chart_repo, "0.4.1"))["version"] == "0.4.1"
    assert {c["metadata"]["name"] for c in helm.show_crds(ref(dra_chart_repo))} == CRDS
    with pytest.raises(HelmError) as err:
        helm.show_chart(ref(dra_chart_repo, "0.3.9"))
    assert "0.3.9" in str(err.value) and "check dra_driver.chart and dra_driver.version" in str(err.value)


def test_crds_are_applied_server_side_and_then_left_alone(helm, dra_chart_repo, control_plane):
    client = k8s_client.connect({"kubeconfig": str(control_plane.kubeconfig)})
    crds = helm.show_crds(ref(dra_chart_repo))
    apply_crds(client, crds)  # first (or already there from another test): converged afterwards
    names = [c["metadata"]["name"] for c in crds]
    assert apply_crds(client, crds) == [{"name": n, "changed": False} for n in names]
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/computedomains.resource.nvidia.com"
    stored = client.request("GET", path)
    assert any(m["manager"] == "gpupool" and m["operation"] == "Apply" for m in stored["metadata"]["managedFields"])
    # a newer chart's CRD (here: one more annotation) in a dry run: reported, not stored
    newer = [dict(c, metadata=dict(c["metadata"], annotations={"gpupool.io/test": "newer"})) for c in crds]
    assert {r["changed"] for r in apply_crds(client, newer, dry_run=True)} == {True}
    after = client.request("GET", path)
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert "gpupool.io/test" not in (after["metadata"].get("annotations") or {})


def test_dry_run_install_upgrade_values_and_uninstall(helm, dra_chart_repo, control_plane):
    ns = namespace()
    mark = control_plane.audit.mark()
    planned = helm.upgrade("dra", ns, ref(dra_chart_repo), BASE, dry_run=True)
    assert planned["info"]["status"] == "pending-install" and "kind: DaemonSet" in planned["manifest"]
    assert control_plane.audit.since(mark).writes(user=ADMIN_USER) == []  # --dry-run=server wrote nothing
    assert helm.status("dra", ns) is None

    helm.upgrade("dra", ns, ref(dra_chart_repo), BASE, wait=False)
    try:
        status = helm.status("dra", ns)
        assert (status["status"], status["chart"], status["version"], status["revision"]) == (
            "deployed",
            CHART,
            "0.5.1",
            1,
        )
        assert helm.get_values("dra", ns) == BASE  # exactly what was passed: the module compares this
        changed = dict(BASE, featureGates={"MPSSupport": True})
        helm.upgrade("dra", ns, ref(dra_chart_repo), changed, wait=False)
        assert helm.get_values("dra", ns) == changed and helm.status("dra", ns)["revision"] == 2
        # --reset-values: a value dropped from the desired set is gone, not carried over
        helm.upgrade("dra", ns, ref(dra_chart_repo), BASE, wait=False)
        assert helm.get_values("dra", ns) == BASE
    finally:
        assert helm.uninstall("dra", ns, wait=False) is True
    assert helm.status("dra", ns) is None and helm.uninstall("dra", ns, wait=False) is False


@pytest.mark.parametrize(
    "values,namespace_name,expect",
    [
        (
            {"resources": {"computeDomains": {"enabled": False}}},
            None,
            [
                "the chart refused the values (dra-driver-nvidia-gpu/templates/validation.yaml)",
                "KEP 5004",
                "--set 'gpuResourcesEnabledOverride=true'",
            ],
        ),
        (BASE, "default", ["Running in the 'default' namespace is not recommended"]),
        (
            dict(BASE, webhook={"enabled": True}),
            None,
            [
                "does not know the kind(s) Certificate (cert-manager.io/v1), Issuer (cert-manager.io/v1)",
                "install cert-manager (its CRDs) first",
            ],
        ),
        (
            dict(BASE, resources={"computeDomains": {"enabled": True, "imex": {"mode": "hostManaged"}}}),
            None,
            ["imex.mode=hostManaged requires featureGates.HostManagedIMEXDaemon=true"],
        ),
    ],
)
def test_chart_failures_read_as_sentences(helm, dra_chart_repo, control_plane, values, namespace_name, expect):
    ns = namespace_name or namespace()
    mark = control_plane.audit.mark()
    with pytest.raises(HelmError) as err:
        helm.upgrade("refused", ns, ref(dra_chart_repo), values, dry_run=True)
    text = str(err.value)
    for part in expect:
        assert part in text, text
    assert "goroutine" not in text and "\n" not in err.value.message
    assert control_plane.audit.since(mark).writes(user=ADMIN_USER) == []


def test_the_0_4_chart_ignores_0_5_values(helm, dra_chart_repo):
    values = dict(BASE, resources={"computeDomains": {"enabled": True, "imex": {"mode": "hostManaged"}}})
    planned = helm.upgrade("old", namespace(), ref(dra_chart_repo, "0.4.1"), values, dry_run=True)
    assert "IMEX_MODE" not in planned["manifest"] and "compute-domain-daemon.nvidia.com" in planned["manifest"]


def test_registry_credentials_are_never_shown(helm, control_plane):
    secret = "pa55-" + uuid.uuid4().hex
    with pytest.raises(HelmError) as err:
        helm.registry_login("127.0.0.1:1", "robot", secret)
    assert secret not in str(err.value) and secret not in err.value.output
    assert all(secret not in " ".join(cmd) for cmd in helm.commands)
    with pytest.raises(HelmError) as err:
        helm.show_chart(ChartRef(CHART, "0.5.1", repo="http://127.0.0.1:1", username="robot", password=secret))
    assert secret not in str(err.value) and all(secret not in " ".join(cmd) for cmd in helm.commands)
    assert any(cmd[1:3] == ["repo", "add"] and "--password-stdin" in cmd for cmd in helm.commands)  # never argv


def test_a_private_repository_is_used_without_its_password_on_any_command_line(control_plane, private_chart_repo):
    from tests.fixtures.helm_charts import REPO_PASSWORD, REPO_USER

    good = ChartRef(CHART, "0.5.1", repo=private_chart_repo.url, username=REPO_USER, password=REPO_PASSWORD)
    with Helm(private_chart_repo.helm, kubeconfig=str(control_plane.kubeconfig), env=control_plane.env()) as helm:
        assert helm.show_chart(good)["version"] == "0.5.1"
        planned = helm.upgrade("private", namespace(), good, BASE, dry_run=True)
        assert planned["chart"]["metadata"]["version"] == "0.5.1"
        private = helm._tmp
        config = helm._repository_config
        assert os.stat(config).st_mode & 0o777 == 0o600 and os.stat(private).st_mode & 0o777 == 0o700
        assert REPO_PASSWORD in open(config).read()  # where helm reads it from, and only there
    assert not os.path.exists(private)  # close() removed the credentials
    assert all(REPO_PASSWORD not in " ".join(cmd) for cmd in helm.commands)
    assert (REPO_USER, 200) in private_chart_repo.requests
    # a wrong password: a sentence that says to check the credentials, and neither password in it
    wrong = "wrong-" + uuid.uuid4().hex
    with Helm(private_chart_repo.helm) as helm:
        with pytest.raises(HelmError) as err:
            helm.show_chart(ChartRef(CHART, "0.5.1", repo=private_chart_repo.url, username=REPO_USER, password=wrong))
    text = str(err.value) + err.value.output
    assert "credentials" in str(err.value) and wrong not in text and REPO_PASSWORD not in text, text
