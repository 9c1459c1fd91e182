"""The model refuses malformed input before any write (issue #24): full-string matching, control characters,
the cluster's name and owner as DNS labels, imex_nodes as addresses, size bounds; and no error line over 200
characters, runtime errors included."""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError
from ansible_collections.gpupool.core.plugins.module_utils.k8s.lease import LeaseHeld, held_message
from ansible_collections.gpupool.core.plugins.module_utils.model import bounds, syntax
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import (
    LINE_LIMIT,
    GpupoolError,
    Problems,
    fit_lines,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import inventory_path
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import too_large
from ansible_collections.gpupool.core.plugins.module_utils.module import GpupoolModule
from ansible_collections.gpupool.core.plugins.plugin_utils.inventory_files import keys_written_twice
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import run_step

CONTROL = [chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\u2028", "\u2029"]

CHECKERS = {
    "dns label": syntax.is_dns_label,
    "dns subdomain": syntax.is_dns_subdomain,
    "label value": syntax.is_label_value,
    "label key": syntax.is_label_key,
    "quantity": lambda t: bool(syntax.QUANTITY.fullmatch(t)),
    "compute capability": lambda t: bool(syntax.COMPUTE_CAPABILITY.fullmatch(t)),
    "qualified name": lambda t: bool(syntax.QUALIFIED_NAME.fullmatch(t)),
    "extended resource": lambda t: syntax.extended_resource_problem(t) is None,
}
VALID = ["gpu-t4", "a", "example.com", "10Gi", "9.0", "example.com/gpu", "zone-a"]


@given(
    st.sampled_from(VALID),
    st.integers(min_value=0, max_value=20),
    st.sampled_from(CONTROL),
)
def test_any_string_with_a_control_character_is_refused_by_every_checker(base, where, char):
    text = base[: where % (len(base) + 1)] + char + base[where % (len(base) + 1) :]
    for name, check in CHECKERS.items():
        assert not check(text), (name, text)
    assert syntax.control_problem(text) is not None


@given(st.text(min_size=1, max_size=40).filter(lambda t: any(c in CONTROL for c in t)))
def test_any_text_with_a_control_character_is_refused_and_said(text):
    for name, check in CHECKERS.items():
        assert not check(text), (name, text)
    assert syntax.control_problem(text) is not None


def test_a_trailing_newline_no_longer_passes_for_a_name():
    for name, check in CHECKERS.items():
        good = {"quantity": "10Gi", "compute capability": "9.0", "extended resource": "example.com/gpu"}.get(name)
        good = good or "gpu-t4"
        assert check(good), name
        assert not check(good + "\n"), name


def test_the_messages_name_the_character_and_the_fix():
    assert syntax.control_problem("gpu-t4\n", "name") == (
        "'gpu-t4\\n' ends with a newline: remove the trailing newline: a YAML block scalar (|) keeps it; write the "
        "name on one line (or use |-)"
    )
    assert syntax.control_problem("a\tb") == (
        "'a\\tb' contains a tab (U+0009) at position 2: remove it; the value must be plain text on one line"
    )
    assert syntax.control_problem("a ==\n b", "CEL expression", "\n\r\t") is None
    assert "a NUL (U+0000) at position 2" in syntax.control_problem("b\x00", "CEL expression", "\n\r\t")


# ---- whole inventories ---------------------------------------------------------------------------------------

BASE = """\
gpupool_cluster:
  name: c1
  pools:
    - name: gpu-a100
      node_selector: {pool: a100}
      gpu: {model: A100-40GB}
    - name: |
        gpu-t4
      node_selector:
        pool: t4
      gpu: {model: T4}
"""


def refused(data):
    with pytest.raises(Problems) as err:
        load_cluster(data)
    rendered = err.value.render()
    assert max(len(line) for line in rendered.splitlines()) <= LINE_LIMIT, rendered
    return err.value.problems


def test_a_pool_name_written_as_a_block_scalar_is_refused_with_its_path_name_and_fix():
    data = yaml.safe_load(BASE)["gpupool_cluster"]
    assert data["pools"][1]["name"] == "gpu-t4\n"
    assert refused(data) == [
        (
            "gpupool_cluster.pools[1] ('gpu-t4\\n').name",
            "'gpu-t4\\n' ends with a newline: remove the trailing newline: a YAML block scalar (|) keeps it; write "
            "the name on one line (or use |-)",
        )
    ]  # and not also "is not a DNS label" at the same path


def test_a_node_selector_value_with_a_trailing_newline_is_refused():
    data = yaml.safe_load(BASE.replace("name: |\n        gpu-t4", "name: gpu-t4").replace("pool: t4", 'pool: "t4\\n"'))
    assert refused(data["gpupool_cluster"]) == [
        (
            "gpupool_cluster.pools[1] (gpu-t4).node_selector.pool",
            "'t4\\n' ends with a newline: remove the trailing newline: a YAML block scalar (|) keeps it; write "
            "the value on one line (or use |-)",
        )
    ]


def test_control_characters_in_keys_taints_and_selectors_but_not_cel_newlines():
    data = yaml.safe_load(BASE.replace("name: |\n        gpu-t4", "name: gpu-t4"))["gpupool_cluster"]
    data["pools"][1]["taints"] = [{"key": "example.com/team\t"}]
    data["pools"][1]["node_labels"] = {"zone\r": "a"}
    data["pools"][0]["device_classes"] = {"extra": [{"name": "big", "selectors": ["device.attributes['x'] ==\n 1"]}]}
    problems = dict(refused(data))
    assert problems == {
        "gpupool_cluster.pools[1] (gpu-t4).taints[0].key": "'example.com/team\\t' contains a tab (U+0009) at "
        "position 17: remove it; the value must be plain text on one line",
        "gpupool_cluster.pools[1] (gpu-t4).node_labels['zone\\r']": "the key 'zone\\r' ends with a newline: remove "
        "the trailing newline: a YAML block scalar (|) keeps it; write the key on one line (or use |-)",
    }


def test_a_nul_in_a_cel_selector_is_refused():
    data = yaml.safe_load(BASE.replace("name: |\n        gpu-t4", "name: gpu-t4"))["gpupool_cluster"]
    data["pools"][0]["device_classes"] = {"extra": [{"name": "big", "selectors": ["x\x00"]}]}
    ((path, message),) = refused(data)
    assert path == "gpupool_cluster.pools[0] (gpu-a100).device_classes.extra[0].selectors[0]"
    assert "a NUL (U+0000) at position 2: remove it; the CEL expression may span lines" in message


def good():
    return yaml.safe_load(BASE.replace("name: |\n        gpu-t4", "name: gpu-t4"))["gpupool_cluster"]


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("name", "../../tmp/x", "'../../tmp/x' is not a DNS label: it names the run's report directory"),
        ("name", "Prod_EU", "'Prod_EU' is not a DNS label: it names the run's report directory"),
        ("owner", "team a", "'team a' is not a DNS label: it is the value of the label gpupool.io/owner"),
    ],
)
def test_the_cluster_name_and_owner_are_dns_labels(key, value, says):
    data = dict(good(), **{key: value})
    ((path, message),) = refused(data)
    assert path == "gpupool_cluster." + key
    assert message.startswith(says)
    assert "e.g. " in message


