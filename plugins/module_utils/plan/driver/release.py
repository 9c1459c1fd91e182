# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA driver's Helm release: does it need an upgrade, and is its rollout done (pure).

`upgrade_reasons` compares what helm reports (``helm get metadata``, ``helm get values``) with what the
inventory wants; an empty list means no helm write at all (a second run changes nothing).

The rest are the release step's smaller decisions and sentences (the helm it needs, the chart name helm
records, the --diff of the values, the cert-manager preflight, the rollout's end); k8s/driver_release.py runs
helm and reads the cluster.

`rollout_status` is stricter than ``helm --wait``: the chart's kubelet-plugin DaemonSet has
maxUnavailable 100%, so helm calls it ready with no plugin pod ready at all. Done here means: every
Deployment of the release ready, the plugin DaemonSet updated and ready on every node it is scheduled
to, and every Ready node of a present pool publishing ``gpu.nvidia.com`` ResourceSlices (the plugin
runs there: tolerations and affinity let it).

`pending_recovery` decides what to do about a release an interrupted helm left pending (roll back to the last
deployed revision, or uninstall a never-deployed install), and when to refuse instead.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import yaml
from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import parse_version
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import DRIVER, KUBELET_PLUGIN_SUFFIX, POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import merge_notes, values_diff
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.pool_nodes import node_ready

# helm --dry-run=server and helm get metadata, which the release step uses, came with helm 3.13
MINIMUM_HELM = (3, 13)
# the chart's CRDs, deleted with purge_crds when the chart cannot be read while uninstalling
KNOWN_CRDS = ("computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com")
RELEASE_FIELDS = ("name", "namespace", "chart", "version", "appVersion", "revision", "status")


def helm_problem(version: str) -> Optional[str]:
    """Why this helm (``helm version --short``, e.g. v3.14.4+g81c902a) cannot be used; None when it can. A
    version helm words otherwise is given the benefit of the doubt."""
    try:
        major, minor = parse_version(version.lstrip("v").split("+")[0])[:2]
    except ValueError:
        return None
    if (major, minor) >= MINIMUM_HELM:
        return None
    return "helm %s is too old: the module needs helm %d.%d or later (--dry-run=server, get metadata)" % (
        version,
        MINIMUM_HELM[0],
        MINIMUM_HELM[1],
    )


def chart_name(chart: str, local_metadata: Optional[Mapping[str, Any]], version: str) -> str:
    """The chart's name as helm records it for the release: a local chart's own (it must be the wanted version),
    else the last part of the chart reference."""
    if local_metadata is None:
        return chart.rstrip("/").rsplit("/", 1)[-1]
    if str(local_metadata.get("version")) != version:
        raise Problems(
            [
                (
                    "gpupool_cluster.dra_driver.chart",
                    "the local chart %s is version %s but gpupool_cluster.dra_driver.version is %s; point chart at "
                    "the %s chart or change the version" % (chart, local_metadata.get("version"), version, version),
                )
            ]
        )
    return local_metadata.get("name")


