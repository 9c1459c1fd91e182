# -*- coding: utf-8 -*-
"""match_nodes finds label-only pools' nodes through an index: it must give what calling every matcher on every node
gives (the first matching pool takes a node, every further one is a conflict)."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import match_nodes, node_matcher

KEYS = ["a", "b", "magnum.openstack.org/nodegroup"]
VALUES = ["x", "y", "z"]


def pool(name, selector, nodegroup):
    return SimpleNamespace(name=name, node_selector=selector, nodegroup=nodegroup, node_labels={})


def naive(matchers, nodes):
    out = {p.name: [] for p, _m in matchers}
    owner, conflicts = {}, []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        for p, match in matchers:
            if match(node):
                if name in owner:
                    conflicts.append((p.name, name))
                else:
                    owner[name] = p.name
                    out[p.name].append(name)
    return out, conflicts


@settings(max_examples=150, deadline=None)
@given(
    labels=st.lists(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3), max_size=12),
    selectors=st.lists(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2), max_size=5),
    pattern=st.sampled_from([None, "n[13]", "{pool}"]),
)
def test_the_index_gives_what_every_matcher_on_every_node_gives(labels, selectors, pattern):
    nodes = [{"metadata": {"name": "n%d" % k, "labels": dict(lab)}} for k, lab in enumerate(labels)]
    pools = [
        pool("p%d" % k, sel or None, None if sel else SimpleNamespace(name="x")) for k, sel in enumerate(selectors)
    ]
    matchers = [(p, node_matcher(p, name_pattern=pattern)) for p in pools]
    out, conflicts = match_nodes(matchers, nodes)
    want_out, want_conflicts = naive(matchers, nodes)
    assert {k: [n["metadata"]["name"] for n in v] for k, v in out.items()} == want_out
    assert [(p, n) for p, n, _text in conflicts] == want_conflicts
