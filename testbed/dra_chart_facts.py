"""What NVIDIA's real DRA driver chart decides at install time, per driver line (TEST BED facts table).

The test bed's OWN table, read from NVIDIA's chart (``deployments/helm/dra-driver-nvidia-gpu`` of
kubernetes-sigs/dra-driver-nvidia-gpu) and written down here in our own words - never imported from the
collection, whose table (plugins/module_utils/model/dra_driver_versions.py) is what tests hold against it:

- 0.4.x: tag ``v0.4.1``, commit 764900e7833798a1528bd52a2af3e1b2d5f7a616 (Chart.yaml version 0.4.1);
- 0.5.x: ``main`` at 95932046683719c43b6a0dd9613c2e5aad5d6703 (2026-08-07, Chart.yaml 0.5.0-dev). No
  0.5 tag was in the mirror: a released 0.5 may differ in what was not merged by then.

See also ../shared/reference/nvidia-dra-driver-published.md ("Chart facts") and nvidia-dra-mig-imex.md
§1.3 (values), §1.8 (gates). The chart has NO values.schema.json in either line: helm accepts any key and
a key the templates never read does nothing. What refuses a values file is (1) Chart.yaml's kubeVersion,
(2) the ``fail`` guards of templates/validation.yaml and, on 0.5, the ``validateIMEXConfig`` helper of
templates/_helpers.tpl (included by kubeletplugin.yaml and controller.yaml when computeDomains is enabled),
and (3) after the install, the driver's binaries at start-up (unknown gate, ValidateFeatureGates; the
test bed's table for those is testbed/dra_driver_rules.py, reused here for the gates per line).

Modelled here, each fact with the file it was read from:
- ``VALUE_PATHS`` / ``OPAQUE`` / ``TEMPLATE_ONLY``: which values exist per line (values.yaml and the
  templates' ``.Values`` reads); ``unread_values`` lists the keys of a values file a line's chart has not;
- ``GUARDS`` and ``refusals``: every install-time refusal, with the sentence the chart prints;
- ``PLUGIN_*``: where the kubelet plugin runs and what it tolerates by default (a list value replaces it);
- ``GATED_CONTAINERS`` / ``IMEX_ENV``: which containers get FEATURE_GATES and the IMEX settings.
Not modelled: everything that does not decide whether a values file installs or where the plugin runs
(metrics, leader election, network policies, RBAC, the ValidatingAdmissionPolicy, probes).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Mapping

from testbed import dra_driver_rules

REPO = "kubernetes-sigs/dra-driver-nvidia-gpu"
CHART_DIR = "deployments/helm/dra-driver-nvidia-gpu"


@dataclass(frozen=True)
class Source:
    ref: str
    commit: str
    chart_version: str


SOURCES = {
    "0.4": Source("v0.4.1", "764900e7833798a1528bd52a2af3e1b2d5f7a616", "0.4.1"),
    "0.5": Source("main", "95932046683719c43b6a0dd9613c2e5aad5d6703", "0.5.0-dev"),
}
LINES = tuple(SOURCES)

# Chart.yaml (both lines): helm refuses a cluster older than this before rendering anything.
KUBE_VERSION = ">=1.32.0-0"
KUBE_VERSION_MIN = (1, 32)

# ---- which values exist (values.yaml of v0.4.1; 0.5 = 0.4 + ADDED_0_5) ------------------------------------
# Scalar leaves and the maps leading to them. A path in OPAQUE holds free-form content (labels, Kubernetes
# objects such as tolerations/affinity/resources, lists): anything below it is the user's.
_LEAVES_0_4 = (
    "nvidiaDriverRoot",
    "nvidiaCDIHookPath",
    "altProcDevices",
    "nameOverride",
    "fullnameOverride",
    "namespaceOverride",
    "gpuResourcesEnabledOverride",
    "allowDefaultNamespace",
    "resourceApiVersion",
    "image.repository",
    "image.pullPolicy",
    "image.tag",
    "serviceAccount.create",
    "serviceAccount.name",
    "resources.gpus.enabled",
    "resources.computeDomains.enabled",
    "logVerbosity",
    "webhook.enabled",
    "webhook.replicas",
    "webhook.servicePort",
    "webhook.containerPort",
    "webhook.priorityClassName",
    "webhook.serviceAccount.create",
    "webhook.serviceAccount.name",
    "webhook.failurePolicy",
    "webhook.tls.mode",
    "webhook.tls.certManager.issuerType",
    "webhook.tls.certManager.issuerName",
    "webhook.tls.secret.name",
    "webhook.tls.secret.caBundle",
    "controller.replicas",
    "controller.leaderElection.enabled",
    "controller.leaderElection.leaseDuration",
    "controller.leaderElection.renewDeadline",
    "controller.leaderElection.retryPeriod",
    "controller.metrics.enabled",
    "controller.metrics.httpEndpoint",
    "controller.metrics.metricsPath",
    "controller.metrics.profilePath",
    "controller.priorityClassName",
    "controller.networkPolicy.enabled",
    "kubeletPlugin.metrics.enabled",
    "kubeletPlugin.metrics.gpuHttpEndpoint",
    "kubeletPlugin.metrics.computeDomainHttpEndpoint",
    "kubeletPlugin.metrics.metricsPath",
    "kubeletPlugin.priorityClassName",
    "kubeletPlugin.kubeletRegistrarDirectoryPath",
    "kubeletPlugin.kubeletPluginsDirectoryPath",
    "kubeletPlugin.containers.computeDomains.healthcheckPort",
    "kubeletPlugin.containers.gpus.healthcheckPort",
    "kubeletPlugin.networkPolicy.enabled",
)
_OPAQUE_0_4 = (
    "selectorLabelsOverride",
    "imagePullSecrets",
    "serviceAccount.annotations",
    "featureGates",  # its keys are gate names: checked against the driver's gates, not here
    "webhook.strategy",
    "webhook.podAnnotations",
    "webhook.podSecurityContext",
    "webhook.nodeSelector",
    "webhook.tolerations",
    "webhook.affinity",
    "webhook.containers.webhook.securityContext",
    "webhook.containers.webhook.resources",
    "webhook.tls.certManager.dnsNames",
    "controller.podAnnotations",
    "controller.podSecurityContext",
    "controller.nodeSelector",
    "controller.tolerations",
    "controller.affinity",
    "controller.containers.computeDomain.securityContext",
    "controller.containers.computeDomain.env",
    "controller.containers.computeDomain.resources",
    "kubeletPlugin.updateStrategy",
    "kubeletPlugin.podAnnotations",
    "kubeletPlugin.podSecurityContext",
    "kubeletPlugin.nodeSelector",
    "kubeletPlugin.tolerations",
    "kubeletPlugin.affinity",
    "kubeletPlugin.containers.init.securityContext",
    "kubeletPlugin.containers.init.resources",
    "kubeletPlugin.containers.computeDomains.env",
    "kubeletPlugin.containers.computeDomains.securityContext",
    "kubeletPlugin.containers.computeDomains.resources",
    "kubeletPlugin.containers.gpus.env",
    "kubeletPlugin.containers.gpus.securityContext",
    "kubeletPlugin.containers.gpus.resources",
)
# main 95932046 values.yaml adds these (the imex block, consumable shares, the clique label switch).
ADDED_0_5 = (
    "consumableShares",
    "resources.computeDomains.imex.mode",
    "resources.computeDomains.imex.isolation",
    "resources.computeDomains.imex.hostSocketPath",
    "kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled",
)
# Read by the templates but absent from values.yaml (both lines): kubeletplugin.yaml renders
# maskNvidiaDriverParams into MASK_NVIDIA_DRIVER_PARAMS; validation.yaml fails on namespace and
# nvidiaCtkPath; webhook-serviceaccount.yaml reads webhook.serviceAccount.annotations.
TEMPLATE_ONLY = ("maskNvidiaDriverParams", "namespace", "nvidiaCtkPath")
# Of those, the values whose mere presence fails the install (validation.yaml: namespace-value, nvidia-ctk-path).
REFUSED_VALUES = ("namespace", "nvidiaCtkPath")
TEMPLATE_ONLY_OPAQUE = ("webhook.serviceAccount.annotations",)


def _with_parents(paths) -> frozenset:
    out = set()
    for path in paths:
        parts = path.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(out)


VALUE_PATHS = {
    "0.4": _with_parents(_LEAVES_0_4 + _OPAQUE_0_4),
    "0.5": _with_parents(_LEAVES_0_4 + _OPAQUE_0_4 + ADDED_0_5),
}
OPAQUE = {"0.4": frozenset(_OPAQUE_0_4), "0.5": frozenset(_OPAQUE_0_4)}

# Defaults of the values that decide an install or where the plugin runs (values.yaml of each line).
PLUGIN_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# kubeletPlugin.affinity: required node affinity, ANY of these label terms (v0.4.1 and main alike).
PLUGIN_NODE_LABEL_TERMS = (
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    ("nvidia.com/gpu.present", "true"),
)
_DEFAULTS_0_4 = {
    "gpuResourcesEnabledOverride": False,
    "allowDefaultNamespace": False,
    "namespaceOverride": "",
    "nameOverride": "",
    "resourceApiVersion": "",
    "resources.gpus.enabled": True,
    "resources.computeDomains.enabled": True,
    "featureGates": {},
    "webhook.enabled": False,
    "webhook.tls.mode": "cert-manager",
    "webhook.tls.certManager.issuerType": "selfsigned",
    "webhook.tls.certManager.issuerName": "",
    "webhook.tls.certManager.dnsNames": [],
    "webhook.tls.secret.name": "",
    "webhook.tls.secret.caBundle": "",
    "kubeletPlugin.nodeSelector": {},
    "kubeletPlugin.tolerations": [PLUGIN_GPU_TOLERATION],
    # where the controller may run (values.yaml, both lines): a list value replaces all three
    "controller.tolerations": [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
    ],
    "kubeletPlugin.affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    for key, value in PLUGIN_NODE_LABEL_TERMS
                ]
            }
        }
    },
    "kubeletPlugin.updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
}
DEFAULT_IMEX_SOCKET = "/etc/nvidia-imex/imex_ctrl.sock"
DEFAULTS = {
    "0.4": _DEFAULTS_0_4,
    "0.5": dict(
        _DEFAULTS_0_4,
        **{
            "resources.computeDomains.imex.mode": "driverManaged",
            "resources.computeDomains.imex.isolation": "domain",
            "resources.computeDomains.imex.hostSocketPath": DEFAULT_IMEX_SOCKET,
            "consumableShares": "",
            "kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled": False,
        },
    ),
}

# ---- objects and containers (templates/kubeletplugin.yaml, controller.yaml, webhook-deployment.yaml) -----
PLUGIN_SUFFIX = "-kubelet-plugin"  # DaemonSet <name>-kubelet-plugin, name = nameOverride or the chart name
CONTROLLER_SUFFIX = "-controller"
WEBHOOK_SUFFIX = "-webhook"
# (object kind, name suffix, container) -> the value that switches the container on. FEATURE_GATES
# ("K=V," per gate, map order = sorted keys) is on each of them when featureGates is not empty; the
# kubelet plugin's init container never gets it.
GATED_CONTAINERS = (
    ("DaemonSet", PLUGIN_SUFFIX, "compute-domains", "resources.computeDomains.enabled"),
    ("DaemonSet", PLUGIN_SUFFIX, "gpus", "resources.gpus.enabled"),
    ("Deployment", CONTROLLER_SUFFIX, "compute-domain", "resources.computeDomains.enabled"),
    ("Deployment", WEBHOOK_SUFFIX, "webhook", "webhook.enabled"),
)
# 0.5 only: env of the IMEX settings, per container (empty on 0.4: no such values).
IMEX_ENV = {
    "0.4": {},
    "0.5": {
        "compute-domains": ("IMEX_MODE", "IMEX_ISOLATION", "IMEX_HOST_SOCKET_PATH"),
        "compute-domain": ("IMEX_MODE", "IMEX_ISOLATION"),
    },
}
# 0.5 (deviceclass-compute-domain-daemon.yaml): no compute-domain-daemon.nvidia.com with imex.mode=hostManaged.
DAEMON_CLASS = "compute-domain-daemon.nvidia.com"


def gates(line: str) -> dict:
    """The gates the line's driver registers, with defaults (the test bed's driver table)."""
    return dra_driver_rules.gates_of(SOURCES[line].chart_version)


# ---- guards -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Guard:
    id: str
    lines: tuple
    where: str  # the file of the real chart that holds it
    message: str  # what helm prints (the chart's own words), enough to recognise the guard
    note: str = ""


# helm renders the templates deepest path first, then in REVERSE name order, and stops at the first error:
# the webhook-*.yaml templates run before validation.yaml and dereference webhook.tls.mode,
# .certManager.dnsNames and .secret.name. A null tls / certManager / secret map is therefore refused with
# that nil-pointer template error, never with validation.yaml's sentence (checked on v0.4.1 and main).
_NIL = "nil pointer evaluating interface {}"
_SHADOWED = "validation.yaml's sentence is never reached: a webhook template fails on the nil map first"


_V = "templates/validation.yaml"
_IMEX = "templates/_helpers.tpl validateIMEXConfig (via kubeletplugin.yaml, controller.yaml)"
GUARDS = (
    Guard("kube-version", LINES, "Chart.yaml kubeVersion", "chart requires kubeVersion: " + KUBE_VERSION),
    Guard(
        "namespace-value",
        LINES,
        _V,
        "Setting an explicit 'namespace' in values.yaml or via --set on the command line is no longer supported.",
    ),
    Guard("default-namespace", LINES, _V, "Running in the 'default' namespace is not recommended."),
    Guard(
        "gpus-without-override",
        LINES,
        _V,
        "we will not allow this default to take effect until KEP 5004 has reached GA in upstream Kubernetes.",
    ),
    Guard("nvidia-ctk-path", LINES, _V, "Setting a user-defined nvidiaCtkPath is no longer supported."),
    Guard("webhook-tls-missing", LINES, "templates/webhook-deployment.yaml (before validation.yaml)", _NIL, _SHADOWED),
    Guard("webhook-tls-mode-missing", LINES, _V, "Webhook TLS mode is required when webhook is enabled."),
    Guard("webhook-tls-mode-invalid", LINES, _V, "Invalid webhook TLS mode: "),
    Guard(
        "cert-manager-missing", LINES, "templates/webhook-cert-secret.yaml (before validation.yaml)", _NIL, _SHADOWED
    ),
    Guard("issuer-type-missing", LINES, _V, "Cert-manager issuer type is required when using cert-manager mode."),
    Guard("issuer-type-invalid", LINES, _V, "Invalid cert-manager issuer type: "),
    Guard(
        "issuer-name-missing", LINES, _V, "Cert-manager issuer name is required when issuer type is not 'selfsigned'."
    ),
    Guard("secret-missing", LINES, "templates/webhook-deployment.yaml (before validation.yaml)", _NIL, _SHADOWED),
    Guard("secret-name-missing", LINES, _V, "Secret name is required when using secret mode."),
    Guard("no-resource-api", LINES, _V, "No supported resource.k8s.io API version found in the cluster."),
    Guard(
        "imex-host-managed-without-gate",
        ("0.5",),
        _IMEX,
        "resources.computeDomains.imex.mode=hostManaged requires featureGates.HostManagedIMEXDaemon=true",
    ),
    Guard("imex-mode-unknown", ("0.5",), _IMEX, "unknown resources.computeDomains.imex.mode "),
    Guard(
        "imex-isolation-channel",
        ("0.5",),
        _IMEX,
        "resources.computeDomains.imex.isolation=channel is not supported yet",
    ),
    Guard("imex-isolation-unknown", ("0.5",), _IMEX, "unknown resources.computeDomains.imex.isolation "),
)
GUARD = {g.id: g for g in GUARDS}
RESOURCE_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")


def line_of(version: str) -> str:
    """ "0.4" or "0.5" for a chart version (0.5 also for anything newer: the newest line read)."""
    match = re.match(r"^v?(\d+)\.(\d+)", str(version))
    if not match:
        raise ValueError("%r is not a chart version" % version)
    return "0.4" if (int(match.group(1)), int(match.group(2))) < (0, 5) else "0.5"


# ---- helm's view of a values file ---------------------------------------------------------------------
def _tree(flat: Mapping) -> dict:
    out: dict = {}
    for path, value in flat.items():
        node = out
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = copy.deepcopy(value)
    return out


def coalesce(defaults: Mapping, user: Mapping) -> dict:
    """helm's merge of a values file over the chart's: maps merge key by key, anything else replaces,
    and a null removes the chart's key."""
    out = copy.deepcopy(dict(defaults))
    for key, value in user.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def effective_values(line: str, user: Mapping) -> dict:
    """The modelled defaults of `line` with the user's values over them."""
    return coalesce(_tree(DEFAULTS[line]), user or {})


