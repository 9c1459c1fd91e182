# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model's entry points: inventory data -> validated `Cluster` (or `Problems`), the normalized dump, pool selection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Dict, List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline
from ansible_collections.gpupool.core.plugins.module_utils.model.bounds import size_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.checks import empty_cluster_problems, semantic_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.control_chars import control_character_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.describe import got
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_policy import drain_policy, policy_dict
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import effective_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.inventory import Cluster, Pool
from ansible_collections.gpupool.core.plugins.module_utils.model.lookalikes import lookalike_of, scan
from ansible_collections.gpupool.core.plugins.module_utils.model.names import nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import inventory_path
from ansible_collections.gpupool.core.plugins.module_utils.model.shape_errors import EXAMPLES, pydantic_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import ValidationError
from ansible_collections.gpupool.core.plugins.module_utils.model.tenant_checks import tenant_problems


def load_cluster(data, root: str = "gpupool_cluster") -> Cluster:
    """Validate inventory data; return the normalized Cluster or raise Problems (every problem found)."""
    if not isinstance(data, Mapping):
        raise Problems(
            [(root, "must be a mapping with name and pools, e.g. `%s`; %s" % (EXAMPLES["gpupool_cluster"], got(data)))]
        )
    data = dict(data)

    def path_of(at, loc):
        return inventory_path(at, loc, data)

    # An inventory over the size bounds is refused before the model is built: validating 10,000 pools one by
    # one would take minutes, at every step.
    too_big = size_problems(data, root, path_of)
    if too_big:
        raise Problems(too_big)
    notes = scan(data, root, path_of)
    controls, parents = control_character_problems(data, root, path_of)
    # a character refused on its own already says what the note would
    notes = {path: note for path, note in notes.items() if path not in parents}
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as err:
        problems = pydantic_problems(err, root, data) + _problems_of_valid_pools(data, root)
        raise Problems(_with_notes(_control_first(controls, parents, problems), notes))
    problems = semantic_problems(cluster, root)
    if problems or controls:
        raise Problems(_with_notes(_control_first(controls, parents, problems), notes))
    return cluster


def _control_first(
    controls: List[Tuple[str, str]], parents: Dict[str, str], problems: List[Tuple[str, str]]
) -> List[Tuple[str, str]]:
    """The control-character problems, then the others, less those reported at the same path or at the mapping or
    list that holds the character ("'gpu-t4\\n' is not a DNS label" says less than "ends with a newline")."""
    shadowed = set(parents) | set(parents.values())
    return controls + [(path, message) for path, message in problems if path not in shadowed]


def _problems_of_valid_pools(data: dict, root: str) -> List[Tuple[str, str]]:
    """Semantic problems of the pools that are shape-valid, when only some pools are not.

    One pool's typo must not hide what is wrong with the others (a clash between two valid pools, a layout
    that does not fit): each pool is validated on its own, at its own index. When a setting outside the pools
    is broken, the cross-pool checks have nothing sound to stand on and are left for the next run. So are the
    tenants' checks: their templates name pools, and a template of a pool that failed validation would be
    reported as naming an unknown pool."""
    pools = data.get("pools")
    if not isinstance(pools, list):
        return []
    try:
        base = Cluster.model_validate(dict(data, pools=[]))
    except ValidationError:
        return []
    valid = []
    for index, raw in enumerate(pools):
        try:
            pool = Pool.model_validate(raw)
        except ValidationError:
            continue
        pool._index = index
        valid.append(pool)
    return semantic_problems(
        base.model_copy(update={"pools": valid}), root, skip=(empty_cluster_problems, tenant_problems)
    )


def _with_notes(problems: List[Tuple[str, str]], notes: Dict[str, str]) -> List[Tuple[str, str]]:
    """Problems with the look-alike character notes of their path (or of a key below it) appended."""
    out = [[path, message] for path, message in problems]
    for note_path, note in notes.items():
        best = None
        for entry in out:
            path = entry[0]
            if note_path == path or note_path.startswith(path + ".") or note_path.startswith(path + "["):
                if best is None or len(path) > len(best[0]):
                    best = entry
        if best is not None and note not in best[1]:
            # after the sentence, before a list of names on the lines below it (mig/name_lists.py)
            sentence, newline, rest = best[1].partition("\n")
            best[1] = sentence + (" " if sentence.endswith((".", "?")) else ". ") + note + newline + rest
    return [(entry[0], entry[1]) for entry in out]


def dump_cluster(cluster: Cluster) -> dict:
    """Normalized plain data (defaults filled in) for playbooks."""
    data = cluster.model_dump(mode="json")
    for pool, raw in zip(cluster.pools, data["pools"]):
        raw["taints_effective"] = pool.all_taints
        raw["mig"]["config_name"] = pool.mig_config_name
        raw["sharing"]["strategy"] = pool.sharing.strategy
        gpu = pool.catalog_gpu
        raw["gpu"]["catalog_key"] = gpu.key if gpu else None
        raw["nodegroup_name"] = nodegroup_name(pool)
        raw["drain_effective"] = policy_dict(drain_policy(cluster, pool))
    data["dra_driver"]["feature_gates_effective"] = effective_gates(cluster)
    return data


def select_pools(cluster, names=None, root="gpupool_cluster"):
    """The pools in scope (present and absent), in inventory order; unknown names are an error."""
    if not names:
        return list(cluster.pools)
    known = [p.name for p in cluster.pools]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise Problems(
            [
                (
                    "pools",
                    "pool(s) %s not in %s.pools%s; known pools: %s%s"
                    % (
                        ", ".join(repr(n) for n in unknown),
                        root,
                        lookalike_of(unknown[0], known),
                        inline(unknown[0], known),
                        below("known pools", unknown[0], known),
                    ),
                )
            ]
        )
    return [p for p in cluster.pools if p.name in names]


def pool_index(cluster, pool):
    return [p.name for p in cluster.pools].index(pool.name)
