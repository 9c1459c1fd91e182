"""The first dry run on a new cluster (issue #33): `site.yml --check --diff` of the example inventory (an NVLink pool
with a ComputeDomain among its four pools) on a sandbox with nothing installed - no DRA driver, so none of its CRDs.

In check mode the driver step only says it would install the chart, so the API server does not serve ComputeDomain
when that step comes: the dry run must still complete, write nothing, and name what the converge then creates. What
it names is compared with what a real converge of the same inventory creates, as the apiserver's audit log and the
Magnum emulator's request log record it (not with a list written here). A failed dry run's summary says that it
failed, where, and which steps it checked and never reached.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from tests.integration.playbook import ROOT, run_playbook

pytestmark = [pytest.mark.sandbox, pytest.mark.dra_api]
ADMIN = "gpupool-admin"
SITE = os.path.join(ROOT, "playbooks", "site.yml")
POOL_LABEL = "gpupool.io/pool"


def summary(stdout):
    """The summary task's text block (callback_result_format = yaml prints it as a block scalar)."""
    match = re.search(
        r"TASK \[gpupool\.core\.run_summary : Summarize the run\][^\n]*\nok: \[[^\]]+\] =>\s*\n"
        r"\s+msg: \|-?\n((?:\s{8}.*\n)+)",
        stdout,
    )
    assert match, stdout[-4000:]
    return [line[8:] for line in match.group(1).splitlines()]


def created(window, user_agent):
    """(resource, namespace, name) of each object the requests of `user_agent` created (201), leases left out."""
    out = set()
    for e in window.select(verbs={"create", "patch", "update"}, user=ADMIN):
        ref = e.get("objectRef") or {}
        if (e.get("responseStatus") or {}).get("code") != 201 or not e.get("userAgent", "").startswith(user_agent):
            continue
        if ref.get("resource") != "leases":
            out.add((ref.get("resource"), ref.get("namespace"), ref.get("name")))
    return out


def site(sandbox, inventory, tmp_path, check):
    sandbox.magnum.clear_requests()
    mark = sandbox.cp.audit.mark()
    res = run_playbook(SITE, str(inventory), tmp_path, check=check, diff=check)
    res.window = sandbox.cp.audit.since(mark)
    res.magnum_writes = sandbox.magnum.magnum_requests(writes_only=True)
    return res