def _get(values: Mapping, path: str, default=None):
    node = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _semver_at_least(text: str, minimum: tuple) -> bool:
    match = re.match(r"^v?(\d+)\.(\d+)", str(text))
    return bool(match) and (int(match.group(1)), int(match.group(2))) >= minimum


def refusals(
    line: str,
    user: Mapping,
    namespace: str = "dra-driver-nvidia-gpu",
    kube_version: str = "1.34.0",
    api_versions=RESOURCE_APIS,
) -> list:
    """The ids of the guards that refuse this values file, in the order helm meets them (kubeVersion,
    then validation.yaml top to bottom, then - rendered after it - the 0.5 IMEX helper). Helm stops at
    the first; the rest are what the user meets next."""
    if not _semver_at_least(kube_version, KUBE_VERSION_MIN):
        return ["kube-version"]
    v = effective_values(line, user)
    out = []
    if v.get("namespace"):
        out.append("namespace-value")
    release_ns = v.get("namespaceOverride") or namespace
    if release_ns == "default" and v.get("namespaceOverride", "") == "" and not v.get("allowDefaultNamespace"):
        out.append("default-namespace")
    if _get(v, "resources.gpus.enabled") and not v.get("gpuResourcesEnabledOverride"):
        out.append("gpus-without-override")
    if v.get("nvidiaCtkPath"):
        out.append("nvidia-ctk-path")
    out += _webhook_refusal(v)
    if not v.get("resourceApiVersion") and not any(api in api_versions for api in RESOURCE_APIS):
        out.append("no-resource-api")
    if line == "0.5" and _get(v, "resources.computeDomains.enabled"):
        out += _imex_refusals(v)
    return out


