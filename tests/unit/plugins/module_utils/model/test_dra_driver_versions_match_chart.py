"""gpupool's per-line table (model/dra_driver_versions.py) and the values it derives hold to the test bed's facts
about NVIDIA's real chart and driver (testbed/dra_chart_facts.py, testbed/dra_driver_rules.py; both read from
kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 and main 95932046). A new driver line, or a fact that changes on
either side, fails here until both agree - and where they disagree, gpupool is what gets fixed.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRA_PLUGIN_NODE_LABELS
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import CHART_GPU_TOLERATION
from testbed import dra_chart_facts as facts
from testbed import dra_driver_rules

LINES = sorted(versions.LINES)


def tree(path: str, leaf=True) -> dict:
    out: dict = {}
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = leaf
    return out


def test_gpupool_supports_exactly_the_lines_the_facts_table_has():
    assert LINES == sorted(facts.LINES)


@pytest.mark.parametrize("line", LINES)
def test_gates_and_their_defaults_per_line(line):
    assert versions.default_gates(versions.LINES[line]) == facts.gates(line)


def test_validate_feature_gates_rules():
    assert set(versions.MUTUALLY_EXCLUSIVE) == set(dra_driver_rules.EXCLUSIVE)
    assert set(versions.REQUIRES) == set(dra_driver_rules.REQUIRES)


@pytest.mark.parametrize("line", LINES)
def test_no_value_the_real_chart_reads_is_refused_as_unknown(line):
    known = facts.VALUE_PATHS[line] | set(facts.TEMPLATE_ONLY) | set(facts.TEMPLATE_ONLY_OPAQUE)
    refused = [p for p in sorted(known) if versions.unknown_values(versions.LINES[line], tree(p))]
    # the two the chart fails on are refused too, with their own sentence (model/dra_driver_checks.py)
    assert refused == sorted(facts.REFUSED_VALUES) == sorted(versions.CHART_REFUSED_VALUES)


@pytest.mark.parametrize("line", LINES)
def test_every_value_of_another_line_is_refused(line):
    others = set().union(*(facts.VALUE_PATHS[other] for other in facts.LINES if other != line))
    missing = sorted(others - facts.VALUE_PATHS[line])
    assert missing or line == "0.5"  # 0.4 lacks the 0.5 keys; 0.5 is a superset of 0.4
    let_through = [p for p in missing if not versions.unknown_values(versions.LINES[line], tree(p))]
    assert let_through == [], "gpupool would pass these to a %s chart, which ignores them" % line
    # a free-form value (tolerations, affinity, labels) is the user's own below its key
    assert versions.unknown_values(versions.LINES[line], tree("kubeletPlugin.nodeSelector.example.org/rack")) == []


@pytest.mark.parametrize("line", LINES)
def test_imex_modes_exist_where_the_chart_has_the_imex_values(line):
    has_imex_values = "resources.computeDomains.imex.mode" in facts.VALUE_PATHS[line]
    assert versions.LINES[line].has_host_managed_imex == has_imex_values
    assert bool(versions.LINES[line].imex_modes) == has_imex_values
    if has_imex_values:
        assert versions.LINES[line].imex_modes[0] == facts.DEFAULTS[line]["resources.computeDomains.imex.mode"]
        assert versions.DEFAULT_IMEX_SOCKET == facts.DEFAULTS[line]["resources.computeDomains.imex.hostSocketPath"]


@pytest.mark.parametrize("line", LINES)
def test_webhook_default_and_cert_manager(line):
    assert versions.LINES[line].webhook_enabled_by_default is facts.DEFAULTS[line]["webhook.enabled"]
    # webhook on with the chart's default TLS mode renders cert-manager objects
    assert facts.DEFAULTS[line]["webhook.tls.mode"] == "cert-manager"
    assert versions.needs_cert_manager({"webhook": {"enabled": True}}, versions.LINES[line])


def test_kubelet_plugin_placement_defaults():
    assert CHART_GPU_TOLERATION == facts.PLUGIN_GPU_TOLERATION
    assert tuple(DRA_PLUGIN_NODE_LABELS) == facts.PLUGIN_NODE_LABEL_TERMS
