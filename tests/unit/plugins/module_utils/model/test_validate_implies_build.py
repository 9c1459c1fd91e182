"""Property: for generated inventories, load_cluster (gpupool.core.validate) accepting implies that every
builder and planner in plan/ accepts it too, and that what they build is something the API server would take.

The generator mixes valid and invalid values for every setting a builder reads, so both sides of the
implication are exercised; `test_removing_a_model_check_breaks_the_property` shows the property can fail:
with one check taken out of model/checks.CHECKS, hypothesis finds an inventory validate accepts and a builder
(or the API-server rules below) refuses.
"""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import CATALOG
from ansible_collections.gpupool.core.plugins.module_utils.mig.placement import maximal_layouts
from ansible_collections.gpupool.core.plugins.module_utils.model import checks as model_checks
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.normalized import normalized_result
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum import desired as plan_nodegroup_desired
from ansible_collections.gpupool.core.plugins.module_utils.plan.magnum import nodegroups as plan_nodegroup
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import rollout as plan_mig_rollout
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import pool_nodes as plan_nodes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import claim_templates as plan_claim_templates
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import compute_domains as plan_compute_domains
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import device_classes as plan_device_classes

# ---- the API server's rules, restated here from k8s.io/apimachinery/pkg/util/validation (not imported from
# model/syntax.py: an oracle that shared the code under test could not catch its mistakes) -------------------
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


def dns_label(text):
    return len(text) <= 63 and re.fullmatch(_LABEL, text) is not None


def dns_subdomain(text):
    return len(text) <= 253 and re.fullmatch(r"%s(\.%s)*" % (_LABEL, _LABEL), text) is not None


def label_value(text):
    return text == "" or (len(text) <= 63 and re.fullmatch(_NAME, text) is not None)


def qualified_name(text):
    prefix, separator, name = text.rpartition("/")
    return (
        (not separator or (prefix and dns_subdomain(prefix)))
        and len(name) <= 63
        and re.fullmatch(_NAME, name) is not None
    )


def magnum_restricted_label(key):
    """A label key Magnum refuses in node_labels: kubernetes.io / k8s.io namespaces, apart from the ones kubelet may
    set itself (reference magnum-nodegroups.md §1; the kubelet list from k8s.io/kubelet's well_known_labels.go)."""
    prefix = key.rpartition("/")[0]
    if not (prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))):
        return False
    if any(prefix == ns or prefix.endswith("." + ns) for ns in ("kubelet.kubernetes.io", "node.kubernetes.io")):
        return False
    return key not in {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
    }


def extended_resource_name(text):
    if "/" not in text or "kubernetes.io/" in text or text.startswith("requests."):
        return False
    return qualified_name("requests." + text)


# ---- inventories -------------------------------------------------------------------------------------------
# A coherent inventory (what a careful person writes), then zero to two faults: each a setting only some check
# of the model catches. About a third of the inventories are valid, the others exercise the refusals.
GPUS = ["T4", "L4", "A100-40GB", "H100-80GB", "GB200"]
LAYOUTS = {key: maximal_layouts(key)[::7] for key in GPUS if CATALOG[key].mig}


@st.composite
def pools(draw, index, magnum, dynamic):
    model = draw(st.sampled_from(GPUS))
    gpu = CATALOG[model]
    name = "pool-%d" % index
    pool = {"name": name, "gpu": {"model": model, "per_node": draw(st.integers(1, 2))}}
    if magnum and draw(st.booleans()):
        count = draw(st.integers(0, 3))
        group = {"flavor": "g4", "node_count": count, "min_node_count": draw(st.integers(0, count))}
        if draw(st.booleans()):
            group["max_node_count"] = count + draw(st.integers(0, 2))
        if draw(st.booleans()):
            group["name"] = "ng-%d" % index
        pool["nodegroup"] = group
    else:
        pool["node_selector"] = {"example.com/pool": name}
    if gpu.mig:
        mode = "dynamic" if dynamic else draw(st.sampled_from(["off", "static"]))
        if mode == "static":
            pool["mig"] = {"mode": "static", "layout": draw(st.sampled_from(LAYOUTS[model]))}
        elif mode == "dynamic":
            pool["mig"] = {"mode": "dynamic"}
    if gpu.multinode_nvlink and draw(st.booleans()):
        pool["nvlink"] = {"mode": "compute_domain", "compute_domain": {"namespace": "ml"}}
    # DynamicMIG is a cluster-wide gate the driver cannot combine with MPSSupport or PassthroughSupport.
    sharing = draw(st.sampled_from(["none", "time_slicing"] + ([] if dynamic else ["mps"])))
    if sharing != "none":
        pool["sharing"] = {sharing: {}}
    if not dynamic and draw(st.integers(0, 3)) == 0:
        pool["passthrough"] = True
    if draw(st.booleans()):
        pool["taints"] = [{"key": "example.com/team", "value": "ml"}]
    if draw(st.booleans()):
        pool["device_classes"] = {
            "extended_resource_names": draw(st.booleans()),
            "extra": [{"name": "%s-extra" % name, "min_memory": "8Gi"}],
        }
    # Node labels a pool's nodes get (from birth through Magnum's node_labels where kubelet may set them)
    labels = draw(
        st.sampled_from(
            [
                {},
                {"example.com/team": "ml"},
                {"node-role.kubernetes.io/gpu": ""},
                {"node.kubernetes.io/accelerator": "gpu", "k8s.io/zone": "a"},
            ]
        )
    )
    if labels:
        pool["node_labels"] = labels
    return pool


