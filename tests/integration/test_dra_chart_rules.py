"""NVIDIA's real chart rules in the test bed: the simulation chart refuses what the real chart refuses, and what
gpupool derives installs through it - for the example inventory and a corpus of valid inventories of other
shapes (tests/data/valid/*.yml), on both driver lines.

Real parts: helm (``helm template``: no cluster needed), the simulation chart packaged per line by
testbed/chart_repo.py (0.4.1 and 0.5.1), gpupool's model and values derivation. The yardsticks are the test
bed's own tables, never gpupool's: testbed/dra_chart_facts.py (the real chart's values, guards, plugin
placement and containers, each read from kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 / main 95932046) and
testbed/dra_driver_rules.py (what the driver's binaries refuse at start-up). A guard changed in the chart or
in the table, a value gpupool sets that a line lacks, a pool taint the plugin does not tolerate: a test fails.
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import line_for
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import desired_values
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import (
    desired_node_labels,
    desired_node_taints,
)
from testbed import dra_chart_facts as facts
from testbed.chart_repo import VERSIONS
from testbed.dra_chart_render import env_of, parse_gates, render, value_paths
from testbed.dra_simulator import schedules_on, tolerates

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "valid"
EXAMPLE = ROOT / "inventories" / "example" / "host_vars" / "cern-gpu" / "gpupool.yml"
NS = "dra-driver-nvidia-gpu"
OVERRIDE = {"gpuResourcesEnabledOverride": True}
# The gate each pool setting needs (reference nvidia-dra-mig-imex.md §1.8; v0.5.0 notes for HostManagedIMEXDaemon).
GATE_OF = {
    "time_slicing": "TimeSlicingSettings",
    "mps": "MPSSupport",
    "dynamic_mig": "DynamicMIG",
    "passthrough": "PassthroughSupport",
    "host_imex": "HostManagedIMEXDaemon",
}


@pytest.fixture(scope="module")
def charts(dra_chart_repo):
    """{version: chart path}: the packaged simulation chart, or - to hold NVIDIA's real chart to the same
    tests, e.g. a newer line before the facts table learns it - the chart directories named in
    GPUPOOL_DRA_CHARTS="0.4.1=/src/v0.4.1/deployments/helm/dra-driver-nvidia-gpu,0.5.1=/src/main/..."."""
    paths = {version: str(dra_chart_repo.archive(version)) for version in VERSIONS}
    for item in filter(None, os.environ.get("GPUPOOL_DRA_CHARTS", "").split(",")):
        version, _, path = item.partition("=")
        paths[version.strip()] = path.strip()
    return paths


@pytest.fixture(scope="module")
def chart(dra_chart_repo, charts):
    """render(values, version="0.5.1", namespace=NS, release=...) through the chart of that version."""

    def go(values, version="0.5.1", namespace=NS, **kw):
        return render(dra_chart_repo.helm, charts[version], values, version=version, namespace=namespace, **kw)

    return go


def v(**kw):
    return dict(copy.deepcopy(OVERRIDE), **kw)


def webhook(**tls):
    return v(webhook={"enabled": True, "tls": tls})


CD = "computeDomains"
# (case, values, release namespace, first guard expected on 0.4, on 0.5): written out by hand from the real
# chart, so a change of the chart OR of the facts table's evaluator fails.
GUARD_CASES = [
    ("override-set", v(), NS, None, None),
    ("gpu-plugin-only", v(resources={CD: {"enabled": False}}), NS, None, None),
    ("no-override", {}, NS, "gpus-without-override", "gpus-without-override"),
    ("no-gpus-no-override", {"resources": {"gpus": {"enabled": False}}}, NS, None, None),
    ("namespace-value", v(namespace="x"), NS, "namespace-value", "namespace-value"),
    ("default-namespace", v(), "default", "default-namespace", "default-namespace"),
    ("default-namespace-allowed", v(allowDefaultNamespace=True), "default", None, None),
    ("default-namespace-override", v(namespaceOverride="default"), "default", None, None),
    ("nvidia-ctk-path", v(nvidiaCtkPath="/usr/bin/nvidia-ctk"), NS, "nvidia-ctk-path", "nvidia-ctk-path"),
    ("webhook-defaults", v(webhook={"enabled": True}), NS, None, None),
    ("webhook-tls-null", v(webhook={"enabled": True, "tls": None}), NS, "webhook-tls-missing", "webhook-tls-missing"),
    ("webhook-mode-empty", webhook(mode=""), NS, "webhook-tls-mode-missing", "webhook-tls-mode-missing"),
    ("webhook-mode-unknown", webhook(mode="acme"), NS, "webhook-tls-mode-invalid", "webhook-tls-mode-invalid"),
    ("webhook-off-mode-unknown", v(webhook={"enabled": False, "tls": {"mode": "acme"}}), NS, None, None),
    ("cert-manager-null", webhook(certManager=None), NS, "cert-manager-missing", "cert-manager-missing"),
    ("issuer-empty", webhook(certManager={"issuerType": ""}), NS, "issuer-type-missing", "issuer-type-missing"),
    ("issuer-unknown", webhook(certManager={"issuerType": "vault"}), NS, "issuer-type-invalid", "issuer-type-invalid"),
    (
        "issuer-unnamed",
        webhook(certManager={"issuerType": "clusterissuer"}),
        NS,
        "issuer-name-missing",
        "issuer-name-missing",
    ),
    ("issuer-named", webhook(certManager={"issuerType": "issuer", "issuerName": "ca"}), NS, None, None),
    ("secret-null", webhook(mode="secret", secret=None), NS, "secret-missing", "secret-missing"),
    ("secret-unnamed", webhook(mode="secret"), NS, "secret-name-missing", "secret-name-missing"),
    ("secret-named", webhook(mode="secret", secret={"name": "tls"}), NS, None, None),
    ("resource-api-pinned", v(resourceApiVersion="resource.k8s.io/v1beta1"), NS, None, None),
    (
        "host-imex-without-gate",
        v(resources={CD: {"imex": {"mode": "hostManaged"}}}),
        NS,
        None,
        "imex-host-managed-without-gate",
    ),
    (
        "host-imex-gate-false",
        v(resources={CD: {"imex": {"mode": "hostManaged"}}}, featureGates={"HostManagedIMEXDaemon": False}),
        NS,
        None,
        "imex-host-managed-without-gate",
    ),
    (
        "host-imex-with-gate",
        v(resources={CD: {"imex": {"mode": "hostManaged"}}}, featureGates={"HostManagedIMEXDaemon": True}),
        NS,
        None,
        None,
    ),
    ("host-imex-no-cd", v(resources={CD: {"enabled": False, "imex": {"mode": "hostManaged"}}}), NS, None, None),
    ("imex-mode-unknown", v(resources={CD: {"imex": {"mode": "sidecar"}}}), NS, None, "imex-mode-unknown"),
    ("imex-mode-empty", v(resources={CD: {"imex": {"mode": ""}}}), NS, None, "imex-mode-unknown"),
    (
        "imex-isolation-channel",
        v(resources={CD: {"imex": {"isolation": "channel"}}}),
        NS,
        None,
        "imex-isolation-channel",
    ),
    ("imex-isolation-unknown", v(resources={CD: {"imex": {"isolation": "node"}}}), NS, None, "imex-isolation-unknown"),
    ("imex-isolation-empty", v(resources={CD: {"imex": {"isolation": ""}}}), NS, None, None),
    # helm stops at the first failing template: validation.yaml renders before the plugin's IMEX check
    (
        "namespace-then-imex",
        v(namespace="x", resources={CD: {"imex": {"mode": "hostManaged"}}}),
        NS,
        "namespace-value",
        "namespace-value",
    ),
    (
        "webhook-then-imex",
        v(webhook={"enabled": True, "tls": {"mode": "acme"}}, resources={CD: {"imex": {"mode": "sidecar"}}}),
        NS,
        "webhook-tls-mode-invalid",
        "webhook-tls-mode-invalid",
    ),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case,values,namespace,on_04,on_05", GUARD_CASES, ids=[c[0] for c in GUARD_CASES])
def test_the_simulation_chart_refuses_exactly_what_the_facts_say(chart, version, case, values, namespace, on_04, on_05):
    line = facts.line_of(version)
    expected = on_04 if line == "0.4" else on_05
    modelled = facts.refusals(line, values, namespace=namespace)
    assert (modelled[0] if modelled else None) == expected, "the facts table's evaluator disagrees with the case"
    out = chart(values, version, namespace=namespace)
    if expected is None:
        assert out.error is None, out.error
        assert out.plugin is not None
    else:
        assert out.error is not None, "the %s chart installed what the real one refuses (%s)" % (version, expected)
        assert facts.GUARD[expected].message in out.error, out.error


def test_every_guard_of_the_facts_table_is_exercised():
    hit = {c[3] for c in GUARD_CASES} | {c[4] for c in GUARD_CASES}
    # kubeVersion and the resource API are helm-level: checked on their own below / not reachable offline
    assert {g.id for g in facts.GUARDS} - hit == {"kube-version", "no-resource-api"}


def test_a_cluster_older_than_the_charts_kube_version_is_refused(chart):
    for version in VERSIONS:
        assert facts.refusals(facts.line_of(version), v(), kube_version="1.31.4") == ["kube-version"]
        out = chart(v(), version, kube_version="1.31.4")
        assert out.error and facts.GUARD["kube-version"].message in out.error
        assert chart(v(), version, kube_version="1.32.0").error is None


@pytest.mark.parametrize("version", VERSIONS)
def test_each_package_lists_the_values_its_real_line_has(dra_chart_repo, charts, version):
    shown = subprocess.run(
        [dra_chart_repo.helm, "show", "values", charts[version]],
        capture_output=True,
        text=True,
        check=True,
    )
    line = facts.line_of(version)
    have = value_paths(yaml.safe_load(shown.stdout), line)
    assert sorted(have - facts.VALUE_PATHS[line]) == [], "keys the real %s chart does not have" % line
    assert sorted(facts.VALUE_PATHS[line] - have) == [], "keys of the real %s chart missing" % line


@pytest.mark.parametrize("version", VERSIONS)
def test_default_plugin_placement_and_containers(chart, version):
    line = facts.line_of(version)
    out = chart(
        v(
            featureGates={"TimeSlicingSettings": True},
            webhook={"enabled": True, "tls": {"mode": "secret", "secret": {"name": "t"}}},
        ),
        version,
    )
    pod = out.plugin_pod
    defaults = facts.DEFAULTS[line]
    assert pod["tolerations"] == defaults["kubeletPlugin.tolerations"]
    assert pod["affinity"] == defaults["kubeletPlugin.affinity"]
    assert "nodeSelector" not in pod
    assert out.plugin["spec"]["updateStrategy"] == defaults["kubeletPlugin.updateStrategy"]
    # where it runs: a node with any one of the NFD / GPU Operator labels, none without
    for key, value in facts.PLUGIN_NODE_LABEL_TERMS:
        assert schedules_on(pod, {"metadata": {"name": "n", "labels": {key: value}}})
    assert not schedules_on(pod, {"metadata": {"name": "n", "labels": {"gpupool.io/pool": "p"}}})
    # FEATURE_GATES on every driver container, never on the init container
    gated = {(kind, "dra-driver-nvidia-gpu" + suffix, name) for kind, suffix, name, _on in facts.GATED_CONTAINERS}
    assert out.container_gates() == dict.fromkeys(gated, {"TimeSlicingSettings": True})
    assert all("FEATURE_GATES" not in env_of(c) for c in out.init_containers())
    # 0.5 only: the IMEX settings, on the containers the real chart gives them to
    for kind, obj, c in out.containers():
        imex = {k for k in env_of(c) if k.startswith("IMEX_")}
        assert imex == set(facts.IMEX_ENV[line].get(c["name"], ())), (obj, c["name"])
    assert facts.DAEMON_CLASS in out.names("DeviceClass")


def test_the_compute_domain_parts_follow_their_value(chart):
    off = chart(v(resources={CD: {"enabled": False}}, featureGates={"MPSSupport": True}))
    assert [c["name"] for _k, _o, c in off.containers()] == ["gpus"]
    assert off.find("Deployment", facts.CONTROLLER_SUFFIX) is None
    host = chart(v(resources={CD: {"imex": {"mode": "hostManaged"}}}, featureGates={"HostManagedIMEXDaemon": True}))
    assert facts.DAEMON_CLASS not in host.names("DeviceClass")
    assert (
        env_of(next(c for _k, _o, c in host.containers() if c["name"] == "compute-domains"))["IMEX_MODE"]
        == "hostManaged"
    )


# ---- what gpupool derives, through the chart -------------------------------------------------------------
def corpus():
    out = {"example": yaml.safe_load(EXAMPLE.read_text())["gpupool_cluster"]}
    for path in sorted(CORPUS.glob("*.yml")):
        out[path.stem] = yaml.safe_load(path.read_text())["gpupool_cluster"]
    return out


CORPUS_DATA = corpus()


def test_the_corpus_has_many_shapes_on_both_lines():
    clusters = {name: load_cluster(data) for name, data in CORPUS_DATA.items()}
    assert len(clusters) >= 18
    assert {c.dra_driver.version for c in clusters.values()} == set(VERSIONS)
    pools = [p for c in clusters.values() for p in c.pools]
    assert {p.nvlink.mode for p in pools} == {"none", "compute_domain", "host_imex"}
    assert {p.mig.mode for p in pools} == {"off", "static", "dynamic"}
    assert any(p.sharing.time_slicing for p in pools) and any(p.sharing.mps for p in pools)
    assert any(p.passthrough for p in pools) and any(p.state == "absent" for p in pools)
    effects = {t.get("effect") or "NoSchedule" for p in pools for t in p.all_taints}
    assert effects == {"NoSchedule", "NoExecute", "PreferNoSchedule"}


def needed_gates(data: dict) -> set:
    """The gates the inventory's present pools and tenants need, read from the inventory data itself."""
    out = set()
    for pool in data["pools"]:
        if pool.get("state", "present") != "present":
            continue
        sharing = pool.get("sharing") or {}
        out |= {GATE_OF[k] for k in ("time_slicing", "mps") if k in sharing}
        if (pool.get("mig") or {}).get("mode") == "dynamic":
            out.add(GATE_OF["dynamic_mig"])
        if pool.get("passthrough"):
            out.add(GATE_OF["passthrough"])
        if (pool.get("nvlink") or {}).get("mode") == "host_imex":
            out.add(GATE_OF["host_imex"])
    for tenant in data.get("tenants") or []:
        for template in tenant.get("templates") or []:
            out |= {GATE_OF[k] for k in ("time_slicing", "mps") if k in (template.get("sharing") or {})}
    return out


