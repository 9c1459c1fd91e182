"""Property (#34): raw chart values drawn over the chart's own keys never undo what gpupool derives.

Raw `dra_driver.values` are drawn over the keys of the real chart (the test bed's table, testbed/dra_chart_facts.py,
read from NVIDIA's values.yaml - not the collection's), with tolerations, gates and affinities among them, beside
a few pools. Either the model refuses the inventory - and then every key the documentation says is refused is
named at its path - or the values gpupool renders:

* keep every derived toleration, and tolerate every taint of every present pool (toleration semantics here);
* turn on no gate a pool forbids: the test bed's driver starts with them (testbed/dra_driver_rules.py), no
  DynamicMIG beside a static-MIG pool, every gate a pool needs is on;
* equal the merge rule of docs/modules/dra-driver.md, read from its table: maps merge, anything else replaces,
  a `merged` list is gpupool's (or the chart's default) then the user's entries, each once, `featureGates` the
  union.
"""

from __future__ import annotations

import copy
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import line_for
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import values as dv
from testbed import dra_chart_facts as facts
from testbed import dra_driver_rules

AT = "gpupool_cluster.dra_driver.values"
VERSIONS = {"0.4": "0.4.1", "0.5": "0.5.1"}
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 6, "docs", "modules", "dra-driver.md")


def doc_rules():
    """{dotted key: rule} of the documented table (the generated region of docs/modules/dra-driver.md)."""
    text = open(DOC).read()
    region = text.split("<!-- BEGIN generated: raw chart values", 1)[1].split("<!-- END generated", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| (merged|refused|yours) \|", region, re.M))


RULES = doc_rules()

TEAM_TAINT = {"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}
POOLS = {
    "t4": {"name": "t4", "node_selector": {"pool": "t4"}, "gpu": {"model": "T4"}},
    "team": {"name": "team", "node_selector": {"pool": "team"}, "gpu": {"model": "T4"}, "taints": [TEAM_TAINT]},
    "mps": {"name": "mps", "node_selector": {"pool": "mps"}, "gpu": {"model": "T4"}, "sharing": {"mps": {}}},
    "static": {
        "name": "static",
        "node_selector": {"pool": "static"},
        "gpu": {"model": "A100-40GB", "per_node": 2},
        "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
    },
    "gb": {
        "name": "gb",
        "node_selector": {"pool": "gb"},
        "gpu": {"model": "GB200", "per_node": 4},
        "nvlink": {"mode": "compute_domain"},
    },
}
NEEDS = {"mps": "MPSSupport"}  # the gate each pool's own setting needs (nvidia-dra-driver-published.md)
TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "example.com/team", "operator": "Equal", "value": "other", "effect": "NoSchedule"},
    {"key": "example.com/maintenance", "operator": "Exists"},
    {"operator": "Exists"},
]


HOT = ["kubeletPlugin.tolerations", "controller.tolerations", "featureGates", "kubeletPlugin.affinity"]


def leaves(line):
    paths = facts.VALUE_PATHS[line]
    return sorted(p for p in paths if p in facts.OPAQUE[line] or not any(q.startswith(p + ".") for q in paths))


def value_for(path, line):
    if path.endswith("tolerations"):
        return st.one_of(st.lists(st.sampled_from(TOLERATIONS), max_size=4), st.sampled_from([None, "all"]))
    if path == "featureGates":
        names = sorted(facts.gates(line))
        value = st.sampled_from([True, True, False, "yes"])
        return st.dictionaries(st.sampled_from(names), value, min_size=1, max_size=2)
    if path.endswith("affinity"):
        node = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        return st.sampled_from([{"nodeAffinity": node}, {"podAntiAffinity": {"x": 1}}, {}])
    if path in facts.OPAQUE[line]:
        return st.sampled_from([{"a": "b"}, [], {}])
    return st.sampled_from([True, False, "x", 3, None, "/run/nvidia/driver"])


