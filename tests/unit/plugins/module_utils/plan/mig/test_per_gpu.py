"""The step of one node in a per-GPU MIG rollout (plan/mig/per_gpu.py, issue #35): taint, cordon or drain, the
DeviceTaintRules, the pods that move and the --diff lines; properties over generated nodes, claims and layouts, with
the holders read by plan/report/gpu_holders.holders_of from API-shaped objects."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import CATALOG
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CORDON_REASON_ANNOTATION,
    MIG_TAINT_KEY,
    MIG_TAINT_NODE_LABEL,
    OWNER_LABEL,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import is_dns_subdomain, is_label_value
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig import per_gpu
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.gpu_changes import gpu_changes
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.per_gpu import (
    CORDON,
    DRAIN,
    NONE,
    TAINT,
    GpuHolders,
    Holder,
    per_gpu_step,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.eviction import eviction
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_holders import holders_of
from tests.support.gpu_node_objects import bus, claim, eight_gpu_node, mig_device, resource_slice

NODE = "node-1"
A100, H100 = CATALOG["A100-40GB"], CATALOG["H100-80GB"]
SEVEN, TWO = {"1g.10gb": 7}, {"3g.40gb": 2}
V1BETA2 = "resource.k8s.io/v1beta2"


def eight(layout):
    return dict.fromkeys(range(8), layout)


def node_with_one_pod_per_gpu():
    devices = eight_gpu_node(NODE)
    claims = [claim("ml", "c%d" % i, NODE, [devices[i]["name"]], ["p%d" % i]) for i in range(8)]
    return [resource_slice(NODE, devices)], claims


def change_gpu(index, layout, model=H100):
    new = eight(SEVEN)
    new[index] = layout
    return gpu_changes(eight(SEVEN), new, model)


def step_for(changes, api=V1BETA2, **more):
    slices, claims = node_with_one_pod_per_gpu()
    holders = holders_of(changes.indices, NODE, slices, claims, gpus_per_node=8)
    return per_gpu_step(NODE, changes, holders, api, gpu_count=8, **more)


def test_one_gpu_repartitioned_taints_its_device_and_evicts_its_pod_only():
    step = step_for(change_gpu(3, TWO), reason="mig-layout:a100:gpupool-a100", owner="prod")
    assert step.mode == TAINT and not step.cordons
    assert [h.ref for h in step.evict] == ["ml/p3"] and step.kept_gpus == (0, 1, 2, 4, 5, 6, 7)
    (rule,) = step.taint_rules
    assert rule == {
        "apiVersion": V1BETA2,
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": "gpupool-mig-node-1-gpu-4-mig-1g10gb-19-0",
            "labels": {"app.kubernetes.io/managed-by": "gpupool", MIG_TAINT_NODE_LABEL: NODE, OWNER_LABEL: "prod"},
            "annotations": {CORDON_REASON_ANNOTATION: "mig-layout:a100:gpupool-a100"},
        },
        "spec": {
            "deviceSelector": {"driver": "gpu.nvidia.com", "pool": NODE, "device": "gpu-4-mig-1g10gb-19-0"},
            "taint": {"key": MIG_TAINT_KEY, "value": "layout-change", "effect": "NoSchedule"},
        },
    }
    assert step.describe() == [
        "node-1: per GPU, DeviceTaintRule (NoSchedule) on the changing GPUs' devices; the node stays schedulable",
        "  GPU 3: 1g.10gb x7 -> 3g.40gb x2",
        "  taint: gpu-4-mig-1g10gb-19-0",
        "  evict: ml/p3 (GPU 3)",
        "  untouched: the pods on GPU 0, 1, 2, 4, 5, 6, 7",
    ]
    assert step.as_dict()["evict"] == ["ml/p3"]
    # the eviction the drain sends for it: the uid precondition keeps a re-created pod of that name safe
    assert eviction(step.evict[0].as_pod())["deleteOptions"] == {"preconditions": {"uid": "uid-p3"}}


@pytest.mark.parametrize("api", [None, "", "resource.k8s.io/v1alpha9"])
def test_without_device_taint_rules_the_node_is_cordoned_and_still_only_the_holder_moves(api):
    step = step_for(change_gpu(3, TWO), api=api)
    assert step.mode == CORDON and step.cordons and step.taint_rules == ()
    assert [h.ref for h in step.evict] == ["ml/p3"]
    if api:
        assert step.why == "the server serves DeviceTaintRule only as %s, which gpupool does not write" % api
    else:
        assert step.why.startswith("the server does not serve DeviceTaintRule (Kubernetes before 1.33")
    assert step.describe()[0] == "node-1: per GPU with a cordon, because " + step.why


@pytest.mark.parametrize("api", per_gpu.TAINT_RULE_VERSIONS)
def test_every_served_version_gets_the_same_rule_shape(api):
    (rule,) = step_for(change_gpu(0, TWO), api=api).taint_rules
    assert rule["apiVersion"] == api and set(rule["spec"]) == {"deviceSelector", "taint"}


def test_a_mode_toggle_that_needs_a_reset_drains_the_node_whatever_the_server_serves():
    for api in (V1BETA2, None):
        step = step_for(change_gpu(3, None, A100), api=api)
        assert step.mode == DRAIN and step.evict is None and step.taint_rules == ()
        assert step.why == (
            "GPU 3's MIG mode changes, which needs a GPU reset on A100-40GB: the node's other GPUs must be quiet"
        )
        assert step.describe()[-1] == "  evict: every GPU pod of the node (the drain policy)"


def test_a_mode_toggle_on_hopper_stays_per_gpu():
    assert step_for(change_gpu(3, None, H100)).mode == TAINT


def test_unplaced_devices_drain_the_node():
    changes = change_gpu(1, TWO)
    holders = GpuHolders(unplaced=("gpu-6-mig-1g10gb-19-0",))
    step = per_gpu_step(NODE, changes, holders, V1BETA2)
    assert step.mode == DRAIN and "gpu-6-mig-1g10gb-19-0" in step.why and step.evict is None


def test_no_change_no_step():
    step = step_for(gpu_changes(eight(SEVEN), eight(SEVEN), A100))
    assert step.mode == NONE and step.evict is None and step.taint_rules == () and not step.cordons
    assert per_gpu.diff_text([step]) == ""


def test_a_changing_gpu_without_devices_has_nothing_to_taint():
    step = per_gpu_step(NODE, change_gpu(2, TWO), GpuHolders(), V1BETA2)
    assert step.mode == TAINT and step.taint_rules == () and step.evict == ()
    assert "  taint: no device published (nothing to stop)" in step.describe()
    assert "  evict: no pod" in step.describe()


def test_names_too_long_for_the_api_are_digested():
    node = "n" * 250
    name = per_gpu.rule_name(node, "gpu-0-mig-1g10gb-19-0")
    assert is_dns_subdomain(name) and name.startswith("gpupool-mig-")
    assert name != per_gpu.rule_name(node, "gpu-0-mig-1g10gb-19-1")
    assert is_label_value(per_gpu.node_label_value("x" * 64)) and per_gpu.node_label_value(NODE) == NODE


def test_diff_text_names_each_changing_node():
    a = step_for(change_gpu(3, TWO))
    b = step_for(gpu_changes(eight(SEVEN), eight(SEVEN), H100))
    text = per_gpu.diff_text([a, b])
    assert text.startswith("node-1: per GPU") and "ml/p3" in text and text.count("node-1:") == 1


# ---- properties -------------------------------------------------------------------------------------------------
# A generated 8-GPU node: each GPU has 0-3 MIG devices; claims hold 1-2 devices anywhere on the node and are reserved
# for 1-2 of a few pods (pods share claims, hold several). The truth is kept beside the API objects: which GPU each
# device sits on, which devices each pod's claims hold.


@st.composite
def generated_node(draw):
    counts = draw(st.lists(st.integers(0, 3), min_size=8, max_size=8))
    devices = [mig_device(i, s) for i in range(8) for s in range(counts[i])]
    gpu_of = {d["name"]: 7 - int(d["name"].split("-")[1]) for d in devices}
    pods = ["p%d" % k for k in range(6)]
    claims, holds = [], {}
    if devices:
        for k in range(draw(st.integers(0, 8))):
            held = draw(st.lists(st.sampled_from([d["name"] for d in devices]), min_size=1, max_size=2, unique=True))
            users = draw(st.lists(st.sampled_from(pods), min_size=1, max_size=2, unique=True))
            claims.append(claim("ml", "c%d" % k, NODE, held, users))
            for user in users:
                holds.setdefault("ml/" + user, set()).update(held)
    return [resource_slice(NODE, devices)], claims, gpu_of, holds


LAYOUT = st.one_of(st.none(), st.sampled_from([{}, SEVEN, TWO, {"1g.10gb": 2, "3g.40gb": 1}]))
LAYOUTS = st.lists(LAYOUT, min_size=8, max_size=8).map(lambda ls: dict(enumerate(ls)))
MODEL = st.sampled_from([A100, H100, CATALOG["A30"], CATALOG["B200"], None])
API = st.sampled_from([None, V1BETA2, "resource.k8s.io/v1", "resource.k8s.io/v1alpha3"])


@settings(max_examples=250, deadline=None)
@given(generated_node(), LAYOUTS, LAYOUTS, MODEL, API)
def test_properties_of_the_per_gpu_step(node, old, new, model, api):
    slices, claims, gpu_of, holds = node
    changes = gpu_changes(old, new, model)
    # the pool's PCI bus IDs (every GPU seen on some node of the pool) place each GPU, however few publish here
    holders = holders_of(changes.indices, NODE, slices, claims, gpus_per_node=8, bus_ids=[bus(i) for i in range(8)])
    assert holders.unplaced == ()
    step = per_gpu_step(NODE, changes, holders, api, gpu_count=8)
    changing = set(changes.indices)
    if not changing:  # no change => empty plan
        assert step.mode == NONE and step.evict is None and step.taint_rules == ()
        return
    if changes.node_wide is not None:  # a mode toggle that needs a reset is always node-wide
        assert step.mode == DRAIN and step.evict is None
        return
    assert step.mode == (TAINT if api else CORDON)
    must = {pod for pod, devs in holds.items() if any(gpu_of[d] in changing for d in devs)}
    moved = {h.ref for h in step.evict}
    assert moved == must  # never a pod without a changing GPU's device; every pod with one
    assert set(step.kept_gpus) == set(range(8)) - changing
    if api:
        tainted = {r["spec"]["deviceSelector"]["device"] for r in step.taint_rules}
        assert tainted == {d for d, g in gpu_of.items() if g in changing}  # exactly the changing GPUs' devices
        assert len({r["metadata"]["name"] for r in step.taint_rules}) == len(step.taint_rules)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.builds(
            Holder,
            st.just("ml"),
            st.sampled_from(["a", "b", "c", "d"]),
            st.none(),
            st.just(()),
            st.just(()),
            st.lists(st.integers(0, 7), max_size=3, unique=True).map(lambda g: tuple(sorted(g))),
        ),
        max_size=6,
    ),
    st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
    API,
)
def test_the_step_evicts_only_holders_of_a_changing_gpu_whatever_it_is_given(holder_list, gpus, api):
    old = eight(SEVEN)
    new = dict(old)
    for g in gpus:
        new[g] = TWO
    changes = gpu_changes(old, new, A100)
    step = per_gpu_step(NODE, changes, GpuHolders(holders=tuple(holder_list)), api)
    assert set(step.evict) == {h for h in holder_list if set(h.gpus) & set(gpus)}


@settings(max_examples=150, deadline=None)
@given(generated_node(), LAYOUTS, LAYOUTS, API)
def test_a_device_whose_gpu_the_slices_cannot_tell_never_gets_a_per_gpu_step(node, old, new, api):
    slices, claims, gpu_of, holds = node
    changes = gpu_changes(old, new, CATALOG["H100-80GB"])
    holders = holders_of(changes.indices, NODE, slices, claims, gpus_per_node=8)  # this node's own bus IDs only
    step = per_gpu_step(NODE, changes, holders, api, gpu_count=8)
    if changes.per_gpu and holders.unplaced:
        assert step.mode == DRAIN and step.evict is None
    elif step.evict is not None:
        changing = set(changes.indices)
        assert {h.ref for h in step.evict} == {
            p for p, devs in holds.items() if any(gpu_of[d] in changing for d in devs)
        }