def _webhook_refusal(v: Mapping) -> list:
    # validation.yaml checks the webhook settings one after the other and stops at the first failure
    # (each is a fail); it only looks at them when the webhook is enabled.
    if not _get(v, "webhook.enabled"):
        return []
    tls = _get(v, "webhook.tls")
    if not tls:
        return ["webhook-tls-missing"]
    mode = tls.get("mode")
    if not mode:
        return ["webhook-tls-mode-missing"]
    if mode not in ("cert-manager", "secret"):
        return ["webhook-tls-mode-invalid"]
    if mode == "cert-manager":
        cm = tls.get("certManager")
        if not cm:
            return ["cert-manager-missing"]
        issuer = cm.get("issuerType")
        if not issuer:
            return ["issuer-type-missing"]
        if issuer not in ("selfsigned", "clusterissuer", "issuer"):
            return ["issuer-type-invalid"]
        if issuer != "selfsigned" and not cm.get("issuerName"):
            return ["issuer-name-missing"]
        return []
    secret = tls.get("secret")
    if not secret:
        return ["secret-missing"]
    if not secret.get("name"):
        return ["secret-name-missing"]
    return []


def _imex_refusals(v: Mapping) -> list:
    imex = _get(v, "resources.computeDomains.imex") or {}
    mode = str(imex.get("mode", "driverManaged"))
    isolation = str(imex.get("isolation", "domain"))
    gates_on = _get(v, "featureGates") or {}
    if mode == "hostManaged":
        if not gates_on.get("HostManagedIMEXDaemon"):
            return ["imex-host-managed-without-gate"]
    elif mode != "driverManaged":
        return ["imex-mode-unknown"]
    if isolation not in ("", "domain"):
        return ["imex-isolation-channel" if isolation == "channel" else "imex-isolation-unknown"]
    return []


def unread_values(line: str, user: Mapping) -> list:
    """Dotted keys of a values file the line's chart has no value for (helm ignores them silently),
    sorted. A key under a free-form value (tolerations, affinity, labels...) is the user's own."""
    known = VALUE_PATHS[line] | _with_parents(TEMPLATE_ONLY + TEMPLATE_ONLY_OPAQUE)
    opaque = OPAQUE[line] | frozenset(TEMPLATE_ONLY_OPAQUE)
    out: list = []

    def walk(tree: Mapping, prefix: str) -> None:
        for key, value in tree.items():
            path = prefix + str(key)
            if path not in known:
                out.append(path)
            elif path not in opaque and isinstance(value, Mapping):
                walk(value, path + ".")

    walk(user or {}, "")
    return sorted(out)