def _static(pool, layout=None):
    """Make `pool` a static-MIG A100 pool (the base of the MIG faults)."""
    pool["gpu"]["model"] = "A100-40GB"
    pool["mig"] = dict(pool.get("mig") or {}, mode="static", layout=layout or {"3g.20gb": 2})
    pool.pop("nvlink", None)
    return pool


def _gb200(pool):
    pool["gpu"]["model"] = "GB200"
    pool.pop("mig", None)
    pool["nvlink"] = {"mode": "compute_domain", "compute_domain": {"namespace": "ml"}}
    return pool["nvlink"]["compute_domain"]


def _nodegroup(pool, data):
    data.setdefault("magnum", {"cloud": "openstack", "cluster": "k8s"})
    return pool.setdefault("nodegroup", {"flavor": "g4"})


def _second(data):
    """The pool after `pool` breaks something together with it (a second one is added when needed)."""
    if len(data["pools"]) < 2:
        data["pools"].append({"name": "pool-extra", "node_selector": {"a": "b"}, "gpu": {"model": "T4"}})
    return data["pools"][1]


def _template(pool, data):
    """The first template of the first tenant, asking for `pool`'s devices (a tenant is added when needed)."""
    tenants = data.setdefault("tenants", [])
    if not tenants:
        tenants.append({"namespace": "team-a", "templates": []})
    templates = tenants[0].setdefault("templates", [])
    if not templates:
        templates.append({"name": "two", "pool": pool["name"]})
    templates[0]["pool"] = pool["name"]
    return templates[0]


def _template_twice(pool, data):
    """The same template declared a second time in its namespace."""
    template = _template(pool, data)
    data["tenants"][0]["templates"].append(dict(template))


