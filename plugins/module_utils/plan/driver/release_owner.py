# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who owns the DRA driver release, and whether another owner's release serves this inventory's pools (pure).

The NVIDIA DRA driver is one Helm release per cluster (one driver name, gpu.nvidia.com; one set of feature gates
for every node). Two inventories (two `gpupool_cluster.owner`s) on one cluster must not both converge it: each
would rewrite the other's gates, tolerations and driver root on every run. So the release has ONE owner:

* The owner is recorded with the release, as the Helm release label `gpupool.io/owner` (``helm upgrade
  --labels``, Helm 3.13+, the minimum the step already requires; Helm stores custom labels on the Secret that
  holds each revision and carries them over to the next revision of an upgrade). A label, not a chart value: the
  chart's values are the driver's configuration (the model refuses keys the real chart does not have), and a
  label is readable without reading the release's values.
* A release with this inventory's owner, or with no owner record, is converged as before; one with no record is
  adopted (the upgrade that records the owner is one of the step's reasons, so `--check` shows it). Why adopt
  rather than ask for a setting: a release without the label was installed by a gpupool from before owners (which
  converged it for its one inventory) or by hand under the name this inventory gives in
  `dra_driver.release_name`; both were taken over by every earlier run, and naming the release in the inventory
  is already the explicit decision. The same rule as the owner label on DeviceClasses and templates: adopted
  once, visibly (docs/concurrency.md).
* A release of another owner is never written, in check mode or not. Its values are compared with what this
  inventory's pools need (`missing`): when nothing is missing the step is ok (changed=false); otherwise it is
  refused (`refusal`) with each difference and the owner, before any write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model import dra_driver_versions as versions
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import derived_gates
from ansible_collections.gpupool.core.plugins.module_utils.model.names import OWNER_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import CHART_GPU_TOLERATION

MINE, FOREIGN, UNOWNED = "mine", "foreign", "unowned"
# The chart's defaults where a release's values lack a key (kubernetes-sigs/dra-driver-nvidia-gpu values.yaml,
# ../shared/reference/dra-1.33-1.37-and-driver-0.5.md 1.3). The step reads `helm get values --all`, which has
# them anyway; these keep the comparison right for values read without --all.
CHART_DRIVER_ROOT = "/"
CHART_TOLERATIONS = (CHART_GPU_TOLERATION,)
# Paths `missing` checks on their own; the user's other `dra_driver.values` are compared leaf by leaf.
CHECKED_PATHS = (
    "featureGates",
    "kubeletPlugin.tolerations",
    "kubeletPlugin.affinity",
    "nvidiaDriverRoot",
    "resources.gpus.enabled",
    "resources.computeDomains.enabled",
    "resources.computeDomains.imex",
    "gpuResourcesEnabledOverride",
)
# A DaemonSet pod is kept off a node only by NoSchedule and NoExecute taints (PreferNoSchedule is a preference).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def release_owner(labels: Mapping[str, str]) -> Optional[str]:
    """The owner recorded on a release revision (its Helm labels); None when there is none."""
    return (labels or {}).get(OWNER_LABEL) or None


def ownership(labels: Mapping[str, str], me: str) -> str:
    """MINE, FOREIGN or UNOWNED: how the release (its last revision's Helm labels) stands to owner `me`."""
    owner = release_owner(labels)
    if owner is None:
        return UNOWNED
    return MINE if owner == me else FOREIGN


def owner_labels(me: str) -> Dict[str, str]:
    """The Helm labels an install or upgrade records the owner with."""
    return {OWNER_LABEL: me}


def adopt_reason(me: str) -> str:
    """The upgrade reason of a release with no owner record."""
    return "no owner recorded (installed by hand or by a gpupool before owners): adopted by owner '%s'" % me


@dataclass(frozen=True)
class Need:
    """One thing this inventory's pools need that the release lacks: `what` is needed, `why` (which pools or
    which inventory key), what the release `has`."""

    what: str
    why: str
    has: str

    def sentence(self) -> str:
        return "%s for %s (the release has %s)" % (self.what, self.why, self.has)

    def as_dict(self) -> Dict[str, str]:
        return {"need": self.what, "for": self.why, "release_has": self.has}


@dataclass(frozen=True)
class DriverNeeds:
    """What this inventory's present pools need of the cluster's DRA driver release. Built by `driver_needs`
    from the validated cluster and the values this inventory would install (so the driver root detected next
    to a GPU Operator and the user's `dra_driver.values` count)."""

    chart: str
    version: str
    gates: Dict[str, bool] = field(default_factory=dict)
    gate_sources: Dict[str, str] = field(default_factory=dict)
    # (taint, pool names): every distinct taint of the present pools
    taints: Tuple[Tuple[Tuple[Tuple[str, str], ...], Tuple[str, ...]], ...] = ()
    compute_domains: Tuple[str, ...] = ()  # pools that need ComputeDomains (multi-node NVLink)
    imex: Mapping[str, Any] = field(default_factory=dict)  # resources.computeDomains.imex wanted ({}: default)
    driver_root: str = CHART_DRIVER_ROOT
    affinity: Any = None  # kubeletPlugin.affinity wanted
    user_values: Mapping[str, Any] = field(default_factory=dict)
    pools: Tuple[str, ...] = ()

    @property
    def anything(self) -> bool:
        return bool(self.pools)


def _get(tree: Any, path: str, default: Any = None) -> Any:
    for key in path.split("."):
        if not isinstance(tree, Mapping) or key not in tree:
            return default
        tree = tree[key]
    return tree


def driver_needs(cluster, desired: Mapping[str, Any], chart: str) -> DriverNeeds:
    """This inventory's needs: `cluster` the validated cluster, `desired` the values it would install
    (plan/driver/values.desired_values), `chart` the chart's name as Helm records it."""
    pools = list(cluster.present_pools)
    if not pools:
        return DriverNeeds(chart=chart, version=cluster.dra_driver.version)
    sources = {gate: ", ".join(where) for gate, where in derived_gates(cluster).items()}
    gates = {str(k): bool(v) for k, v in (desired.get("featureGates") or {}).items()}
    for gate in gates:
        if gate not in sources:
            sources[gate] = "dra_driver.feature_gates.%s" % gate
    taints: Dict[Tuple[Tuple[str, str], ...], List[str]] = {}
    for pool in pools:
        for taint in pool.all_taints:
            effect = taint.get("effect") or "NoSchedule"
            if effect not in BLOCKING_EFFECTS:
                continue
            key = (("key", taint["key"]), ("value", str(taint.get("value") or "")), ("effect", effect))
            taints.setdefault(key, []).append(pool.name)
    domains = tuple(p.name for p in pools if p.nvlink.mode in ("compute_domain", "host_imex"))
    imex = _get(desired, "resources.computeDomains.imex", {}) if domains else {}
    return DriverNeeds(
        chart=chart,
        version=cluster.dra_driver.version,
        gates=gates,
        gate_sources=sources,
        taints=tuple((k, tuple(v)) for k, v in sorted(taints.items())),
        compute_domains=domains,
        imex=dict(imex or {}),
        driver_root=str(desired.get("nvidiaDriverRoot") or CHART_DRIVER_ROOT),
        affinity=_get(desired, "kubeletPlugin.affinity"),
        user_values=dict(cluster.dra_driver.values or {}),
        pools=tuple(p.name for p in pools),
    )


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' Toleration.ToleratesTaint (k8s.io/api core/v1 toleration.go): an empty effect matches every
    effect, an empty key (with Exists) every key; Exists ignores the value, Equal (the default) compares it."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return "%s%s:%s" % (taint["key"], "=%s" % value if value else "", taint["effect"])


def _tolerations_text(tolerations: Sequence[Mapping[str, Any]]) -> str:
    if not tolerations:
        return "no tolerations"
    parts = []
    for t in tolerations:
        key = t.get("key") or "*"
        value = "=%s" % t.get("value") if (t.get("operator") or "Equal") == "Equal" and t.get("value") else ""
        parts.append("%s%s:%s" % (key, value, t.get("effect") or "*"))
    return "tolerations " + ", ".join(parts)


def _pools_text(pools: Sequence[str]) -> str:
    return "pool%s %s" % ("s" if len(pools) > 1 else "", ", ".join(pools))


def _on(value: Any) -> str:
    return "on" if value else "off"


def _leaves(tree: Mapping[str, Any], prefix: str = "") -> List[Tuple[str, Any]]:
    """(dotted path, value) of every leaf; lists and scalars are leaves (helm replaces lists whole)."""
    out: List[Tuple[str, Any]] = []
    for key in sorted(tree, key=str):
        path = "%s.%s" % (prefix, key) if prefix else str(key)
        value = tree[key]
        if isinstance(value, Mapping) and value:
            out.extend(_leaves(value, path))
        else:
            out.append((path, value))
    return out


def _same(a: Any, b: Any) -> bool:
    # what helm gives back went through JSON: 1 and 1.0 are one number; bools stay apart from numbers
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def _release_gates(values: Mapping[str, Any], version: str) -> Dict[str, bool]:
    """The gate values the release's driver runs with: its line's defaults, its featureGates, what hostManaged
    mode forces off. A version outside the table: its featureGates only (an unset gate counts as off)."""
    given = {str(k): bool(v) for k, v in (values.get("featureGates") or {}).items()}
    mode = _get(values, "resources.computeDomains.imex.mode") or versions.DRIVER_MANAGED
    try:
        line = versions.line_for(version)
    except ValueError:
        return given
    return versions.effective_gates(line, given, mode)


def missing(needs: DriverNeeds, values: Mapping[str, Any], chart: str, version: str) -> List[Need]:
    """What `needs` asks of the release that it lacks: `values` the release's (`helm get values --all`), `chart`
    and `version` its chart's. [] when the release serves this inventory's pools. Order: chart, gates,
    tolerations, ComputeDomains, IMEX, driver root, affinity, the user's other values."""
    if not needs.anything:
        return []
    values = values or {}
    out: List[Need] = []
    everyone = _pools_text(needs.pools)
    if chart != needs.chart or version != needs.version:
        out.append(
            Need(
                "chart %s %s" % (needs.chart, needs.version),
                "dra_driver.version" if chart == needs.chart else "dra_driver.chart",
                "%s %s" % (chart, version),
            )
        )
    if _get(values, "resources.gpus.enabled", True) is not True:
        out.append(Need("GPU resources on (resources.gpus.enabled)", everyone, "them off"))
    have = _release_gates(values, version)
    for gate in sorted(needs.gates):
        want = needs.gates[gate]
        if bool(have.get(gate, False)) != want:
            out.append(Need("gate %s %s" % (gate, _on(want)), needs.gate_sources.get(gate, gate), _on(not want)))
    tolerations = _get(values, "kubeletPlugin.tolerations")
    tolerations = list(CHART_TOLERATIONS) if tolerations is None else list(tolerations or [])
    for key, pools in needs.taints:
        taint = dict(key)
        if not any(isinstance(t, Mapping) and tolerates(t, taint) for t in tolerations):
            out.append(
                Need(
                    "a kubelet-plugin toleration of taint %s" % _taint_text(taint),
                    _pools_text(pools),
                    _tolerations_text([t for t in tolerations if isinstance(t, Mapping)]),
                )
            )
    if needs.compute_domains:
        pools = _pools_text(needs.compute_domains)
        if _get(values, "resources.computeDomains.enabled", True) is not True:
            out.append(Need("ComputeDomains on (resources.computeDomains.enabled)", pools, "them off"))
        want_mode = needs.imex.get("mode") or versions.DRIVER_MANAGED
        has_mode = _get(values, "resources.computeDomains.imex.mode") or versions.DRIVER_MANAGED
        if want_mode != has_mode:
            out.append(Need("IMEX mode %s" % want_mode, pools, "IMEX mode %s" % has_mode))
        elif want_mode == versions.HOST_MANAGED:
            want_socket = needs.imex.get("hostSocketPath") or versions.DEFAULT_IMEX_SOCKET
            has_socket = _get(values, "resources.computeDomains.imex.hostSocketPath") or versions.DEFAULT_IMEX_SOCKET
            if want_socket != has_socket:
                out.append(Need("IMEX host socket %s" % want_socket, pools, has_socket))
    root = str(values.get("nvidiaDriverRoot") or CHART_DRIVER_ROOT)
    if root != needs.driver_root:
        out.append(Need("nvidiaDriverRoot %s" % needs.driver_root, everyone, root))
    affinity = _get(values, "kubeletPlugin.affinity")
    if needs.affinity is not None and affinity != needs.affinity:
        out.append(
            Need(
                "the kubelet-plugin affinity %s" % ("gpupool sets (nodes with gpupool.io/pool)"),
                everyone,
                "another affinity, which may keep the plugin off these pools' nodes",
            )
        )
    for path, want in _leaves(needs.user_values):
        if any(path == p or path.startswith(p + ".") for p in CHECKED_PATHS):
            continue
        has = _get(values, path, _UNSET)
        if has is _UNSET or not _same(has, want):
            out.append(
                Need(
                    "value %s=%r" % (path, want),
                    "dra_driver.values.%s" % path,
                    "it unset" if has is _UNSET else "%r" % (has,),
                )
            )
    return out


_UNSET = object()


def refusal(owner: str, me: str, release: str, namespace: str, gaps: Sequence[Need]) -> str:
    """The refusal of a release another owner holds that lacks what this inventory's pools need."""
    return (
        "the DRA driver release %s (namespace %s) is owned by '%s'; it lacks what this inventory (owner '%s') "
        "needs: %s. gpupool never changes another owner's release: ask the inventory of owner '%s' to add it (its "
        "pools, dra_driver.feature_gates or dra_driver.values), or change this inventory so that it needs only "
        "what the release has. To hand the release over, that owner removes its record: kubectl -n %s label "
        "secret -l owner=helm,name=%s %s-"
        % (release, namespace, owner, me, "; ".join(g.sentence() for g in gaps), owner, namespace, release, OWNER_LABEL)
    )


def foreign_summary(owner: str, gaps: Sequence[Need]) -> Dict[str, Any]:
    """The step's `owner` result for another owner's release."""
    return {"owner": owner, "mine": False, "adopted": False, "serves": not gaps, "missing": [g.as_dict() for g in gaps]}


def own_summary(owner: str, adopted: bool) -> Dict[str, Any]:
    """The step's `owner` result for this inventory's release (or one it adopts / installs)."""
    return {"owner": owner, "mine": True, "adopted": adopted, "serves": True, "missing": []}
