# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a change of a pool (demand.Change) serves its waiting claims (demand.ClaimNeed). Pure.

Not a scheduler run but a packing check (plan/advice/packing.py): each claim whole on one node, its
``matchAttribute`` constraints drawing from one group of GPUs (a PCIe root, a GPU). What a node has after a change:

- only usable nodes count (ready, not cordoned), and only nodes that publish devices;
- a node carrying the pool's layout (its supply row's "group" is None or missing) gets ``change.indices``: a changed
  GPU index offers every device of its new layout (the search changes only indices no device is allocated on);
- a node named in ``change.nodes`` gets that per-index layout (it joins a MIG group): an index whose layout differs
  from what the node carries now offers its new layout's devices;
- every other GPU keeps what is free on it now (allocated devices stay allocated);
- ``change.added`` new nodes carry the pool's layout after ``change.indices``, grouped like an existing node that
  publishes all its GPUs (the same hardware), or each GPU alone when there is none.

Nodes that look the same - the same group, the same free devices, the same grouping of GPUs by attribute (values
renamed by first appearance, so two nodes' PCIe roots compare by shape, not by bus address) - are one class with a
multiplicity: 2,000 nodes cost their few shapes. A check sees only the units and attributes its claims ask about,
so nodes that differ elsewhere are one packing node, and an answer is remembered per (nodes after, claims).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import packing
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.demand import Change, ClaimNeed
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.layouts import Layout, units_of
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import unit_slices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

Free = Tuple[Tuple[str, int], ...]
Values = Tuple[Tuple[str, Hashable], ...]


def current_layouts(pool, group: Optional[str] = None) -> Dict[int, Layout]:
    """{GPU index: layout now} as the inventory declares it for the pool's nodes or a group's (None: whole GPU)."""
    static = pool.mig.mode == "static"
    return {i: pool.layout_for(i, group) if static else None for i in range(pool.gpu.per_node)}


class Evaluator:
    """Whether changes serve a pool's waiting claims; the pool's usable nodes folded into classes once."""

    def __init__(self, pool, supply: dict, claims: Sequence[ClaimNeed]) -> None:
        self.pool = pool
        self.per_node = pool.gpu.per_node
        self.claims: Tuple[ClaimNeed, ...] = tuple(claims)
        self.current = current_layouts(pool)
        self._layouts: Dict[Optional[str], Dict[int, Layout]] = {None: self.current}
        # class key (group, per-index free, per-index values) -> names of its nodes
        self.classes: Dict[Tuple[Optional[str], Tuple[Free, ...], Tuple[Values, ...]], List[str]] = {}
        self.of_node: Dict[str, Tuple[Optional[str], Tuple[Free, ...], Tuple[Values, ...]]] = {}
        template: Optional[dict] = None
        for row in supply["nodes"]:
            if not row["usable"] or not row["gpus"]:
                continue  # a node that publishes nothing gains nothing from a layout
            group = row.get("group")
            if group not in self._layouts:
                self._layouts[group] = current_layouts(pool, group)
            free = tuple(self._free(row["gpus"][i]["free"]) if i in row["gpus"] else () for i in range(self.per_node))
            key = (group, free, self._values(row))
            self.classes.setdefault(key, []).append(row["name"])
            self.of_node[row["name"]] = key
            if template is None and len(row["gpus"]) >= self.per_node:
                template = row
        # New nodes are grouped like an existing node (the same hardware), or each GPU alone when there is none.
        self.new_values = self._values(template) if template is not None else ((),) * self.per_node
        whole = float(unit_slices(pool, FULL_GPU))
        self.demand_gpus = sum(n.count * unit_slices(pool, n.unit) / whole for c in self.claims for n in c.needs)
        self.free_gpus = sum(g["free_fraction"] for r in supply["nodes"] if r["usable"] for g in r["gpus"].values())
        self.evaluations = 0
        self.cut_short = False
        self._answers: Dict[Any, packing.Answer] = {}
        self._demands: Dict[int, Tuple[Sequence[ClaimNeed], Any]] = {}
        self._nodes: Dict[Any, packing.Node] = {}

    @staticmethod
    def _free(free: Dict[str, int]) -> Free:
        return tuple(sorted((u, n) for u, n in free.items() if n > 0))

    def _values(self, row: dict) -> Tuple[Values, ...]:
        """Per GPU index, its attributes' values, each attribute's renamed by first appearance on the node."""
        seen: Dict[str, Dict[Hashable, int]] = {}
        out = []
        for i in range(self.per_node):
            attrs = (row["gpus"][i].get("attributes") or {}) if i in row["gpus"] else {}
            mine = []
            for a, value in sorted(attrs.items()):
                if value is not None:
                    names = seen.setdefault(a, {})
                    mine.append((a, names.setdefault(value, len(names))))
            out.append(tuple(mine))
        return tuple(out)

    def _node(
        self, free: Tuple[Free, ...], values: Tuple[Values, ...], units: frozenset, attributes: frozenset
    ) -> packing.Node:
        """A packing node holding only what the claims asked about (fewer distinct nodes, smaller keys); the same
        node recurs in most checks, so it is built once."""
        key = (free, values, units, attributes)
        node = self._nodes.get(key)
        if node is None:
            if len(self._nodes) > 100000:
                self._nodes.clear()
            node = self._nodes[key] = tuple(
                packing.Gpu(tuple(p for p in f if p[0] in units), tuple(p for p in v if p[0] in attributes))
                for f, v in zip(free, values)
            )
        return node

    def _after(self, free: Tuple[Free, ...], now: Dict[int, Layout], new: Dict[int, Layout]) -> Tuple[Free, ...]:
        """The free devices per index once the indices of `new` whose layout differs from `now` are re-partitioned."""
        return tuple(
            self._free(units_of(new[i])) if i in new and new[i] != now.get(i) else free[i] for i in range(self.per_node)
        )

    def _demand(self, wanted: Sequence[ClaimNeed]) -> Tuple[Any, frozenset, frozenset, packing.Prepared]:
        """(answer key, units, attributes, packing.prepare) of a claim list, worked out once per list object (the
        search asks about the same list many times; the object is held, so its id is not reused)."""
        got = self._demands.get(id(wanted))
        if got is not None and got[0] is wanted:
            return got[1]
        units = frozenset(n.unit for c in wanted for n in c.needs)
        attributes = frozenset(c.match[n.constraint] for c in wanted for n in c.needs if n.constraint is not None)
        key = frozenset(Counter((c.needs, c.match) for c in wanted).items())
        out = (key, units, attributes, packing.prepare(wanted))
        if len(self._demands) > 64:
            self._demands.clear()
        self._demands[id(wanted)] = (wanted, out)
        return out

    def nodes_after(self, change: Change, claims: Optional[Sequence[ClaimNeed]] = None) -> Counter:
        """{packing node: how many} once `change` is made, with what `claims` (None: all) ask about."""
        _key, units, attributes, _plan = self._demand(self.claims if claims is None else claims)
        return self._nodes_after(change, units, attributes)

    def _nodes_after(self, change: Change, units: frozenset, attributes: frozenset) -> Counter:
        out: Counter = Counter()
        named: Dict[Any, List[str]] = {}  # class -> its nodes that `change` names
        for name in change.nodes:
            key = self.of_node.get(name)
            if key is not None:
                named.setdefault(key, []).append(name)
        for key, names in self.classes.items():
            group, free, values = key
            mine = named.get(key, ())
            rest = len(names) - len(mine)
            if rest:
                after = self._after(free, self.current, change.indices) if group is None else free
                out[self._node(after, values, units, attributes)] += rest
            same: Dict[int, list] = {}  # named nodes of a class given the same layout object are one packing node
            for name in mine:
                same.setdefault(id(change.nodes[name]), [change.nodes[name], 0])[1] += 1
            for layout, many in same.values():
                after = self._after(free, self._layouts[group], layout)
                out[self._node(after, values, units, attributes)] += many
        if change.added:
            layout = [change.indices[i] if i in change.indices else self.current[i] for i in range(self.per_node)]
            new = tuple(self._free(units_of(lay)) for lay in layout)
            out[self._node(new, self.new_values, units, attributes)] += change.added
        return out

    def serves(self, change: Change, claims: Optional[Sequence[ClaimNeed]] = None) -> bool:
        """Whether, after `change`, the claims (None: all of this evaluator's; any of the pool's may be given)
        pack onto the pool's usable nodes, each whole on one node. A check cut short by its budget answers True and
        sets `cut_short`."""
        self.evaluations += 1
        wanted = self.claims if claims is None else claims
        demand, units, attributes, plan = self._demand(wanted)
        nodes = self._nodes_after(change, units, attributes)
        key = (frozenset(nodes.items()), demand)
        answer = self._answers.get(key)
        if answer is None:
            answer = packing.check(nodes, wanted, packing.STATE_BUDGET, plan)
            self._answers[key] = answer
        if answer.cut_short:
            self.cut_short = True
        return answer.fits

    def fewest_nodes(self, change: Change, most: int) -> Optional[int]:
        """The fewest nodes to add (0..most) with `change` (its own `added` ignored) for all the claims, or None."""
        if self.serves(change._replace(added=0)):
            return 0
        if most <= 0 or not self.serves(change._replace(added=most)):
            return None
        low, high = 0, most  # serves with high, not with low: more nodes never serve less
        while high - low > 1:
            mid = (low + high) // 2
            if self.serves(change._replace(added=mid)):
                high = mid
            else:
                low = mid
        return high

    def idle(self, added: int) -> float:
        """GPUs (in GPU fractions) left free once the waiting claims are placed."""
        return round(max(0.0, self.free_gpus + added * self.per_node - self.demand_gpus), 2)
