"""Inventory errors fit a terminal: closest names first, a few inline, every name on the lines below; no line over 200.

The integration test of the corpus (tests/integration/test_malformed_inventories.py) checks what site.yml
prints; this checks the model's own text for every corpus file, fast, and the pieces that shape it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpupool.core.plugins.module_utils.mig import name_lists
from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import CATALOG
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import unknown_profile_message
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import LINE_LIMIT, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster

CORPUS = sorted((Path(__file__).resolve().parents[5] / "tests" / "data" / "malformed").glob("*.yml"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_no_line_of_a_corpus_error_is_longer_than_200_characters(path):
    with pytest.raises(Problems) as err:
        load_cluster(yaml.safe_load(path.read_text())["gpupool_cluster"])
    rendered = err.value.render()  # the failed task's msg
    assert max(len(line) for line in rendered.splitlines()) <= LINE_LIMIT, rendered


def test_the_corpus_has_the_long_lists_of_the_issue():
    """An unknown GPU model (19 catalog keys) and a mistyped gate (16 gates) were 500-character lines."""
    names = {p.stem for p in CORPUS}
    assert {"gpu-model-unknown", "feature-gate-typo", "extra-class-mig-profile-unknown"} <= names


def test_closest_first_then_the_rest_in_their_own_order():
    assert name_lists.closest_first("node_lables", ["name", "node_labels", "node_selector", "gpu"])[:2] == [
        "node_labels",
        "node_selector",
    ]
    assert name_lists.closest_first("zzz", ["b", "a", "b"]) == ["b", "a"]  # no likeness: as given, each once


def test_a_short_list_is_inline_whole_and_nothing_follows():
    assert name_lists.inline("x", ["a", "b"]) == "a, b"
    assert name_lists.below("names", "x", ["a", "b"]) == ""
    assert name_lists.inline("x", []) == "none"


def test_a_long_list_names_the_closest_inline_and_all_below_wrapped():
    names = ["name%02d" % i for i in range(40)]
    assert name_lists.inline("name07", names) == "name07, name00, name01 and 37 more below"
    below = name_lists.below("names", "name07", names)
    assert below.startswith("\nnames (40, closest first): name07, name00, name01, ")
    lines = below.splitlines()[1:]
    assert len(lines) > 1 and all(len(line) <= name_lists.WIDTH for line in lines)
    assert ", ".join(lines).replace(",,", ",").split(": ", 1)[1].split(", ") == name_lists.closest_first(
        "name07", names
    )


def test_a_missing_profile_names_the_profiles_the_gpu_has_closest_first():
    message = unknown_profile_message(CATALOG["H100-80GB"], "3g.20gb")
    assert message.startswith("H100-80GB has no MIG profile '3g.20gb' (that name belongs to A100-40GB; here the same ")
    has = message.split("; it has ", 1)[1]
    assert has.split(", ")[:3] == ["1g.20gb", "2g.20gb", "3g.40gb"]
    assert sorted(has.split(", ")) == sorted(p.name for p in CATALOG["H100-80GB"].mig.profiles)


def test_a_gpu_with_many_profiles_lists_them_below():
    message = unknown_profile_message(CATALOG["RTX-PRO-6000"], "2g.48gb+me")
    sentence, full = message.split("\n", 1)
    assert sentence.endswith("and 8 more below")
    assert full.startswith("its profiles (11, closest first): 2g.48gb-me, 2g.48gb+me.all, 2g.48gb, ")


def test_problems_render_indents_a_message_own_lines_and_wraps_long_ones():
    long = "word " * 60
    text = Problems([("a.b", "first line\nsecond line"), ("c", long.strip())]).render()
    lines = text.splitlines()
    assert lines[1:3] == ["  - a.b: first line", "    second line"]
    assert all(len(line) <= LINE_LIMIT for line in lines) and len(lines) == 5
    assert lines[4].startswith("    word")
    # a planner's one sentence without a path is kept as it was written
    assert Problems("x " * 150).render() == "x " * 150
