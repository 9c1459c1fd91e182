# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Magnum's microversions as the client negotiates them: the header names, the range this collection speaks, and
the choice from the server's range (its ``OpenStack-API-Minimum/Maximum-Version`` response headers).

The microversion each planned feature needs is the planner's (plan/magnum/api_rules.py): the client speaks up to the
newest of them."""

from __future__ import annotations

import re
from typing import Optional, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum.api_rules import (
    NODE_LABELS_VERSION,
    Version,
    format_version,
)

SERVICE = "container-infra"
VERSION_HEADER = "OpenStack-API-Version"
MAX_HEADER = "OpenStack-API-Maximum-Version"
MIN_HEADER = "OpenStack-API-Minimum-Version"

CLIENT_MAX_VERSION: Version = NODE_LABELS_VERSION
NODEGROUP_MIN_VERSION: Version = (1, 9)  # the nodegroup API (Magnum Train)


def parse_version(text: Union[str, Version]) -> Version:
    """'1.10' or 'container-infra 1.10' -> (1, 10). Raises ValueError on anything else."""
    if isinstance(text, tuple):
        return text
    value = str(text).strip().split()[-1] if str(text).strip() else ""
    match = re.match(r"^(\d+)\.(\d+)$", value)
    if not match:
        raise ValueError("not a microversion: %r" % (text,))
    return int(match.group(1)), int(match.group(2))


def version_header(version: Version) -> str:
    """The value of OpenStack-API-Version for a call at `version`: the short service type, which every Magnum
    release accepts (the long one is refused with 406 before 2026.1)."""
    return "%s %s" % (SERVICE, format_version(version))


def choose_microversion(
    server_max: Union[str, Version],
    server_min: Optional[Union[str, Version]] = None,
    client_max: Version = CLIENT_MAX_VERSION,
    where: str = "the Magnum API",
) -> Version:
    """The microversion to send: the highest both sides know. Fails below 1.9 (no nodegroup API)."""
    server_max = parse_version(server_max)
    chosen = min(server_max, tuple(client_max))
    if server_min is not None and chosen < parse_version(server_min):
        raise Problems(
            "%s only accepts microversions %s to %s, this collection speaks up to %s."
            % (where, format_version(parse_version(server_min)), format_version(server_max), format_version(client_max))
        )
    if chosen < NODEGROUP_MIN_VERSION:
        raise Problems(
            "%s supports microversions up to %s, but nodegroups need 1.9 (Magnum Train or newer). "
            "Ask the cloud operators to upgrade Magnum." % (where, format_version(server_max))
        )
    return chosen
