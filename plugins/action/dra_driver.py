# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpupool.core.dra_driver, run in the controller (its documentation: plugins/modules/dra_driver.py)."""

from __future__ import annotations

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import resolve_params
from ansible_collections.gpupool.core.plugins.module_utils.k8s.helm import ChartRef, Helm, HelmError, apply_crds
from ansible_collections.gpupool.core.plugins.module_utils.mig.mig_parted import yaml
from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_versions import (
    CERT_MANAGER_CRDS,
    line_for,
    needs_cert_manager,
    parse_version,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.names import POOL_LABEL
from ansible_collections.gpupool.core.plugins.module_utils.module import KubernetesModule
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver import gpu_operator as operator
from ansible_collections.gpupool.core.plugins.module_utils.plan.driver.release import (
    GPU_DRIVER,
    rollout_status,
    upgrade_reasons,
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
from ansible_collections.gpupool.core.plugins.plugin_utils.step_action import StepAction

KNOWN_CRDS = ("computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com")
MINIMUM_HELM = (3, 13)


class DraDriverModule(KubernetesModule):
    required_libraries = ("pydantic", "yaml")
    argument_spec = dict(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        helm_binary=dict(type="str", default="helm"),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=600),
        wait_sleep=dict(type="float", default=5.0),
        purge_crds=dict(type="bool", default=False),
        gpu_operator=dict(type="str", default="refuse", choices=["refuse", "disable_device_plugin"]),
        registry_username=dict(type="str"),
        registry_password=dict(type="str", no_log=True),
    )

    def __init__(self, host=None):
        super().__init__(host)
        self.info = {"release": None, "reasons": [], "progress": [], "commands": []}
        self.changed = False
        self.helm = None
        self.values_diff_text = None

    # ---- result ----------------------------------------------------------------------------------------
    def partial_result(self):
        out = super().partial_result()
        out.update(self.info)
        out["changed"] = bool(out.get("changed")) or self.changed
        if self.helm is not None:
            out["commands"] = [" ".join(cmd) for cmd in self.helm.commands]
        if self.diff_mode and self.values_diff_text is not None:
            out["diff"] = list(out.get("diff") or []) + [self.values_diff_text]
        return out

    # ---- helm --------------------------------------------------------------------------------------------
    def open_helm(self):
        p = resolve_params(self.params, self.cluster)
        helm = Helm(
            self.params["helm_binary"], secrets=[self.params.get("registry_password") or "", p.get("api_key") or ""]
        )
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
        version = helm.version()
        try:
            major, minor = parse_version(version.lstrip("v").split("+")[0])[:2]
        except ValueError:
            major, minor = MINIMUM_HELM
        if (major, minor) < MINIMUM_HELM:
            raise GpupoolError(
                "helm %s is too old: the module needs helm %d.%d or later (--dry-run=server, "
                "get metadata)" % (version, MINIMUM_HELM[0], MINIMUM_HELM[1])
            )
        return helm

    def chart_ref(self):
        s = self.cluster.dra_driver
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

    def chart_name(self, ref):
        """The chart's name as helm records it for the release; a local chart must be the wanted version."""
        if ref.is_local:
            meta = self.helm.show_chart(ref)
            if str(meta.get("version")) != ref.version:
                raise Problems(
                    [
                        (
                            "gpupool_cluster.dra_driver.chart",
                            "the local chart %s is version %s but "
                            "gpupool_cluster.dra_driver.version is %s; point chart at the %s chart or change "
                            "the version" % (ref.chart, meta.get("version"), ref.version, ref.version),
                        )
                    ]
                )
            return meta.get("name")
        return ref.chart.rstrip("/").rsplit("/", 1)[-1]

    # ---- cluster reads -----------------------------------------------------------------------------------
    def pool_nodes(self, live=False):
        """The present pools' nodes: from the run's view when planning, read now while waiting (live)."""
        present = {p.name for p in self.cluster.present_pools}
        read = self.engine.list if live else self.engine.observe
        nodes = read(NODE, label_selector=POOL_LABEL)
        return [n for n in nodes if ((n.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL) in present]

    def crd_exists(self, name):
        return self.engine.get(CUSTOM_RESOURCE_DEFINITION, name) is not None

    def coexistence(self, pool_nodes):
        """GPU Operator facts; refuses, or labels pool nodes, when its device plugin would run on them."""
        policies = self.engine.list(CLUSTER_POLICY) if self.engine.version(CLUSTER_POLICY, required=False) else []
        facts = operator.operator_facts(policies)
        s = self.cluster.dra_driver
        explicit = "nvidia_driver_root" in s.model_fields_set
        root = operator.driver_root(facts, s.nvidia_driver_root, explicit)
        report = dict(facts, driver_root=root, nodes_labelled=[])
        if facts["driver_container"] and explicit and s.nvidia_driver_root != operator.OPERATOR_DRIVER_ROOT:
            self.warn(
                "the GPU Operator runs its driver container (root %s) but dra_driver.nvidia_driver_root is %s"
                % (operator.OPERATOR_DRIVER_ROOT, s.nvidia_driver_root)
            )
        busy = operator.nodes_with_device_plugin(facts, pool_nodes)
        if busy:
            if self.params["gpu_operator"] == "refuse":
                raise GpupoolError(operator.refusal(facts, busy), gpu_operator=report)
            for name in busy:
                self.engine.merge_patch(NODE, name, {"metadata": {"labels": {operator.DEVICE_PLUGIN_LABEL: "false"}}})
                report["nodes_labelled"].append(name)
                self.changed = True
        self.info["gpu_operator"] = report
        return root

    # ---- run ---------------------------------------------------------------------------------------------
    def run(self):
        s = self.cluster.dra_driver
        if self.params["pools"]:
            self.warn("pools is ignored by dra_driver: the driver is cluster-wide and every present pool counts")
        if not s.enabled:
            self.info["msg"] = "dra_driver.enabled is false: the DRA driver is left alone"
            return self.info
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

    def present(self, line, ref):
        s = self.cluster.dra_driver
        helm = self.helm
        chart_name = self.chart_name(ref)
        metadata = helm.status(s.release_name, s.namespace)
        pool_nodes = self.pool_nodes()
        root = self.coexistence(pool_nodes)
        desired = desired_values(self.cluster, line, root)
        current = helm.get_values(s.release_name, s.namespace) if metadata else None
        reasons = upgrade_reasons(metadata, current, desired, chart_name, s.version)
        self.info.update(
            release=_release(metadata),
            reasons=reasons,
            values=desired,
            values_diff=values_diff(current, desired),
            user_overrides=user_overrides(self.cluster, line, root),
        )
        if reasons:
            self.values_diff_text = {
                "before_header": "helm values of %s/%s%s"
                % (
                    s.namespace,
                    s.release_name,
                    " (revision %s)" % metadata.get("revision") if metadata else " (not installed)",
                ),
                "after_header": "desired values (%s %s)" % (chart_name, s.version),
                "before": yaml.safe_dump(current or {}, sort_keys=True, default_flow_style=False),
                "after": yaml.safe_dump(desired, sort_keys=True, default_flow_style=False),
            }
            self.preflight(desired, line)
            crds = helm.show_crds(ref)
            # The chart's own checks against the live cluster first: a refusal leaves nothing half-done.
            helm.upgrade(s.release_name, s.namespace, ref, desired, dry_run=True)
            self.info["crds"] = apply_crds(self.client, crds, dry_run=self.check_mode)
            if not self.check_mode:
                helm.upgrade(s.release_name, s.namespace, ref, desired, wait=False)
                self.info["release"] = _release(helm.status(s.release_name, s.namespace))
            self.changed = True
        if self.params["wait"] and self.may_wait:
            self.wait_rollout(pool_nodes)
        return self.info

    def preflight(self, desired, line):
        """What helm would only find out half-way: cert-manager's CRDs for a cert-manager webhook."""
        if needs_cert_manager(desired, line):
            missing = [name for name in CERT_MANAGER_CRDS if not self.crd_exists(name)]
            if missing:
                raise GpupoolError(
                    "the chart's webhook (webhook.enabled=true, tls.mode cert-manager) needs cert-manager, but the "
                    "cluster has no %s: install cert-manager first, use webhook.tls.mode=secret, or set "
                    "dra_driver.values.webhook.enabled=false" % " and no ".join(missing)
                )

    def wait_rollout(self, pool_nodes):
        s = self.cluster.dra_driver
        selector = "app.kubernetes.io/instance=%s" % s.release_name

        def probe():
            # A release this step left alone is checked once from the run's view (the lists later steps read too);
            # after an install or upgrade, and in every later round, the rollout is read as it is now.
            live = self.changed or probe.rounds > 0
            probe.rounds += 1
            read = self.engine.list if live else self.engine.observe
            daemonsets = read(DAEMON_SET, s.namespace, label_selector=selector)
            deployments = read(DEPLOYMENT, s.namespace, label_selector=selector)
            slices = read(RESOURCE_SLICE) if self.engine.version(RESOURCE_SLICE, required=False) else []
            slice_nodes = [
                (sl.get("spec") or {}).get("nodeName")
                for sl in slices
                if (sl.get("spec") or {}).get("driver") == GPU_DRIVER
            ]
            probe.status = rollout_status(daemonsets, deployments, self.pool_nodes(live=live), slice_nodes)
            return probe.status["done"], probe.status["message"]

        probe.rounds = 0
        subject = "DRA driver rollout"
        result = self.wait_for(subject, probe, self.params["wait_timeout"], self.params["wait_sleep"])
        self.info["progress"] = result.log
        self.info["rollout"] = probe.status
        if not result.done:
            raise GpupoolError(
                "the DRA driver did not roll out within %ds: %s. Check the pods in namespace %s (kubectl -n %s get "
                "pods); a pool node without the plugin usually has a taint the plugin does not tolerate or lacks "
                "the pool label" % (self.params["wait_timeout"], probe.status["message"], s.namespace, s.namespace)
            )
        if probe.status["nodes_not_ready"]:
            self.warn(
                "pool node(s) not Ready, not checked for the kubelet plugin: %s"
                % ", ".join(probe.status["nodes_not_ready"])
            )

    def absent(self, ref):
        s = self.cluster.dra_driver
        metadata = self.helm.status(s.release_name, s.namespace)
        self.info["release"] = _release(metadata)
        if metadata:
            self.info["reasons"] = ["state=absent"]
            if not self.check_mode:
                self.helm.uninstall(s.release_name, s.namespace, wait=True, timeout=self.params["wait_timeout"])
                self.info["release"] = None
            self.changed = True
        if self.params["purge_crds"]:
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
                if not self.engine.wait_gone(CUSTOM_RESOURCE_DEFINITION, name, timeout=self.params["wait_timeout"]):
                    raise GpupoolError(
                        "CRD %s is still terminating after %ds: its objects are being deleted; check "
                        "kubectl get crd %s -o yaml (status.conditions)" % (name, self.params["wait_timeout"], name)
                    )
            self.info["crds_deleted"] = deleted
            self.changed = self.changed or bool(deleted)
        return self.info


def _release(metadata):
    if not metadata:
        return None
    return {k: metadata.get(k) for k in ("name", "namespace", "chart", "version", "appVersion", "revision", "status")}


class ActionModule(StepAction):
    step = DraDriverModule
