# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA DRA driver's Helm release, converged: the I/O sequence under gpupool.core.dra_driver.

Installed or upgraded: helm (at least 3.13) and the chart; the release as helm reports it; the GPU Operator's
ClusterPolicy (refuse, or label the pool nodes its device plugin would run on); the values and why they need an
upgrade (plan/driver/values.py, release.py); cert-manager's CRDs when the chart's webhook needs them; the
chart's own dry run against the cluster; the chart's CRDs applied (helm never upgrades them); helm upgrade
--install; the rollout waited for (plan/driver/release.rollout_status, stricter than helm --wait).
Absent: helm uninstall, and with purge_crds the chart's CRDs deleted and waited for.
Every decision comes from plan/driver/; this file runs helm and reads and writes the cluster.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import METADATA_ONLY, resolve_params
from ansible_collections.gpupool.core.plugins.module_utils.k8s.crds import apply_crds
from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm import PENDING, ChartRef, Helm, HelmError
from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import (
    CERT_MANAGER_CRDS,
    line_for,
    needs_cert_manager,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import gpu_operator as operator
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release import (
    KNOWN_CRDS,
    RUN_LABEL,
    cert_manager_refusal,
    chart_name,
    driver_slice_nodes,
    helm_problem,
    pending_recovery,
    present_pool_nodes,
    recovered_reason,
    release_summary,
    rollout_failure,
    rollout_status,
    rollout_warnings,
    run_label_value,
    upgrade_reasons,
    values_diff_entry,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release_owner import (
    FOREIGN,
    UNOWNED,
    adopt_reason,
    driver_needs,
    foreign_summary,
    missing,
    own_summary,
    owner_labels,
    ownership,
    refusal,
    release_owner,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.values import (
    desired_values,
    user_overrides,
    values_diff,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import (
    CLUSTER_POLICY,
    CUSTOM_RESOURCE_DEFINITION,
    DAEMON_SET,
    DEPLOYMENT,
    NODE,
    RESOURCE_SLICE,
)

ROLLOUT = "DRA driver rollout"  # the progress subject of the rollout wait


def nothing_yet() -> Dict[str, Any]:
    """The step's result keys before the release was looked at."""
    return {"release": None, "reasons": [], "progress": [], "commands": []}


class DriverRelease:
    """The release of the validated inventory's `cluster.dra_driver`.

    params: the step's options (state, helm_binary, wait, wait_timeout, wait_sleep, purge_crds, gpu_operator,
    registry_username/password, and the Kubernetes connection helm is given); engine(): the step's apply engine
    (connected on first use, so helm is checked before the cluster is touched); warn(message); wait_for: the
    step's waiter (GpupoolModule.wait_for: progress lines under a subject); say(line): a one-off progress line.
    `info` is the step's result so far, `changed` whether something was (or in check mode would be) written."""

    def __init__(
        self,
        cluster,
        params: Mapping[str, Any],
        engine: Callable[[], Any],
        check_mode: bool,
        warn: Callable[[str], None],
        wait_for: Callable[..., Any],
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.say = say
        self.cluster, self.settings, self.params = cluster, cluster.dra_driver, params
        self._engine, self.check_mode, self.warn, self.wait_for = engine, check_mode, warn, wait_for
        self.info = nothing_yet()
        self.changed = False
        self.helm: Optional[Helm] = None
        self.values_diff_text: Optional[Dict[str, str]] = None

    @property
    def engine(self):
        return self._engine()

    def report(self, out: Dict[str, Any], diff_mode: bool) -> Dict[str, Any]:
        """The step's result (`out`: the Kubernetes step's own) with what the release did so far."""
        out.update(self.info)
        out["changed"] = bool(out.get("changed")) or self.changed
        if self.helm is not None:
            out["commands"] = [" ".join(cmd) for cmd in self.helm.commands]
        if diff_mode and self.values_diff_text is not None:
            out["diff"] = list(out.get("diff") or []) + [self.values_diff_text]
        return out

    def converge(self) -> Dict[str, Any]:
        s = self.settings
        line = line_for(s.version)  # the model accepted it
        self.info["desired"] = {"release": s.release_name, "namespace": s.namespace, "version": s.version}
        helm = self.open_helm()
        try:
            ref = self.chart_ref()
            if self.params["state"] == "absent":
                return self.absent(ref)
            return self.present(line, ref)
        finally:
            self.info["commands"] = [" ".join(cmd) for cmd in helm.commands]
            helm.close()

    # ---- helm ----------------------------------------------------------------------------------------------
    def open_helm(self) -> Helm:
        p = resolve_params(self.params, self.cluster)
        helm = Helm(
            self.params["helm_binary"], secrets=[self.params.get("registry_password") or "", p.get("api_key") or ""]
        )
        helm.write_guard = self.engine.client.write_guard  # no helm write once the run lost its lease
        try:
            return self._connect_helm(helm, p)
        except BaseException:  # its private folder (a kubeconfig with a token, maybe) never outlives a failure
            helm.close()
            raise

    def _connect_helm(self, helm: Helm, p: Dict[str, Any]) -> Helm:
        if p.get("kubeconfig"):
            helm.kubeconfig, helm.context = p["kubeconfig"], p.get("context")
        elif p.get("host"):
            helm.write_kubeconfig(
                p["host"],
                p.get("api_key"),
                p.get("ca_cert"),
                p.get("client_cert"),
                p.get("client_key"),
                insecure=p.get("validate_certs") is False,
            )
        else:
            helm.context = p.get("context")
        self.helm = helm
        problem = helm_problem(helm.version())
        if problem:
            raise GpupoolError(problem)
        return helm

    def chart_ref(self) -> ChartRef:
        s = self.settings
        username, password = self.params.get("registry_username"), self.params.get("registry_password")
        ref = ChartRef(
            s.chart,
            s.version,
            repo=s.repository,
            username=username if s.repository else None,
            password=password if s.repository else None,
        )
        if ref.is_oci and username:
            self.helm.registry_login(ref.registry_host, username, password or "")
        return ref

    # ---- cluster reads -------------------------------------------------------------------------------------
    def pool_nodes(self, live: bool = False) -> List[Mapping[str, Any]]:
        """The present pools' nodes: from the run's view when planning, read now while waiting (live)."""
        read = self.engine.list if live else self.engine.observe
        nodes = read(NODE, label_selector=POOL_LABEL)
        return present_pool_nodes(nodes, [p.name for p in self.cluster.present_pools])

    def crd_exists(self, name: str) -> bool:
        return self.engine.get(CUSTOM_RESOURCE_DEFINITION, name) is not None

    def operator_view(self):
        """GPU Operator facts (read only): (facts, the driver root the chart is given, the step's report)."""
        engine, s = self.engine, self.settings
        policies = engine.list(CLUSTER_POLICY) if engine.version(CLUSTER_POLICY, required=False) else []
        facts = operator.operator_facts(policies)
        explicit = "nvidia_driver_root" in s.model_fields_set
        root = operator.driver_root(facts, s.nvidia_driver_root, explicit)
        return facts, root, dict(facts, driver_root=root, nodes_labelled=[])

    def coexistence(self, pool_nodes) -> str:
        """GPU Operator facts; refuses, or labels pool nodes, when its device plugin would run on them. Returns
        the driver root the chart is given."""
        engine, s = self.engine, self.settings
        facts, root, report = self.operator_view()
        explicit = "nvidia_driver_root" in s.model_fields_set
        warning = operator.driver_root_warning(facts, s.nvidia_driver_root, explicit)
        if warning:
            self.warn(warning)
        busy = operator.nodes_with_device_plugin(facts, pool_nodes)
        if busy:
            if self.params["gpu_operator"] == "refuse":
                raise GpupoolError(operator.refusal(facts, busy), gpu_operator=report)
            for name in busy:
                engine.merge_patch(NODE, name, {"metadata": {"labels": {operator.DEVICE_PLUGIN_LABEL: "false"}}})
                report["nodes_labelled"].append(name)
                self.changed = True
        self.info["gpu_operator"] = report
        return root

    # ---- present -------------------------------------------------------------------------------------------
    def present(self, line, ref: ChartRef) -> Dict[str, Any]:
        s, helm = self.settings, self.helm
        name = chart_name(ref.chart, helm.show_chart(ref) if ref.is_local else None, ref.version)
        metadata = helm.status(s.release_name, s.namespace)
        # One release per cluster, one owner (plan/driver/release_owner.py): another owner's is only compared
        labels = self.revision_labels(int(metadata["revision"])) if metadata and metadata.get("revision") else {}
        me = self.cluster.owner_id
        standing = ownership(labels, me) if metadata else None
        if standing == FOREIGN:
            return self.foreign(line, name, metadata, release_owner(labels))
        if metadata and metadata.get("status") in PENDING:
            metadata = self.recover_pending()
        pool_nodes = self.pool_nodes()
        root = self.coexistence(pool_nodes)
        desired = desired_values(self.cluster, line, root)
        current = helm.get_values(s.release_name, s.namespace) if metadata else None
        reasons = upgrade_reasons(metadata, current, desired, name, s.version)
        adopted = bool(metadata) and standing == UNOWNED
        if adopted:
            reasons.append(adopt_reason(me))
        self.info["owner"] = own_summary(me, adopted)
        if self.info.get("recovered"):
            reasons.insert(0, recovered_reason(self.info["recovered"], self.check_mode))
        self.info.update(
            release=release_summary(metadata),
            reasons=reasons,
            values=desired,
            values_diff=values_diff(current, desired),
            user_overrides=user_overrides(self.cluster, line, root),
        )
        if reasons:
            self.values_diff_text = values_diff_entry(s, metadata, current, desired, name)
            self.preflight(desired, line)
            crds = helm.show_crds(ref)
            # The chart's own checks against the live cluster first: a refusal leaves nothing half-done. A release
            # still pending (check mode does not recover it) refuses every helm write, the dry run's too.
            if not (metadata and metadata.get("status") in PENDING):
                helm.upgrade(s.release_name, s.namespace, ref, desired, dry_run=True)
            self.info["crds"] = apply_crds(self.engine.client, crds, dry_run=self.check_mode)
            if not self.check_mode:
                holder = self.run_holder
                labels = dict(owner_labels(me), **({RUN_LABEL: run_label_value(holder)} if holder else {}))
                helm.upgrade(s.release_name, s.namespace, ref, desired, wait=False, labels=labels)
                self.info["release"] = release_summary(helm.status(s.release_name, s.namespace))
            self.changed = True
        if self.params["wait"] and not self.check_mode:
            self.wait_rollout()
        return self.info

    def foreign(self, line, name: str, metadata: Mapping[str, Any], owner: str) -> Dict[str, Any]:
        """Another owner's release: compared with what this inventory's pools need, never written. Refused
        (before any write) with each difference when it lacks something; else left as it is (changed=false),
        and its rollout checked on this inventory's pool nodes like a release this step left alone."""
        s, helm = self.settings, self.helm
        _facts, root, _report = self.operator_view()
        desired = desired_values(self.cluster, line, root)
        current = helm.get_values(s.release_name, s.namespace, all_values=True)
        gaps = missing(
            driver_needs(self.cluster, desired, name), current, metadata.get("chart"), metadata.get("version")
        )
        self.info.update(
            release=release_summary(metadata),
            reasons=[],
            values=desired,
            values_diff=[],
            user_overrides=user_overrides(self.cluster, line, root),
            owner=foreign_summary(owner, gaps),
        )
        if gaps:
            raise GpupoolError(
                refusal(owner, self.cluster.owner_id, s.release_name, s.namespace, gaps), owner=self.info["owner"]
            )
        self.say(
            "the DRA driver release %s/%s is owned by '%s' and serves this inventory's pools: left as it is"
            % (s.namespace, s.release_name, owner)
        )
        if metadata.get("status") != "deployed":
            self.warn(
                "the DRA driver release %s/%s (owned by '%s') is %s; its owner's next run upgrades it"
                % (s.namespace, s.release_name, owner, metadata.get("status"))
            )
        self.coexistence(self.pool_nodes())  # this inventory's own nodes: the GPU Operator's device plugin
        if self.params["wait"] and not self.check_mode:
            self.wait_rollout()
        return self.info

    @property
    def run_holder(self) -> Optional[str]:
        lease = self.params.get("run_lease")
        return lease.get("holder") if isinstance(lease, dict) else None

    def recover_pending(self) -> Optional[Dict[str, Any]]:
        """A release an interrupted helm left pending-install/-upgrade/-rollback (every helm write would fail with
        "another operation is in progress"): rolled back to its last deployed revision, or uninstalled when it was
        never deployed (CRDs stay), as plan/driver/release.pending_recovery decides. Returns the release's metadata
        now (None after an uninstall); in check mode only says what it would do."""
        s, helm = self.settings, self.helm
        history = helm.history(s.release_name, s.namespace)
        last = history[-1]["revision"] if history else 0
        labels = self.revision_labels(last) if last else {}
        before = self.revision_labels(last - 1) if last > 1 else {}
        now = datetime.datetime.now(datetime.timezone.utc)
        plan = pending_recovery(history, labels, before, self.run_holder, now, s.release_name, s.namespace)
        metadata = helm.status(s.release_name, s.namespace)
        if plan is None:  # it finished meanwhile
            return metadata
        self.info["recovered"] = {k: plan[k] for k in ("action", "revision", "pending")}
        self.say(plan["message"] if not self.check_mode else "would take over: " + plan["message"])
        self.changed = True
        if self.check_mode:
            return metadata
        timeout = self.params["wait_timeout"]
        if plan["action"] == "rollback":
            helm.rollback(s.release_name, s.namespace, plan["revision"], timeout=timeout)
        else:
            helm.uninstall(s.release_name, s.namespace, wait=True, timeout=timeout)
        return helm.status(s.release_name, s.namespace)

    def revision_labels(self, revision: int) -> Dict[str, str]:
        """The labels helm stored a revision with (`helm upgrade --labels` puts them on the object that holds the
        revision: a Secret, or a ConfigMap with HELM_DRIVER=configmap); {} when there is none (pruned by
        --history-max, or another storage driver). helm get metadata does not show them."""
        name = "sh.helm.release.v1.%s.v%d" % (self.settings.release_name, revision)
        for kind in ("secrets", "configmaps"):
            path = "/api/v1/namespaces/%s/%s/%s" % (self.settings.namespace, kind, name)
            try:
                # metadata only: the release (values, maybe credentials) never reaches gpupool
                obj = self.engine.client.request("GET", path, accept=METADATA_ONLY)
            except Exception as exc:  # the client's NotFound: no import of the client module here
                if getattr(exc, "status", None) == 404:
                    continue
                raise
            return dict((obj.get("metadata") or {}).get("labels") or {})
        return {}

    def preflight(self, desired, line) -> None:
        """What helm would only find out half-way: cert-manager's CRDs for a cert-manager webhook."""
        if needs_cert_manager(desired, line):
            missing = [name for name in CERT_MANAGER_CRDS if not self.crd_exists(name)]
            if missing:
                raise GpupoolError(cert_manager_refusal(missing))

    def wait_rollout(self) -> None:
        s, engine = self.settings, self.engine
        selector = "app.kubernetes.io/instance=%s" % s.release_name

        def probe():
            # A release this step left alone is checked once from the run's view (the lists later steps read too);
            # after an install or upgrade, and in every later round, the rollout is read as it is now.
            live = self.changed or probe.rounds > 0
            probe.rounds += 1
            read = engine.list if live else engine.observe
            daemonsets = read(DAEMON_SET, s.namespace, label_selector=selector)
            deployments = read(DEPLOYMENT, s.namespace, label_selector=selector)
            slices = read(RESOURCE_SLICE) if engine.version(RESOURCE_SLICE, required=False) else []
            probe.status = rollout_status(
                daemonsets, deployments, self.pool_nodes(live=live), driver_slice_nodes(slices)
            )
            return probe.status["done"], probe.status["message"]

        probe.rounds = 0
        result = self.wait_for(ROLLOUT, probe, self.params["wait_timeout"], self.params["wait_sleep"])
        self.info["progress"] = result.log
        self.info["rollout"] = probe.status
        if not result.done:
            raise GpupoolError(rollout_failure(self.params["wait_timeout"], probe.status, s.namespace))
        for warning in rollout_warnings(probe.status):
            self.warn(warning)

    # ---- absent --------------------------------------------------------------------------------------------
    def absent(self, ref: ChartRef) -> Dict[str, Any]:
        s = self.settings
        metadata = self.helm.status(s.release_name, s.namespace)
        self.info["release"] = release_summary(metadata)
        labels = self.revision_labels(int(metadata["revision"])) if metadata and metadata.get("revision") else {}
        if metadata and ownership(labels, self.cluster.owner_id) == FOREIGN:
            # not this inventory's to remove, nor are the CRDs its chart brought
            owner = release_owner(labels)
            self.info["owner"] = foreign_summary(owner, [])
            self.warn(
                "the DRA driver release %s/%s is owned by '%s': state=absent leaves it (and its CRDs) installed"
                % (s.namespace, s.release_name, owner)
            )
            return self.info
        if metadata:
            self.info["reasons"] = ["state=absent"]
            if not self.check_mode:
                self.helm.uninstall(s.release_name, s.namespace, wait=True, timeout=self.params["wait_timeout"])
                self.info["release"] = None
            self.changed = True
        if self.params["purge_crds"]:
            self.purge_crds(ref)
        return self.info

    def purge_crds(self, ref: ChartRef) -> None:
        timeout = self.params["wait_timeout"]
        try:
            names = [c["metadata"]["name"] for c in self.helm.show_crds(ref)]
        except HelmError as exc:  # the chart may be unreachable while uninstalling: the known names do
            self.warn("could not read the chart's CRDs (%s); deleting the known ones" % exc.message)
            names = list(KNOWN_CRDS)
        deleted = []
        for name in names:
            if self.crd_exists(name):
                self.engine.delete(CUSTOM_RESOURCE_DEFINITION, name)
                deleted.append(name)
        # The API server deletes every object of a CRD before the CRD itself: wait for that, so a
        # reinstall right after does not meet a CRD still terminating.
        for name in deleted if not self.check_mode else []:
            if not self.engine.wait_gone(CUSTOM_RESOURCE_DEFINITION, name, timeout=timeout):
                raise GpupoolError(
                    "CRD %s is still terminating after %ds: its objects are being deleted; check "
                    "kubectl get crd %s -o yaml (status.conditions)" % (name, timeout, name)
                )
        self.info["crds_deleted"] = deleted
        self.changed = self.changed or bool(deleted)
