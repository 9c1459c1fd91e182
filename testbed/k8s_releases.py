"""The Kubernetes releases the test bed runs (the compatibility matrix), and what each needs to serve DRA.

Facts, per release, from the reference kubernetes-dra-versions.md ("API versions served"), never from the
collection's code:

| release | resource.k8s.io served            | DRA                 | the flags a cluster needs for it                    |
|---------|-----------------------------------|---------------------|-----------------------------------------------------|
| 1.32    | v1beta1 (v1alpha3 left off here)  | beta, off by default| DynamicResourceAllocation gate + runtime-config v1beta1 |
| 1.33    | v1beta2, v1beta1                  | beta, off by default| the same, plus runtime-config v1beta2               |
| 1.34    | v1 (GA); the betas on request     | on                  | none                                                |
| 1.35    | v1; the betas on request          | on, gate locked on  | none                                                |
| 1.36    | v1; the betas on request          | on                  | none                                                |
| 1.37    | v1; the betas on request          | on                  | none (the base release: tools/kube/go.mod)          |

1.35 and 1.36 differ in the DRA gates that are not the API itself (k8s.io/kubernetes pkg/features/kube_features.go
of v1.35.4 and v1.36.3; dra-1.33-1.37-and-driver-0.5.md section 5):

| gate (KEP)                                 | 1.35             | 1.36                                         |
|--------------------------------------------|------------------|----------------------------------------------|
| DRAPartitionableDevices (4815)             | alpha, off       | beta, on                                     |
| DRAConsumableCapacity (5075)               | alpha, off       | beta, on                                     |
| DRADeviceTaints (5055)                     | alpha, off       | beta, on                                     |
| DRADeviceTaintRules (5055)                 | alpha, off       | beta, off (its API, resource.k8s.io/v1beta2, is off by default) |
| DRAExtendedResource (5004)                 | alpha, off       | beta, on                                     |
| DynamicResourceAllocation                  | GA, locked on    | GA, locked on                                |

A site on 1.35 runs them off and one on 1.36 on, as they come: the test bed sets none of them (so 1.35 drops
DeviceClass extendedResourceName, slice counters and device taints as a real 1.35 does). From 1.35 the server
refuses a ResourceSlice that holds both sharedCounters and devices (pkg/apis/resource/validation of v1.35.4: "only
one of `sharedCounters` or `devices` is allowed"); the DRA driver simulator publishes dynamic MIG's counters in a
slice of their own there, as the real driver does (testbed/dra_dynamic_mig.py). DeviceTaintRule is served as
resource.k8s.io/v1alpha3 on 1.35, v1beta2 on 1.36 and v1 on 1.37 (k8s.io/api v0.35.4, v0.36.3 and
v0.37.1 resource/*/register.go): on 1.35 and 1.36 only with the gate DRADeviceTaintRules and that --runtime-config switched
on, on 1.37 by default (the gate is GA there).

The old releases start the way a site that adopted DRA on them runs them: the DRA gate and the beta API
versions that release has, nothing else (no alpha gates), so what a release lacks - DeviceClass
extendedResourceName before 1.34, or the field dropped on 1.34 where DRAExtendedResource is alpha and off -
is met as a real cluster of that release answers. The base release keeps the test bed's long-standing setup:
every beta version it still has and every DRA gate it lists as off (testbed/controlplane.py).

Only kube-apiserver differs per release; etcd, kubectl and helm are the base release's (etcd 3.7 serves a 1.32
apiserver, kubernetes-dra-versions.md). Each extra release is built from the Go module proxy from a build
module generated from that release's go.mod (tools/kube-release-module.sh) into ~/.cache/gpupool/bin/<version>/.

    GPUPOOL_K8S_VERSION=1.32 pytest -m dra_api tests/integration   # one release for a session (or --k8s-version)
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

from testbed import binaries

# The DRA API versions the stand-ins know, newest first (their shapes: testbed/dra_api.py).
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
ENV_VAR = "GPUPOOL_K8S_VERSION"


@dataclass(frozen=True)
class Release:
    version: str  # the patch release built and run (v1.32.13)
    resource_versions: tuple  # resource.k8s.io versions this release serves as the test bed starts it, newest first
    feature_gates: dict = field(default_factory=dict)  # gates set on kube-apiserver (beyond the probed DRA gates)
    runtime_config: tuple = ()  # --runtime-config group/versions switched on; () for the base: see controlplane.py
    base: bool = False  # the release tools/kube/go.mod pins: probed DRA gates, every beta it serves
    # DeviceClass spec.extendedResourceName kept (DRAExtendedResource): absent before 1.34, alpha and off on 1.34
    # and 1.35, beta and on from 1.36
    extended_resource_name: bool = False

    @property
    def minor(self) -> str:
        return ".".join(self.version.lstrip("v").split(".")[:2])

    @property
    def resource_version(self) -> str:
        """The resource.k8s.io version a client of this release uses: the newest it serves."""
        return self.resource_versions[0]


def _base() -> Release:
    return Release(
        binaries.K8S_VERSION,
        RESOURCE_VERSIONS,
        base=True,
        extended_resource_name=True,  # GA by 1.37 (testbed/controlplane.py DRA_GATES)
    )


# Newest patch the Go module proxy lists for each minor (`go list -m -versions k8s.io/kubernetes`, 2026-11; 1.35 and
# 1.36 checked 2026-11-28: v1.35.4, v1.36.3).
_DRA_GATE = {"DynamicResourceAllocation": True}
RELEASES = {
    "1.32": Release("v1.32.13", ("v1beta1",), _DRA_GATE, ("resource.k8s.io/v1beta1",)),
    "1.33": Release(
        "v1.33.13", ("v1beta2", "v1beta1"), _DRA_GATE, ("resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2")
    ),
    "1.34": Release("v1.34.4", ("v1",)),
    "1.35": Release("v1.35.4", ("v1",)),
    "1.36": Release("v1.36.3", ("v1",), extended_resource_name=True),  # DRAExtendedResource beta and on from 1.36
}
_base_release = _base()
RELEASES[_base_release.minor] = _base_release
MATRIX = tuple(sorted(RELEASES, key=lambda m: tuple(int(p) for p in m.split("."))))
OLDEST = MATRIX[0]
BASE = _base_release.minor


def release(name: str | None = None) -> Release:
    """The release for a name: "1.32", "v1.32", "v1.32.13", "oldest", "base"; None/"" reads GPUPOOL_K8S_VERSION,
    unset means the base release."""
    name = (name if name is not None else os.environ.get(ENV_VAR, "")).strip()
    if name in ("", "base", "newest"):
        return RELEASES[BASE]
    if name == "oldest":
        return RELEASES[OLDEST]
    m = re.fullmatch(r"v?(\d+\.\d+)(\.\d+)?", name)
    if not m or m.group(1) not in RELEASES:
        raise ValueError(
            "Kubernetes release %r is not in the test bed's matrix (%s); set %s to one of them"
            % (name, ", ".join(MATRIX), ENV_VAR)
        )
    found = RELEASES[m.group(1)]
    if m.group(2) and "v" + name.lstrip("v") != found.version:
        raise ValueError("the test bed runs %s for %s, not %s" % (found.version, found.minor, name))
    return found


def main(argv: list[str]) -> int:
    """`python -m testbed.k8s_releases matrix|oldest|base`: release names for the Makefile, space separated."""
    what = argv[0] if argv else ""
    if what == "matrix":
        print(" ".join(MATRIX))
    elif what in ("oldest", "base"):
        print(OLDEST if what == "oldest" else BASE)
    else:
        print("usage: python -m testbed.k8s_releases matrix|oldest|base", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
