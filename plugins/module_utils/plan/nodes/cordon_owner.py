# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who set a node's cordon last, from its managedFields: the only safe ground for lifting one.

gpupool's cordon annotations (gpupool.io/cordoned-by and the ledger's reason and run) say that gpupool cordoned the
node once; they do not say that the cordon there now is still gpupool's. A run killed mid-wave leaves them; a person
then runs `kubectl uncordon` and `kubectl cordon` for maintenance, and the annotations still name gpupool. The API
server records who last set `spec.unschedulable`: an Update (a patch) moves the ownership of each field it changes to
its field manager and takes it from every other manager (server-side apply's field management, kept for every
write). kubectl 1.37.1's `kubectl cordon` is recorded as field manager `kubectl` (tests/integration/test_cordon_ledger.py
reads it); gpupool patches with `gpupool` (model/names.py). Only gpupool's own name is relied on here.

A cordon is gpupool's to lift only when gpupool alone owns spec.unschedulable. No managedFields, no owner of the field,
or any other owner beside gpupool: not gpupool's (nothing is lifted on a guess).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpupool.core.plugins.module_utils.model.names import FIELD_MANAGER

Node = Dict[str, Any]


def unschedulable_managers(node: Node) -> List[str]:
    """The field managers whose managedFields entry owns spec.unschedulable (sorted, each once)."""
    managers = set()
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        spec = (entry.get("fieldsV1") or {}).get("f:spec")
        if isinstance(spec, dict) and "f:unschedulable" in spec:
            managers.add(entry.get("manager") or "an unnamed client")
    return sorted(managers)


def set_by_gpupool(node: Node, field_manager: str = FIELD_MANAGER) -> bool:
    """Whether gpupool (its field manager), and no one else, set the node's spec.unschedulable last."""
    return unschedulable_managers(node) == [field_manager]


def cordoned_by_whom(node: Node, field_manager: str = FIELD_MANAGER) -> str:
    """Who holds the cordon instead of gpupool, in words: the other field managers of spec.unschedulable."""
    others = [m for m in unschedulable_managers(node) if m != field_manager]
    return ", ".join(others) if others else "a client the API server did not record"


def persons_cordon_message(node_name: str, manager: str) -> str:
    """The warning for a cordon someone set after gpupool's: the node stays cordoned, gpupool's record goes."""
    return (
        "node %s: cordoned by %s after gpupool's cordon; left cordoned (gpupool's cordon record on it was removed, "
        "so the cordon is theirs to lift)" % (node_name, manager)
    )
