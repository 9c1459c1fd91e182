# -*- coding: utf-8 -*-
"""Cases the random scans of test_advice_invariants found, pinned: each once broke an invariant of the advice."""

from __future__ import annotations

import pytest

from tests.unit.plugins.module_utils.plan.advice.test_advice_invariants import Case, check

# A node publishes one of its two GPUs (the other has MIG on and no instance), both GPUs carry the same layout, so
# the one it publishes cannot be told from the other and holds an allocated device: it may be at either index. The
# group search let the node join a group changing GPU 1, where the allocated device may be.
UNPLACED_GPU_HELD = {
    "claims": [
        {
            "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "name": "held-1", "namespace": "ml"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "p1-1g.10gb"},
                            "name": "r0",
                        }
                    ]
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "device": "gpu-1-mig-1g10gb-19-0",
                                "driver": "gpu.nvidia.com",
                                "pool": "p1-0",
                                "request": "r0",
                            }
                        ]
                    }
                }
            },
        },
        {
            "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "name": "w0", "namespace": "ml"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "p1-1g.20gb"},
                            "name": "r0",
                        }
                    ]
                }
            },
        },
    ],
    "cordoned": [],
    "data": {
        "magnum": {"cloud": "c", "cluster": "k"},
        "name": "c1",
        "pools": [
            {
                "gpu": {"model": "H100-80GB", "per_node": 2},
                "mig": {"layouts": {0: {"1g.10gb": 1}, 1: {"1g.10gb": 1}}, "mode": "static"},
                "name": "p1",
                "nodegroup": {"flavor": "g5.h100x2", "max_node_count": 3, "node_count": 1},
            }
        ],
    },
    "held": [("p1-0", "gpu-1-mig-1g10gb-19-0")],
    "nodes": [
        {
            "metadata": {
                "labels": {"magnum.openstack.org/nodegroup": "p1", "nvidia.com/mig.config": "gpupool-p1"},
                "name": "p1-0",
            },
            "spec": {"unschedulable": False},
            "status": {"conditions": [{"status": "True", "type": "Ready"}]},
        }
    ],
    "slices": [
        {
            "metadata": {"name": "p1-0-gpu.nvidia.com-x"},
            "spec": {
                "devices": [
                    {
                        "attributes": {
                            "parentUUID": {"string": "GPU-p1-0-1"},
                            "productName": {"string": "NVIDIA H100 80GB HBM3"},
                            "profile": {"string": "1g.10gb"},
                            "resource.kubernetes.io/pciBusID": {"string": "0000:2a:00.0"},
                            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:17"},
                            "type": {"string": "mig"},
                            "uuid": {"string": "MIG-p1-0-1-0"},
                        },
                        "capacity": {
                            "memory": {"value": "10689183744"},
                            "memorySlice0": {"value": "1"},
                            "multiprocessors": {"value": "16"},
                        },
                        "name": "gpu-1-mig-1g10gb-19-0",
                    }
                ],
                "driver": "gpu.nvidia.com",
                "nodeName": "p1-0",
                "pool": {"generation": 1, "name": "p1-0"},
            },
        }
    ],
    "truth": {("p1-0", "gpu-1-mig-1g10gb-19-0"): ("p1", 1, "pci0000:17", "1g.10gb")},
}

PINNED = {"unplaced GPU held, group": UNPLACED_GPU_HELD}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_pinned_case_keeps_the_invariants(name):
    case = dict(PINNED[name])
    check(Case(case, cordoned=set(case["cordoned"]), held=set(case["held"])))
