"""What the real NVIDIA DRA driver's binaries accept at start-up and at prepare time (SIMULATOR table).

The DRA driver simulator (testbed/dra_simulator.py) uses this to fail the way the real driver does,
so a test can see a wrong gate set cost a real rollout. It is the simulator's OWN table, written from
the driver's public source (kubernetes-sigs/dra-driver-nvidia-gpu tag v0.4.1 and main 95932046 =
0.5.0-dev, reference nvidia-dra-driver-published.md "Feature gates") - never imported from the
collection, whose table (plugins/module_utils/model/dra_driver_versions.py) is what is under test.

Modelled:
- flag parsing: a FEATURE_GATES name the binary does not register -> the container exits
  (featuregate SetFromMap error), so the pod never becomes ready;
- ValidateFeatureGates(): mutually exclusive gates and gate requirements -> exit at start-up;
- 0.5's IMEX configuration (pkg/imex Config.Validate): hostManaged needs HostManagedIMEXDaemon,
  isolation must be "domain"; hostManaged forces IMEXDaemonsWithDNSNames/ComputeDomainCliques off;
- claim prepare (GpuConfig/MigDeviceConfig validation): sharing strategy TimeSlicing needs the
  TimeSlicingSettings gate, MPS needs MPSSupport, with the driver's error message.
Not modelled: every other flag, logging gates' effects, strict decoding of unknown config fields.
"""

from __future__ import annotations

import re

LOGGING = {"ContextualLogging": True, "LoggingAlphaOptions": False, "LoggingBetaOptions": True}
GATES_0_4 = {
    "TimeSlicingSettings": False,
    "MPSSupport": False,
    "IMEXDaemonsWithDNSNames": True,
    "PassthroughSupport": False,
    "NVMLDeviceHealthCheck": False,
    "DynamicMIG": False,
    "ComputeDomainCliques": True,
    "CrashOnNVLinkFabricErrors": True,
    "DeviceMetadata": False,
}
GATES_0_5 = dict(
    GATES_0_4,
    FabricManagerPartitioning=False,
    HostManagedIMEXDaemon=False,
    DRAListTypeAttributes=False,
    ConsumableShares=False,
)
EXCLUSIVE = (
    ("DynamicMIG", "PassthroughSupport"),
    ("DynamicMIG", "NVMLDeviceHealthCheck"),
    ("DynamicMIG", "MPSSupport"),
    ("PassthroughSupport", "NVMLDeviceHealthCheck"),
)
REQUIRES = (("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"), ("DeviceMetadata", "PassthroughSupport"))
SHARING_GATES = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}


def gates_of(version: str) -> dict:
    """Registered gates (with defaults) of a driver version such as "0.4.1" or "v0.5.1"."""
    match = re.match(r"^v?(\d+)\.(\d+)", version or "")
    minor = (int(match.group(1)), int(match.group(2))) if match else (0, 5)
    table = GATES_0_5 if minor >= (0, 5) else GATES_0_4
    return dict(table, **LOGGING)


def has_imex_modes(version: str) -> bool:
    return "HostManagedIMEXDaemon" in gates_of(version)


def startup_error(version: str, gates: dict, imex_mode: str = "", imex_isolation: str = "") -> str | None:
    """Why the driver's binaries of `version` exit at start-up with these settings, or None."""
    known = gates_of(version)
    unknown = sorted(set(gates) - set(known))
    if unknown:
        return "unrecognized feature gate: %s (flag parsing)" % ", ".join(unknown)
    eff = dict(known, **gates)
    for a, b in EXCLUSIVE:
        if eff[a] and eff[b]:
            return "feature gate validation failed: feature gate %s is currently mutually exclusive with %s" % (a, b)
    mode = imex_mode or "driverManaged"
    if has_imex_modes(version):
        if mode == "hostManaged":
            if not eff["HostManagedIMEXDaemon"]:
                return (
                    'imex configuration validation failed: imex.mode="hostManaged" requires the '
                    "HostManagedIMEXDaemon feature gate to be enabled"
                )
            eff["IMEXDaemonsWithDNSNames"] = eff["ComputeDomainCliques"] = False
        elif mode != "driverManaged":
            return "imex configuration validation failed: unknown imex.mode %r" % mode
        if imex_isolation not in ("", "domain"):
            return "imex configuration validation failed: imex.isolation=%r is not supported" % imex_isolation
    for a, b in REQUIRES:
        if eff[a] and not eff[b]:
            return "feature gate validation failed: feature gate %s requires %s to also be enabled" % (a, b)
    return None


def prepare_error(gates: dict, version: str, config: dict) -> str | None:
    """Why NodePrepareResources refuses an opaque GpuConfig/MigDeviceConfig, or None."""
    if config.get("kind") not in ("GpuConfig", "MigDeviceConfig"):
        return None
    strategy = ((config.get("sharing") or {}).get("strategy")) or ""
    gate = SHARING_GATES.get(strategy)
    if gate and not dict(gates_of(version), **gates).get(gate):
        return '"%s" is selected as the GPU sharing strategy, but the "%s" feature gate is not enabled' % (
            strategy,
            gate,
        )
    return None
