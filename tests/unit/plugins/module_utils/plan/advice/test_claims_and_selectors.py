"""Claims as demand (v1, v1beta1, firstAvailable, constraints, pods) and the CEL shapes the advisor reads."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import claims as advice_claims
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import selectors
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.cel import cel_device
from tests.support import advice_beds as b


def test_requests_of_each_served_version():
    v1 = b.claim("c", "a100-3g.20gb", count=2, attribute=b.PCIE_ROOT)
    flat = b.claim("c", "a100-3g.20gb", count=2)
    request = flat["spec"]["devices"]["requests"][0]
    request.update(request.pop("exactly"))
    alternatives = b.claim("c", "x")
    alternatives["spec"]["devices"]["requests"][0] = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "a100-7g.40gb"},
            {"name": "small", "deviceClassName": "a100-3g.20gb"},
        ],
    }
    (one,) = advice_claims.claim_requests(v1)
    assert (one.device_class, one.count, one.mode, one.match_attribute, one.alternatives) == (
        "a100-3g.20gb",
        2,
        "ExactCount",
        b.PCIE_ROOT,
        0,
    )
    assert advice_claims.claim_requests(flat)[0][:4] == ("gpu", "a100-3g.20gb", 2, "ExactCount")
    first = advice_claims.claim_requests(alternatives)[0]
    assert first.device_class == "a100-7g.40gb" and first.alternatives == 2


def test_waiting_claims_with_their_pods_oldest_first():
    claims = [
        b.claim("new", "h100", created="2026-01-02T00:00:00Z"),
        b.claim("old", "h100", created="2026-01-01T00:00:00Z"),
        b.claim("done", "h100", allocated=[("n", "gpu-0")]),
    ]
    claims[0]["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "owner"}]
    pods = [
        b.pod("by-spec", None, ["old"]),
        {
            "metadata": {"namespace": "ml", "name": "by-status"},
            "status": {"resourceClaimStatuses": [{"name": "g", "resourceClaimName": "old"}]},
        },
    ]
    read = advice_claims.read_claims(claims, pods)
    assert [(c.name, c.allocated, c.pods) for c in read] == [
        ("done", True, []),
        ("old", False, ["ml/by-spec", "ml/by-status"]),
        ("new", False, ["ml/owner"]),
    ]


def test_the_shapes_gpupool_writes_are_read():
    selects = selectors.parse([cel_device("mig", ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"], "3g.20gb")])
    assert selects is not None
    assert selects(b.DRIVER, b.mig(0, "3g.20gb", 4)) is True
    assert selects(b.DRIVER, b.mig(0, "2g.10gb", 0)) is False
    assert selects("other.driver", b.mig(0, "3g.20gb", 4)) is False
    assert selects(b.DRIVER, b.mig(0, "3g.20gb", 4, product="NVIDIA H100 80GB HBM3")) is False


def test_a_qualified_attribute_of_another_domain_and_unread_shapes():
    root = selectors.parse(["device.attributes[\"resource.kubernetes.io\"].pcieRoot == 'pci-1'"])
    assert root(b.DRIVER, b.full_gpu(1)) is True and root(b.DRIVER, b.full_gpu(0)) is False
    for expression in (
        "device.attributes['gpu.nvidia.com'].profile == '3g.20gb' || true",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "!(device.driver == 'gpu.nvidia.com')",
    ):
        assert selectors.parse([expression]) is None, expression
