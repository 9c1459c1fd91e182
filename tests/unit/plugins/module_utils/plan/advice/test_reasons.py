"""Why a claim waits: one hand-made cluster per reason, through the advisor's entry point (pure)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.advise import advise
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.device_classes import cluster_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.observed import Observed
from tests.support import advice_beds as b


def run(data, nodes, slices, claims, classes=None, pods=()):
    cluster = b.load(data)
    if classes is None:
        classes = [d.obj for d in cluster_device_classes(cluster)]
    return advise(cluster, data, Observed(nodes, slices, claims, classes, list(pods)))


def reason_of(result, name):
    rows = [w for w in result["waiting"] if w["name"] == name]
    assert rows, result["summary"]
    return rows[0]


def a100_bed(**node_state):
    return [b.node("a100-0", "a100", **node_state)], [b.rslice("a100-0", b.a100_gpu(0) + b.a100_gpu(1))]


def test_nothing_waits_is_nothing_to_change():
    nodes, slices = a100_bed()
    held = b.claim("held", "a100-3g.20gb", allocated=[("a100-0", "gpu-0-mig-3g20gb-9-4")])
    result = run(b.cluster_data(b.A100), nodes, slices, [held])
    assert result["waiting"] == [] and result["nothing_to_change"] is True
    assert result["snippet"] == "" and result["inventory_diff"] == "" and result["pools"] == {}
    assert result["summary"].splitlines() == ["c1: no claim waits", "nothing to change"]


def test_no_device_class_of_that_name_and_not_a_pool_name():
    nodes, slices = a100_bed()
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "nosuch")]), "x")
    assert row["reason"] == "no_device_class" and row["servable"] is False
    assert "no DeviceClass nosuch, and no pool would make one of that name" in row["message"]


def test_no_device_class_yet_for_a_profile_the_pool_does_not_offer():
    nodes, slices = a100_bed()
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "a100-1g.10gb")]), "x")
    assert row["reason"] == "no_device_class" and row["servable"] is True
    assert row["requests"][0]["pool"] == "a100" and row["requests"][0]["unit"] == "1g.10gb"
    assert "pool a100's class for 1g.10gb" in row["message"]


def test_a_class_of_the_cluster_that_selects_no_device_of_any_pool():
    nodes, slices = a100_bed()
    cluster = b.load(b.cluster_data(b.A100))
    classes = [d.obj for d in cluster_device_classes(cluster)]
    classes.append(
        b.device_class(
            "stray-4g", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '4g.20gb'"
        )
    )
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "stray-4g")], classes), "x")
    assert row["reason"] == "selects_nothing"
    assert row["message"] == "DeviceClass stray-4g selects no device any pool publishes"


def test_a_class_with_selectors_the_advisor_does_not_read_is_not_evaluated():
    nodes, slices = a100_bed()
    cluster = b.load(b.cluster_data(b.A100))
    classes = [d.obj for d in cluster_device_classes(cluster)] + [
        b.device_class("odd", "device.attributes['gpu.nvidia.com'].profile.startsWith('3g')")
    ]
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "odd")], classes), "x")
    assert row["reason"] == "class_not_evaluated" and row["servable"] is False


def test_a_foreign_class_selecting_a_pools_devices_counts_them():
    nodes, slices = a100_bed()
    cluster = b.load(b.cluster_data(b.A100))
    classes = [d.obj for d in cluster_device_classes(cluster)] + [
        b.device_class(
            "any-3g",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile in ['3g.20gb', '3g.40gb']",
        )
    ]
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "any-3g")], classes), "x")
    assert row["reason"] == "free_now" and row["requests"][0]["pool"] == "a100"


def test_pool_at_node_count_zero_has_no_nodes():
    pool = dict(b.A100, nodegroup=dict(b.A100["nodegroup"], node_count=0))
    row = reason_of(run(b.cluster_data(pool), [], [], [b.claim("x", "a100-3g.20gb")]), "x")
    assert row["reason"] == "no_nodes"
    assert row["message"] == "pool a100 has no nodes: its nodegroup's node_count is 0"


def test_cordoned_and_notready_nodes():
    nodes = [b.node("a100-0", "a100", unschedulable=True), b.node("a100-1", "a100", ready=False)]
    pool = dict(b.A100, nodegroup=dict(b.A100["nodegroup"], node_count=2))
    slices = [b.rslice("a100-0", b.a100_gpu(0)), b.rslice("a100-1", b.a100_gpu(0))]
    row = reason_of(run(b.cluster_data(pool), nodes, slices, [b.claim("x", "a100-3g.20gb")]), "x")
    assert row["reason"] == "nodes_unusable"
    assert row["message"].endswith("are cordoned or NotReady: a100-0 (cordoned), a100-1 (NotReady)")


def test_more_devices_on_one_node_than_any_node_has():
    nodes, slices = a100_bed()
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [b.claim("x", "a100-3g.20gb", count=3)]), "x")
    assert row["reason"] == "too_many"
    assert "asks for 3 3g.20gb MIG device(s) on one node; the most any node of pool a100 has is 2" in row["message"]


def test_more_devices_under_one_match_attribute_value_than_any_node_has():
    nodes = [b.node("h100-0", "h100")]
    slices = [b.rslice("h100-0", [b.full_gpu(i) for i in range(4)])]  # each GPU on its own PCIe root
    result = run(b.cluster_data(b.H100), nodes, slices, [b.claim("x", "h100", count=2, attribute=b.PCIE_ROOT)])
    row = reason_of(result, "x")
    assert row["reason"] == "too_many"
    assert "under one resource.kubernetes.io/pcieRoot value; the most any node of pool h100 has is 1" in row["message"]
    # no layout and no node count can give two GPUs one PCIe root: the claim is set aside, not advised for
    assert row["servable"] is False and result["pools"]["h100"]["unserved"][0]["claim"] == "ml/x"


def test_free_memory_but_no_placement_names_the_gpu_and_its_free_slices():
    # GPU 0: 3g.20gb at 4 used, both 2g.10gb free -> memory slices 0-3 free, but no 3g.20gb is free anywhere.
    nodes = [b.node("a100-0", "a100")]
    slices = [b.rslice("a100-0", b.a100_gpu(0) + b.a100_gpu(1))]
    claims = [
        b.claim("u0", "a100-3g.20gb", allocated=[("a100-0", "gpu-0-mig-3g20gb-9-4")]),
        b.claim(
            "u1", "a100-3g.20gb", allocated=[("a100-0", "gpu-1-mig-3g20gb-9-4"), ("a100-0", "gpu-1-mig-2g10gb-14-0")]
        ),
        b.claim("x", "a100-3g.20gb"),
    ]
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, claims), "x")
    assert row["reason"] == "fragmented"
    assert "node a100-0 GPU 0 (free memory slices 0-3)" in row["message"]
    assert "GPU 1" not in row["message"]  # only slices 2-3 free there: too few for a 3g.20gb
    assert "3g.20gb takes 4 memory slice(s) in a row, starting at 0 or 4" in row["message"]


def test_all_matching_devices_allocated_and_older_claims_first():
    nodes = [b.node("h100-0", "h100")]
    slices = [b.rslice("h100-0", [b.full_gpu(i) for i in range(4)])]
    claims = [b.claim("held-%d" % i, "h100", allocated=[("h100-0", "gpu-%d" % i)]) for i in range(3)]
    claims += [
        b.claim("older", "h100", created="2026-01-01T00:00:01Z"),
        b.claim("newer", "h100", created="2026-01-01T00:00:02Z"),
    ]
    result = run(b.cluster_data(b.H100), nodes, slices, claims, pods=[b.pod("p", None, ["older"])])
    older, newer = reason_of(result, "older"), reason_of(result, "newer")
    assert older["reason"] == "free_now" and older["pods"] == ["ml/p"]
    assert (
        "free for it now on node h100-0" in older["message"]
        and "pod(s) ml/p wait for the scheduler" in older["message"]
    )
    assert newer["reason"] == "all_allocated"
    assert "every one of the 4 whole GPU(s) on pool h100's usable nodes is allocated or reserved" in newer["message"]


def test_v1beta1_claims_read_the_same():
    nodes, slices = a100_bed()
    claim = b.claim("x", "a100-3g.20gb", count=3)
    request = claim["spec"]["devices"]["requests"][0]
    request.update(request.pop("exactly"))  # v1beta1: the fields on the request itself
    row = reason_of(run(b.cluster_data(b.A100), nodes, slices, [claim]), "x")
    assert row["reason"] == "too_many" and row["requests"][0]["count"] == 3


# ---- messages that are true (issue #26): only usable devices counted, the free ones left out named ----

H100_TWO = dict(b.H100, nodegroup={"flavor": "g5.h100x4", "node_count": 2, "max_node_count": 3})


def test_all_allocated_counts_usable_nodes_only_and_names_free_gpus_on_a_cordoned_node():
    nodes = [b.node("h100-0", "h100"), b.node("h100-1", "h100", unschedulable=True)]
    slices = [b.rslice(n, [b.full_gpu(i) for i in range(4)]) for n in ("h100-0", "h100-1")]
    claims = [b.claim("held-%d" % i, "h100", allocated=[("h100-0", "gpu-%d" % i)]) for i in range(4)]
    claims += [b.claim("held-c%d" % i, "h100", allocated=[("h100-1", "gpu-%d" % i)]) for i in range(2)]
    claims.append(b.claim("waits", "h100", created="2026-01-01T00:00:05Z"))
    row = reason_of(run(b.cluster_data(H100_TWO), nodes, slices, claims), "waits")
    assert row["reason"] == "all_allocated"
    assert "every one of the 4 whole GPU(s) on pool h100's usable nodes is allocated" in row["message"]
    assert "not counted: 2 free on node(s) that take no new pod: h100-1 (2, cordoned)" in row["message"]


def test_free_gpus_under_different_pcie_roots_are_apart_not_all_allocated():
    # 4 GPUs, two per pcieRoot; one of each root allocated: 2 free, never 2 under one root (free, never together)
    devices = [b.full_gpu(i, root="pci-a" if i < 2 else "pci-b") for i in range(4)]
    claims = [b.claim("held-%d" % i, "h100", allocated=[("h100-0", "gpu-%d" % i)]) for i in (0, 2)]
    claims.append(b.claim("pair", "h100", count=2, attribute=b.PCIE_ROOT, created="2026-01-01T00:00:05Z"))
    row = reason_of(
        run(b.cluster_data(b.H100), [b.node("h100-0", "h100")], [b.rslice("h100-0", devices)], claims), "pair"
    )
    assert row["reason"] == "apart" and row["servable"] is True, row["message"]
    assert "2 of the 4 whole GPU(s) on pool h100's usable nodes are free" in row["message"]
    assert "never 2 on one node under one resource.kubernetes.io/pcieRoot value" in row["message"]
    assert "pcieRoot=pci-a: 1" in row["message"] and "pcieRoot=pci-b: 1" in row["message"]
    assert "every one of" not in row["message"]


def test_a_count_free_only_across_nodes_is_apart_and_fewer_free_is_all_allocated():
    """Two nodes with one free GPU each: a claim for 2 GPUs finds 2 free, never on one node (apart); the next claim
    for 3 finds fewer free than it asks for (all_allocated, with how many are free)."""
    nodes = [b.node("h100-0", "h100"), b.node("h100-1", "h100")]
    slices = [b.rslice(n, [b.full_gpu(i) for i in range(4)]) for n in ("h100-0", "h100-1")]
    claims = [
        b.claim("held-%s-%d" % (n, i), "h100", allocated=[(n, "gpu-%d" % i)])
        for n in ("h100-0", "h100-1")
        for i in range(3)
    ]
    claims.append(b.claim("pair", "h100", count=2, created="2026-01-01T00:00:05Z"))
    claims.append(b.claim("three", "h100", count=3, created="2026-01-01T00:00:06Z"))
    result = run(b.cluster_data(H100_TWO), nodes, slices, claims)
    pair, three = reason_of(result, "pair"), reason_of(result, "three")
    assert pair["reason"] == "apart", pair["message"]
    assert "never 2 on one node (h100-0: 1, h100-1: 1)" in pair["message"]
    assert three["reason"] == "all_allocated", three["message"]
    assert "2 of the 8 whole GPU(s)" in three["message"]


def test_the_drivers_imex_classes_are_served_by_a_compute_domain():
    """The NVIDIA driver's channel and daemon classes select compute-domain.nvidia.com devices, not GPUs: the reason
    is compute_domain (a ComputeDomain serves them), not selects_nothing (fix the class); so is a hand-made class
    selecting the channel."""
    nodes, slices = a100_bed()
    cluster = b.load(b.cluster_data(b.A100))
    classes = [d.obj for d in cluster_device_classes(cluster)]
    classes += [
        b.device_class(
            "compute-domain-default-channel.nvidia.com",
            "device.driver == 'compute-domain.nvidia.com' && "
            "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
            "device.attributes['compute-domain.nvidia.com'].id == 0",
        ),
        b.device_class(
            "compute-domain-daemon.nvidia.com", "device.attributes['compute-domain.nvidia.com'].type == 'daemon'"
        ),
        b.device_class(
            "my-channel",
            "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel'",
        ),
    ]
    claims = [
        b.claim("ch", "compute-domain-default-channel.nvidia.com"),
        b.claim("dm", "compute-domain-daemon.nvidia.com", namespace="nvidia-dra-driver"),
        b.claim("mine", "my-channel"),
    ]
    result = run(b.cluster_data(b.A100), nodes, slices, claims, classes)
    rows = {w["name"]: w for w in result["waiting"]}
    assert {n: r["reason"] for n, r in rows.items()} == {
        "ch": "compute_domain",
        "dm": "compute_domain",
        "mine": "compute_domain",
    }
    assert "IMEX channel of a ComputeDomain" in rows["ch"]["message"]
    assert "IMEX daemon" in rows["dm"]["message"]
    assert all(r["servable"] is False for r in rows.values())
    assert result["pools"] == {}  # no pool is changed for them


def two_requests(name, created="2026-01-01T00:00:05Z"):
    out = b.claim(name, "h100", created=created)
    first = out["spec"]["devices"]["requests"][0]
    second = dict(first, name="gpu2")
    out["spec"]["devices"]["requests"].append(second)
    return out


def test_a_claim_whose_requests_are_free_only_on_different_nodes_is_not_free_now():
    nodes = [b.node("h100-0", "h100"), b.node("h100-1", "h100")]
    slices = [b.rslice(n, [b.full_gpu(i) for i in range(4)]) for n in ("h100-0", "h100-1")]
    claims = [
        b.claim("held-%s-%d" % (n, i), "h100", allocated=[(n, "gpu-%d" % i)])
        for n in ("h100-0", "h100-1")
        for i in range(3)
    ]
    claims.append(two_requests("both"))
    row = reason_of(run(b.cluster_data(H100_TWO), nodes, slices, claims), "both")
    assert row["reason"] == "apart" and row["servable"] is True
    assert "no usable node of pool(s) h100 has them all free at once" in row["message"]
    assert all(r["reason"] == "apart" for r in row["requests"])


def test_a_claim_whose_requests_fit_one_node_is_free_there_and_reserves_both():
    nodes = [b.node("h100-0", "h100"), b.node("h100-1", "h100")]
    slices = [b.rslice(n, [b.full_gpu(i) for i in range(4)]) for n in ("h100-0", "h100-1")]
    claims = [b.claim("held-0-%d" % i, "h100", allocated=[("h100-0", "gpu-%d" % i)]) for i in range(3)]
    claims += [b.claim("held-1-%d" % i, "h100", allocated=[("h100-1", "gpu-%d" % i)]) for i in range(2)]
    claims += [two_requests("both"), b.claim("after", "h100", created="2026-01-01T00:00:09Z")]
    result = run(b.cluster_data(H100_TWO), nodes, slices, claims)
    both, after = reason_of(result, "both"), reason_of(result, "after")
    assert both["reason"] == "free_now" and {r["node"] for r in both["requests"]} == {"h100-1"}
    # h100-0's last GPU is still free for the next claim: the pair took h100-1's two, not one of each
    assert after["reason"] == "free_now" and after["requests"][0]["node"] == "h100-0"


PARENT = "gpu.nvidia.com/parentUUID"


def with_uuids(node_name, devices):
    """The devices as the driver publishes them with their identities: a MIG device's own uuid and its GPU's
    parentUUID (reference: nvidia-dra-driver-published.md)."""
    for k, dev in enumerate(devices):
        minor = int(dev["name"].split("-")[1])
        dev["attributes"]["uuid"] = {"string": "MIG-%s-%d" % (node_name, k)}
        dev["attributes"]["parentUUID"] = {"string": "GPU-%s-%d" % (node_name, minor)}
    return devices


def a100_uuid_bed():
    return [b.node("a100-0", "a100")], [b.rslice("a100-0", with_uuids("a100-0", b.a100_gpu(0) + b.a100_gpu(1)))]


def matched_pair(name, units, attribute, created="2026-01-01T00:00:05Z"):
    """A claim with one request per unit, all under one matchAttribute constraint."""
    out = b.claim(name, "a100-" + units[0], created=created)
    first = out["spec"]["devices"]["requests"][0]
    for k, unit in enumerate(units[1:]):
        out["spec"]["devices"]["requests"].append(
            {"name": "r%d" % k, "exactly": dict(first["exactly"], deviceClassName="a100-" + unit)}
        )
    out["spec"]["devices"]["constraints"] = [{"matchAttribute": attribute}]
    return out


def test_requests_under_one_match_attribute_are_placed_together_under_one_value():
    """GPU 0's 3g.20gb and GPU 1's two 2g.10gb are allocated: a 3g.20gb is free only on GPU 1, a 2g.10gb only on
    GPU 0. A claim for both under one parentUUID (one GPU) cannot be allocated: apart, not free_now. Without the
    constraint the same claim is free now (one node has both)."""
    nodes, slices = a100_uuid_bed()
    held = [
        b.claim("h0", "a100-3g.20gb", allocated=[("a100-0", "gpu-0-mig-3g20gb-9-4")]),
        b.claim("h1", "a100-2g.10gb", allocated=[("a100-0", "gpu-1-mig-2g10gb-14-0")]),
        b.claim("h2", "a100-2g.10gb", allocated=[("a100-0", "gpu-1-mig-2g10gb-14-2")]),
    ]
    one_gpu = matched_pair("one-gpu", ["3g.20gb", "2g.10gb"], PARENT)
    result = run(b.cluster_data(b.A100), nodes, slices, held + [one_gpu])
    row = reason_of(result, "one-gpu")
    assert row["reason"] == "apart", row["message"]
    loose = b.claim("loose", "a100-3g.20gb")
    loose["spec"]["devices"]["requests"].append(
        {
            "name": "r0",
            "exactly": dict(loose["spec"]["devices"]["requests"][0]["exactly"], deviceClassName="a100-2g.10gb"),
        }
    )
    assert reason_of(run(b.cluster_data(b.A100), nodes, slices, held + [loose]), "loose")["reason"] == "free_now"


def test_a_match_attribute_on_parent_uuid_groups_the_devices_of_one_gpu():
    """Two 2g.10gb under one parentUUID: free now on GPU 0, which has both free (GPU 1 has one); the next such
    claim finds one 2g.10gb left in all: fewer than it asks for."""
    nodes, slices = a100_uuid_bed()
    first = matched_pair("first", ["2g.10gb", "2g.10gb"], PARENT)
    second = matched_pair("second", ["2g.10gb", "2g.10gb"], PARENT, created="2026-01-01T00:00:06Z")
    held = [b.claim("h1", "a100-2g.10gb", allocated=[("a100-0", "gpu-1-mig-2g10gb-14-0")])]
    result = run(b.cluster_data(b.A100), nodes, slices, held + [first, second])
    assert reason_of(result, "first")["reason"] == "free_now"
    # GPU 0's pair is reserved for the first; GPU 1 has one 2g.10gb left: the second's two are never on one GPU
    assert reason_of(result, "second")["reason"] == "all_allocated"


def test_a_match_attribute_on_product_name_spans_the_gpus_that_share_it():
    """productName is the same on every GPU of the node: two whole GPUs, one free on each of two GPUs of one node,
    are free together under it (they were taken as unpublished, each GPU alone)."""
    nodes = [b.node("h100-0", "h100")]
    slices = [b.rslice("h100-0", [b.full_gpu(i) for i in range(4)])]
    held = [b.claim("h%d" % i, "h100", allocated=[("h100-0", "gpu-%d" % i)]) for i in (0, 2)]
    pair = b.claim("pair", "h100", count=2, attribute="gpu.nvidia.com/productName", created="2026-01-01T00:00:05Z")
    row = reason_of(run(b.cluster_data(b.H100), nodes, slices, held + [pair]), "pair")
    assert row["reason"] == "free_now", row["message"]


def test_a_match_attribute_no_device_can_meet_is_no_match():
    """A MIG device's uuid is its own: two devices never share one (no_match, not servable, no advice); an
    attribute no device publishes never holds either."""
    nodes, slices = a100_uuid_bed()
    same_uuid = matched_pair("same-uuid", ["2g.10gb", "2g.10gb"], "gpu.nvidia.com/uuid")
    nosuch = b.claim("nosuch", "a100-2g.10gb", attribute="gpu.nvidia.com/fabricID")
    single = b.claim("single", "a100-2g.10gb", attribute="gpu.nvidia.com/uuid")
    result = run(b.cluster_data(b.A100), nodes, slices, [same_uuid, nosuch, single])
    rows = {w["name"]: w for w in result["waiting"]}
    assert rows["same-uuid"]["reason"] == "no_match" and rows["same-uuid"]["servable"] is False
    assert "each device of pool a100 has its own value" in rows["same-uuid"]["message"]
    assert rows["nosuch"]["reason"] == "no_match" and "published by no device" in rows["nosuch"]["message"]
    assert rows["single"]["reason"] == "free_now"  # one device: its own uuid matches itself
    # only the single claim is demand (and served now): the unmeetable ones ask for no change
    assert result["pools"]["a100"]["demand"] == {"2g.10gb": 1} and result["pools"]["a100"]["advice"] is None
