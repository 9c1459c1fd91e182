"""Product names in DeviceClass selectors (catalog or per-pool override) and validate's min_memory warning."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.model import advisories
from ansible_collections.gpupool.core.plugins.module_utils.model import errors as model_errors
from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import quantity_bytes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import device_classes as plan_device_classes


def cluster(*pools):
    return model_load.load_cluster({"name": "c1", "pools": list(pools)})


def pool(name="p", model="H100-80GB", not_in_catalog=False, **extra):
    data = {"name": name, "node_selector": {"gpu": name}, "gpu": {"model": model}}
    if not_in_catalog:
        data["gpu"]["not_in_catalog"] = True
    data.update(extra)
    return data


def full_gpu_selector(c):
    (d,) = [d for d in plan_device_classes.cluster_device_classes(c) if d.info["role"] == "gpu"]
    return d.obj["spec"]["selectors"][0]["cel"]["expression"]


def test_gh200_96gb_selects_the_name_the_driver_publishes():
    """A GH200 96GB publishes productName 'NVIDIA GH200 480GB' (DRA driver reference)."""
    expr = full_gpu_selector(cluster(pool("gh200", "H100 on GH200")))
    assert "'NVIDIA GH200 480GB'" in expr


def test_a_pool_overrides_the_product_names():
    c = cluster(pool("h100", gpu={"model": "H100-80GB", "product_names": ["NVIDIA H100 80GB HBM3e-custom"]}))
    expr = full_gpu_selector(c)
    assert expr.endswith("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3e-custom'")
    assert c.pools[0].catalog_gpu.key == "H100-80GB"  # MIG geometry still from the catalog


def test_an_empty_product_name_is_refused():
    with pytest.raises(model_errors.Problems) as err:
        cluster(pool("h100", gpu={"model": "H100-80GB", "product_names": [" "]}))
    assert "pools[0] (h100).gpu.product_names" in err.value.render()


def test_unknown_mig_gpu_gets_candidates():
    with pytest.raises(model_errors.Problems) as err:
        cluster(pool("a", "A100", mig={"mode": "static", "layout": {"1g.5gb": 1}}))
    assert "'A100' is ambiguous; did you mean 'A100-40GB' or 'A100-80GB'?" in err.value.render()


@pytest.mark.parametrize(
    "text, value", [("80Gi", 80 * 2**30), ("81559Mi", 81559 * 2**20), ("1.5G", 1.5e9), ("512", 512)]
)
def test_quantity_bytes(text, value):
    assert quantity_bytes(text) == value


def test_min_memory_above_every_gpu_of_the_pool_warns():
    c = cluster(
        pool(
            "h100",
            device_classes={
                "extra": [
                    {"name": "too-big", "min_memory": "80Gi"},  # 81920 MiB > 81559 MiB: matches nothing
                    {"name": "fits", "min_memory": "79Gi"},
                    {"name": "mig-too-big", "mig_profile": "3g.40gb", "min_memory": "40Gi"},  # 3g.40gb: 40448 MiB
                    {"name": "mig-fits", "mig_profile": "3g.40gb", "min_memory": "39Gi"},
                ]
            },
        )
    )
    warnings = advisories.semantic_warnings(c)
    assert [path for path, _msg in warnings] == [
        "gpupool_cluster.pools[0] (h100).device_classes.extra[0].min_memory",
        "gpupool_cluster.pools[0] (h100).device_classes.extra[2].min_memory",
    ]
    assert (
        "pool h100: DeviceClass too-big asks for min_memory 80Gi but every H100-80GB publishes 81559 MiB"
        in warnings[0][1]
        and "at most 81559Mi" in warnings[0][1]
    )
    assert "every 3g.40gb MIG device of H100-80GB publishes 40448 MiB" in warnings[1][1]


def test_unknown_models_and_no_min_memory_do_not_warn():
    c = cluster(
        pool(
            "x", "Some Future GPU", not_in_catalog=True, device_classes={"extra": [{"name": "a", "min_memory": "1Ti"}]}
        ),
        pool("y", device_classes={"extra": [{"name": "b"}]}),
    )
    assert advisories.semantic_warnings(c) == []


def test_the_example_inventory_validates_without_warnings():
    import os

    import yaml

    root = os.path.dirname(os.path.abspath(__file__))
    for _unused in range(5):
        root = os.path.dirname(root)
    with open(os.path.join(root, "inventories", "example", "host_vars", "cern-gpu", "gpupool.yml")) as fh:
        data = yaml.safe_load(fh)
    c = model_load.load_cluster(data["gpupool_cluster"])
    assert advisories.semantic_warnings(c) == []