def chart_problems(out, data: dict, cluster, values: dict) -> list:
    """Every way the rendered release fails the inventory (empty: it installs and does what the pools need)."""
    line = out.line
    problems = []
    if out.error:
        return ["the chart refused: %s" % out.error]
    problems += ["value %s does not exist in the %s chart" % (p, line) for p in facts.unread_values(line, values)]
    problems += ["%s would not start: %s" % ("/".join(k[1:]), why) for k, why in out.startup_errors().items()]
    pod = out.plugin_pod
    for pool in cluster.present_pools:
        node = {"metadata": {"name": pool.name + "-0", "labels": desired_node_labels(pool, {})}}
        taints = desired_node_taints(pool)
        for taint in taints:
            if not tolerates(pod.get("tolerations") or [], taint):
                problems.append("the kubelet plugin does not tolerate %s of pool %s" % (taint, pool.name))
        if not schedules_on(pod, dict(node, spec={"taints": taints})):
            problems.append("the kubelet plugin does not run on the nodes of pool %s" % pool.name)
    stranger = {"metadata": {"name": "other-gpu", "labels": dict(facts.PLUGIN_NODE_LABEL_TERMS)}}
    if schedules_on(pod, stranger):
        problems.append("the kubelet plugin runs on GPU nodes outside the pools (not pinned to the pool label)")
    nvlink = any(
        (p.get("nvlink") or {}).get("mode", "none") != "none"
        for p in data["pools"]
        if p.get("state", "present") == "present"
    )
    running = {c["name"] for _k, _o, c in out.containers()}
    if ("compute-domains" in running) != nvlink:
        problems.append(
            "compute-domain plugin %s but NVLink pools: %s" % ("running" if not nvlink else "missing", nvlink)
        )
    controller = out.find("Deployment", facts.CONTROLLER_SUFFIX) is not None
    if controller != nvlink:
        problems.append("ComputeDomain controller present: %s, NVLink pools: %s" % (controller, nvlink))
    wanted = values.get("featureGates") or {}
    for (kind, obj, container), gates in out.container_gates().items():
        if (gates or {}) != wanted:
            problems.append("%s %s/%s has FEATURE_GATES %s, not %s" % (kind, obj, container, gates, wanted))
    on = {k for k, val in wanted.items() if val}
    problems += ["gate %s is needed by the pools but not on" % g for g in sorted(needed_gates(data) - on)]
    if any((p.get("nvlink") or {}).get("mode") == "host_imex" for p in data["pools"]):
        cd = next((c for _k, _o, c in out.containers() if c["name"] == "compute-domains"), {})
        if env_of(cd).get("IMEX_MODE") != "hostManaged":
            problems.append("host-managed IMEX pool but IMEX_MODE=%r" % env_of(cd).get("IMEX_MODE"))
    return problems


