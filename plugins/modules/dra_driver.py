#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dra_driver
short_description: Install and keep right the NVIDIA DRA driver (Helm) the GPU pools need
version_added: "0.2.0"
description:
  - Drives the C(helm) binary to install, upgrade or uninstall the NVIDIA DRA driver chart (C(dra-driver-nvidia-gpu))
    as the cluster's C(dra_driver) settings and pools say. Supported driver lines are 0.4.x and 0.5.x; the
    inventory model refuses, before helm runs, what the chosen version would reject (gates it does not know,
    gate conflicts of the driver's ValidateFeatureGates, host-managed IMEX on 0.4, values its chart does not have,
    the C(default) namespace, a version with a leading C(v)).
  - "The chart values are derived from the pools: GPU resources with C(gpuResourcesEnabledOverride=true);
    ComputeDomains only when a pool uses multi-node NVLink; feature gates from what pools use (time-slicing, MPS,
    dynamic MIG, passthrough, host-managed IMEX) plus C(dra_driver.feature_gates); C(imex.mode=hostManaged) for
    host-managed IMEX on 0.5; kubelet-plugin tolerations = the chart's C(nvidia.com/gpu) entry plus every pool
    taint; kubelet-plugin node affinity = the nodes carrying the pool label C(gpupool.io/pool); C(nvidiaDriverRoot).
    C(dra_driver.values) are merged last and the overrides are reported."
  - Idempotent. The deployed chart, version, status and C(helm get values) are compared with the desired ones and
    helm upgrades only on a difference; the chart's CRDs are applied server-side (field manager C(gpupool)) before
    an install or upgrade, because Helm never upgrades CRDs.
  - Check mode computes the values diff and runs C(helm upgrade --install --dry-run=server) (the chart's own
    validation against the live cluster) and server-side dry runs of the CRDs; nothing is written.
  - After an upgrade, and on every run with O(wait), waits until the rollout is done, stricter than C(helm --wait)
    (which accepts the plugin DaemonSet with no pod ready, its maxUnavailable being 100%) - every Deployment of
    the release ready, the kubelet plugin ready wherever it is scheduled, and every Ready pool node publishing
    C(gpu.nvidia.com) ResourceSlices. The wait's progress is returned in RV(progress).
  - "GPU Operator coexistence: a ClusterPolicy is detected. When it runs the driver container and
    C(dra_driver.nvidia_driver_root) is not set in the inventory, C(/run/nvidia/driver) is used. When its device
    plugin would run on pool nodes the module refuses (O(gpu_operator=refuse)), or labels those nodes
    C(nvidia.com/gpu.deploy.device-plugin=false) (O(gpu_operator=disable_device_plugin)) so no GPU is handed out twice."
  - O(state=absent) uninstalls the release; the CRDs (and so every ComputeDomain) stay unless O(purge_crds=true).
author:
  - gpupool.core developers (@gpupool)
options:
  state:
    description:
      - C(present) installs or upgrades the driver, C(absent) uninstalls it.
      - With C(dra_driver.enabled=false) in the inventory the module changes nothing.
    type: str
    choices: [present, absent]
    default: present
  helm_binary:
    description:
      - The helm 3.13+ binary, a path or a name looked up on PATH.
    type: str
    default: helm
  wait:
    description:
      - Wait until the driver's rollout is done (see the description). Skipped in check mode.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the rollout (and for helm to uninstall).
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two checks while waiting.
    type: float
    default: 5.0
  purge_crds:
    description:
      - With O(state=absent), also delete the chart's CRDs (C(computedomains.resource.nvidia.com),
        C(computedomaincliques.resource.nvidia.com)) - and with them every ComputeDomain in the cluster.
    type: bool
    default: false
  gpu_operator:
    description:
      - What to do when a GPU Operator ClusterPolicy runs its device plugin on pool nodes.
      - C(refuse) fails before anything is changed, naming the nodes.
      - C(disable_device_plugin) labels those nodes C(nvidia.com/gpu.deploy.device-plugin=false), so the operator
        removes its device plugin there.
    type: str
    choices: [refuse, disable_device_plugin]
    default: refuse
  registry_username:
    description:
      - User for the chart's OCI registry (C(helm registry login)) or HTTP repository (C(dra_driver.repository)).
    type: str
  registry_password:
    description:
      - Password or token for O(registry_username). Passed to helm on standard input (OCI) and never shown.
    type: str
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
requirements:
  - helm 3.13 or later on the host that runs the module
  - pydantic >= 2.6
