# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU index each published GPU has, by identity, and how a node's layout differs from the inventory's. Pure.

The driver names a GPU by its /dev/nvidiaN minor, not the NVML index the inventory's ``mig.layouts`` and mig-parted
use (driver issue #563): the index is the published ``index`` / ``parentIndex`` attribute where the driver has it
(v25.3.x); newer drivers do not, and then the GPUs are put in NVML's enumeration order, by
``resource.kubernetes.io/pciBusID`` (place_gpus says the rules).

A layout is compared per GPU index as {profile: count}: the MIG manager (mig-parted) picks the placements, so the
same layout at other placements is not a mismatch.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.report.devices import published_gpus

Layout = Optional[Dict[str, int]]  # None: a full GPU; else {profile: count}


def published_layout(devices, expected=None, gpus_per_node: Optional[int] = None, bus_ids=None) -> Dict[int, Layout]:
    """{GPU index: None (full GPU) or {profile: count}} from a node's gpu.nvidia.com devices, by the rule of
    place_gpus."""
    return {idx: g["layout"] for idx, g in indexed_gpus(devices, expected, gpus_per_node, bus_ids)}


def indexed_gpus(devices, expected=None, gpus_per_node: Optional[int] = None, bus_ids=None) -> List[Tuple[int, dict]]:
    """[(GPU index, published GPU)] of a node's devices, by the rule of place_gpus."""
    return place_gpus(published_gpus(devices), expected, gpus_per_node, bus_ids)


def place_gpus(
    gpus: List[dict],
    expected: Optional[Dict[int, Layout]] = None,
    gpus_per_node: Optional[int] = None,
    bus_ids: Optional[List[str]] = None,
) -> List[Tuple[int, dict]]:
    """[(GPU index, published GPU)]: each GPU the node publishes at the inventory's GPU index, by identity.

    1. the ``index``/``parentIndex`` attribute, when every GPU publishes it (drivers v25.3.x);
    2. else the place of the GPU's PCI bus ID among `bus_ids` (pool_bus_ids: the pool's nodes together), when that
       set has one bus ID per GPU of a node (`gpus_per_node`) and holds the node's;
    3. else by position, which may be wrong: the GPUs in PCI bus order (else by minor) laid onto `expected`'s
       indices when as many GPUs publish as it has, else numbered from 0. Each GPU placed so gets "maybe": the
       indices it may really have (by its bus ID's place among the pool's, the indices no published GPU explains
       on either side; without a bus ID, any index), and the advisor freezes all of them where it is allocated.
    A GPU placed by rule 1 or 2 gets "maybe" None."""
    for gpu in gpus:
        gpu["maybe"] = None
    if gpus and all(g["index"] is not None for g in gpus):
        return [(g["index"], g) for g in gpus]
    if bus_ids and gpus_per_node and len(bus_ids) == gpus_per_node:
        where = {bus: k for k, bus in enumerate(bus_ids)}
        if all(g["bus"] in where for g in gpus):
            return sorted(((where[g["bus"]], g) for g in gpus), key=lambda p: p[0])
    indices = list(range(len(gpus)))
    if expected is not None and len(gpus) != gpus_per_node and len(expected) == len(gpus):
        indices = sorted(expected)
    elif expected is not None and gpus_per_node and len(gpus) < gpus_per_node:
        indices = _matched_indices(gpus, expected, gpus_per_node, bus_ids) or indices
    if gpus_per_node:
        known = bus_ids if bus_ids and len(bus_ids) <= gpus_per_node else [g["bus"] for g in gpus]
        where = {bus: k for k, bus in enumerate(known)}
        spare = gpus_per_node - len(known)
        for index, gpu in zip(indices, gpus):
            if gpu["bus"] in where and spare >= 0:
                start = where[gpu["bus"]]
                gpu["maybe"] = sorted(set(range(start, start + spare + 1)) | {index})
            else:  # no bus ID: NVML's order is not known (the minor is not the index, driver issue #563)
                gpu["maybe"] = sorted(set(range(gpus_per_node)) | {index})
    return list(zip(indices, gpus))


def _matched_indices(gpus, expected, gpus_per_node, bus_ids):
    """The indices, in bus order, on which the most published GPUs show the layout the inventory expects there (a
    whole GPU where the inventory keeps GPUs whole): a node publishing only its whole GPU of three, the other two
    MIG GPUs without instances, has it at the whole GPU's index, not at 0. Ties go to the lowest indices. Each GPU
    stays within the indices its bus ID's place among the pool's allows. None when no placement fits."""
    count = len(gpus)
    known = {bus: k for k, bus in enumerate(bus_ids or [])}
    spare = gpus_per_node - len(known)
    allowed = []
    for gpu in gpus:
        if gpu["bus"] in known and spare >= 0:
            allowed.append(range(known[gpu["bus"]], known[gpu["bus"]] + spare + 1))
        else:
            allowed.append(range(gpus_per_node))
    memo = {}

    def best(k, start):
        """(matches, indices) placing gpus[k:] on indices >= start in order, or None."""
        if k == count:
            return (0, ())
        if (k, start) not in memo:
            found = None
            for index in range(start, gpus_per_node - (count - k) + 1):
                if index not in allowed[k]:
                    continue
                rest = best(k + 1, index + 1)
                if rest is None:
                    continue
                score = rest[0] + (1 if index in expected and expected[index] == gpus[k]["layout"] else 0)
                if found is None or score > found[0]:
                    found = (score, (index,) + rest[1])
            memo[(k, start)] = found
        return memo[(k, start)]

    answer = best(0, 0)
    return list(answer[1]) if answer else None


def expected_layout(pool, group: Optional[str] = None) -> Optional[Dict[int, Layout]]:
    """{GPU index: None (full GPU) or {profile: count}} the inventory wants on the pool's nodes (group None) or on
    the nodes of its MIG group `group`, or None when not fixed (dynamic MIG: the driver creates MIG devices on
    demand). A GPU with MIG on and no instances publishes nothing and is left out."""
    if pool.mig.mode == "dynamic":
        return None
    out = {}
    for idx in range(pool.gpu.per_node):
        layout = pool.layout_for(idx, group) if pool.mig.mode == "static" else None
        if pool.mig.mode == "static" and layout is not None:
            layout = {p: c for p, c in layout.items() if c}
            if not layout:
                continue
        out[idx] = layout
    return out


def describe_gpu(layout: Layout) -> str:
    """full GPU, or MIG <profile> x<count> + ..."""
    if layout is None:
        return "full GPU"
    return "MIG " + " + ".join("%s x%d" % (p, c) for p, c in sorted(layout.items()))


def layout_differences(expected: Dict[int, Layout], published: Dict[int, Layout]) -> List[str]:
    """Human lines for each GPU index whose published devices differ from the expected ones."""
    lines = []
    for idx in sorted(set(expected) | set(published)):
        want, have = expected.get(idx, "nothing"), published.get(idx, "nothing")
        if want == have:
            continue
        lines.append(
            "GPU %d: wants %s, publishes %s"
            % (
                idx,
                describe_gpu(want) if want != "nothing" else "nothing",
                describe_gpu(have) if have != "nothing" else "nothing",
            )
        )
    return lines
