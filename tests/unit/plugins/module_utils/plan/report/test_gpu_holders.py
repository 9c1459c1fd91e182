"""Which pods hold devices of some GPUs of a node (plan/report/gpu_holders.py, issue #35): slices shaped as the real
driver publishes them (no GPU index: the PCI bus order places each GPU), claims and pods as the API returns them."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.per_gpu import DeviceRef
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.gpu_holders import holders_of
from tests.support.gpu_node_objects import (
    DRIVER,
    claim,
    eight_gpu_node,
    full_device,
    mig_device,
    pod,
    resource_slice,
)

NODE = "node-1"


def one_pod_per_gpu(node=NODE):
    """8 GPUs, one 1g.10gb each, one claim and one pod per GPU (pod p<i> holds GPU i's device)."""
    devices = eight_gpu_node(node)
    claims = [claim("ml", "c%d" % i, node, [devices[i]["name"]], ["p%d" % i]) for i in range(8)]
    return [resource_slice(node, devices)], claims, devices


def test_only_the_pod_of_the_changing_gpu_holds_it():
    slices, claims, devices = one_pod_per_gpu()
    out = holders_of([3], NODE, slices, claims, gpus_per_node=8)
    assert [(h.ref, h.uid, h.claims, h.gpus) for h in out.holders] == [("ml/p3", "uid-p3", ("ml/c3",), (3,))]
    # GPU 3 has minor 4: its device is gpu-4-..., placed at index 3 by the PCI bus order
    assert out.devices == (DeviceRef(DRIVER, NODE, "gpu-4-mig-1g10gb-19-0", 3),)
    assert devices[3]["name"] == "gpu-4-mig-1g10gb-19-0" and out.unplaced == ()


def test_several_gpus_and_a_claim_spanning_two():
    devices = eight_gpu_node(NODE, per_gpu=2)
    by_gpu = {i: [d["name"] for d in devices if d["name"].startswith("gpu-%d-" % (7 - i))] for i in range(8)}
    claims = [
        claim("ml", "wide", NODE, [by_gpu[1][0], by_gpu[2][0]], ["wide-pod"]),
        claim("ml", "narrow", NODE, [by_gpu[2][1]], ["narrow-pod"]),
        claim("ml", "other", NODE, [by_gpu[5][0]], ["other-pod"]),
    ]
    out = holders_of([2], NODE, [resource_slice(NODE, devices)], claims, gpus_per_node=8)
    assert [(h.ref, h.devices, h.gpus) for h in out.holders] == [
        ("ml/narrow-pod", (by_gpu[2][1],), (2,)),
        ("ml/wide-pod", (by_gpu[2][0],), (2,)),  # only its device on the changing GPU is named
    ]
    assert sorted(d.device for d in out.devices) == sorted(by_gpu[2])


def test_a_claim_shared_by_two_pods_moves_both_and_a_pod_with_two_claims_is_one_holder():
    slices, _claims, devices = one_pod_per_gpu()
    claims = [
        claim("ml", "shared", NODE, [devices[0]["name"]], ["a", "b"]),
        claim("ml", "second", NODE, [devices[0]["name"]], ["a"]),  # a device shared (consumable capacity)
    ]
    out = holders_of([0], NODE, slices, claims, gpus_per_node=8)
    assert [(h.ref, h.claims) for h in out.holders] == [("ml/a", ("ml/second", "ml/shared")), ("ml/b", ("ml/shared",))]


def test_pods_naming_a_holding_claim_count_and_finished_pods_do_not():
    slices, _claims, devices = one_pod_per_gpu()
    claims = [
        claim("ml", "c-new", NODE, [devices[4]["name"]]),  # allocated, not reserved yet
        claim("ml", "c-done", NODE, [devices[4]["name"]], ["done"]),
        claim("ml", "c-ext", NODE, [devices[4]["name"]]),
    ]
    pods = [
        pod("ml", "starting", NODE, {"gpu": "c-new"}),
        pod("ml", "done", NODE, {"gpu": "c-done"}, phase="Succeeded"),
        pod("ml", "extended", NODE, {}, extended="c-ext"),  # KEP-5004: asked nvidia.com/gpu
        pod("ml", "elsewhere", NODE, {"gpu": "c-unrelated"}),
    ]
    out = holders_of([4], NODE, slices, claims, pods, gpus_per_node=8)
    assert [h.ref for h in out.holders] == ["ml/extended", "ml/starting"]


def test_claims_are_matched_in_their_own_namespace():
    slices, _claims, devices = one_pod_per_gpu()
    claims = [claim("team-a", "c", NODE, [devices[1]["name"]], ["p"]), claim("team-b", "c", NODE, [], ["p"])]
    pods = [pod("team-b", "q", NODE, {"gpu": "c"})]
    out = holders_of([1], NODE, slices, claims, pods, gpus_per_node=8)
    assert [h.ref for h in out.holders] == ["team-a/p"]


def test_only_the_newest_pool_generation_and_this_nodes_pool_count():
    old = resource_slice(NODE, [mig_device(3, 0, "3g.40gb")], generation=1)
    new = resource_slice(NODE, eight_gpu_node(NODE), generation=2)
    other = resource_slice("node-2", eight_gpu_node("node-2"))
    claims = [
        claim("ml", "stale", NODE, ["gpu-4-mig-3g40gb-19-0"], ["stale"]),
        claim("ml", "there", "node-2", ["gpu-4-mig-1g10gb-19-0"], ["there"]),
        claim("ml", "here", NODE, ["gpu-4-mig-1g10gb-19-0"], ["here"]),
    ]
    out = holders_of([3], NODE, [old, new, other], claims, gpus_per_node=8)
    assert [h.ref for h in out.holders] == ["ml/here"]
    assert [d.device for d in out.devices] == ["gpu-4-mig-1g10gb-19-0"]


def test_a_full_gpu_is_a_device_of_its_gpu():
    devices = [full_device(i) for i in range(4)]
    claims = [claim("ml", "whole", NODE, ["gpu-5"], ["w"])]  # GPU 2 has minor 5
    out = holders_of([2], NODE, [resource_slice(NODE, devices)], claims, gpus_per_node=4)
    assert [h.ref for h in out.holders] == ["ml/w"] and [d.device for d in out.devices] == ["gpu-5"]


def test_an_older_driver_s_published_index_places_the_gpus():
    # v25.3.x published index / parentIndex: it wins over the bus order
    devices = [mig_device(i, 0, parentIndex=(i + 1) % 2) for i in range(2)]
    out = holders_of([0], NODE, [resource_slice(NODE, devices)], [])
    assert [(d.device, d.gpu) for d in out.devices] == [(devices[1]["name"], 0)] and out.unplaced == ()


def test_a_node_publishing_every_gpu_is_placed_by_its_own_bus_order_only_when_its_gpu_count_is_known():
    slices, claims, _devices = one_pod_per_gpu()
    assert holders_of([3], NODE, slices, claims, gpus_per_node=8).unplaced == ()
    assert len(holders_of([3], NODE, slices, claims).unplaced) == 8


def test_a_gpu_the_slices_cannot_place_is_unplaced():
    # GPUs 0 and 2 of 3 publish (GPU 1 has MIG on and no instance); the node alone cannot tell which index GPU 2 has
    devices = [mig_device(0, 0), mig_device(2, 0)]
    out = holders_of([1], NODE, [resource_slice(NODE, devices)], [], gpus_per_node=3)
    assert out.unplaced == tuple(sorted(d["name"] for d in devices)) and out.devices == ()
    # the pool's bus IDs (all three GPUs seen on some node) place them: nothing sits on GPU 1
    bus_ids = sorted({d["attributes"]["resource.kubernetes.io/pciBusID"]["string"] for d in eight_gpu_node()[:3]})
    out = holders_of([1], NODE, [resource_slice(NODE, devices)], [], gpus_per_node=3, bus_ids=bus_ids)
    assert out.unplaced == () and out.devices == ()
    # without the GPUs per node, a position is only a guess: every device is unplaced
    out = holders_of([2], NODE, [resource_slice(NODE, devices)], [])
    assert len(out.unplaced) == 2


def test_no_changing_gpu_no_holder():
    slices, claims, _devices = one_pod_per_gpu()
    assert holders_of([], NODE, slices, claims, gpus_per_node=8) == holders_of(
        [9], NODE, slices, claims, gpus_per_node=8
    )
    assert holders_of([], NODE, slices, claims, gpus_per_node=8).holders == ()