def derived(name):
    data = copy.deepcopy(CORPUS_DATA[name])
    cluster = load_cluster(data)
    return data, cluster, desired_values(cluster, line_for(cluster.dra_driver.version))


def render_derived(chart, cluster, values):
    s = cluster.dra_driver
    return chart(values, s.version, namespace=s.namespace, release=s.release_name)


@pytest.mark.parametrize("name", sorted(CORPUS_DATA))
def test_what_gpupool_derives_installs_and_does_what_the_pools_need(chart, name):
    data, cluster, values = derived(name)
    assert (
        facts.refusals(facts.line_of(cluster.dra_driver.version), values, namespace=cluster.dra_driver.namespace) == []
    )
    out = render_derived(chart, cluster, values)
    assert chart_problems(out, data, cluster, values) == []
    assert (
        out.plugin["metadata"]["name"] == (values.get("nameOverride") or "dra-driver-nvidia-gpu") + facts.PLUGIN_SUFFIX
    )


# ---- the checks above can fail: values the real chart or driver would refuse, through the simulation chart --
def test_a_missing_pool_toleration_or_affinity_is_caught(chart):
    data, cluster, values = derived("custom-taints-0.5")
    values["kubeletPlugin"]["tolerations"] = values["kubeletPlugin"]["tolerations"][:2]
    problems = chart_problems(render_derived(chart, cluster, values), data, cluster, values)
    assert any("does not tolerate" in p and "example.org/tenant" in p for p in problems), problems
    data, cluster, values = derived("t4-mps-0.5")
    del values["kubeletPlugin"]["affinity"]
    problems = chart_problems(render_derived(chart, cluster, values), data, cluster, values)
    assert "the kubelet plugin runs on GPU nodes outside the pools (not pinned to the pool label)" in problems
    del values["featureGates"]["MPSSupport"]
    problems = chart_problems(render_derived(chart, cluster, values), data, cluster, values)
    assert "gate MPSSupport is needed by the pools but not on" in problems


