# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reasons' ledger: the free units of each pool, GPU by GPU, reserved claim by claim. Pure.

Claims are taken oldest first and what a claim could get is reserved for it, so ten claims for eight free GPUs read
as eight that can be allocated now and two that wait (reasons.py says why each waits). A claim's requests are
reserved together on ONE node, as the scheduler allocates a claim on one node, and under one ``matchAttribute``
value when the request has one (supply.groups).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import groups


class Ledger:
    """Free units per pool and unit, GPU by GPU, reserved claim by claim; all requests of one claim on one node."""

    def __init__(self, supplies: Dict[str, dict]) -> None:
        self.supplies = supplies
        self._free: Dict[Tuple[str, str], Dict[Tuple[str, int], int]] = {}
        self._per_node: Dict[Tuple[str, str], Dict[str, int]] = {}
        self._failed: Dict[Tuple[str, str, Optional[str]], int] = {}
        self._rows: Dict[str, Dict[str, dict]] = {}
        self._groups: Dict[Tuple[str, str, Optional[str]], List[List[int]]] = {}
        self._last: list = []  # what the last take reserved of its first want (can_take gives it back)

    def free(self, pool: str, unit: str) -> Dict[Tuple[str, int], int]:
        """{(usable node, GPU index): units of `unit` not yet reserved}."""
        key = (pool, unit)
        if key not in self._free:
            out, per_node = {}, {}
            for row in self.supplies[pool]["nodes"]:
                if row["usable"]:
                    for index, gpu in row["gpus"].items():
                        if gpu["free"].get(unit):
                            out[(row["name"], index)] = gpu["free"][unit]
                            per_node[row["name"]] = per_node.get(row["name"], 0) + gpu["free"][unit]
            self._free[key] = out
            self._per_node[key] = per_node
        return self._free[key]

    def _node_groups(self, pool: str, node: str, attribute: Optional[str]) -> List[List[int]]:
        key = (pool, node, attribute)
        if key not in self._groups:
            if pool not in self._rows:
                self._rows[pool] = {r["name"]: r for r in self.supplies[pool]["nodes"]}
            self._groups[key] = list(groups(self._rows[pool][node], attribute).values())
        return self._groups[key]

    def _plan(self, free: Dict[Tuple[str, int], int], count: int, node: str, indices: List[int]) -> Optional[list]:
        """[((node, index), n)] reserving `count` of the `free` units on `node` among GPUs `indices`, or None."""
        have = [((node, i), free.get((node, i), 0)) for i in indices]
        if sum(n for _gpu, n in have) < count:
            return None
        uses, left = [], count
        for gpu, n in have:
            use = min(n, left)
            if use:
                uses.append((gpu, use))
            left -= use
        return uses

    def _place(self, wants: list, node: str, attribute: Optional[str]) -> Optional[list]:
        """Reserve every want on `node`, all under ONE value of `attribute` (None: anywhere on the node):
        [(want, uses)], or None (nothing reserved)."""
        pool = wants[0][0]
        for want in wants:
            self.free(want[0], want[1])  # fills _per_node for it
            if self._per_node[(want[0], want[1])].get(node, 0) < want[2]:
                return None
        for indices in self._node_groups(pool, node, attribute):
            done = []
            for want in wants:
                uses = self._plan(self.free(want[0], want[1]), want[2], node, indices)
                if uses is None:
                    break
                if len(wants) > 1:  # the next want sees what this one took
                    self._apply(want[0], want[1], uses)
                done.append((want, uses))
            if len(done) == len(wants):
                if len(wants) == 1:
                    self._apply(wants[0][0], wants[0][1], done[0][1])
                return done
            if len(wants) > 1:
                self._undo(done)
        return None

    def _undo(self, done: list) -> None:
        for want, uses in done:
            self._apply(want[0], want[1], uses, -1)

    def _apply(self, pool: str, unit: str, uses: list, sign: int = 1) -> None:
        free, per_node = self.free(pool, unit), self._per_node[(pool, unit)]
        for gpu, n in uses:
            free[gpu] = free.get(gpu, 0) - sign * n
            per_node[gpu[0]] = per_node.get(gpu[0], 0) - sign * n
            if free[gpu] <= 0:
                del free[gpu]

    def take(self, pool: str, unit: str, count: int, attribute: Optional[str]) -> Optional[str]:
        """Reserve `count` units on one node (under one `attribute` value); the node, or None."""
        return self.take_all([(pool, unit, count, attribute)])

    def take_all(self, wants: List[Tuple[str, str, int, Optional[str]]]) -> Optional[str]:
        """Reserve every (pool, unit, count, attribute) of one claim on ONE node (the scheduler allocates a claim's
        devices on one node); the node, or None when no node has them all free."""
        if not wants:
            return None
        pool, unit, count, attribute = wants[0]
        free = self.free(pool, unit)
        if not free:
            return None
        if len(wants) == 1 and count == 1:
            gpu = next(iter(free))
            self._last = [(gpu, 1)]
            self._apply(pool, unit, self._last)
            return gpu[0]
        memo = (pool, unit, attribute)
        if len(wants) == 1 and count >= self._failed.get(memo, count + 1):
            return None  # units only ever go: a count that failed fails again
        per_node = self._per_node[(pool, unit)]
        # the wants under one matchAttribute share ONE value of it (the scheduler's constraint over the claim's
        # requests), the others go anywhere on the node; the constrained ones first, the tighter choice
        if len(wants) == 1:
            parts = [((pool, attribute), wants)]
        else:
            under: Dict[Tuple[str, Optional[str]], list] = {}
            for want in wants:
                under.setdefault((want[0], want[3]), []).append(want)
            parts = sorted(under.items(), key=lambda kv: kv[0][1] is None)
        for node in sorted(n for n, have in per_node.items() if have >= count):
            done: list = []
            for (_pool, attr), mine in parts:
                placed = self._place(mine, node, attr)
                if placed is None:
                    break
                done += placed
            if len(done) == len(wants):
                self._last = next(uses for want, uses in done if want is wants[0])
                return node
            self._undo(done)  # not all on this node: give back what this try reserved
        if len(wants) == 1:
            self._failed[memo] = count
        return None

    def can_take(self, pool: str, unit: str, count: int, attribute: Optional[str]) -> Optional[str]:
        """The node where take would reserve, reserving nothing."""
        node = self.take(pool, unit, count, attribute)
        if node is not None:
            self._apply(pool, unit, self._last, -1)
        return node

    def left(self, pool: str, unit: str) -> int:
        """Units of `unit` free on the pool's usable nodes and not reserved."""
        return sum(self.free(pool, unit).values())