def test_the_first_dry_run_on_an_empty_cluster_names_what_the_converge_creates(empty_sandbox, tmp_path):
    from testbed import simulated_driver

    sandbox = empty_sandbox
    inventory = sandbox.write_inventory(tmp_path / "inventory")
    crds = json.loads(sandbox.cp.kubectl("get", "customresourcedefinitions", "-o", "json").stdout)["items"]
    assert not [c for c in crds if c["spec"]["group"] == "resource.nvidia.com"]  # a new cluster: no driver CRDs

    # ---- without the tenants' namespace the dry run fails at the tenants' templates, and its summary says so -------
    failed = site(sandbox, inventory, tmp_path, check=True)
    assert failed.rc == 2, failed.stdout[-6000:]
    assert failed.window.writes(user=ADMIN) == [] and failed.magnum_writes == []
    lines = summary(failed.stdout)
    assert re.fullmatch(r"cern-gpu: FAILED at resource_claim_templates \(\d+ would change up to there\)", lines[0]), (
        lines
    )
    assert lines[1] == "  checked: validate, run_lease, nodegroups, node_pools, dra_driver, mig_layouts, device_classes"
    assert lines[2] == "  not reached: compute_domains, pool_report"
    assert "  resource_claim_templates: FAILED: ResourceClaimTemplate ml-training/" in "\n".join(lines), lines

    # ---- with it (what the platform team makes before: gpupool does not create tenant namespaces) ----------------
    simulated_driver.install(sandbox.kubeconfig, log=lambda _text: None)
    check = site(sandbox, inventory, tmp_path, check=True)
    assert check.rc == 0, check.stdout[-8000:] + check.stderr[-3000:]
    assert check.window.writes(user=ADMIN) == [], check.window.writes(user=ADMIN)  # dry runs and reads only
    assert check.magnum_writes == []
    said = summary(check.stdout)
    assert re.fullmatch(r"cern-gpu: \d+ would change", said[0]), said
    text = "\n".join(said)
    assert (
        "would create ComputeDomain ml-training/gb200-domain (pool gpu-gb200) once the DRA driver's CRDs are "
        "installed" in check.stdout
    )  # the --diff header
    assert (
        "compute_domains: ComputeDomain ml-training/gb200-domain created once the DRA driver's CRDs are "
        "installed" in text
    )

    # ---- the converge: what it creates is what the dry run named ---------------------------------------------------
    real = site(sandbox, inventory, tmp_path, check=False)
    assert real.rc == 0, real.stdout[-8000:] + real.stderr[-3000:]
    ours, helm = created(real.window, "gpupool.core"), created(real.window, "Helm/")
    assert {r for r, _ns, _n in ours} >= {"deviceclasses", "resourceclaimtemplates", "computedomains"}, ours
    for resource, namespace, name in sorted(ours, key=str):
        if resource == "customresourcedefinitions":  # applied by the driver step before helm
            pattern = r"^  dra_driver: would apply the chart's CRDs .*\b%s\b" % re.escape(name)
        else:
            pattern = r"^  \w+: .*\b%s created\b" % re.escape("%s/%s" % (namespace, name) if namespace else name)
        assert re.search(pattern, text, re.M), (resource, namespace, name, said)
    # and the dry run named nothing the converge did not create
    named = set(re.findall(r"^  \w+: (?:MIG )?\w+ (\S+) created\b", text, re.M))
    assert named == {"%s/%s" % (ns, n) if ns else n for r, ns, n in ours if r != "customresourcedefinitions"}, said
    # helm's objects are the driver's release: the one the dry run said it would install, where
    (record,) = [(ns, n) for r, ns, n in helm if r == "secrets" and n.startswith("sh.helm.release.v1.")]
    release = record[1][len("sh.helm.release.v1.") :].rsplit(".", 1)[0]
    assert (
        "  dra_driver: would install the DRA driver " in text
        and (" as release %s in namespace %s" % (release, record[0])) in text
    ), said
    # the nodegroups Magnum created, each named by the dry run, with the labels and taints its nodes are born with
    made = [json.loads(r["body"]) if isinstance(r["body"], str) else r["body"] for r in real.magnum_writes]
    made = {b["name"]: b for b in made if isinstance(b, dict) and "flavor_id" in b}
    diffs = nodegroup_diffs(check.stdout)
    assert made and sorted(diffs) == sorted(made), (sorted(diffs), sorted(made))
    for name in made:
        assert re.search(r"^  nodegroups: create nodegroup '%s' " % re.escape(name), text, re.M), (name, said)
    nodes = json.loads(sandbox.cp.kubectl("get", "nodes", "-l", POOL_LABEL, "-o", "json").stdout)["items"]
    by_pool = {}
    for node in nodes:
        by_pool.setdefault(node["metadata"]["labels"][POOL_LABEL], []).append(node)
    assert sorted(by_pool) == sorted(diffs)
    for pool, members in by_pool.items():
        said_ng = diffs[pool]
        assert len(members) == said_ng["node_count"] and said_ng["node_labels"][POOL_LABEL] == pool
        for node in members:
            labels = node["metadata"]["labels"]
            assert {k: labels.get(k) for k in said_ng["node_labels"]} == said_ng["node_labels"], node["metadata"]
            # the taints gpupool set (it records their ids on the node) are the ones the dry run named
            ids = node["metadata"]["annotations"]["gpupool.io/taints"].split(",")
            taints = [t for t in node["spec"]["taints"] if "%s:%s" % (t["key"], t["effect"]) in ids]
            assert taints and taints == said_ng["node_taints"], (node["spec"]["taints"], said_ng["node_taints"])


def nodegroup_diffs(stdout):
    """{nodegroup: the nodegroup the dry run's --diff would create} - each '+' block after its '+++ after:' line."""
    out = {}
    for match in re.finditer(
        r"^\+\+\+ after: nodegroup '([^']+)' of cluster [^\n]*\n@@[^\n]*\n((?:[-+][^\n]*\n)+)", stdout, re.M
    ):
        added = [line[1:] for line in match.group(2).splitlines() if line.startswith("+")]
        out[match.group(1)] = yaml.safe_load("\n".join(added))
    return out