def test_compute_domains_without_an_nvlink_pool_are_caught(chart):
    data, cluster, values = derived("t4-time-slicing-0.4")
    values["resources"]["computeDomains"]["enabled"] = True
    problems = chart_problems(render_derived(chart, cluster, values), data, cluster, values)
    assert any(p.startswith("compute-domain plugin running") for p in problems), problems


def test_a_gate_the_line_does_not_know_stops_every_driver_container(chart):
    data = copy.deepcopy(CORPUS_DATA["gb200-compute-domain-0.4"])
    data["dra_driver"]["feature_gates"] = {"HostManagedIMEXDaemon": True}
    with pytest.raises(Problems, match="DRA driver 0.4.x has no feature gate HostManagedIMEXDaemon"):
        load_cluster(data)  # gpupool refuses it first; the chart itself renders any gate
    values = v(featureGates={"HostManagedIMEXDaemon": True})
    out = chart(values, "0.4.1")
    assert out.error is None
    stopped = out.startup_errors()
    assert set(stopped) == set(out.container_gates()) and len(stopped) == 3
    assert all("unrecognized feature gate: HostManagedIMEXDaemon" in why for why in stopped.values())
    assert chart(values, "0.5.1").startup_errors() == {}


def test_conflicting_gates_stop_the_driver(chart):
    out = chart(v(featureGates={"DynamicMIG": True, "MPSSupport": True}), "0.5.1")
    assert out.error is None and out.startup_errors()
    assert all("mutually exclusive" in why for why in out.startup_errors().values())


