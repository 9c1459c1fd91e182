"""Magnum's microversions as the client negotiates them (plugins/module_utils/openstack/magnum_versions.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_versions import (
    choose_microversion,
    parse_version,
    version_header,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import (
    NODE_LABELS_VERSION,
    format_version,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.10", (1, 10)),
        ("container-infra 1.12", (1, 12)),
        ("container-infrastructure-management 1.14", (1, 14)),
        ((1, 9), (1, 9)),
    ],
)
def test_parse_version(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "latest", "1", "1.x", "container-infra"])
def test_parse_version_rejects(text):
    with pytest.raises(ValueError):
        parse_version(text)


@pytest.mark.parametrize(
    "server_max, expected",
    [("1.9", (1, 9)), ("1.11", (1, 11)), ("1.12", (1, 12)), ("1.14", (1, 14)), ("1.20", (1, 14))],
)
def test_choose_microversion_is_the_highest_both_know(server_max, expected):
    assert choose_microversion(server_max, "1.1") == expected


def test_choose_microversion_refuses_servers_without_nodegroups():
    with pytest.raises(Problems, match=r"up to 1\.8, but nodegroups need 1\.9"):
        choose_microversion("container-infra 1.8", "container-infra 1.1")


def test_choose_microversion_refuses_servers_above_us():
    with pytest.raises(Problems, match="only accepts microversions 2.0"):
        choose_microversion("2.5", "2.0")


def test_format_version():
    assert format_version((1, 10)) == "1.10"


def test_the_client_speaks_up_to_the_newest_version_a_plan_uses():
    assert choose_microversion("1.99") == NODE_LABELS_VERSION


def test_the_header_names_the_short_service_type():
    assert version_header((1, 14)) == "container-infra 1.14"
