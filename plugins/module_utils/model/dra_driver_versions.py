# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA DRA driver versions the collection supports: ONE table, one row per minor line.

Everything that differs between driver versions lives here and nowhere else: the feature gates each
line knows (with their defaults), the rules its ``ValidateFeatureGates()`` enforces at start-up, the
chart values keys that exist, the IMEX modes, and whether the webhook (and so cert-manager) is on by
default. The inventory model refuses, before helm runs, what the chosen version would reject; the
values derivation (plan/driver/values.py) reads the same rows.

Sources (facts only, read from kubernetes-sigs/dra-driver-nvidia-gpu; see also
../shared/reference/nvidia-dra-driver-published.md and nvidia-dra-mig-imex.md §1):

* 0.4.x: tag ``v0.4.1`` - ``pkg/featuregates/featuregates.go`` (gates, defaults, ValidateFeatureGates),
  ``deployments/helm/dra-driver-nvidia-gpu/values.yaml`` and ``templates/validation.yaml``.
* 0.5.x: ``main`` at ``95932046`` (2026-08-07, Chart.yaml ``0.5.0-dev``) for the same files plus
  ``pkg/imex/imex.go``, ``cmd/compute-domain-controller/main.go`` and the chart's
  ``validateIMEXConfig`` helper; the v0.5.0 release notes for the ``imex.mode=hostManaged`` value.
  No v0.5.x tag was in the mirror: a released 0.5 may differ in details that were not released yet.

Pure data and pure functions: no I/O, no third-party imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.name_lists import below, inline

CHART_NAME = "dra-driver-nvidia-gpu"
# Release (and object-name) prefix of installs made before 0.4 (calendar versions, chart
# nvidia-dra-driver-gpu): docs/upgrade.md upgrades them with nameOverride=nvidia-dra-driver-gpu
# so the objects keep their names.
LEGACY_NAME = "nvidia-dra-driver-gpu"
DEFAULT_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"

DRIVER_MANAGED = "driverManaged"
HOST_MANAGED = "hostManaged"
# The chart default of resources.computeDomains.imex.hostSocketPath (0.5): the host nvidia-imex
# command socket the kubelet plugin queries with `nvidia-imex-ctl -q --u=<path>`; the host IMEX
# config must set IMEX_CMD_UNIX_DOMAIN_PATH to the same path (site/content/docs/prerequisites.md).
DEFAULT_IMEX_SOCKET = "/etc/nvidia-imex/imex_ctrl.sock"
# cert-manager kinds the chart's webhook templates create when webhook.tls.mode=cert-manager.
CERT_MANAGER_CRDS = ("certificates.cert-manager.io", "issuers.cert-manager.io")


@dataclass(frozen=True)
class Gate:
    """One feature gate as the driver registers it."""

    name: str
    default: bool
    stage: str  # "Alpha" | "Beta"
    purpose: str = ""


# Kubernetes component-base logging gates: every driver binary registers them too
# (logsapi.AddFeatureGates), ContextualLogging forced on by the driver.
LOGGING_GATES = (
    Gate("ContextualLogging", True, "Beta", "Kubernetes contextual logging"),
    Gate("LoggingAlphaOptions", False, "Alpha", "Kubernetes alpha logging options"),
    Gate("LoggingBetaOptions", True, "Beta", "Kubernetes beta logging options"),
)

_GATES_0_4 = (
    Gate(
        "TimeSlicingSettings",
        False,
        "Alpha",
        "GpuConfig/MigDeviceConfig sharing.strategy TimeSlicing",
    ),
    Gate(
        "MPSSupport",
        False,
        "Alpha",
        "sharing.strategy MPS (a per-claim MPS control daemon)",
    ),
    Gate(
        "IMEXDaemonsWithDNSNames",
        True,
        "Beta",
        "IMEX daemons address peers by DNS name (driver >= 570.158.01)",
    ),
    Gate("PassthroughSupport", False, "Alpha", "vfio devices for VMs"),
    Gate("NVMLDeviceHealthCheck", False, "Alpha", "device health from NVML events"),
    Gate(
        "DynamicMIG",
        False,
        "Alpha",
        "MIG devices created at prepare time; destroys MIG devices it did not create",
    ),
    Gate(
        "ComputeDomainCliques",
        True,
        "Beta",
        "ComputeDomainClique objects instead of ComputeDomain.status.nodes",
    ),
    Gate(
        "CrashOnNVLinkFabricErrors",
        True,
        "Beta",
        "the CD plugin refuses to start unless the fabric is COMPLETED",
    ),
    Gate("DeviceMetadata", False, "Alpha", "device-metadata files in workloads"),
)
_GATES_0_5 = _GATES_0_4 + (
    Gate(
        "FabricManagerPartitioning",
        False,
        "Alpha",
        "Fabric Manager partitions for full GPUs / vfio",
    ),
    Gate(
        "HostManagedIMEXDaemon",
        False,
        "Alpha",
        "unlocks resources.computeDomains.imex.mode=hostManaged",
    ),
    Gate("DRAListTypeAttributes", False, "Alpha", "list-valued device attributes"),
    Gate(
        "ConsumableShares",
        False,
        "Alpha",
        "consumable capacity / multiple allocations per device",
    ),
)

