# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which values of a cloud dict are secrets, without importing openstacksdk (every module that takes the
inventory hides them; importing the SDK costs most of a second of CPU per module run)."""

from __future__ import annotations

from typing import Any, List

SECRET_KEYS = ("password", "secret", "token", "application_credential_secret", "client_key", "key")


def secrets_in(value: Any) -> List[str]:
    """Secret values inside a cloud dict (passwords, tokens, credential secrets), for no_log."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                found.extend(secrets_in(item))
            elif item and any(word in str(key).lower() for word in SECRET_KEYS) and isinstance(item, str):
                found.append(item)
    elif isinstance(value, list):
        for item in value:
            found.extend(secrets_in(item))
    return found