@st.composite
def inventories(draw):
    line = draw(st.sampled_from(sorted(VERSIONS)))
    pools = draw(st.lists(st.sampled_from(sorted(POOLS)), min_size=1, max_size=3, unique=True))
    chosen = draw(st.lists(st.sampled_from(leaves(line)), max_size=4, unique=True))
    # the keys gpupool derives too, drawn more often than their share of the chart's ~100 keys
    chosen += [p for p in draw(st.lists(st.sampled_from(HOT), max_size=3, unique=True)) if p not in chosen]
    raw: dict = {}
    for path in chosen:
        value = draw(value_for(path, line))
        parts = path.split(".")
        node = raw
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    # sometimes a whole map on the way to a derived key, as null or a string
    for prefix in draw(st.lists(st.sampled_from(["kubeletPlugin", "resources", "kubeletPlugin.affinity"]), max_size=1)):
        parts = prefix.split(".")
        node = raw
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = draw(st.sampled_from([None, "x"]))
    data = {
        "name": "c",
        "pools": [copy.deepcopy(POOLS[p]) for p in pools],
        "dra_driver": {"version": VERSIONS[line], "values": raw},
    }
    return line, data


def present(values, path):
    node = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def get(values, path):
    node = values
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def helm_merge(base, over):
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def put(values, path, value):
    parts = path.split(".")
    for part in parts[:-1]:
        values = values.setdefault(part, {})
    values[parts[-1]] = value


def documented(derived, without_raw_gates, raw, line):
    """The documented merge: helm's, then each `merged` row (lists: ours or the chart's then yours, once)."""
    out = helm_merge(derived, raw)
    for path, rule in RULES.items():
        if rule != "merged" or not present(raw, path):
            continue
        if path == "featureGates":
            put(out, path, dict(without_raw_gates, **raw["featureGates"]))
            continue
        base = get(derived, path)
        base = copy.deepcopy(facts.DEFAULTS[line][path] if base is None else base)
        for entry in get(raw, path):
            if entry not in base:
                base.append(entry)
        put(out, path, base)
    return out


def tolerates(toleration, taint):
    if toleration.get("effect") and toleration["effect"] != taint.get("effect", "NoSchedule"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint["key"]
    return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_raw_values_never_undo_what_gpupool_derives(drawn):
    line, data = drawn
    raw = data["dra_driver"]["values"]
    try:
        cluster = load_cluster(data)
    except Problems as exc:
        paths = {p for p, _m in exc.problems}
        for path, rule in RULES.items():
            if rule == "refused" and present(raw, path):
                assert "%s.%s" % (AT, path) in paths, (path, exc.problems)
        return
    assert not [p for p, rule in RULES.items() if rule == "refused" and present(raw, p)]
    driver = line_for(data["dra_driver"]["version"])
    rendered = dv.desired_values(cluster, driver)
    derived = dv.derived_values(cluster, driver)

    # every derived toleration kept, every present pool's taint tolerated
    tolerations = rendered["kubeletPlugin"]["tolerations"]
    assert all(t in tolerations for t in derived["kubeletPlugin"]["tolerations"])
    for pool in cluster.present_pools:
        for taint in pool.all_taints:
            assert any(tolerates(t, taint) for t in tolerations), (pool.name, taint, tolerations)

    # no gate a pool forbids; every gate a pool needs on
    gates = rendered["featureGates"]
    imex = get(rendered, "resources.computeDomains.imex.mode") or ""
    assert dra_driver_rules.startup_error(data["dra_driver"]["version"], gates, imex) is None, gates
    if any(p["mig"]["mode"] == "static" for p in data["pools"] if "mig" in p):
        assert not gates.get("DynamicMIG")
    for pool in data["pools"]:
        if pool["name"] in NEEDS:
            assert gates.get(NEEDS[pool["name"]]) is True

    # the documented merge rule
    no_raw = copy.deepcopy(data)
    no_raw["dra_driver"]["values"] = {}
    without_raw_gates = dv.derived_values(load_cluster(no_raw), driver)["featureGates"]
    assert rendered == documented(derived, without_raw_gates, raw, line)


def test_the_documented_table_covers_the_derived_keys():
    """Every key gpupool derives for some inventory is a row of the documented table, or under one."""
    derived = dv.derived_values(load_cluster({"name": "c", "pools": [POOLS["team"]]}), line_for("0.5.1"))
    rows = set(RULES)

    def walk(tree, prefix=""):
        for key, value in tree.items():
            path = prefix + key
            if path in rows or any(path.startswith(r + ".") for r in rows):
                continue
            if isinstance(value, dict) and value:
                walk(value, path + ".")
            else:
                yield path

    assert list(walk(derived)) == []