# ValidateFeatureGates() (identical in v0.4.1 and main 95932046): the driver's binaries exit at start-up.
MUTUALLY_EXCLUSIVE = (
    ("DynamicMIG", "PassthroughSupport"),
    ("DynamicMIG", "NVMLDeviceHealthCheck"),
    ("DynamicMIG", "MPSSupport"),
    ("PassthroughSupport", "NVMLDeviceHealthCheck"),
)
REQUIRES = (
    ("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"),
    ("DeviceMetadata", "PassthroughSupport"),
)

# Top-level chart values (values.yaml) per line. Helm ignores a key the chart does not read, so a
# user value that only a newer chart knows would silently do nothing: the model refuses it.
_TOP_LEVEL_0_4 = frozenset(
    {
        "nvidiaDriverRoot",
        "nvidiaCDIHookPath",
        "altProcDevices",
        "nameOverride",
        "fullnameOverride",
        "namespaceOverride",
        "selectorLabelsOverride",
        "gpuResourcesEnabledOverride",
        "allowDefaultNamespace",
        "resourceApiVersion",
        "imagePullSecrets",
        "image",
        "serviceAccount",
        "resources",
        "featureGates",
        "logVerbosity",
        "webhook",
        "controller",
        "kubeletPlugin",
        "maskNvidiaDriverParams",
    }
)
_TOP_LEVEL_0_5 = _TOP_LEVEL_0_4 | {"consumableShares"}
# Keys under `resources` (dotted), where the lines differ most.
_RESOURCES_0_4 = frozenset({"gpus", "gpus.enabled", "computeDomains", "computeDomains.enabled"})
_RESOURCES_0_5 = _RESOURCES_0_4 | {
    "computeDomains.imex",
    "computeDomains.imex.mode",
    "computeDomains.imex.isolation",
    "computeDomains.imex.hostSocketPath",
}
# Deeper keys (dotted from the top, outside `resources`) that only some lines have: checked wherever
# they appear, so a 0.5-only key in a 0.4 values file is refused instead of being silently ignored.
_NESTED_0_4: frozenset = frozenset()
_NESTED_0_5 = frozenset({"kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled"})
# Values the chart's templates/validation.yaml FAILS on (both lines; not in values.yaml): why, and the fix.
CHART_REFUSED_VALUES = {
    "namespace": "the chart fails when a 'namespace' value is set; use gpupool_cluster.dra_driver.namespace instead",
    "nvidiaCtkPath": "the chart fails when nvidiaCtkPath is set (no longer supported: the driver ships its own "
    "nvidia-cdi-hook); remove it",
}


@dataclass(frozen=True)
class DriverLine:
    """What one minor line of the driver (and its chart) knows."""

    line: str
    checked_against: str
    gates: Tuple[Gate, ...]
    imex_modes: Tuple[str, ...]
    top_level_values: frozenset
    resources_values: frozenset
    webhook_enabled_by_default: bool
    nested_values: frozenset = frozenset()
    # Gates the controller and plugins force off in hostManaged mode (cmd/compute-domain-controller
    # main.go): they are meaningless there and their defaults would otherwise trip REQUIRES.
    host_managed_forces_off: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def gate_names(self) -> List[str]:
        return [g.name for g in self.gates + LOGGING_GATES]

    def gate(self, name: str) -> Optional[Gate]:
        for gate in self.gates + LOGGING_GATES:
            if gate.name == name:
                return gate
        return None

    @property
    def has_host_managed_imex(self) -> bool:
        return HOST_MANAGED in self.imex_modes