def release_summary(metadata: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """What the result shows of ``helm get metadata`` (None: not installed)."""
    if not metadata:
        return None
    return {k: metadata.get(k) for k in RELEASE_FIELDS}


def values_diff_entry(
    settings, metadata: Optional[Mapping[str, Any]], current: Optional[Mapping], desired: Mapping, chart: str
) -> Dict[str, str]:
    """The --diff entry of an install or upgrade: the release's values before (YAML), the desired ones after.
    settings: the inventory's dra_driver (release_name, namespace, version)."""
    return {
        "before_header": "helm values of %s/%s%s"
        % (
            settings.namespace,
            settings.release_name,
            " (revision %s)" % metadata.get("revision") if metadata else " (not installed)",
        ),
        "after_header": "desired values (%s %s)%s"
        % (chart, settings.version, "".join("; " + n for n in merge_notes(getattr(settings, "values", None)))),
        "before": yaml.safe_dump(current or {}, sort_keys=True, default_flow_style=False),
        "after": yaml.safe_dump(desired, sort_keys=True, default_flow_style=False),
    }


def cert_manager_refusal(missing: Sequence[str]) -> str:
    """The preflight's refusal: the chart's cert-manager webhook needs cert-manager's CRDs."""
    return (
        "the chart's webhook (webhook.enabled=true, tls.mode cert-manager) needs cert-manager, but the "
        "cluster has no %s: install cert-manager first, use webhook.tls.mode=secret, or set "
        "dra_driver.values.webhook.enabled=false" % " and no ".join(missing)
    )


def present_pool_nodes(nodes: Sequence[Mapping[str, Any]], present: Sequence[str]) -> List[Mapping[str, Any]]:
    """The nodes of the present pools (gpupool.io/pool names one of them)."""
    wanted = set(present)
    return [n for n in nodes if ((n.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL) in wanted]


def driver_slice_nodes(slices: Sequence[Mapping[str, Any]]) -> List[Optional[str]]:
    """spec.nodeName of every ResourceSlice the GPU driver (gpu.nvidia.com) publishes."""
    return [(s.get("spec") or {}).get("nodeName") for s in slices if (s.get("spec") or {}).get("driver") == DRIVER]


def rollout_failure(timeout: int, status: Mapping[str, Any], namespace: str) -> str:
    return (
        "the DRA driver did not roll out within %ds: %s. Check the pods in namespace %s (kubectl -n %s get "
        "pods); a pool node without the plugin usually has a taint the plugin does not tolerate (the DaemonSet "
        "controller then makes no pod for it at all: compare the node's taints with the values' "
        "kubeletPlugin.tolerations) or lacks the pool label" % (timeout, status["message"], namespace, namespace)
    )


def rollout_warnings(status: Mapping[str, Any]) -> List[str]:
    """What a finished rollout did not check: pool nodes that are not Ready."""
    if not status["nodes_not_ready"]:
        return []
    return ["pool node(s) not Ready, not checked for the kubelet plugin: %s" % ", ".join(status["nodes_not_ready"])]


def upgrade_reasons(
    metadata: Optional[Mapping[str, Any]],
    current_values: Optional[Mapping[str, Any]],
    desired_values: Mapping[str, Any],
    chart_name: str,
    version: str,
) -> List[str]:
    """Why the release must be installed or upgraded ([] when it is as wanted)."""
    if not metadata:
        return ["not installed"]
    reasons = []
    if metadata.get("status") != "deployed":
        reasons.append("release status is %s" % metadata.get("status"))
    if metadata.get("chart") != chart_name:
        reasons.append("chart %s -> %s" % (metadata.get("chart"), chart_name))
    if metadata.get("version") != version:
        reasons.append("version %s -> %s" % (metadata.get("version"), version))
    diff = values_diff(current_values or {}, desired_values)
    if diff:
        paths = ", ".join(d["path"] for d in diff[:8]) + (" ..." if len(diff) > 8 else "")
        reasons.append("%d value(s) differ: %s" % (len(diff), paths))
    return reasons


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def plugin_daemonset(daemonsets: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    for ds in daemonsets:
        if _meta(ds).get("name", "").endswith(KUBELET_PLUGIN_SUFFIX):
            return ds
    return None


def _deployment_ready(dep: Mapping[str, Any]) -> bool:
    status = dep.get("status") or {}
    want = (dep.get("spec") or {}).get("replicas", 1)
    return (
        status.get("observedGeneration", 0) >= _meta(dep).get("generation", 1)
        and status.get("updatedReplicas", 0) >= want
        and status.get("readyReplicas", 0) >= want
    )


def rollout_status(
    daemonsets: Sequence[Mapping[str, Any]],
    deployments: Sequence[Mapping[str, Any]],
    pool_nodes: Sequence[Mapping[str, Any]],
    slice_nodes: Sequence[str],
) -> Dict[str, Any]:
    """{done, message, plugin: {desired, ready, updated}, nodes_without_plugin, nodes_not_ready, deployments}.

    pool_nodes: the Node objects of the present pools; slice_nodes: spec.nodeName of every gpu.nvidia.com
    ResourceSlice."""
    waiting: List[str] = []
    ds = plugin_daemonset(daemonsets)
    plugin = {"desired": 0, "ready": 0, "updated": 0}
    if ds is None:
        waiting.append("no kubelet-plugin DaemonSet")
    else:
        st = ds.get("status") or {}
        plugin = {
            "desired": st.get("desiredNumberScheduled", 0),
            "ready": st.get("numberReady", 0),
            "updated": st.get("updatedNumberScheduled", 0),
        }
        if st.get("observedGeneration", 0) < _meta(ds).get("generation", 1):
            waiting.append("kubelet plugin: new revision not yet seen by the DaemonSet controller")
        elif plugin["updated"] < plugin["desired"] or plugin["ready"] < plugin["desired"]:
            waiting.append(
                "kubelet plugin %d/%d ready (%d updated)" % (plugin["ready"], plugin["desired"], plugin["updated"])
            )
    not_ready_deps = sorted(_meta(d).get("name", "") for d in deployments if not _deployment_ready(d))
    if not_ready_deps:
        waiting.append("deployment(s) not ready: %s" % ", ".join(not_ready_deps))
    publishing = set(slice_nodes)
    ready_nodes = [n for n in pool_nodes if node_ready(n)]
    missing = sorted(_meta(n)["name"] for n in ready_nodes if _meta(n)["name"] not in publishing)
    not_ready = sorted(_meta(n)["name"] for n in pool_nodes if not node_ready(n))
    if missing:
        waiting.append(
            "%d pool node(s) without the plugin's ResourceSlices: %s"
            % (len(missing), ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else ""))
        )
    done = not waiting
    if done:
        message = "kubelet plugin ready on %d node(s), %d pool node(s) publishing" % (
            plugin["ready"],
            len(ready_nodes) - len(missing),
        )
    else:
        message = "; ".join(waiting)
    return {
        "done": done,
        "message": message,
        "plugin": plugin,
        "nodes_without_plugin": missing,
        "nodes_not_ready": not_ready,
        "deployments_not_ready": not_ready_deps,
    }


# ---- a release left pending by an interrupted helm -------------------------------------------------
PENDING_STATUSES = ("pending-install", "pending-upgrade", "pending-rollback")
# the label gpupool's helm upgrades store on their revision (helm upgrade --labels): which run made it
RUN_LABEL = "gpupool.io/run"
# a pending revision gpupool did not make is taken over only once it is this old: a person's or another tool's
# helm may still be working on it (helm's own default --timeout is 5 minutes)
FOREIGN_GRACE = 600


def run_label_value(holder: str) -> str:
    """A run lease holder (gpupool@host/1a2b3c4d) as a label value (63 characters of [A-Za-z0-9._-])."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "_", holder)[-63:]
    return value.strip("._-") or "gpupool"


def helm_time(text: str) -> Optional[datetime.datetime]:
    """helm's timestamps (RFC 3339 with nanoseconds, Z or an offset) as an aware datetime; None if unreadable."""
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", (text or "").strip())
    if not match:
        return None
    zone = match.group(3) or "Z"
    zone = "+00:00" if zone == "Z" else zone[:3] + ":" + zone[-2:]
    return datetime.datetime.fromisoformat(match.group(1) + "." + (match.group(2) or "0")[:6].ljust(6, "0") + zone)


def pending_recovery(
    history: Sequence[Mapping[str, Any]],
    pending_labels: Mapping[str, str],
    previous_labels: Mapping[str, str],
    holder: Optional[str],
    now: datetime.datetime,
    release: str,
    namespace: str,
) -> Optional[Dict[str, Any]]:
    """What to do about a release whose last revision is pending (helm was killed in the middle of an install,
    upgrade or rollback; every later helm write fails with "another operation is in progress"). None when the
    last revision is not pending. Else {"action": "rollback", "revision": N} (back to the last deployed
    revision; the upgrade follows) or {"action": "reinstall"} (nothing was ever deployed: uninstall, CRDs stay,
    then install), with "pending" (revision, status, updated, made_by) and "message" (the progress line).

    Refused (GpupoolError) unless this run holds the run lease (holder: no other gpupool run is active, so no
    gpupool helm is still working on it), and, for a revision another tool made (its RUN_LABEL is missing or
    inherited unchanged from the revision before), until it is FOREIGN_GRACE seconds old.
    history: `helm history -o json`, oldest first; the labels: those of the last and the one before it."""
    if not history or history[-1].get("status") not in PENDING_STATUSES:
        return None
    last = history[-1]
    mine = pending_labels.get(RUN_LABEL)
    made_by = mine if mine and mine != previous_labels.get(RUN_LABEL) else None
    updated = helm_time(str(last.get("updated") or ""))
    age = (now - updated).total_seconds() if updated else None
    pending = {
        "revision": last.get("revision"),
        "status": last.get("status"),
        "updated": last.get("updated"),
        "made_by": made_by or "not gpupool",
    }
    where = "the helm release %s/%s is %s (revision %s)" % (
        namespace,
        release,
        last.get("status"),
        last.get("revision"),
    )
    manual = "helm rollback %s -n %s, or helm uninstall %s -n %s if it was never deployed" % (
        release,
        namespace,
        release,
        namespace,
    )
    if not holder:
        raise GpupoolError(
            "%s: only a run that holds the run lease takes it over; run playbooks/site.yml (it takes the lease), "
            "or recover it yourself: %s" % (where, manual)
        )
    if made_by is None and (age is None or age < FOREIGN_GRACE):
        seen = "%d s ago" % round(age) if age is not None else "at an unknown time"
        raise GpupoolError(
            "%s, started %s by something other than gpupool, which may still be working on it; wait for it to "
            "finish (gpupool takes over one older than %d s), or recover it yourself: %s"
            % (where, seen, FOREIGN_GRACE, manual)
        )
    for wanted in ("deployed", "superseded"):
        good = [h for h in history[:-1] if h.get("status") == wanted]
        if good and last.get("status") != "pending-install":
            revision = good[-1].get("revision")
            return {
                "action": "rollback",
                "revision": revision,
                "pending": pending,
                "message": "%s, left by an interrupted run: rolling back to revision %s, then upgrading"
                % (where, revision),
            }
    return {
        "action": "reinstall",
        "revision": None,
        "pending": pending,
        "message": "%s and was never deployed, left by an interrupted run: uninstalling it (CRDs stay), then "
        "installing" % where,
    }


def recovered_reason(recovered: Mapping[str, Any], check_mode: bool = False) -> str:
    """The release step's first reason after taking a pending release over (`pending_recovery`'s plan)."""
    pending = recovered["pending"]
    done = (
        "rolled back to revision %s" % recovered["revision"]
        if recovered["action"] == "rollback"
        else "uninstalled (CRDs kept) to install again"
    )
    if check_mode:
        done = "would be " + done
    return "recovered from %s (revision %s): %s" % (pending["status"], pending["revision"], done)
