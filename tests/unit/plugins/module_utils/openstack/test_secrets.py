"""A cloud's secrets are found whatever their YAML type (openstack/secrets.py): numbers, nested values, strings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.openstack.secrets import secret_key, secrets_in

SCALARS = st.one_of(
    st.text(min_size=1), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)


def leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def test_a_numeric_password_and_passcode_and_a_nested_token_are_secrets():
    cloud = {
        "auth_type": "v3multifactor",
        "auth": {"username": "demo", "password": 123456789, "passcode": 314159, "token": {"id": 2.5, "ok": True}},
        "region_name": "RegionOne",
        "verify": False,
    }
    assert sorted(secrets_in(cloud)) == ["123456789", "2.5", "314159"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["password", "passcode", "token", "application_credential_secret", "key"]), VALUES)
def test_every_value_under_a_secret_key_is_found_as_text_whatever_its_type(key, value):
    found = set(secrets_in({"auth": {key: value, "username": "demo"}}))
    for leaf in leaves(value):
        if isinstance(leaf, bool) or leaf is None or str(leaf) == "":
            continue  # a flag or a null is no secret (masking "True" would blank the output)
        assert str(leaf) in found, (key, value)
    assert "demo" not in found or "demo" in {str(leaf) for leaf in leaves(value)}
    assert secret_key(key) and not secret_key("username")