LINES: Dict[str, DriverLine] = {
    "0.4": DriverLine(
        line="0.4",
        checked_against="kubernetes-sigs/dra-driver-nvidia-gpu tag v0.4.1 (featuregates.go, chart values.yaml, "
        "templates/validation.yaml)",
        gates=_GATES_0_4,
        imex_modes=(),  # no imex values: the driver always runs its own IMEX daemons
        top_level_values=_TOP_LEVEL_0_4,
        resources_values=_RESOURCES_0_4,
        nested_values=_NESTED_0_4,
        webhook_enabled_by_default=False,
        notes=("no HostManagedIMEXDaemon gate: an unknown gate makes every driver container exit at flag parsing",),
    ),
    "0.5": DriverLine(
        line="0.5",
        checked_against="kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (0.5.0-dev: featuregates.go, "
        "pkg/imex, chart values.yaml and validateIMEXConfig) and the v0.5.0 release notes",
        gates=_GATES_0_5,
        imex_modes=(DRIVER_MANAGED, HOST_MANAGED),
        top_level_values=_TOP_LEVEL_0_5,
        resources_values=_RESOURCES_0_5,
        nested_values=_NESTED_0_5,
        webhook_enabled_by_default=False,
        host_managed_forces_off=("IMEXDaemonsWithDNSNames", "ComputeDomainCliques"),
        notes=(
            "imex.mode=hostManaged needs the HostManagedIMEXDaemon gate too (the chart fails without it); "
            "the gate alone changes nothing",
        ),
    ),
}

_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def parse_version(text: str) -> Tuple[int, int, int, str]:
    """(major, minor, patch, prerelease) of a chart version; ValueError with a sentence otherwise."""
    text = str(text).strip()
    if text[:1] in ("v", "V") and _VERSION.match(text[1:]):
        raise ValueError(
            "%r has a leading 'v': chart versions are plain SemVer (the image tag is the one with "
            "the v); use %r" % (text, text[1:])
        )
    match = _VERSION.match(text)
    if not match:
        raise ValueError("%r is not a chart version such as 0.5.1" % text)
    return (
        int(match.group(1)),
        int(match.group(2)),
        int(match.group(3)),
        match.group(4) or "",
    )


def supported_lines() -> List[str]:
    return sorted(LINES, key=lambda k: tuple(int(p) for p in k.split(".")))


def line_for(version: str) -> DriverLine:
    """The table row of a chart version; ValueError naming the supported lines otherwise."""
    major, minor, _patch, _pre = parse_version(version)
    key = "%d.%d" % (major, minor)
    if key not in LINES:
        older = (major, minor) < (0, 4) or major >= 25
        hint = (
            "calendar versions (25.x) predate the 0.4 rename; upgrade to 0.4 or later (docs/upgrade.md of the driver)"
            if older
            else "its gates and values are not in plugins/module_utils/model/dra_driver_versions.py yet"
        )
        raise ValueError(
            "chart version %s is not supported: supported lines are %s; %s"
            % (version, ", ".join(k + ".x" for k in supported_lines()), hint)
        )
    return LINES[key]


def default_gates(line: DriverLine) -> Dict[str, bool]:
    return {g.name: g.default for g in line.gates + LOGGING_GATES}


def unknown_gates(line: DriverLine, gates: Mapping[str, bool]) -> List[str]:
    """Gate names the line's driver does not register (sorted): each would stop every container."""
    known = set(line.gate_names)
    return sorted(name for name in gates if name not in known)


def effective_gates(line: DriverLine, gates: Mapping[str, bool], imex_mode: str = DRIVER_MANAGED) -> Dict[str, bool]:
    """The gate values the driver ends up with: its defaults, the given ones, then what
    hostManaged mode forces off. Unknown names are kept (they are a problem of their own)."""
    out = default_gates(line)
    out.update({str(k): bool(v) for k, v in gates.items()})
    if imex_mode == HOST_MANAGED:
        for name in line.host_managed_forces_off:
            out[name] = False
    return out


def _given(name: str, gates: Mapping[str, bool]) -> str:
    return "%s=%s" % (name, "true" if gates.get(name) else "false") if name in gates else "%s (default)" % name


