# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the advisor plans for, as typed data between the claims, the packing check and the search. Pure.

A waiting claim is allocated on ONE node (the NVIDIA driver's devices are node-local): every request of it is served
there. A ``matchAttribute`` constraint makes the devices of the requests it covers share one value of an attribute
(``resource.kubernetes.io/pcieRoot``: one PCIe root; ``pciBusID``: one GPU).

A change of a pool is a new layout for some GPU indices on the nodes that carry the pool's layout, a new per-index
layout for some named nodes (they join a MIG group: ``mig.groups``), and nodes added to the nodegroup.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import Layout


class Need(NamedTuple):
    """One request of a claim: `count` devices of `unit` (FULL_GPU or a MIG profile)."""

    unit: str
    count: int
    constraint: Optional[int] = None  # index into ClaimNeed.match: needs with the same one share its attribute's value


class ClaimNeed(NamedTuple):
    """A waiting claim: its needs, all on one node."""

    claim: str  # namespace/name
    needs: Tuple[Need, ...]
    match: Tuple[str, ...] = ()  # the attribute of each matchAttribute constraint

    @property
    def units(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for need in self.needs:
            out[need.unit] = out.get(need.unit, 0) + need.count
        return out


class Change(NamedTuple):
    """A change of one pool's MIG layouts and node count."""

    indices: Dict[
        int, Layout
    ]  # GPU index -> new layout on every node that carries the pool's own layout (and new nodes)
    nodes: Dict[str, Dict[int, Layout]]  # node name -> its new layout per GPU index (the node joins a MIG group)
    added: int = 0  # nodes added to the nodegroup, with the pool's layout after `indices`


NO_CHANGE = Change({}, {}, 0)
