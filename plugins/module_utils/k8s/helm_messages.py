# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed helm command's output means, as (message, hint): the chart's own failure text, a missing
cert-manager, a timeout, a pending release, refused credentials - never a Go stack. Pure: k8s/helm.py runs helm
and raises HelmError with these."""

from __future__ import annotations

import re

_EXECUTION = re.compile(r"execution error at \((?P<where>[^)]*)\):\s*(?P<msg>.*)", re.S)
_NO_KIND = re.compile(r'no matches for kind "(?P<kind>[^"]+)" in version "(?P<version>[^"]+)"')


def readable(output: str) -> "tuple[str, str]":
    """(message, hint) from helm's output: the chart's own failure text, or what went wrong."""
    text = output.strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    error_lines = [ln for ln in lines if ln.startswith("Error:")]
    first = error_lines[-1] if error_lines else (lines[-1] if lines else "no output")
    if first.startswith("Error: "):
        start = len("Error: ")
        first = first[start:]
    match = _EXECUTION.search(text)
    if match:
        message = " ".join(match.group("msg").split())
        template = match.group("where").split(":")[0]
        return (
            "the chart refused the values (%s): %s" % (template, message),
            "fix dra_driver.values (or the pool settings they come from) as the chart says",
        )
    missing = sorted(set(_NO_KIND.findall(text)))
    if missing:
        versions = sorted({version for _kind, version in missing})
        kinds = ", ".join("%s (%s)" % (kind, version) for kind, version in missing)
        hint = ""
        if any(v.startswith("cert-manager.io/") for v in versions):
            hint = (
                "the chart's webhook needs cert-manager: install cert-manager (its CRDs) first, or set "
                "dra_driver.values.webhook.enabled=false"
            )
        return ("the cluster does not know the kind(s) %s: their CRDs are not installed" % kinds, hint)
    if "another operation (install/upgrade/rollback) is in progress" in text:
        return (
            first,
            "a previous helm run was interrupted; check `helm history` and roll back or uninstall the pending revision",
        )
    if "context deadline exceeded" in text or "timed out waiting for the condition" in text:
        return (
            "the release did not become ready in time (%s)" % first,
            "check the driver's pods (kubectl -n <namespace> get pods) and the kubelet-plugin DaemonSet; "
            "a pool node the plugin cannot run on (taints, affinity) or a crashing container keeps it unready",
        )
    if "chart requires kubeVersion" in text:
        return (first, "the cluster's Kubernetes version is older than the chart supports")
    if re.search(r"\b(401|403)\b|unauthorized|denied", text, re.I) and ("registry" in text or "oci" in text):
        return (first, "check the registry credentials (dra_driver registry username/password)")
    if re.search(r"\b(401|403)\b|unauthorized", text, re.I) and ("repo" in text or "index.yaml" in text):
        return (first, "check the chart repository's credentials (the dra_driver step's registry_username/password)")
    if "not found" in first and ("chart" in first or "version" in first or "manifest" in first):
        return (first, "check dra_driver.chart and dra_driver.version (and the repository, if any)")
    return (first, "")
