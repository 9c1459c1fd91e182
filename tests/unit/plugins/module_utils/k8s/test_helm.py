"""k8s/helm.py without a cluster: chart references, error sentences, redaction (a recording runner)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s import helm as h


def test_chart_ref_args():
    oci = h.ChartRef("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.5.1")
    assert oci.args() == [oci.chart, "--version", "0.5.1"] and oci.registry_host == "registry.k8s.io"
    repo = h.ChartRef(
        "dra-driver-nvidia-gpu", "0.4.1", repo="https://mirror.example/charts", username="u", password="p"
    )
    # the credentials are never flags: Helm adds the repository to a private repositories.yaml (repo_login)
    assert repo.args() == ["dra-driver-nvidia-gpu", "--version", "0.4.1", "--repo", "https://mirror.example/charts"]
    assert repo.needs_login and repo.args("gpupool-x") == ["gpupool-x/dra-driver-nvidia-gpu", "--version", "0.4.1"]
    assert repo.registry_host is None and "from https://mirror.example/charts" in repo.describe()


def test_local_chart_gets_no_version_flag(tmp_path):
    local = h.ChartRef(str(tmp_path), "0.5.1")
    assert local.is_local and local.args() == [str(tmp_path)]


@pytest.mark.parametrize(
    "output,message,hint",
    [
        (
            "Error: UPGRADE FAILED: execution error at (dra-driver-nvidia-gpu/templates/validation.yaml:30:4): \n\n"
            "Running in the 'default' namespace is not recommended.\nSet 'allowDefaultNamespace=true'",
            "the chart refused the values (dra-driver-nvidia-gpu/templates/validation.yaml): Running in the 'default' "
            "namespace is not recommended. Set 'allowDefaultNamespace=true'",
            "fix dra_driver.values",
        ),
        (
            'Error: resource mapping not found for name: "x" namespace: "y" from "": no matches for kind "Issuer" in '
            'version "cert-manager.io/v1"\nensure CRDs are installed first',
            "the cluster does not know the kind(s) Issuer (cert-manager.io/v1): their CRDs are not installed",
            "install cert-manager",
        ),
        (
            "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
            "UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
            "helm history",
        ),
        ("Error: UPGRADE FAILED: context deadline exceeded", "the release did not become ready in time", "DaemonSet"),
        (
            "Error: chart requires kubeVersion: >=1.32.0-0 which is incompatible with Kubernetes v1.31.0",
            "chart requires kubeVersion",
            "older than the chart supports",
        ),
        (
            'Error: chart "x" version "9.9.9" not found in https://r repository',
            'version "9.9.9" not found',
            "check dra_driver.chart",
        ),
        ("some unknown problem", "some unknown problem", ""),
    ],
)
def test_readable(output, message, hint):
    got_message, got_hint = h.readable(output)
    assert message in got_message
    assert hint in got_hint if hint else got_hint == ""


def test_failures_are_redacted_and_commands_recorded():
    seen = []

    def runner(argv, **kwargs):
        seen.append((argv, kwargs.get("input")))
        return subprocess.CompletedProcess(
            argv, 1, "", "Error: login to registry r.example failed: pw=hunter22 401 unauthorized"
        )

    with h.Helm("helm", kubeconfig="/k", runner=runner) as helm:
        with pytest.raises(h.HelmError) as err:
            helm.registry_login("r.example", "robot", "hunter22")
    assert "hunter22" not in str(err.value) and "********" in str(err.value)
    assert "check the registry credentials" in str(err.value)
    argv, stdin = seen[0]
    assert "hunter22" not in argv and stdin == "hunter22"  # --password-stdin, never argv
    assert "--kubeconfig" not in argv  # a registry login does not talk to the cluster


def test_get_values_with_the_charts_defaults_asks_for_all():
    seen = []

    def runner(argv, **kwargs):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, '{"nvidiaDriverRoot": "/"}', "")

    with h.Helm("helm", kubeconfig="/k", runner=runner) as helm:
        assert helm.get_values("r", "ns", all_values=True) == {"nvidiaDriverRoot": "/"}
        helm.get_values("r", "ns")
    assert "--all" in seen[0] and "--all" not in seen[1]


def test_upgrade_labels_go_on_the_command_line_sorted():
    seen = []

    def runner(argv, **kwargs):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "{}", "")

    with h.Helm("helm", kubeconfig="/k", runner=runner) as helm:
        chart = h.ChartRef("oci://r.example/charts/dra", "0.5.1")
        helm.upgrade("r", "ns", chart, {}, wait=False, labels={"gpupool.io/run": "x", "gpupool.io/owner": "team-a"})
    argv = seen[0]
    assert argv[argv.index("--labels") + 1] == "gpupool.io/owner=team-a,gpupool.io/run=x"


def test_missing_binary_is_a_sentence():
    def runner(argv, **kwargs):
        raise FileNotFoundError(argv[0])

    with h.Helm("/no/helm", runner=runner) as helm:
        with pytest.raises(h.HelmNotFound) as err:
            helm.version()
    assert "the helm binary '/no/helm' was not found" in str(err.value) and "helm_binary" in str(err.value)


def test_repository_credentials_go_through_stdin_and_a_private_file():
    seen = []

    def runner(argv, **kwargs):
        seen.append((list(argv), kwargs.get("input")))
        return subprocess.CompletedProcess(argv, 0, "name: dra-driver-nvidia-gpu\nversion: 0.4.1\n", "")

    ref = h.ChartRef("dra-driver-nvidia-gpu", "0.4.1", repo="https://m.example/c", username="u", password="hunter22")
    with h.Helm("helm", kubeconfig="/k", runner=runner) as helm:
        helm.show_chart(ref)
        helm.show_chart(ref)  # the repository is added once
        config = helm._repository_config
        assert os.stat(config).st_mode & 0o777 == 0o600 and os.stat(helm._tmp).st_mode & 0o777 == 0o700
    assert not os.path.exists(config)  # close() removed it
    assert [argv[1:3] for argv, _stdin in seen] == [["repo", "add"], ["show", "chart"], ["show", "chart"]]
    assert all("hunter22" not in " ".join(argv) for argv, _stdin in seen)
    assert seen[0][1] == "hunter22" and "--password-stdin" in seen[0][0]
    show = seen[1][0]
    assert show[3].endswith("/dra-driver-nvidia-gpu") and "--repo" not in show
    assert show[show.index("--repository-config") + 1] == config


def test_a_cancelled_helm_gets_sigterm_before_sigkill(tmp_path):
    """run_gently: an exception while helm runs (the step's Cancelled) sends SIGTERM and lets it finish."""
    script = tmp_path / "fake-helm"
    marker = tmp_path / "terminated"
    script.write_text(
        "#!/bin/sh\ntrap 'echo term > %s; exit 1' TERM\necho started > %s.start\nwhile :; do sleep 0.05; done\n"
        % (marker, marker)
    )
    script.chmod(0o755)

    class Stop(Exception):
        pass

    def interrupt(*_):
        raise Stop()

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Stop):
            h.run_gently([str(script)], None, dict(os.environ), timeout=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert marker.read_text().strip() == "term"