# Each fault breaks one thing that only a check of the model catches, on the first pool (or the cluster).
FAULTS = {
    "pool-name-too-long-for-mig-config": lambda p, d: _static(p).update(name="g" * 58),
    "config-name-no-label-value": lambda p, d: _static(p)["mig"].update(config_name="bad name!"),
    "shared-config-name-other-layout": lambda p, d: (
        _static(p)["mig"].update(config_name="shared"),
        _static(_second(d), {"7g.40gb": 1})["mig"].update(config_name="shared"),
    ),
    "extra-class-clash": lambda p, d: p.setdefault("device_classes", {}).update(extra=[{"name": _second(d)["name"]}]),
    "extra-class-bad-name": lambda p, d: p.setdefault("device_classes", {}).update(
        extra=[{"name": "Big_GPU", "extended_resource_name": "kubernetes.io/gpu"}]
    ),
    "long-generated-extended-resource": lambda p, d: (
        _static(p, {"1g.5gb+me": 1})["mig"].update(config_name="c"),
        p.update(name="g" * 54, device_classes={"extended_resource_names": True}),
    ),
    "compute-domain-namespace": lambda p, d: _gb200(p).update(namespace="ML_Team"),
    "compute-domain-name": lambda p, d: _gb200(p).update(name="Bad_CD"),
    "compute-domain-clash": lambda p, d: (_gb200(p).update(name="cd"), _gb200(_second(d)).update(name="cd")),
    "nodes-cannot-be-found": lambda p, d: (p.pop("nodegroup", None), p.pop("node_selector", None)),
    "node-count-above-max": lambda p, d: _nodegroup(p, d).update(node_count=3, min_node_count=0, max_node_count=1),
    "max-node-count-int32": lambda p, d: _nodegroup(p, d).update(max_node_count=2**31),
    "master-role": lambda p, d: _nodegroup(p, d).update(role="master"),
    "nodegroup-name-clash": lambda p, d: (
        _nodegroup(p, d).update(name="ng"),
        _nodegroup(_second(d), d).update(name="ng"),
    ),
    "nodegroup-name-no-label-value": lambda p, d: _nodegroup(p, d).update(name="n" * 64),
    "unknown-profile": lambda p, d: _static(p)["mig"].update(layout={"3g.40gb": 1}),
    "layout-too-big": lambda p, d: _static(p)["mig"].update(layout={"3g.20gb": 3}),
    "layout-that-cannot-be-placed": lambda p, d: _static(p)["mig"].update(
        layout={"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}
    ),
    "empty-layout": lambda p, d: _static(p)["mig"].update(layout={}),
    "layout-index-out-of-range": lambda p, d: _static(p)["mig"].update(layout=None, layouts={5: {"7g.40gb": 1}}),
    "duplicate-taint": lambda p, d: p.update(taints=[{"key": "example.com/t"}] * 2),
    "taint-hidden-by-gpu-taint": lambda p, d: p.update(
        gpu_taint=True, taints=[{"key": "node-role.kubernetes.io/gpu", "effect": "NoExecute"}]
    ),
    "taint-value": lambda p, d: p.update(taints=[{"key": "example.com/t", "value": "a b"}]),
    "unknown-model": lambda p, d: p["gpu"].update(model="Tesla T5"),
    "interval-on-mig": lambda p, d: _static(p).update(sharing={"time_slicing": {"interval": "Long"}}),
    "dynamic-beside-static": lambda p, d: (
        _static(p),
        _second(d).update(gpu={"model": "H100-80GB"}, mig={"mode": "dynamic"}),
    ),
    "time-slicing-and-mps": lambda p, d: p.update(sharing={"time_slicing": {}, "mps": {}}),
    "duplicate-pool-name": lambda p, d: _second(d).update(name=p["name"]),
    "pool-name-no-dns-label": lambda p, d: p.update(name="Pool_0"),
    "all-pools-absent": lambda p, d: [q.update(state="absent") for q in d["pools"]],
    "no-pools": lambda p, d: d.update(pools=[]),
    "dra-default-namespace": lambda p, d: d.update(dra_driver={"namespace": "default"}),
    "dra-leading-v": lambda p, d: d.update(dra_driver={"version": "v0.5.1"}),
    "mig-manager-names": lambda p, d: d.update(mig_manager={"config_map": "Bad_CM"}),
    "template-name": lambda p, d: _template(p, d).update(name="Two_GPUs"),
    "template-unknown-pool": lambda p, d: _template(p, d).update(pool="pool-none"),
    "template-profile-not-published": lambda p, d: (
        _static(p, {"3g.20gb": 2}),
        _template(p, d).update(mig_profile="1g.5gb"),
    ),
    "template-pool-absent": lambda p, d: (p.update(state="absent"), _second(d), _template(p, d)),
    "template-twice": _template_twice,
}


@st.composite
def inventories(draw, faults=tuple(sorted(FAULTS))):
    magnum = draw(st.integers(0, 3)) > 0
    dynamic = draw(st.integers(0, 5)) == 0
    data = {"name": "c", "pools": [draw(pools(i, magnum, dynamic)) for i in range(draw(st.integers(1, 4)))]}
    if magnum:
        data["magnum"] = {"cloud": "openstack", "cluster": "k8s", "labels": {"a": "b"}}
    if draw(st.booleans()):
        # Tenants: the defaults (one template per class) in one namespace, a template over each pool in another.
        templates = [
            {"name": "t-%s" % pool["name"], "pool": pool["name"]}
            for pool in data["pools"]
            if not (pool.get("mig") or {}).get("mode") == "static" and draw(st.booleans())
        ]
        data["tenants"] = [{"namespace": "team-a", "templates": templates}, {"namespace": "team-b"}]
    for fault in draw(st.lists(st.sampled_from(faults), max_size=2)):
        if data["pools"]:
            FAULTS[fault](data["pools"][0], data)
    return data


# ---- the builders ---------------------------------------------------------------------------------------------
def sample_node(pool, index):
    """A node the pool's selector matches (its node_selector, or the Magnum nodegroup label)."""
    labels = dict(pool.node_selector) or {model_names.NODEGROUP_LABEL: model_names.nodegroup_name(pool)}
    return {"metadata": {"name": "node-%d" % index, "labels": labels}, "spec": {}, "status": {}}


def build_everything(cluster):
    """Run every builder and planner of plan/ on a validated cluster; return what the API server would refuse."""
    refused = []
    normalized_result(cluster)  # mig-parted config and the placement of every static layout
    # the builders trust the model's checks: two objects of one name would be one object two pools fight over
    built = plan_device_classes.cluster_device_classes(cluster) + plan_compute_domains.cluster_compute_domains(cluster)
    built += plan_claim_templates.tenant_claim_templates(cluster)
    keys = [(d.obj["kind"], d.obj["metadata"].get("namespace"), d.obj["metadata"]["name"]) for d in built]
    refused += ["%s %s/%s twice" % key for key in sorted({k for k in keys if keys.count(k) > 1}, key=str)]
    for d in plan_device_classes.cluster_device_classes(cluster):
        name, spec = d.obj["metadata"]["name"], d.obj["spec"]
        if not dns_subdomain(name):
            refused.append("DeviceClass name %r" % name)
        if spec.get("extendedResourceName") and not extended_resource_name(spec["extendedResourceName"]):
            refused.append("extendedResourceName %r" % spec["extendedResourceName"])
    templates = plan_claim_templates.cluster_resource_claim_templates(cluster, None, ["team-a"])
    templates += plan_claim_templates.tenant_claim_templates(cluster)
    classes = {d.obj["metadata"]["name"] for d in plan_device_classes.cluster_device_classes(cluster)}
    for d in templates:
        meta = d.obj["metadata"]
        if not (dns_subdomain(meta["name"]) and dns_label(meta["namespace"])):
            refused.append("ResourceClaimTemplate %s/%s" % (meta["namespace"], meta["name"]))
        wanted = d.obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
        if wanted not in classes:  # the claim could never be allocated
            refused.append("template %s asks for DeviceClass %s, which no pool publishes" % (meta["name"], wanted))
    for d in plan_compute_domains.cluster_compute_domains(cluster):
        meta, template = d.obj["metadata"], d.obj["spec"]["channel"]["resourceClaimTemplate"]["name"]
        if not (dns_subdomain(meta["name"]) and dns_label(meta["namespace"]) and dns_subdomain(template)):
            refused.append("ComputeDomain %s/%s (template %s)" % (meta["namespace"], meta["name"], template))
    for name in plan_mig_rollout.desired_configs(cluster.pools):
        if not label_value(name):
            refused.append("%s label value %r" % (model_names.CONFIG_LABEL, name))
    nodes = []
    for index, pool in enumerate(cluster.present_pools):
        plan_nodes.node_matcher(pool)
        node = sample_node(pool, index)
        nodes.append(node)
        for key, value in plan_nodes.desired_node_labels(pool, node).items():
            if not (qualified_name(key) and label_value(value)):
                refused.append("node label %s=%s" % (key, value))
        taints = plan_nodes.desired_node_taints(pool)
        if len({(t["key"], t["effect"]) for t in taints}) != len(taints):
            refused.append("taints with one key and effect in %s" % pool.name)
        for t in taints:
            if not (qualified_name(t["key"]) and label_value(t.get("value", ""))):
                refused.append("taint %r" % t)
        if pool.gpu_taint and len([t for t in pool.taints if t.key != model_names.GPU_TAINT["key"]]) != len(
            pool.taints
        ):
            refused.append("extra taints of %s dropped" % pool.name)
    plan_nodes.assign_nodes(cluster.pools, nodes)  # a node in two pools is refused
    for pool in cluster.pools:
        if pool.nodegroup is not None:
            desired = plan_nodegroup_desired.desired_from_pool(cluster, pool)
            plan = plan_nodegroup.plan_nodegroup(desired, None, {"name": "k8s", "uuid": "u"}, (1, 14), pool.state)
            create = plan.actions[0].payload if plan.actions and plan.actions[0].kind == "create" else {}
            for key, value in (create.get("node_labels") or {}).items():
                # what Magnum lets kubelet set at registration (its node_labels check, restated here)
                if not (qualified_name(key) and label_value(value)) or magnum_restricted_label(key):
                    refused.append("Magnum node_labels %s=%s" % (key, value))
            if not label_value(desired["name"]):
                refused.append("%s label value %r" % (model_names.NODEGROUP_LABEL, desired["name"]))
    return refused


def property_fails(data):
    """True when validate accepts `data` but a builder raises or builds what the API server would refuse."""
    try:
        cluster = model_load.load_cluster(data)
    except model_errors.Problems:
        return False
    try:
        return bool(build_everything(cluster))
    except Exception:  # any refusal of a builder: Problems, InfeasibleLayout, ValueError...
        return True


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_validate_accepting_implies_every_builder_accepts(data):
    try:
        cluster = model_load.load_cluster(data)
    except model_errors.Problems:
        return  # refused before anything is written: nothing to prove here
    assert build_everything(cluster) == []


class Counterexample(Exception):
    """An inventory validate accepts and a builder refuses."""


def first_counterexample(faults, max_examples=300):
    """The first generated inventory for which the property fails, or None (no shrinking: it is only shown)."""
    found = []

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(inventories(faults))
    def search(data):
        if property_fails(data):
            found.append(copy.deepcopy(data))
            raise Counterexample()

    try:
        search()
    except Counterexample:
        return found[0]
    return None


# Each check with the faults it catches. The search draws inventories from the same generator, with only these
# faults (so it needs a few examples, not thousands); the main property draws from all of them.
CHECK_FAULTS = [
    (
        model_checks.device_class_problems,
        ["extra-class-clash", "extra-class-bad-name", "long-generated-extended-resource"],
    ),
    (model_checks.compute_domain_problems, ["compute-domain-namespace", "compute-domain-name", "compute-domain-clash"]),
    (
        model_checks.mig_config_problems,
        [
            "pool-name-too-long-for-mig-config",
            "config-name-no-label-value",
            "shared-config-name-other-layout",
            "mig-manager-names",
        ],
    ),
    (model_checks.node_lookup_problems, ["nodes-cannot-be-found"]),
    (model_checks.nodegroup_size_problems, ["node-count-above-max", "master-role"]),
    (model_checks.nodegroup_name_problems, ["nodegroup-name-clash", "nodegroup-name-no-label-value"]),
    (
        model_checks.mig_layout_problems,
        ["unknown-profile", "layout-too-big", "layout-that-cannot-be-placed", "layout-index-out-of-range"],
    ),
    (model_checks.taint_problems, ["duplicate-taint", "taint-hidden-by-gpu-taint"]),
    (
        model_checks.tenant_problems,
        ["template-name", "template-unknown-pool", "template-profile-not-published", "template-pool-absent"],
    ),
]


@pytest.mark.parametrize("check, faults", CHECK_FAULTS, ids=[check.__name__ for check, _unused in CHECK_FAULTS])
def test_removing_a_model_check_breaks_the_property(monkeypatch, check, faults):
    monkeypatch.setattr(model_checks, "CHECKS", [c for c in model_checks.CHECKS if c is not check])
    example = first_counterexample(faults)
    monkeypatch.undo()
    assert example is not None, "without %s the property still held: the generator misses what it checks" % (
        check.__name__
    )
    with pytest.raises(model_errors.Problems):  # the intact model refuses what the builders would refuse
        model_load.load_cluster(example)


def test_every_fault_is_refused_by_the_model():
    """Each fault alone, on an inventory that is valid without it, is refused by load_cluster."""
    valid = {
        "name": "c",
        "magnum": {"cloud": "o", "cluster": "k"},
        "pools": [
            {"name": "pool-0", "node_selector": {"a": "0"}, "gpu": {"model": "T4"}},
            {"name": "pool-1", "node_selector": {"a": "1"}, "gpu": {"model": "L4"}},
        ],
    }
    model_load.load_cluster(copy.deepcopy(valid))
    for name, fault in FAULTS.items():
        data = copy.deepcopy(valid)
        fault(data["pools"][0], data)
        with pytest.raises(model_errors.Problems):
            model_load.load_cluster(data)
            pytest.fail("fault %s was accepted" % name)
