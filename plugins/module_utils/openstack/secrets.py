# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which values of a cloud dict are secrets, without importing openstacksdk (every module that takes the
inventory hides them; importing the SDK costs most of a second of CPU per module run).

A value under a secret key is a secret whatever its YAML type: `password: 123456789` is an int and a TOTP
`passcode: 314159` too, and both reach AWX's job events and -vvv output as numbers unless their text is masked; a
secret key that holds a mapping or a list (a structured credential) has every value inside it masked. Booleans and
nulls are never secrets (masking the text "True" would blank every flag of the output)."""

from __future__ import annotations

from typing import Any, Iterator, List

SECRET_KEYS = ("password", "passcode", "secret", "token", "application_credential_secret", "client_key", "key")


def secret_key(key: Any) -> bool:
    """Whether a key names a secret (password, passcode, token, ..._secret, ...key)."""
    text = str(key).lower()
    return any(word in text for word in SECRET_KEYS)


def secret_texts(value: Any) -> Iterator[str]:
    """Every value inside `value` as the output would spell it: a string itself, a number as str() and JSON write it
    (Ansible's masking compares a number by that text); mappings and lists are walked."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from secret_texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from secret_texts(item)
    elif isinstance(value, (str, int, float)):
        text = str(value)
        if text:
            yield text
    elif isinstance(value, bytes):
        if value:
            yield value.decode("utf-8", "replace")


def secrets_in(value: Any) -> List[str]:
    """Secret values inside a cloud dict (passwords, passcodes, tokens, credential secrets), whatever their type,
    as text, for no_log."""
    found: List[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if secret_key(key):
                found.extend(secret_texts(item))
            elif isinstance(item, (dict, list, tuple)):
                found.extend(secrets_in(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(secrets_in(item))
    return found