notes:
  - O(pools) is accepted for symmetry with the other modules but the driver is cluster-wide; every present pool
    counts.
  - The pre-0.4 release name C(nvidia-dra-driver-gpu) (C(dra_driver.release_name)) keeps its object names through
    C(nameOverride).
  - Supported versions and what was checked against each are listed in the collection's docs/modules/dra-driver.md.
seealso:
  - module: gpupool.core.imex
  - module: gpupool.core.pool_info
"""

EXAMPLES = r"""
- name: NVIDIA DRA driver for the pools
  gpupool.core.dra_driver:
    cluster: "{{ gpupool_cluster }}"

- name: What would change (values diff, helm --dry-run=server)
  gpupool.core.dra_driver:
    cluster: "{{ gpupool_cluster }}"
  check_mode: true
  diff: true

- name: Next to the GPU Operator, taking its device plugin off the pool nodes
  gpupool.core.dra_driver:
    cluster: "{{ gpupool_cluster }}"
    gpu_operator: disable_device_plugin

- name: Uninstall, removing the CRDs too
  gpupool.core.dra_driver:
    cluster: "{{ gpupool_cluster }}"
    state: absent
    purge_crds: true
"""

RETURN = r"""
release:
  description: The release after the run (C(helm get metadata)), null when it is not installed.
  returned: always
  type: dict
  sample: {name: dra-driver-nvidia-gpu, namespace: dra-driver-nvidia-gpu, chart: dra-driver-nvidia-gpu,
           version: 0.5.1, revision: 3, status: deployed}
reasons:
  description: Why an install or upgrade was (or would be) done; empty when the release was as wanted.
  returned: always
  type: list
  elements: str
  sample: ["1 value(s) differ: featureGates.MPSSupport"]
values:
  description: The desired chart values (derived, with the inventory's values merged last).
  returned: state=present
  type: dict
values_diff:
  description: Each value that differs between the deployed release and the desired values.
  returned: state=present
  type: list
  elements: dict
  sample: [{path: featureGates.MPSSupport, before: null, after: true}]
user_overrides:
  description: Derived values that C(dra_driver.values) replaced.
  returned: state=present
  type: list
  elements: dict
crds:
  description: The chart's CRDs applied (or dry-run applied) before the upgrade, with whether each changed.
  returned: when an install or upgrade ran
  type: list
  elements: dict
gpu_operator:
  description: What was found of a GPU Operator (C(found), C(name), C(driver_container), C(device_plugin)), the
    driver root used and the pool nodes labelled to turn its device plugin off.
  returned: state=present
  type: dict
rollout:
  description: The last rollout check (C(done), C(message), C(plugin) counts, C(nodes_without_plugin),
    C(nodes_not_ready), C(deployments_not_ready)).
  returned: when waited
  type: dict
progress:
  description: One line per rollout check while waiting, C(<seconds>s - <status>).
  returned: always
  type: list
  elements: str
commands:
  description: The helm commands run, credentials replaced by C(********).
  returned: always
  type: list
  elements: str
"""

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
from ansible_collections.gpupool.core.plugins.module_utils.plan.waiting import Waiter

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

    def __init__(self):
        super().__init__()
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
    def pool_nodes(self):
        present = {p.name for p in self.cluster.present_pools}
        nodes = self.engine.list(NODE, label_selector=POOL_LABEL)
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
            daemonsets = self.engine.list(DAEMON_SET, s.namespace, label_selector=selector)
            deployments = self.engine.list(DEPLOYMENT, s.namespace, label_selector=selector)
            slices = self.engine.list(RESOURCE_SLICE) if self.engine.version(RESOURCE_SLICE, required=False) else []
            slice_nodes = [
                (sl.get("spec") or {}).get("nodeName")
                for sl in slices
                if (sl.get("spec") or {}).get("driver") == GPU_DRIVER
            ]
            probe.status = rollout_status(daemonsets, deployments, self.pool_nodes(), slice_nodes)
            return probe.status["done"], probe.status["message"]

        result = Waiter(
            self.params["wait_timeout"], self.params["wait_sleep"], progress=self.info["progress"].append
        ).until(probe)
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


def main():
    DraDriverModule()()


if __name__ == "__main__":
    main()