def gate_problems(line: DriverLine, gates: Mapping[str, bool], imex_mode: str = DRIVER_MANAGED) -> List[str]:
    """Sentences for every gate setting the driver of `line` would refuse at start-up, each naming
    the gates: unknown names first, then ValidateFeatureGates()'s rules on the effective values."""
    problems = []
    unknown = unknown_gates(line, gates)
    if unknown:
        newer = [n for n in unknown if any(n in other.gate_names for other in LINES.values())]
        problems.append(
            "feature gate(s) %s unknown to DRA driver %s.x: every driver container would exit at flag parsing%s"
            % (
                ", ".join(unknown),
                line.line,
                "; %s exist(s) only in another driver line (%s)"
                % (
                    ", ".join(newer),
                    ", ".join(
                        sorted(k + ".x" for k, other in LINES.items() if any(n in other.gate_names for n in newer))
                    ),
                )
                if newer
                else "; known gates: %s%s"
                % (inline(unknown[0], line.gate_names), below("known gates", unknown[0], line.gate_names)),
            )
        )
    eff = effective_gates(line, gates, imex_mode)
    for a, b in MUTUALLY_EXCLUSIVE:
        if eff.get(a) and eff.get(b):
            problems.append(
                "feature gates %s and %s are mutually exclusive (the driver's ValidateFeatureGates "
                "refuses to start); turn one off" % (_given(a, gates), _given(b, gates))
            )
    for a, b in REQUIRES:
        if eff.get(a) and not eff.get(b):
            problems.append(
                "feature gate %s requires %s, which is off; enable %s or set %s=false" % (_given(a, gates), b, b, a)
            )
    return problems


def imex_mode_problems(line: DriverLine, mode: str, gates: Mapping[str, bool]) -> List[str]:
    """Why `mode` (driverManaged | hostManaged) cannot be used with `line` and these gates."""
    if mode == DRIVER_MANAGED:
        return []
    if mode != HOST_MANAGED:
        return ["unknown IMEX mode %r: use %s or %s" % (mode, DRIVER_MANAGED, HOST_MANAGED)]
    if not line.has_host_managed_imex:
        lines_with = sorted(k + ".x" for k, other in LINES.items() if other.has_host_managed_imex)
        return [
            "host-managed IMEX needs DRA driver %s: %s.x has no resources.computeDomains.imex.mode and no "
            "HostManagedIMEXDaemon gate (its driver always runs its own IMEX daemons)"
            % (" or ".join(lines_with), line.line)
        ]
    if gates.get("HostManagedIMEXDaemon") is False:
        return ["imex.mode=hostManaged requires feature gate HostManagedIMEXDaemon, which is set to false"]
    return []


def unknown_values(line: DriverLine, values: Mapping) -> List[str]:
    """Dotted keys of user chart values the line's chart does not have (checked at the top level, under
    `resources`, and at the deeper keys only some lines have): helm would silently ignore them."""
    out = []
    nested_elsewhere = frozenset().union(*(other.nested_values for other in LINES.values())) - line.nested_values
    for key, value in values.items():
        if key not in line.top_level_values:
            out.append(str(key))
        elif key == "resources" and isinstance(value, Mapping):
            out += ["resources." + p for p in _paths(value) if p not in line.resources_values]
        elif isinstance(value, Mapping):
            out += [p for p in _paths(value, str(key) + ".") if p in nested_elsewhere]
    return sorted(out)


def _paths(tree: Mapping, prefix: str = "") -> List[str]:
    out = []
    for key, value in tree.items():
        path = prefix + str(key)
        out.append(path)
        if isinstance(value, Mapping):
            out += _paths(value, path + ".")
    return out


def needs_cert_manager(values: Mapping, line: Optional[DriverLine] = None) -> bool:
    """Whether these chart values render cert-manager Issuer/Certificate objects (webhook on with
    tls.mode cert-manager, the chart default): without cert-manager's CRDs the install fails with
    'no matches for kind "Issuer"'."""
    webhook = values.get("webhook") if isinstance(values.get("webhook"), Mapping) else {}
    enabled = webhook.get("enabled", line.webhook_enabled_by_default if line else False)
    tls = webhook.get("tls") if isinstance(webhook.get("tls"), Mapping) else {}
    return bool(enabled) and tls.get("mode", "cert-manager") == "cert-manager"
