# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reasons of the cordon ledger: what a gpupool cordon records in gpupool.io/cordon-reason.

A reason is short and machine-readable, ``<kind>:<arg>[:<arg>]``, so that every later run can check whether it
still holds (plan/nodes/cordon_ledger.py):

  mig-layout:<pool>:<config>   mig_layout cordoned the node for a wave of the pool's static MIG layout
  shrink:<nodegroup>:<count>   the nodegroup step drains the node to shrink its nodegroup to <count> nodes
  delete:<nodegroup>           the nodegroup step drains the node to delete its nodegroup
  orphan:<pool>                node_pool holds the node of a pool that no present pool claims any more

Pool and nodegroup names are DNS labels and config names label values: none holds a colon.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

MIG_LAYOUT, SHRINK, DELETE, ORPHAN = "mig-layout", "shrink", "delete", "orphan"

# how many arguments each kind carries
ARITY = {MIG_LAYOUT: 2, SHRINK: 2, DELETE: 1, ORPHAN: 1}


class Reason(NamedTuple):
    kind: str
    args: Tuple[str, ...]

    def __str__(self) -> str:
        return ":".join((self.kind,) + self.args)


def mig_layout(pool: str, config: str) -> str:
    return str(Reason(MIG_LAYOUT, (pool, config)))


def shrink(nodegroup: str, count: int) -> str:
    return str(Reason(SHRINK, (nodegroup, str(int(count)))))


def delete(nodegroup: str) -> str:
    return str(Reason(DELETE, (nodegroup,)))


def orphan(pool: str) -> str:
    return str(Reason(ORPHAN, (pool,)))


def parse(text: Optional[str]) -> Optional[Reason]:
    """The reason a cordon recorded, or None for one that is missing or not understood (another version's)."""
    if not text:
        return None
    kind, _colon, rest = text.strip().partition(":")
    args = tuple(rest.split(":")) if rest else ()
    if ARITY.get(kind) != len(args) or not all(args):
        return None
    if kind == SHRINK and not args[1].isdigit():
        return None
    return Reason(kind, args)
