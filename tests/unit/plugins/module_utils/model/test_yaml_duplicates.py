"""Keys written twice in one YAML mapping, told apart from keys that override a `<<` merge."""

from __future__ import annotations

import textwrap

import yaml

from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import (
    DuplicateKey,
    find_duplicate_keys,
    problems_of,
)


def found(text: str):
    return [(d.line, d.first_line, d.path) for d in find_duplicate_keys(textwrap.dedent(text), "hv.yml")]


def test_merge_overrides_are_not_duplicates_and_load_as_the_override():
    text = """\
        a100: &a100_ng
          flavor: g4.p2.40g
          node_count: 1
        gpupool_cluster:
          pools:
            - name: gpu-a
              nodegroup: {<<: *a100_ng, node_count: 2}
            - name: gpu-b
              nodegroup:
                <<: *a100_ng
                node_count: 3
                flavor: g4.p2.80g
        """
    assert found(text) == []
    pools = yaml.safe_load(textwrap.dedent(text))["gpupool_cluster"]["pools"]  # what YAML (and Ansible) load
    assert pools[0]["nodegroup"] == {"flavor": "g4.p2.40g", "node_count": 2}
    assert pools[1]["nodegroup"] == {"flavor": "g4.p2.80g", "node_count": 3}


def test_a_key_written_twice_is_found_with_its_line_the_first_line_and_the_pool_name():
    text = """\
        gpupool_cluster:
          name: c1
          pools:
            - name: gpu-t4
              gpu: {model: T4}
            - name: gpu-a100
              gpu: {model: A100-40GB}
              mig: {mode: static}
              gpu: {model: A100-80GB}
        """
    (dup,) = find_duplicate_keys(textwrap.dedent(text), "host_vars/c1/gpupool.yml")
    assert dup == DuplicateKey("host_vars/c1/gpupool.yml", 9, 7, "gpupool_cluster.pools[1] (gpu-a100).gpu", "gpu")
    ((where, message),) = problems_of([dup])
    assert where == "host_vars/c1/gpupool.yml:9: gpupool_cluster.pools[1] (gpu-a100).gpu"
    assert (
        message.startswith("written twice (first at line 7): YAML keeps only the last one") and "delete one" in message
    )


def test_nested_mappings_and_the_top_level():
    text = """\
        gpupool_cluster:
          dra_driver:
            feature_gates:
              DynamicMIG: true
              MPSSupport: true
              DynamicMIG: false
          name: c1
        gpupool_cluster: {}
        """
    assert found(text) == [(6, 4, "gpupool_cluster.dra_driver.feature_gates.DynamicMIG"), (8, 1, "gpupool_cluster")]


def test_a_merge_list_overridden_and_one_key_in_two_merged_mappings():
    """`<<: [*a, *b]`: a key both bring in is no duplicate, nor is an override of it. (Which of the two wins depends
    on the PyYAML release - 6.0.2 the first, as the YAML merge spec says, 6.0.4 the last; docs/inventory.md says so -
    so only the override is checked here.)"""
    text = """\
        base: &base {flavor: g1, node_count: 1}
        big: &big {flavor: g2, max_node_count: 4}
        ng:
          <<: [*base, *big]
          node_count: 2
        """
    assert found(text) == []
    merged = yaml.safe_load(textwrap.dedent(text))["ng"]
    assert (merged["node_count"], merged["max_node_count"], merged["flavor"] in ("g1", "g2")) == (2, 4, True)


def test_two_merge_keys_in_one_mapping_are_a_duplicate_with_the_list_as_the_fix():
    text = """\
        a: &a {x: 1}
        b: &b {y: 2}
        c:
          <<: *a
          <<: *b
        """
    (dup,) = find_duplicate_keys(textwrap.dedent(text), "f.yml")
    assert (dup.line, dup.first_line, dup.path) == (5, 4, "c.<<")
    assert "`<<: [*first, *second]`" in dup.message


def test_sequences_of_mappings_each_entry_on_its_own():
    text = """\
        tenants:
          - namespace: ml
            templates:
              - {name: one, pool: gpu-t4}
              - {name: two, pool: gpu-t4, pool: gpu-h100}
          - namespace: ml
        """
    # the same key in two entries of a list is no duplicate; twice in one entry is (flow style has lines too)
    assert found(text) == [(5, 5, "tenants[0] (ml).templates[1] (two).pool")]


def test_a_key_duplicated_inside_an_anchored_mapping_is_reported_once_where_the_anchor_is():
    text = """\
        ng: &ng
          flavor: g1
          flavor: g2
        pools:
          - nodegroup: *ng
          - nodegroup: {<<: *ng, node_count: 2}
        """
    assert found(text) == [(3, 2, "ng.flavor")]


def test_quoted_and_plain_spellings_are_one_key_a_number_and_a_string_are_two():
    text = """\
        labels:
          team: a
          "team": b
        counts:
          1: one
          "1": also one, but a string
        flags:
          yes: 1
          true: 2
        """
    # YAML 1.1 (PyYAML, ansible-core) reads yes and true as the same boolean key
    assert found(text) == [(3, 2, "labels.team"), (9, 8, "flags.true")]


def test_flow_style_and_several_documents():
    text = """\
        ---
        a: {x: 1, y: 2, x: 3}
        ---
        b: [{k: 1, k: 2}]
        """
    assert found(text) == [(2, 2, "a.x"), (4, 4, "b[0].k")]


def test_tags_the_safe_loader_does_not_know_and_text_that_is_not_yaml():
    vaulted = """\
        secret: !vault |
          $ANSIBLE_VAULT;1.1;AES256
          6162
        other: !unsafe '{{ x }}'
        other: 2
        """
    assert found(vaulted) == [(5, 4, "other")]
    assert found("[gpupool_clusters]\ncern-gpu ansible_connection=local\n") == []  # an INI inventory
    assert found("") == []


def test_an_alias_to_an_enclosing_mapping_does_not_loop():
    text = """\
        a: &a
          self: *a
          k: 1
          k: 2
        """
    assert found(text) == [(4, 3, "a.k")]
