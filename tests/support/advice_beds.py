# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hand-made clusters for the advisor's unit tests and its benchmark (bench/bench_advice.py): devices written as the
NVIDIA DRA driver publishes them (reference nvidia-dra-driver-published.md: static MIG devices with memorySlice<N>
capacities, whole GPUs as gpu-<minor>), placements spelled out by hand from the MIG user guide's A100/H100 tables, not
computed by the code under test. One builder, so the tests and the bench read the same device shapes."""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.model import load as model_load

DRIVER = "gpu.nvidia.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NG = "magnum.openstack.org/nodegroup"
# profile -> (GI profile id, memory slices), A100-40GB and H100-80GB (MIG user guide -lgip)
PROFILES = {
    "1g.5gb": (19, 1),
    "1g.10gb": (15, 2),
    "2g.10gb": (14, 2),
    "3g.20gb": (9, 4),
    "4g.20gb": (5, 4),
    "7g.40gb": (0, 8),
    "3g.40gb": (9, 4),
    "2g.20gb": (14, 2),
}
# H100-80GB's own table where a name means another GI than on A100-40GB (1g.10gb: one slice there, two here)
H100_PROFILES = {
    "1g.10gb": (19, 1),
    "1g.20gb": (15, 2),
    "2g.20gb": (14, 2),
    "3g.40gb": (9, 4),
    "4g.40gb": (5, 4),
    "7g.80gb": (0, 8),
}
H100_PRODUCT = "NVIDIA H100 80GB HBM3"
A100 = {
    "name": "a100",
    "nodegroup": {"flavor": "g4.p2.40g", "node_count": 1, "max_node_count": 2},
    "gpu": {"model": "A100-40GB", "per_node": 2},
    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
}
H100 = {
    "name": "h100",
    "nodegroup": {"flavor": "g5.h100x4", "node_count": 1, "max_node_count": 3},
    "gpu": {"model": "H100-80GB", "per_node": 4},
}


def cluster_data(*pools, tenants=None, **extra):
    data = {
        "name": "c1",
        "magnum": {"cloud": "c", "cluster": "k"},
        "pools": [copy.deepcopy(p) for p in pools],
    }
    if tenants is not None:
        data["tenants"] = tenants
    data.update(extra)
    return data


def load(data):
    return model_load.load_cluster(copy.deepcopy(data))


def node(name, pool, ready=True, unschedulable=False, labels=None):
    return {
        "metadata": {"name": name, "labels": dict({NG: pool}, **(labels or {}))},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def full_gpu(minor, root=None, product=H100_PRODUCT):
    return {
        "name": "gpu-%d" % minor,
        "attributes": {
            "type": {"string": "gpu"},
            "productName": {"string": product},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x41 + minor)},
            PCIE_ROOT: {"string": root or "pci-%d" % minor},
        },
    }


def mig(minor, profile, start, product="NVIDIA A100-SXM4-40GB", profiles=None):
    """profiles: the GPU model's table (PROFILES: A100-40GB's names, H100_PROFILES: H100-80GB's)."""
    gi, size = (profiles or PROFILES)[profile]
    return {
        "name": "gpu-%d-mig-%s-%d-%d" % (minor, profile.replace(".", ""), gi, start),
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "productName": {"string": product},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x41 + minor)},
            PCIE_ROOT: {"string": "pci-%d" % minor},
        },
        "capacity": {"memorySlice%d" % s: {"value": "1"} for s in range(start, start + size)},
    }


def a100_gpu(minor):
    """3g.20gb at 4, 2 x 2g.10gb at 0 and 2: how the MIG manager places the example's layout."""
    return [mig(minor, "3g.20gb", 4), mig(minor, "2g.10gb", 0), mig(minor, "2g.10gb", 2)]


def rslice(node_name, devices):
    return {
        "metadata": {"name": node_name + "-gpu"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1},
            "devices": devices,
        },
    }


def claim(name, device_class, count=1, attribute=None, allocated=None, namespace="ml", created="2026-01-01T00:00:00Z"):
    """A claim (resource.k8s.io/v1 shape); allocated: [(node, device)] written as the scheduler writes it."""
    out = {
        "metadata": {"namespace": namespace, "name": name, "creationTimestamp": created},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count},
                    }
                ]
            }
        },
    }
    if attribute:
        out["spec"]["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": attribute}]
    if allocated:
        out["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": DRIVER, "pool": n, "device": d} for n, d in allocated]
                }
            }
        }
    return out


def device_class(name, expression):
    return {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def pod(name, node_name=None, claims=(), namespace="ml"):
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"nodeName": node_name, "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]},
        "status": {"phase": "Running" if node_name else "Pending"},
    }