@pytest.mark.parametrize(
    "key,value,unread,trace",
    [
        ("resources.computeDomains.imex.mode", "hostManaged", "resources.computeDomains.imex", "IMEX_MODE"),
        (
            "kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled",
            True,
            "kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled",
            "GPU_CLIQUE_LABEL_ENABLED",
        ),
        ("consumableShares", "memory", "consumableShares", "CONSUMABLE_SHARES"),
    ],
)
def test_a_0_5_value_does_nothing_on_0_4_and_gpupool_refuses_it(chart, key, value, unread, trace):
    values = v(featureGates={"HostManagedIMEXDaemon": True} if "imex" in key else {})
    node = values
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    old, new = chart(values, "0.4.1"), chart(values, "0.5.1")
    assert old.error is None and trace not in yaml.safe_dump(
        old.objects
    )  # silently ignored, as the real 0.4 chart does
    assert new.error is None and trace in yaml.safe_dump(new.objects)
    assert facts.unread_values("0.4", values) == [unread] and facts.unread_values("0.5", values) == []
    data = copy.deepcopy(CORPUS_DATA["gb200-compute-domain-0.4"])
    data["dra_driver"]["values"] = {
        k: val for k, val in values.items() if k not in ("gpuResourcesEnabledOverride", "featureGates")
    }
    with pytest.raises(Problems, match="the 0.4.x chart has no value %s" % key.replace(".", r"\.")):
        load_cluster(data)


def test_feature_gates_env_reads_back():
    assert parse_gates("A=true,B=false,") == {"A": True, "B": False}
    assert parse_gates(None) is None
