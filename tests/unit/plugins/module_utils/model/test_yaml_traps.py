# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""model/yaml_traps.py: what YAML 1.1 reads otherwise than written, refused with file, line, key and the fix."""

from __future__ import annotations

import yaml

from ansible_collections.gpupool.core.plugins.module_utils.model import bounds
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_traps import _trap, boolean_keys, find_yaml_traps

TEXT = """\
gpupool_cluster:
  name: c1
  drain: {timeout: 1:30}
  dra_driver:
    feature_gates: {DynamicMIG: off}
    values: {kubeletPlugin: {mode: 0644, on: yes}}
  magnum: {cloud: {auth: {password: 0123}}, cluster: k8s, labels: {nvidia_gpu_enabled: yes}}
  pools:
    - name: gpu-t4
      nodegroup: {flavor: g1, node_count: 010}
      node_selector: {example.com/gpu: on, example.com/rack: '010', example.com/row: 'on'}
      gpu: {model: T4, not_in_catalog: no}
      gpu_taint: yes
other_var: 0755
"""


def test_each_trap_is_found_at_its_file_line_and_key_with_the_form_to_write():
    found = [(t.where, t.message) for t in find_yaml_traps(TEXT, "host_vars/c1/gpupool.yml")]
    assert found == [
        (
            "host_vars/c1/gpupool.yml:3: gpupool_cluster.drain.timeout",
            "1:30 is read as 90: YAML 1.1 reads a:b as a number in base 60; write 90, or '1:30' in quotes for text",
        ),
        (
            "host_vars/c1/gpupool.yml:10: gpupool_cluster.pools[0] (gpu-t4).nodegroup.node_count",
            "010 is read as 8: YAML 1.1 reads a leading 0 as octal; write 10 (or '010' in quotes if a string is meant)",
        ),
        (
            "host_vars/c1/gpupool.yml:11: gpupool_cluster.pools[0] (gpu-t4).node_selector['example.com/gpu']",
            "on is read as the boolean true (YAML 1.1), not the text 'on'; write 'on' in quotes for text, or true "
            "for a boolean",
        ),
    ]


def test_booleans_where_the_model_expects_them_are_left_alone():
    scalars, maps = boolean_keys()
    assert {"gpu_taint", "not_in_catalog", "prune_nodegroups"} <= scalars
    assert {"feature_gates", "labels"} <= maps
    assert "node_count" not in scalars and "node_selector" not in maps


def test_a_tab_inside_a_plain_value_is_refused_and_a_quoted_one_is_what_was_meant():
    plain = yaml.ScalarNode("tag:yaml.org,2002:str", "ml\ta")
    quoted = yaml.ScalarNode("tag:yaml.org,2002:str", "ml\ta", style="'")
    assert (
        _trap(plain, "team", False)
        == "'ml\\ta' holds a tab, which YAML keeps inside the value; write spaces, or remove it"
    )
    assert _trap(quoted, "team", False) is None


def test_an_alias_bomb_is_refused_with_the_bound_before_its_scalars_are_read():
    lines = ["x0: &a0 [s, s, s, s, s, s, s, s, s, s]"]
    lines += ["x%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)) for i in range(1, 5)]
    text = "\n".join(lines) + "\ngpupool_cluster:\n  name: c1\n  dra_driver: {values: {x: *a4}}\n  pools: []\n"
    ((trap),) = find_yaml_traps(text, "f.yml")
    assert trap.where == "f.yml:7: gpupool_cluster"
    # *a4 is 1 + 10 * (1 + 10 * (1 + 10 * (1 + 10 * 11))) = 111,111 values; the cluster's mapping, its keys and the
    # other values add 10
    assert trap.message.startswith("the data holds 111121 %s; gpupool reads at most %d" % (bounds.EXPANDED, 100000))
