# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What happens to each raw chart value (`dra_driver.values`) that gpupool also derives: ONE table.

Helm merges a values file over the chart's: maps merge key by key, a list or a scalar replaces. Raw values
merged that way over the values gpupool derives (plan/driver/values.py) could silently undo them - a
`kubeletPlugin.tolerations` list would drop every pool taint's toleration, `featureGates.DynamicMIG` would
slip past every gate check. So each derived key is one of:

* ``merged``: gpupool's value and the user's are combined - a list is extended (gpupool's entries first,
  the user's after, each entry once), a map merges key by key; for `featureGates` the union meets every
  gate rule `dra_driver.feature_gates` meets (model/gates.py);
* ``refused``: the model refuses the key with its path and the gpupool setting to use instead;
* ``yours``: the user's value replaces gpupool's default, reported in the module's ``user_overrides``.

The model checks (dra_driver_checks.py) and the merge (plan/driver/values.py) both read this table, and
docs/modules/dra-driver.md's table is generated from it (tools/gen_docs.py).

Chart facts: ../shared/reference/nvidia-dra-driver-published.md ("Chart facts"), nvidia-dra-mig-imex.md §1.3.
Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

MERGED = "merged"
REFUSED = "refused"
YOURS = "yours"


@dataclass(frozen=True)
class ValueRule:
    """One derived chart value: its dotted path, what happens to a raw value there, why, and (refused)
    the gpupool setting to use instead."""

    path: str
    rule: str
    why: str
    instead: str = ""
    # For a merged list: the chart's own default, kept when gpupool derives nothing there (a list value
    # replaces the chart's whole list).
    chart_default: Optional[Tuple[Mapping[str, str], ...]] = None


# values.yaml of v0.4.1 and main 95932046 (same in both lines): the controller's tolerations.
CHART_CONTROLLER_TOLERATIONS = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
)

VALUE_RULES: Tuple[ValueRule, ...] = (
    ValueRule(
        "featureGates",
        MERGED,
        "the union of the gates the pools need, `dra_driver.feature_gates` and these meets the same rules "
        "(gates a pool needs, gates the version lacks, exclusions, dynamic MIG beside static MIG); a gate set "
        "in both places with different values is refused",
    ),
    ValueRule(
        "kubeletPlugin.tolerations",
        MERGED,
        "extended, never replaced: gpupool's list (the chart's `nvidia.com/gpu` entry and one per pool taint) "
        "then yours, each entry once; a list that replaced it would leave every tainted pool node without the plugin",
    ),
    ValueRule(
        "controller.tolerations",
        MERGED,
        "extended: the chart's own list (control-plane, master, CriticalAddonsOnly) then yours, each entry "
        "once; a list that replaced it would keep the controller off the control-plane nodes",
        chart_default=CHART_CONTROLLER_TOLERATIONS,
    ),
    ValueRule(
        "kubeletPlugin.affinity.nodeAffinity",
        REFUSED,
        "gpupool places the plugin on the nodes of its pools (label gpupool.io/pool); a node affinity of "
        "yours would replace that and leave pool nodes without the plugin or run it on nodes gpupool does not own",
        "choose the nodes with gpupool_cluster.pools[].node_selector (podAffinity/podAntiAffinity are merged)",
    ),
    ValueRule(
        "kubeletPlugin.nodeSelector",
        REFUSED,
        "the plugin must run on every node of every pool; a node selector would leave each pool node that "
        "lacks its labels without the plugin, so without devices",
        "choose the nodes with gpupool_cluster.pools[].node_selector",
    ),
    ValueRule(
        "nvidiaDriverRoot",
        REFUSED,
        "it follows from the inventory or from the GPU Operator gpupool finds",
        "set gpupool_cluster.dra_driver.nvidia_driver_root",
    ),
    ValueRule(
        "gpuResourcesEnabledOverride",
        REFUSED,
        "gpupool always sets it to true: the chart refuses GPU resources without it (KEP 5004 guard)",
        "remove it",
    ),
    ValueRule(
        "resources.gpus.enabled",
        REFUSED,
        "gpupool always enables the GPU plugin: with it off no pool offers a device",
        "remove it (gpupool_cluster.dra_driver.enabled: false leaves the driver alone)",
    ),
    ValueRule(
        "resources.computeDomains.enabled",
        REFUSED,
        "on exactly when a present pool uses multi-node NVLink: on elsewhere the compute-domain plugin runs on "
        "every GPU node and crashes on old host drivers; off, the NVLink pools get no ComputeDomains",
        "set gpupool_cluster.pools[].nvlink.mode (compute_domain or host_imex)",
    ),
    ValueRule(
        "resources.computeDomains.imex.mode",
        REFUSED,
        "hostManaged exactly when a pool has nvlink.mode host_imex (gpupool then runs the host IMEX service)",
        "set gpupool_cluster.pools[].nvlink.mode: host_imex",
    ),
    ValueRule(
        "resources.computeDomains.imex.hostSocketPath",
        YOURS,
        "the host IMEX command socket: yours replaces the default, and must equal the imex role's socket_path",
    ),
    ValueRule(
        "nameOverride",
        REFUSED,
        "gpupool sets it for a release still named nvidia-dra-driver-gpu (pre-0.4), and finds the driver's "
        "objects by that name",
        "set gpupool_cluster.dra_driver.release_name",
    ),
)
RULES: Dict[str, ValueRule] = {r.path: r for r in VALUE_RULES}


def get_path(values: Any, path: str, default: Any = None) -> Any:
    """The value at a dotted path of nested maps, `default` where a step is missing or not a map."""
    node = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


_ABSENT = object()


def replaced_prefixes(values: Mapping) -> List[Tuple[str, List[str]]]:
    """(dotted key, [rule paths below it]) for each key of `values` on the way to a rule's path whose value is
    not a map (null included): helm would replace (or, null, drop) everything gpupool derives below it."""
    out: Dict[str, List[str]] = {}
    for rule in VALUE_RULES:
        parts = rule.path.split(".")
        node: Any = values
        for i, part in enumerate(parts[:-1]):
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
            if node is _ABSENT:
                break
            if not isinstance(node, Mapping):
                out.setdefault(".".join(parts[: i + 1]), []).append(rule.path)
                break
    return sorted(out.items())


def merged_list(derived: List[Any], user: List[Any]) -> List[Any]:
    """`derived` then each entry of `user` not already there (entries compare whole)."""
    out: List[Any] = []
    for entry in list(derived) + list(user):
        if entry not in out:
            out.append(entry)
    return out


def rules_table_md() -> str:
    """The table of docs/modules/dra-driver.md (generated by tools/gen_docs.py)."""
    rows = ["| key under `dra_driver.values` | rule | why | instead |", "|---|---|---|---|"]
    for r in VALUE_RULES:
        rows.append("| `%s` | %s | %s | %s |" % (r.path, r.rule, r.why, r.instead.replace("|", "/") or "-"))
    return "\n".join(rows) + "\n"
