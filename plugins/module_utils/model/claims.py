# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names that one pool (or one entry) may hold alone: the first to claim a name holds it, a later claim is a clash.

Pool names, nodegroups, DeviceClasses, ComputeDomains, mig-parted configs, MIG groups, taints, tenants and their
templates are each checked this way; each check keeps its own message (the key path, the pool the name belongs to,
and the fix), and `Claims` keeps who claimed what first.
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, NamedTuple, Optional, Tuple


class Clash(NamedTuple):
    """A name claimed before: what its first claimant left for the message (its path, index, pool ...), and whether
    that claimant was the same owner (a pool of the same name: pool_name_problems says that once, not every check)."""

    holder: Any
    same_owner: bool


class Claims:
    """Who claimed each name first."""

    def __init__(self) -> None:
        self._first: Dict[Hashable, Tuple[Any, Any]] = {}

    def clash(self, key: Hashable, holder: Any, owner: Any = None) -> Optional[Clash]:
        """None when `key` is free (it is now `holder`'s, of `owner`); else the first claim of it."""
        if key not in self._first:
            self._first[key] = (holder, owner)
            return None
        first, first_owner = self._first[key]
        return Clash(first, owner is not None and first_owner == owner)
