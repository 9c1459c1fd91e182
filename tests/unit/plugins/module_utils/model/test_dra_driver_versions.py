"""The per-version DRA driver table: gates, rules, values keys, IMEX modes (pure)."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import (
    dra_driver_versions as v,
)


def test_versions_parse_and_refuse_a_leading_v():
    assert v.parse_version("0.5.1") == (0, 5, 1, "")
    assert v.parse_version("0.5.0-dev") == (0, 5, 0, "dev")
    with pytest.raises(ValueError, match=r"leading 'v'.*use '0.5.1'"):
        v.parse_version("v0.5.1")
    with pytest.raises(ValueError, match="not a chart version"):
        v.parse_version("0.5")


def test_line_for_each_supported_line_and_a_sentence_for_others():
    assert v.line_for("0.4.1").line == "0.4"
    assert v.line_for("0.5.0-dev").line == "0.5"
    assert v.supported_lines() == ["0.4", "0.5"]
    with pytest.raises(
        ValueError,
        match=r"25.12.0 is not supported.*0.4.x, 0.5.x.*predate the 0.4 rename",
    ):
        v.line_for("25.12.0")
    with pytest.raises(ValueError, match=r"0.6.0 is not supported.*dra_driver_versions.py"):
        v.line_for("0.6.0")


def test_gates_per_line_match_the_sources():
    l04, l05 = v.LINES["0.4"], v.LINES["0.5"]
    assert "HostManagedIMEXDaemon" not in l04.gate_names
    assert {
        "HostManagedIMEXDaemon",
        "FabricManagerPartitioning",
        "DRAListTypeAttributes",
        "ConsumableShares",
    } <= set(l05.gate_names) - set(l04.gate_names)
    assert set(l04.gate_names) < set(l05.gate_names)  # 0.5 only adds
    defaults = v.default_gates(l04)
    # the beta gates that are on unless turned off
    assert {k for k, on in defaults.items() if on} == {
        "IMEXDaemonsWithDNSNames",
        "ComputeDomainCliques",
        "CrashOnNVLinkFabricErrors",
        "ContextualLogging",
        "LoggingBetaOptions",
    }
    assert l04.gate("ContextualLogging").stage == "Beta" and l04.gate("Nope") is None


def test_an_unknown_gate_is_named_with_where_it_exists():
    (msg,) = v.gate_problems(v.LINES["0.4"], {"HostManagedIMEXDaemon": True, "MPSSupport": True})
    assert "HostManagedIMEXDaemon" in msg and "0.4.x" in msg and "exit at flag parsing" in msg
    assert "only in another driver line (0.5.x)" in msg
    (msg,) = v.gate_problems(v.LINES["0.5"], {"MPSSuport": True})
    assert "MPSSuport" in msg and "known gates:" in msg and "MPSSupport" in msg


@pytest.mark.parametrize("a,b", v.MUTUALLY_EXCLUSIVE)
def test_every_conflict_is_refused_naming_both(a, b):
    for line in v.LINES.values():
        problems = v.gate_problems(line, {a: True, b: True})
        assert len(problems) == 1 and a in problems[0] and b in problems[0] and "mutually exclusive" in problems[0]
        assert v.gate_problems(line, {a: True}) == []  # either one alone is fine


def test_requirements_use_the_defaults():
    line = v.LINES["0.4"]
    # ComputeDomainCliques is on by default: turning its requirement off alone is refused
    (msg,) = v.gate_problems(line, {"IMEXDaemonsWithDNSNames": False})
    assert "ComputeDomainCliques (default) requires IMEXDaemonsWithDNSNames" in msg
    assert v.gate_problems(line, {"IMEXDaemonsWithDNSNames": False, "ComputeDomainCliques": False}) == []
    (msg,) = v.gate_problems(line, {"DeviceMetadata": True})
    assert "DeviceMetadata=true requires PassthroughSupport" in msg
    assert v.gate_problems(line, {"DeviceMetadata": True, "PassthroughSupport": True}) == []


def test_host_managed_forces_the_dns_gates_off_on_0_5():
    line = v.LINES["0.5"]
    eff = v.effective_gates(line, {"IMEXDaemonsWithDNSNames": False}, v.HOST_MANAGED)
    assert eff["IMEXDaemonsWithDNSNames"] is False and eff["ComputeDomainCliques"] is False
    assert (
        v.gate_problems(
            line,
            {"IMEXDaemonsWithDNSNames": False, "HostManagedIMEXDaemon": True},
            v.HOST_MANAGED,
        )
        == []
    )


def test_imex_modes_per_line():
    assert v.imex_mode_problems(v.LINES["0.4"], v.DRIVER_MANAGED, {}) == []
    (msg,) = v.imex_mode_problems(v.LINES["0.4"], v.HOST_MANAGED, {})
    assert "needs DRA driver 0.5.x" in msg and "0.4.x has no resources.computeDomains.imex.mode" in msg
    assert v.imex_mode_problems(v.LINES["0.5"], v.HOST_MANAGED, {"HostManagedIMEXDaemon": True}) == []
    (msg,) = v.imex_mode_problems(v.LINES["0.5"], v.HOST_MANAGED, {"HostManagedIMEXDaemon": False})
    assert "HostManagedIMEXDaemon" in msg
    assert "unknown IMEX mode" in v.imex_mode_problems(v.LINES["0.5"], "hostmanaged", {})[0]


def test_values_keys_per_line():
    values = {
        "consumableShares": "memory",
        "resources": {"computeDomains": {"imex": {"mode": "hostManaged"}}},
        "kubeletPlugin": {"anything": {"below": 1}},
        "bogus": 1,
    }
    assert v.unknown_values(v.LINES["0.4"], values) == [
        "bogus",
        "consumableShares",
        "resources.computeDomains.imex",
        "resources.computeDomains.imex.mode",
    ]
    assert v.unknown_values(v.LINES["0.5"], values) == ["bogus"]


def test_cert_manager_is_needed_only_for_a_cert_manager_webhook():
    assert not v.needs_cert_manager({}, v.LINES["0.5"])
    assert v.needs_cert_manager({"webhook": {"enabled": True}})
    assert not v.needs_cert_manager({"webhook": {"enabled": True, "tls": {"mode": "secret"}}})