def test_a_dns_label_owner_is_accepted():
    assert load_cluster(dict(good(), owner="team-a")).owner_id == "team-a"


def test_orphan_guard_confirms_only_pools_of_the_inventory():
    pool = good()["pools"][0]["name"]
    ok = load_cluster(dict(good(), orphan_guard={"confirm_pools": [pool]}))
    assert ok.orphan_guard.confirm_pools == [pool]
    ((path, message),) = refused(dict(good(), orphan_guard={"confirm_pools": [pool + "x"]}))
    assert path == "gpupool_cluster.orphan_guard.confirm_pools[0]"
    assert message == "'%sx' is not a pool of this inventory; did you mean %s?" % (pool, pool)


def test_imex_nodes_are_addresses_each_once():
    data = good()
    data["pools"][0] = {
        "name": "gpu-gb200",
        "node_selector": {"pool": "gb200"},
        "gpu": {"model": "GB200", "per_node": 4},
        "nvlink": {"mode": "host_imex", "imex_nodes": ["10.0.0.11", "gb200-node-2", "fd00::1", "10.0.0.11"]},
    }
    assert refused(data) == [
        (
            "gpupool_cluster.pools[0] (gpu-gb200).nvlink.imex_nodes[1]",
            "'gb200-node-2' is not an IP address: nvidia-imex's nodes_config.cfg takes the members' IP addresses, "
            "e.g. 10.0.0.11 (not a host name)",
        ),
        (
            "gpupool_cluster.pools[0] (gpu-gb200).nvlink.imex_nodes[3]",
            "10.0.0.11 is listed twice: list each member once",
        ),
    ]
    data["pools"][0]["nvlink"]["imex_nodes"] = ["10.0.0.%d" % i for i in range(1, 20)]
    ((path, message),) = refused(data)
    assert path.endswith("(gpu-gb200).nvlink.imex_nodes") and message.startswith("19 members")


