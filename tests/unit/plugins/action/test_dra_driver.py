"""gpupool.core.dra_driver run in-process against the Kubernetes API simulator, for what runs without helm.

The step's converge is a Helm release: the helm binary is a process of its own that talks to the API server and to
the chart repository itself, so the in-process simulator cannot answer it. The install, upgrade, check mode's
`helm template` diff, the CRDs and the rollout wait are tested on the real test bed
(tests/integration/test_dra_driver_module.py, test_helm_client.py, test_helm_interrupted.py). Here: what the step
decides before helm runs."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import dra_driver
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [{"name": "t4", "node_selector": {"gpu": "t4"}, "gpu": {"model": "T4"}}],
}


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    return run_action(dra_driver, cluster=copy.deepcopy(cluster), **CONNECTION, **args)


def test_a_driver_switched_off_is_left_alone_without_a_request(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["dra_driver"] = {"enabled": False}
    for check in (False, True):
        out = run(cluster, _ansible_check_mode=check)
        assert out.get("failed") is not True, out
        assert out["changed"] is False and out["release"] is None and "left alone" in out["msg"]
    assert api.requests == []


def test_a_missing_helm_binary_says_how_to_fix_it_and_writes_nothing(api):
    out = run(helm_binary="/nonexistent/helm")
    assert out["failed"] is True
    assert "'/nonexistent/helm' was not found" in said(out) and "set helm_binary to its path" in said(out)
    assert api.writes() == []


def test_secrets_stay_out_of_the_result(api):
    out = run(helm_binary="/nonexistent/helm", registry_username="me", registry_password="s3cret-registry")
    assert "s3cret-registry" not in repr(out) and CONNECTION["api_key"] not in repr(out)


def test_a_driver_version_gpupool_does_not_know_fails_before_any_request(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["dra_driver"]["version"] = "9.9.9"
    out = run(cluster)
    assert out["failed"] is True
    assert "gpupool_cluster.dra_driver.version" in said(out) and "9.9.9" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())
    assert api.requests == []
