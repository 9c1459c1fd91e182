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
* MAX_EXPANDED_VALUES 100,000 values (keys, scalars, lists and mappings) in a gpupool_cluster once YAML aliases
  are expanded: 200 full pools with their tenants are about 20,000. A file of a few kilobytes whose anchors hold
  aliases of anchors expands to millions (each level multiplies) and took seconds to copy at every step.
* MAX_NODES_PER_CLUSTER 5,000 nodes over all pools: Kubernetes' scalability limit for a whole cluster.
* MAX_DEPTH 40 levels of nesting (a pool's deepest setting is 6 levels down, chart values rarely 10 more):
  ansible-core's templating stops at about 200 levels with "Recursive loop detected" about the whole argument.
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
MAX_EXPANDED_VALUES = 100_000
MAX_NODES_PER_CLUSTER = 5000
MAX_DEPTH = 40

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
    values, depth = expanded_count(data)
    if values > MAX_EXPANDED_VALUES:  # aliases expanded: the model would copy every one
        return [(root, expanded_problem(values, counted_all=False))]
    if depth > MAX_DEPTH:
        return depth_problem(data, root, path_of)
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
    nodes = sum(_node_count(pool) for pool in (pools if isinstance(pools, list) else []))
    if nodes > MAX_NODES_PER_CLUSTER:
        out.append(
            (
                path_of(root, ("pools",)),
                "the pools' nodegroups ask for %d nodes in all; one cluster holds at most %d (Kubernetes' "
                "scalability limit): check the node_count values, or split the pools over several clusters"
                % (nodes, MAX_NODES_PER_CLUSTER),
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


def _node_count(pool: object) -> int:
    """The nodes a raw pool's nodegroup asks for at most (max_node_count, else node_count); 0 when not a number."""
    nodegroup = pool.get("nodegroup") if isinstance(pool, dict) else None
    if not isinstance(nodegroup, dict):
        return 0
    for key in ("max_node_count", "node_count"):
        value = nodegroup.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_NODES_PER_POOL:
            return value  # a pool over its own bound is refused by the model, at its own key
    return 0


EXPANDED = "values once YAML aliases are expanded"  # in every expansion problem's message


def expanded_problem(count: int, counted_all: bool = True) -> str:
    """Why data of `count` values (aliases expanded) is refused; counted_all=False: counting stopped at `count`."""
    held = "%d" % count if counted_all else "more than %d" % MAX_EXPANDED_VALUES
    return (
        "the data holds %s %s; gpupool reads at most %d (200 full pools are about 20,000): an anchor that holds "
        "aliases of other anchors multiplies, check the aliases (*name)" % (held, EXPANDED, MAX_EXPANDED_VALUES)
    )


def nesting_depth(data: object, limit: int = MAX_DEPTH) -> int:
    """How deep `data` nests (a scalar is 0, a list of scalars 1), without recursion; stops at `limit` + 1."""
    deepest = 0
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((value, depth + 1) for value in item)
    return deepest


def depth_problem(data: object, root: str, path_of: Callable[[str, Sequence[Union[str, int]]], str]) -> List[Problem]:
    """The first key path below which `data` nests deeper than MAX_DEPTH, with the depth and the fix."""
    stack: List[Tuple[object, Tuple[Union[str, int], ...]]] = [(data, ())]
    while stack:
        item, loc = stack.pop()
        if len(loc) > MAX_DEPTH:
            at = loc[: len([p for p in loc if isinstance(p, str)]) and _last_key(loc) + 1]
            return [
                (
                    path_of(root, at),
                    "nests more than %d levels deep below this key; gpupool reads at most %d (a pool's deepest "
                    "setting is 6 levels down): check for a list or mapping pasted into itself"
                    % (MAX_DEPTH, MAX_DEPTH),
                )
            ]
        if isinstance(item, dict):
            stack.extend((value, loc + (key,)) for key, value in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((value, loc + (index,)) for index, value in enumerate(item))
    return []


def _last_key(loc: Sequence[Union[str, int]]) -> int:
    """The index in `loc` of its first key below the pool level where the nesting starts: the last string key
    before the run of list indexes and keys that goes too deep, at most 4 levels in."""
    keys = [i for i, part in enumerate(loc[:4]) if isinstance(part, str)]
    return keys[-1] if keys else 0


def expanded_count(data: object, limit: int = MAX_EXPANDED_VALUES) -> Tuple[int, int]:
    """(how many values `data` holds: keys, scalars, lists, mappings, a shared object counted each time it is
    reached, as a copy would; how deep it nests). One pass; stops a little past `limit` values or MAX_DEPTH
    levels, so a bomb costs milliseconds."""
    count = deepest = 0
    stack = [(data, 0)]
    while stack and count <= limit and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            count += len(item)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((value, depth + 1) for value in item)
    return count, deepest


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
