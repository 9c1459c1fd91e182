# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How big an inventory may be: pools, nodes, DeviceClasses, tenants and templates, and the YAML file itself.

Every bound is far above what a real site writes and far below what would make a run slow or a mistake costly:

* MAX_POOLS 200: a pool is one kind of GPU node (a GPU model, a MIG layout, a sharing mode); the largest sites
  run a few dozen. 10,000 pools is a generated file gone wrong, and each step would validate it for minutes.
* MAX_NODES_PER_POOL 5,000: Kubernetes' own scalability limit for a whole cluster (5,000 nodes); a pool
  cannot be larger. Magnum would accept up to 2^31 - 1 and try to boot them.
* MAX_EXTRA_CLASSES 64 per pool: extra DeviceClasses are hand-written CEL filters; each is an object the API
  server and the scheduler evaluate for every claim.
* MAX_TENANTS 500 and MAX_TEMPLATES 500 per tenant: a namespace per team and a template per class they use.
* MAX_FILE_BYTES 10 MiB for a YAML file gpupool reads itself (the gpupool.core.pools inventory source and its
  cluster_files, the host's variable files the validate step checks for keys written twice): 200 full pools
  are about 200 KB.

The counts are checked on the raw data before the model is built, so a 10,000-pool inventory is refused in
milliseconds instead of being validated pool by pool.
"""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple, Union

MAX_POOLS = 200
MAX_NODES_PER_POOL = 5000
MAX_EXTRA_CLASSES = 64
MAX_TENANTS = 500
MAX_TEMPLATES = 500
MAX_FILE_BYTES = 10 * 1024 * 1024

Problem = Tuple[str, str]


def too_many(count: int, limit: int, what: str, fix: str) -> str:
    return "%d %s: gpupool manages at most %d; %s" % (count, what, limit, fix)


def size_problems(data: dict, root: str, path_of: Callable[[str, Sequence[Union[str, int]]], str]) -> List[Problem]:
    """The counts of the raw inventory data over their bounds (lists that are not lists are left to the model)."""
    out: List[Problem] = []
    pools = data.get("pools")
    if isinstance(pools, list) and len(pools) > MAX_POOLS:
        out.append(
            (
                path_of(root, ("pools",)),
                too_many(
                    len(pools),
                    MAX_POOLS,
                    "pools",
                    "split the cluster's pools over several inventories, each with its own owner",
                ),
            )
        )
        return out  # each pool's own lists are not looked at: the file is not what its author meant
    for index, pool in enumerate(pools if isinstance(pools, list) else []):
        if not isinstance(pool, dict):
            continue
        extra = (
            (pool.get("device_classes") or {}).get("extra") if isinstance(pool.get("device_classes"), dict) else None
        )
        if isinstance(extra, list) and len(extra) > MAX_EXTRA_CLASSES:
            out.append(
                (
                    path_of(root, ("pools", index, "device_classes", "extra")),
                    too_many(len(extra), MAX_EXTRA_CLASSES, "extra DeviceClasses", "merge classes that select alike"),
                )
            )
    tenants = data.get("tenants")
    if isinstance(tenants, list) and len(tenants) > MAX_TENANTS:
        out.append(
            (
                path_of(root, ("tenants",)),
                too_many(len(tenants), MAX_TENANTS, "tenants", "list only the namespaces that run GPU workloads"),
            )
        )
    elif isinstance(tenants, list):
        for index, tenant in enumerate(tenants):
            templates = tenant.get("templates") if isinstance(tenant, dict) else None
            if isinstance(templates, list) and len(templates) > MAX_TEMPLATES:
                out.append(
                    (
                        path_of(root, ("tenants", index, "templates")),
                        too_many(len(templates), MAX_TEMPLATES, "templates", "keep one template per class in use"),
                    )
                )
    return out


def nodes_problem(value: int) -> str:
    """The message of a node count over MAX_NODES_PER_POOL (the Nodegroup model's validator)."""
    return (
        "%d nodes is more than one pool can hold: at most %d (Kubernetes' limit for a whole cluster); "
        "check the number, or split the nodes over several pools" % (value, MAX_NODES_PER_POOL)
    )


def file_size_problem(size: int) -> str:
    """Why a YAML file of `size` bytes is not read."""
    return (
        "the file is %.1f MiB; gpupool reads inventory files of at most %d MiB (200 pools are about 0.2 MiB): "
        "check that it is the inventory meant, or split it" % (size / 1048576.0, MAX_FILE_BYTES // 1048576)
    )