def test_ten_thousand_pools_are_refused_before_the_model_is_built():
    pool = {"name": "p", "node_selector": {"pool": "p"}, "gpu": {"model": "T4"}}
    data = dict(good(), pools=[dict(pool, name="p%d" % i) for i in range(10000)])
    started = time.process_time()
    assert refused(data) == [
        (
            "gpupool_cluster.pools",
            "10000 pools: gpupool manages at most 200; split the cluster's pools over several inventories, "
            "each with its own owner",
        )
    ]
    # the bound is checked on the raw list: no pool was validated (that takes seconds for 10,000)
    assert time.process_time() - started < 1.0
    load_cluster(dict(good(), pools=[dict(pool, name="p%d" % i) for i in range(bounds.MAX_POOLS)]))


def test_node_counts_extra_classes_tenants_and_templates_are_bounded():
    data = good()
    data["pools"][0] = {
        "name": "gpu-a100",
        "nodegroup": {"flavor": "f", "max_node_count": 5001},
        "gpu": data["pools"][0]["gpu"],
    }
    ((path, message),) = refused(data)
    assert path == "gpupool_cluster.pools[0] (gpu-a100).nodegroup.max_node_count"
    assert message.startswith("5001 nodes is more than one pool can hold: at most 5000")
    data = good()
    data["pools"][1]["device_classes"] = {"extra": [{"name": "c%d" % i} for i in range(65)]}
    ((path, message),) = refused(data)
    assert path == "gpupool_cluster.pools[1] (gpu-t4).device_classes.extra"
    assert message.startswith("65 extra DeviceClasses: gpupool manages at most 64")
    data = dict(good(), tenants=[{"namespace": "t%d" % i} for i in range(501)])
    assert [p for p, _m in refused(data)] == ["gpupool_cluster.tenants"]
    data = dict(good(), tenants=[{"namespace": "ml", "templates": [{"name": "x", "pool": "gpu-t4"}] * 501}])
    ((path, message),) = refused(data)
    assert path == "gpupool_cluster.tenants[0] (ml).templates" and message.startswith("501 templates")


