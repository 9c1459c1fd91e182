"""Label selectors in kubectl's text form: what parses, what matches (k8s.io/apimachinery/pkg/labels semantics)."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import label_selector as model_label_selector

POD = {"app": "inference", "tier": "gold", "example.com/keep": ""}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("app=inference", True),
        ("app==inference", True),
        ("app=training", False),
        ("app!=training", True),
        ("missing!=x", True),  # != matches a pod without the key, as in Kubernetes
        ("app!=inference", False),
        ("tier in (gold, silver)", True),
        ("tier in(bronze)", False),
        ("missing in (a)", False),
        ("tier notin (bronze)", True),
        ("missing notin (a)", True),
        ("tier notin (gold)", False),
        ("example.com/keep", True),
        ("!example.com/keep", False),
        ("! batch", True),
        ("example.com/keep=", True),  # an empty value is a value
        ("app=inference,tier in (gold),!batch", True),
        ("app=inference, tier=silver", False),
    ],
)
def test_matches(text, expected):
    assert model_label_selector.selector_matches(text, POD) is expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "an empty selector matches every pod; leave the key out instead"),
        ("  ", "an empty selector matches every pod; leave the key out instead"),
        ("a,,b", "'a,,b' has an empty requirement (two commas, or one at an end)"),
        ("a,", "'a,' has an empty requirement (two commas, or one at an end)"),
        (
            "gpu>1",
            "'gpu>1': the numeric operators < and > are only for node affinity; use =, !=, in, notin, key or !key",
        ),
        ("tier in ()", "'tier in ()': a value set needs at least one value, e.g. tier in (a,b)"),
        (
            "app inference",
            "'app inference' is not a label selector requirement: use key=value, key!=value, "
            "key in (a,b), key notin (a,b), key or !key",
        ),
        (
            "app=in ference",
            "'app=in ference' is not a label selector requirement: use key=value, key!=value, "
            "key in (a,b), key notin (a,b), key or !key",
        ),
        (
            "a=b=c",
            "'b=c' in 'a=b=c' is not a label value: at most 63 characters of [A-Za-z0-9-_.], starting and ending "
            "with a letter or digit (or empty)",
        ),
        (
            "-app=x",
            "'-app' in '-app=x' is not a label key: use an optional DNS-subdomain prefix and '/', then at most 63 "
            "characters of [A-Za-z0-9-_.] starting and ending with a letter or digit, e.g. example.com/team",
        ),
    ],
)
def test_refused_with_a_reason(text, message):
    with pytest.raises(ValueError) as err:
        model_label_selector.parse(text)
    assert str(err.value) == message


def test_parse_keeps_the_value_sets_in_order():
    assert model_label_selector.parse("a in (x, y),b notin (z),c,!d,e=f,g!=h") == [
        ("a", "in", ("x", "y")),
        ("b", "not_in", ("z",)),
        ("c", "exists", ()),
        ("d", "not_exists", ()),
        ("e", "in", ("f",)),
        ("g", "not_in", ("h",)),
    ]


def test_no_requirements_match_nothing():
    assert model_label_selector.matches([], POD) is False
