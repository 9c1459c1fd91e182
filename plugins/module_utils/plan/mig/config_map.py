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

Whose configs: several inventories (gpupool_cluster entries, each with its owner, Cluster.owner_id) may share one
Kubernetes cluster and so one ConfigMap. Each owner records the config names IT wrote in its own annotation,
mig-configs.gpupool.io/<owner> (model/names.py). One annotation per owner rather than one JSON annotation mapping
owner -> names, because then an owner's write sets and removes only its own annotation key: it never carries (and
so can never overwrite or drop, even from a stale read) another owner's record, the API server's managedFields
track each owner's record as a field of its own, and a merge patch removes an owner's record by setting that one
key to null. A single JSON string would be one field every owner rewrites whole.

The rule (`merge`), for this owner, with `desired` its configs:

* A desired name another owner recorded whose entries in the document differ from this owner's: refused before
  any write, naming both owners and the fix (`clash_problem`). Same entries: both owners record it.
* This owner's record: what it writes. A recorded name no longer desired (prune on, no pools limit) is removed
  from the document when no other owner recorded it and no node is labelled with it; still labelled: kept in
  the document and the record, with a warning (as before owners); another owner recorded it: only this
  owner's record lets go of it, the entries stay.
* The shared annotation gpupool.io/mig-configs of gpupool before owners (migration): a name in it that this
  owner desires is adopted (moved into this owner's record, said once in a warning). A name in it that another
  owner already recorded, or that is in this owner's record, is dropped from it (it has an owner now). Any
  other name is what gpupool wrote before owners, possibly for another inventory: with prune, it is removed
  from the document when no node is labelled with it, as gpupool did before owners (so one inventory on its
  cluster behaves as before), and kept with a warning while a node is; an inventory whose config this removed
  writes it again on its next run, before any node of it is labelled with it. The shared annotation goes away
  once empty.

So an owner's run never removes an entry another owner recorded, never changes one's entries, and never writes
another owner's record.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import CONFIG_KEY
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import (
    CONFIG_LABEL,
    CONFIGS_ANNOTATION,
    MANAGED_BY,
    OWNER_CONFIGS_PREFIX,
    owner_configs_annotation,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.rollout import (
    merge_document,
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
        "MIG config %s is no longer wanted by any pool of this inventory but nodes are still labelled with it;\n"
        "it stays in the ConfigMap until they are switched to another config" % name
    )


class Records(NamedTuple):
    """Who recorded which of gpupool's configs in the ConfigMap's annotations, as one owner sees them."""

    owner: str  # this inventory's owner (gpupool_cluster.owner_id)
    mine: Tuple[str, ...]  # mig-configs.gpupool.io/<owner>
    legacy: Tuple[str, ...]  # gpupool.io/mig-configs, written before owners
    others: Mapping[str, Tuple[str, ...]]  # {other owner: the names it recorded}

    def owners_of(self, name: str) -> List[str]:
        """The other owners that recorded `name`."""
        return sorted(o for o, names in self.others.items() if name in names)

    def annotations(self) -> Dict[str, Optional[str]]:
        """The annotations this owner writes: its own record and the shared one of before owners (None: remove)."""
        return {
            owner_configs_annotation(self.owner): ",".join(sorted(set(self.mine))) or None,
            CONFIGS_ANNOTATION: ",".join(sorted(set(self.legacy))) or None,
        }

    def written(self) -> List[Tuple[str, str]]:
        """What those annotations hold, comparable (sorted, empty ones left out)."""
        return sorted((k, v) for k, v in self.annotations().items() if v)


def records(live: Optional[dict], owner: str) -> Records:
    """The records of the ConfigMap as read (None: there is none) for `owner`."""
    annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    mine = owner_configs_annotation(owner)
    others = {
        key[len(OWNER_CONFIGS_PREFIX) :]: tuple(owned_names({CONFIGS_ANNOTATION: text}))
        for key, text in annotations.items()
        if key.startswith(OWNER_CONFIGS_PREFIX) and key != mine
    }
    return Records(
        owner,
        tuple(owned_names({CONFIGS_ANNOTATION: annotations.get(mine)})),
        tuple(owned_names(annotations)),
        {o: names for o, names in others.items() if names},
    )


class Merged(NamedTuple):
    doc: dict  # the document to write
    records: Records  # the records to write
    changes: Dict[str, str]  # {config name: created|updated|unchanged|adopted|deleted}
    warnings: List[str]


def merge(
    doc: dict,
    desired: Dict[str, Any],
    before: Records,
    nodes: Iterable[dict],
    prune: bool,
    where: str = "the ConfigMap",
    paths: Optional[Mapping[str, str]] = None,
) -> Merged:
    """This owner's configs merged into the document, pruned and recorded as the module docstring's rule says.

    prune: the prune option, and no pools limit (a limited run cannot tell what the other pools want). paths:
    {config name: the inventory key that names it}, for the refusal. Raises Problems before anything is written
    when another owner recorded a desired name with other entries."""
    configs = doc.get("mig-configs") or {}
    problems = []
    for name in sorted(desired):
        theirs = before.owners_of(name)
        if theirs and name in configs and configs[name] != desired[name]:
            problems.append(clash_problem(name, theirs[0], before.owner, where, (paths or {}).get(name)))
    if problems:
        raise Problems(problems)
    nodes = list(nodes)
    in_use = {(n["metadata"].get("labels") or {}).get(CONFIG_LABEL) for n in nodes}
    others = {n for names in before.others.values() for n in names}
    mine = set(before.mine)
    adopted = sorted({n for n in before.legacy if n in desired and n not in mine})
    remove: List[str] = []
    kept: List[str] = []
    legacy: List[str] = []
    for name in sorted(set(before.legacy)):
        if name in desired or name in mine or name in others:
            continue  # adopted now, this owner's already, or another owner's: it has an owner
        if prune and name not in in_use:
            remove.append(name)
            continue
        if prune:
            kept.append(name)
        legacy.append(name)
    # Another owner's too: the entries stay, only this owner's record lets go of it.
    let_go = {n for n in mine - set(desired) if n in others} if prune else set()
    gone, still_used = prune_choice(sorted(mine - let_go), desired, nodes, prune)
    remove += gone
    kept += still_used
    new_doc, names, changes = merge_document(doc, desired, sorted(mine | set(adopted)), remove, where)
    for name in adopted:
        if changes.get(name) == "unchanged":
            changes[name] = "adopted"
    after = Records(before.owner, tuple(n for n in names if n not in let_go), tuple(legacy), before.others)
    warnings = [kept_warning(name) for name in sorted(kept)]
    if adopted:
        warnings.append(adopted_warning(adopted, before.owner))
    return Merged(new_doc, after, changes, warnings)


def clash_problem(name: str, theirs: str, ours: str, where: str, path: Optional[str] = None) -> Tuple[str, str]:
    """(path, message) when two owners want one config name with different entries."""
    return (
        path or where,
        "MIG config %r in %s was written by the gpupool inventory with owner %r with other entries than this\n"
        "inventory (owner %r) wants, so nothing was written. Fix: set this pool's mig.config_name to another\n"
        "name, or rename the pool so the default names (gpupool-<pool>) differ; if this inventory wrote it under\n"
        "another owner (a renamed cluster entry), set gpupool_cluster.owner: %s." % (name, where, theirs, ours, theirs),
    )


def adopted_warning(names: Sequence[str], owner: str) -> str:
    """Said once: the next run finds them in this owner's record. Two names a line (each at most 63 characters),
    so no line passes 200 characters."""
    lines = [
        "adopted %d MIG config(s) recorded before owners (annotation %s);" % (len(names), CONFIGS_ANNOTATION),
        "annotation %s records them now:" % owner_configs_annotation(owner),
    ]
    lines += ["  " + ", ".join(names[i : i + 2]) for i in range(0, len(names), 2)]
    return "\n".join(lines)


def needs_write(live: Optional[dict], doc: dict, owned: Sequence[Any], new_doc: dict, names: Sequence[Any]) -> bool:
    """Whether the merged document or gpupool's records (Records.written(), as read and as merged) differ from
    what was read (or there is no ConfigMap yet). Compared parsed, so someone reformatting the YAML causes no
    write."""
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


def create_body(namespace: str, name: str, doc: dict, names: Records) -> dict:
    """The ConfigMap to create (POST) when there is none."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(MANAGED_BY),
            "annotations": {k: v for k, v in names.annotations().items() if v},
        },
        "data": {CONFIG_KEY: write_document(doc)},
    }


def update_patch(live: dict, doc: dict, names: Records) -> dict:
    """The merge patch of an existing ConfigMap, with the resourceVersion it was read at as precondition; it
    sets (or, null, removes) only this owner's record and the shared one of before owners."""
    return {
        "metadata": {"resourceVersion": live["metadata"]["resourceVersion"], "annotations": names.annotations()},
        "data": {CONFIG_KEY: write_document(doc)},
    }


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
