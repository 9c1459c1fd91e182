# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG manager's ConfigMap as gpupool.core.mig_layout changes it: what it holds for gpupool, which of
gpupool's configs to prune, the bodies of the read-modify-write, the --diff entry and the messages when it
cannot be written. Pure; k8s/mig_rollout.py sends the requests.

Why read-modify-write and not server-side apply: the MIG manager reads ONE string (data["config.yaml"]);
server-side apply merges fields, not the YAML inside a string, so applying gpupool's configs would replace the
whole document and take over (or conflict on) a field others write too. gpupool parses the document, changes
only its own mig-configs entries and writes it back with metadata.resourceVersion, so the API server refuses
the write (409) if anyone changed the ConfigMap since it was read; the runner then reads and merges again.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import CONFIG_KEY
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CONFIG_LABEL,
    CONFIGS_ANNOTATION,
    MANAGED_BY,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    ours_view,
    owned_names,
    read_document,
    write_document,
)

# How often a write refused for a changed resourceVersion is read, merged and sent again.
ATTEMPTS = 5


def where(namespace: str, name: str) -> str:
    """How messages name the ConfigMap: 'ConfigMap gpu-operator/gpupool-mig-parted-config'."""
    return "ConfigMap %s/%s" % (namespace, name)


def read(live: Optional[dict], where: str) -> Tuple[dict, List[str]]:
    """(the mig-parted document, the config names gpupool wrote) of the ConfigMap as read (None: there is none)."""
    data = (live or {}).get("data") or {}
    doc = read_document(data.get(CONFIG_KEY), where)
    owned = owned_names(((live or {}).get("metadata") or {}).get("annotations"))
    return doc, owned


def prune_choice(
    owned: Iterable[str], desired: Dict[str, Any], nodes: Iterable[dict], prune: bool
) -> Tuple[List[str], List[str]]:
    """(configs to remove, configs kept) among gpupool's own that no pool wants any more.

    prune: the prune option, and no pools limit (a limited run cannot tell what the other pools want). A
    config a node is still labelled with is kept (removing it would leave the node's MIG manager without
    its config); the runner warns about each (kept_warning)."""
    if not prune:
        return [], []
    in_use = {(n["metadata"].get("labels") or {}).get(CONFIG_LABEL) for n in nodes}
    unwanted = [n for n in owned if n not in desired]
    return [n for n in unwanted if n not in in_use], [n for n in unwanted if n in in_use]


def kept_warning(name: str) -> str:
    return (
        "MIG config %s is no longer wanted by any pool but nodes are still labelled with it; "
        "it stays in the ConfigMap until they are switched to another config" % name
    )


def needs_write(live: Optional[dict], doc: dict, owned: Sequence[str], new_doc: dict, names: Sequence[str]) -> bool:
    """Whether the merged document or the list of gpupool's names differs from what was read (or there is
    no ConfigMap yet). Compared parsed, so someone reformatting the YAML causes no write."""
    return live is None or new_doc != doc or sorted(owned) != sorted(names)


def diff_entry(namespace: str, name: str, doc: dict, new_doc: dict, changes: Dict[str, str]) -> dict:
    """The --diff entry of a ConfigMap write: gpupool's configs that change, before and after."""
    shown = sorted(n for n, c in changes.items() if c != "unchanged")
    header = "%s: mig-configs written by gpupool" % where(namespace, name)
    return {
        "before": {"mig-configs": ours_view(doc, shown)},
        "after": {"mig-configs": ours_view(new_doc, shown)},
        "before_header": header,
        "after_header": header,
    }


def create_body(namespace: str, name: str, doc: dict, names: Sequence[str]) -> dict:
    """The ConfigMap to create (POST) when there is none."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(MANAGED_BY),
            "annotations": _names_annotation(names),
        },
        "data": {CONFIG_KEY: write_document(doc)},
    }


def update_patch(live: dict, doc: dict, names: Sequence[str]) -> dict:
    """The merge patch of an existing ConfigMap, with the resourceVersion it was read at as precondition."""
    return {
        "metadata": {"resourceVersion": live["metadata"]["resourceVersion"], "annotations": _names_annotation(names)},
        "data": {CONFIG_KEY: write_document(doc)},
    }


def _names_annotation(names: Sequence[str]) -> Dict[str, str]:
    return {CONFIGS_ANNOTATION: ",".join(names)}


def kept_changing(namespace: str, name: str, attempts: int = ATTEMPTS) -> Tuple[str, str]:
    """(message, hint) when every write was refused because the ConfigMap changed meanwhile."""
    return (
        "%s kept changing while gpupool merged its MIG configs (%d attempts)" % (where(namespace, name), attempts),
        "rerun; if it persists, find the tool rewriting it",
    )


def namespace_missing(namespace: str, name: str) -> Tuple[str, str]:
    """(message, hint) when the ConfigMap cannot be created because its namespace does not exist."""
    return (
        "namespace %s does not exist, so the MIG manager ConfigMap %s cannot be created" % (namespace, name),
        "install the GPU Operator (its MIG manager reads the ConfigMap) or set "
        "gpupool_cluster.mig_manager.namespace to where it runs",
    )
