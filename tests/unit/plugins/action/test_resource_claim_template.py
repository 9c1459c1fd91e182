"""gpupool.core.resource_claim_template run in-process against the Kubernetes API simulator: the tenants' templates
in their namespaces, check mode writes nothing, a second run changes nothing, an immutable spec change is refused
with the fix (or re-created), and a refused input names what to fix."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.action import resource_claim_template
from tests.support.steps import run_action, said
from tests.unit.plugins.module_utils.k8s.apiserver_simulator import CONNECTION

GROUP = "resource.k8s.io"
CLUSTER = {
    "name": "unit",
    "dra_driver": {"version": "0.5.1"},
    "pools": [{"name": "l4", "node_selector": {"gpu": "l4"}, "gpu": {"model": "L4", "per_node": 2}}],
    "tenants": [{"namespace": "analysis", "templates": [{"name": "one-l4", "pool": "l4"}]}],
}


def run(cluster=None, **args):
    cluster = CLUSTER if cluster is None else cluster  # the module's inventory unless a test gives its own
    return run_action(resource_claim_template, cluster=copy.deepcopy(cluster), **CONNECTION, **args)


def with_namespace(api, name="analysis"):
    api.put("", "v1", "namespaces", {"metadata": {"name": name}})
    return api


def templates(api):
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in api.items(GROUP, "resourceclaimtemplates")]


def test_check_mode_writes_nothing(api):
    with_namespace(api)
    out = run(_ansible_check_mode=True)
    assert out.get("failed") is not True, out
    assert out["changed"] is True and [o["action"] for o in out["objects"]] == ["created"]
    assert api.writes() == [] and templates(api) == []


def test_a_second_run_changes_nothing(api):
    with_namespace(api)
    first = run()
    assert first["changed"] is True, first
    assert templates(api) == [("analysis", "one-l4")]
    writes = len(api.writes())
    second = run()
    assert second["changed"] is False and [o["action"] for o in second["objects"]] == ["unchanged"]
    assert len(api.writes()) == writes


def test_a_spec_change_is_recreated_and_refused_without_recreate(api):
    with_namespace(api)
    run()
    cluster = copy.deepcopy(CLUSTER)
    cluster["tenants"][0]["templates"][0]["count"] = 2
    refused = run(cluster, recreate=False)
    assert refused["failed"] is True
    assert "immutable" in said(refused) and "recreate: true" in said(refused)
    before = api.get(GROUP, "resourceclaimtemplates", "one-l4", "analysis")
    out = run(cluster)
    assert out["changed"] is True, out
    after = api.get(GROUP, "resourceclaimtemplates", "one-l4", "analysis")
    assert after["spec"] != before["spec"] and after["metadata"]["uid"] != before["metadata"]["uid"]
    assert run(cluster)["changed"] is False


def test_a_tenant_template_removed_is_pruned(api):
    with_namespace(api)
    run()
    cluster = copy.deepcopy(CLUSTER)
    cluster["tenants"][0]["templates"] = []
    out = run(cluster)
    assert out["changed"] is True and [o["action"] for o in out["objects"]] == ["deleted"]
    assert templates(api) == []


def test_no_tenants_and_no_namespaces_names_what_to_add(api):
    cluster = copy.deepcopy(CLUSTER)
    del cluster["tenants"]
    out = run(cluster)
    assert out["failed"] is True
    assert "gpupool_cluster.tenants" in said(out) and "add tenants:" in said(out)
    assert api.requests == []


def test_a_template_of_an_unknown_pool_fails_before_any_request(api):
    cluster = copy.deepcopy(CLUSTER)
    cluster["tenants"][0]["templates"][0]["pool"] = "h100"
    out = run(cluster)
    assert out["failed"] is True
    assert "h100" in said(out) and "gpupool_cluster.tenants[0]" in said(out)
    assert all(len(line) <= 200 for line in out["msg"].splitlines())
    assert api.requests == []