def test_a_yaml_file_over_the_size_bound_is_refused_unread(tmp_path):
    big = tmp_path / "gpupool.yml"
    with open(big, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # a sparse 50 MB file

    def read(path):
        raise AssertionError("a file over the bound must not be read: %s" % path)

    (finding,) = keys_written_twice([str(big)], read)
    assert finding.where.endswith("gpupool.yml")
    assert finding.message.startswith("the file is 50.0 MiB; gpupool reads inventory files of at most 10 MiB")
    assert too_large("f.yml", bounds.MAX_FILE_BYTES) is None


# ---- no line of any error over 200 characters --------------------------------------------------------------


def test_a_long_word_is_broken_too():
    name = "x" * 63
    message = "the object %s/%s/%s/%s is gone" % (name, name, name, name)
    rendered = Problems([("gpupool_cluster.pools[0] (%s)" % name, message)]).render()
    assert max(len(line) for line in rendered.splitlines()) <= LINE_LIMIT
    assert rendered.replace("\n    ", "").count(name) == 5
    assert fit_lines("short\nlines") == "short\nlines"


class Raises(GpupoolModule):
    """A step whose run raises the error it is given (the module base turns it into the failed result)."""

    error: Exception = GpupoolError("")

    def run(self):
        raise self.error


def failed_message(error):
    step = type("Step", (Raises,), {"error": error})
    result = run_step(step, {})
    assert result["failed"]
    return result["msg"]


LONG = "gpupool@awx-job-runner-%s/3f9a1c2e" % ("a" * 180)
RUNTIME_ERRORS = [
    LeaseHeld(
        *held_message(
            {
                "spec": {"holderIdentity": LONG, "acquireTime": "2026-11-26T18:00:00.000000Z"},
                "metadata": {"annotations": {"gpupool.io/run": "started 2026-11-26T18:00:00Z by cluster " + "c" * 63}},
            },
            "kube-system",
            "gpupool-run",
            1200,
        )[:1],
        holder=LONG,
        expires_in=1200,
        hint=held_message({}, "kube-system", "gpupool-run", 1)[1],
    ),
    K8sError(
        "PATCH /apis/resource.k8s.io/v1/deviceclasses/%s: 422 Unprocessable Entity: metadata.name: Invalid value: "
        "%r: must be no more than 253 characters" % ("d" * 260, "d" * 260),
        status=422,
        hint="shorten the pool name or set device_classes.extra[].name",
    ),
]


@pytest.mark.parametrize("error", RUNTIME_ERRORS, ids=["lease-held-long-holder", "k8s-long-object-name"])
def test_every_line_of_a_runtime_error_is_at_most_200_characters(error):
    assert max(len(line) for line in error.describe().splitlines()) > LINE_LIMIT  # the case is a real one
    msg = failed_message(error)
    assert max(len(line) for line in msg.splitlines()) <= LINE_LIMIT, msg
    # nothing lost: the words are all there, in order
    assert msg.replace("\n  ", "").replace(" ", "") == error.describe().replace(" ", "")


def test_a_secret_is_masked_before_the_message_is_wrapped():
    secret = "S3cr" * 70  # one 280-character word: a wrap would break it into pieces the masking cannot find

    class Leaky(GpupoolModule):
        def run(self):
            self.host.hide(secret)
            raise GpupoolError("the token %s was refused" % secret)

    msg = run_step(Leaky, {})["msg"]
    assert "S3crS3cr" not in msg and "was refused" in msg


# ---- the malformed corpus (tests/data/malformed), the model's own answer to each file ------------------------

CORPUS = sorted((Path(__file__).resolve().parents[4] / "tests" / "data" / "malformed").glob("*.yml"))


def test_the_malformed_corpus_is_found():
    assert len(CORPUS) >= 58  # an empty glob would leave the corpus test below with nothing to check


POOL_NAME = re.compile(r"(pools\[\d+\]) \([^)]*\)")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_each_corpus_file_is_refused_at_its_path_with_its_sentence(path):
    text = path.read_text()
    expect = dict(re.findall(r"^# expect-(path|says): (.+)$", text, re.M))
    with pytest.raises(Problems) as err:
        load_cluster(yaml.safe_load(text)["gpupool_cluster"])
    paths = [POOL_NAME.sub(r"\1", p) for p, _m in err.value.problems]
    assert expect["path"] in paths, (paths, err.value.render())
    assert POOL_NAME.sub(r"\1", expect["says"]) in POOL_NAME.sub(r"\1", err.value.render().replace("\n    ", " "))


RICH = """\
gpupool_cluster:
  name: c1
  owner: team-a
  magnum: {cloud: openstack, cluster: k8s-gpu, labels: {kube_tag: v1.34.1}}
  dra_driver: {namespace: dra, release_name: dra-driver}
  mig_manager: {config_map: mig-parted, namespace: gpu-operator}
  drain: {skip_pods: "app in (monitor)"}
  pools:
    - name: gpu-a100
      nodegroup: {name: ng-a100, flavor: g4.p2.40g, image: ubuntu-gpu, labels: {gpu: a100}}
      gpu: {model: A100-40GB, per_node: 2}
      node_labels: {example.com/team: ml}
      taints: [{key: example.com/team, value: ml}]
      mig: {mode: static, layout: {3g.20gb: 1, 2g.10gb: 2}, config_name: a100-mixed}
      device_classes: {extra: [{name: a100-big, min_memory: 20Gi, min_compute_capability: "8.0"}]}
    - name: gpu-gb200
      node_selector: {example.com/pool: gb200}
      gpu: {model: GB200, per_node: 4}
      nvlink:
        mode: host_imex
        imex_nodes: [10.0.0.11, 10.0.0.12]
        compute_domain: {name: gb200-domain, namespace: ml}
  tenants:
    - namespace: ml
      templates: [{name: a100-3g, pool: gpu-a100, mig_profile: 3g.20gb}]
"""


def _leaves(value, loc=()):
    """(loc, text) of every string and key of the inventory (free-form subtrees left out, as the model does)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield loc + (key,), None
            if key not in ("values", "cloud"):
                yield from _leaves(item, loc + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, loc + (index,))
    elif isinstance(value, str):
        yield loc, value


RICH_DATA = yaml.safe_load(RICH)["gpupool_cluster"]
LEAVES = list(_leaves(RICH_DATA))


def test_the_rich_inventory_is_valid():
    load_cluster(RICH_DATA)


def with_char(leaf, char, at):
    """A copy of the rich inventory with `char` inserted into the key or string `leaf`, at `at` (modulo its
    length), and the location of what was changed (a key's location names the new key)."""
    data = copy.deepcopy(RICH_DATA)
    loc, text = leaf
    parent = data
    for part in loc[:-1]:
        parent = parent[part]
    if text is None:  # a key
        key = loc[-1]
        spot = at % (len(key) + 1)
        new = key[:spot] + char + key[spot:]
        parent[new] = parent.pop(key)
        return data, loc[:-1] + (new,)
    spot = at % (len(text) + 1)
    parent[loc[-1]] = text[:spot] + char + text[spot:]
    return data, loc


@given(st.sampled_from(LEAVES), st.sampled_from(CONTROL), st.integers(min_value=0, max_value=40))
def test_a_control_character_anywhere_is_refused_before_anything_else(leaf, char, at):
    """Whatever key or string of a valid inventory gets a control character, wherever in it, the model refuses it,
    and the first problem names the character."""
    data, _loc = with_char(leaf, char, at)
    with pytest.raises(Problems) as err:
        load_cluster(data)
    _path, message = err.value.problems[0]
    assert "ends with a newline" in message or "(U+%04X)" % ord(char) in message, err.value.render()


# Invisible characters (Unicode Cf and non-ASCII Zs) and letters or dashes that look like ASCII ones.
INVISIBLE = ["\u00a0", "\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2066", "\u00ad", "\u3000", "\u2009"]
LOOK_ALIKE = ["\u0430", "\u043e", "\u0435", "\u0441", "\u0440", "\u0456", "\u2011", "\u2013", "\u03bf", "\u0391"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LEAVES), st.sampled_from(INVISIBLE + LOOK_ALIKE), st.integers(min_value=0, max_value=40))
def test_an_invisible_or_look_alike_character_in_any_name_is_refused_at_its_key_path(leaf, char, at):
    """Whatever key or string of a valid inventory gets an invisible or a look-alike character, the model refuses
    it, with a problem at that key's path (or at the mapping or list that holds it), naming the code point."""
    data, loc = with_char(leaf, char, at)
    with pytest.raises(Problems) as err:
        load_cluster(data)
    paths = [POOL_NAME.sub(r"\1", p) for p, _m in err.value.problems]
    wanted = {POOL_NAME.sub(r"\1", inventory_path("gpupool_cluster", loc[:n], data)) for n in (len(loc), len(loc) - 1)}
    assert wanted & set(paths), (wanted, err.value.render())
    assert "U+%04X" % ord(char) in err.value.render() or "unknown key" in err.value.render(), err.value.render()
