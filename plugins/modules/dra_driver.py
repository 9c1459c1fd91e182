# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dra_driver
short_description: Install and keep right the NVIDIA DRA driver (Helm) the GPU pools need
version_added: "1.0.0"
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
    C(dra_driver.values) are merged last; at a key gpupool derives they are merged (toleration lists extended,
    gates joined and checked) or refused by the inventory check (docs/modules/dra-driver.md has the table)."
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
  - "A release an interrupted helm left C(pending-install), C(pending-upgrade) or C(pending-rollback) (helm was
    killed with its run; every later helm write would fail with I(another operation is in progress)) is taken over
    before the upgrade: rolled back (C(helm rollback)) to its last deployed revision, or, never deployed,
    uninstalled (its CRDs stay) and installed again. RV(recovered) and the first of RV(reasons) say which, and a
    progress line says so while it runs. Only a run that holds the run lease (O(run_lease), as C(site.yml) passes
    it) does this, since then no other gpupool run's helm can still be working on the release. A pending revision that
    gpupool did not make (each gpupool upgrade labels its revision C(gpupool.io/run)) is refused with a sentence
    until it is 10 minutes old: a person's or another tool's helm may still be running."
  - "The release is one per cluster and has one owner, the inventory (C(gpupool_cluster.owner)) that installed or
    adopted it, recorded as the Helm release label C(gpupool.io/owner) (C(helm upgrade --labels); Helm keeps it on
    the Secret of each revision). A release of another owner is never written, in check mode or not: its values
    (C(helm get values --all)) are compared with what this inventory's present pools need - the chart and version,
    the feature gates they need, a kubelet-plugin toleration of each NoSchedule/NoExecute taint of theirs,
    ComputeDomains and the IMEX mode for multi-node NVLink pools, C(nvidiaDriverRoot), the plugin's pool-label
    affinity and every other key of C(dra_driver.values). Nothing missing: the step is ok (changed=false) and only
    waits for the rollout on this inventory's pool nodes. Something missing: it fails before any write, naming the
    owner and each difference. O(state=absent) leaves another owner's release (and CRDs) installed, with a warning.
    A release with no owner record (installed by hand, or by a gpupool from before owners) is adopted by the first
    owner that runs: the upgrade that records it is one of RV(reasons)."
  - When the step is cancelled (SIGTERM from an AWX cancel, Ctrl-C) while helm runs, helm gets SIGTERM and
    20 seconds to record the release as failed (the next run upgrades over it) before it is killed.
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
  # wait, wait_timeout and wait_sleep come from the fragment gpupool.core.k8s_auth.wait; these say what differs.
  wait:
    description:
      - Wait until the driver's rollout is done (see the description). Skipped in check mode.
    default: true
  wait_timeout:
    description: Seconds to wait for the rollout (and for helm to uninstall).
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
      - Password or token for O(registry_username). Never on helm's command line (where C(ps) shows it) and never
        shown. helm reads it on standard input (C(helm registry login --password-stdin), C(helm repo add
        --password-stdin)) into a private registry config or C(repositories.yaml) (mode 0600, in a 0700 temporary
        directory removed when the step ends), which later helm commands are pointed at.
    type: str
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.wait
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
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
desired:
  description: The release the inventory asks for (name, namespace, chart version); the run summary words an install or
    upgrade with it.
  returned: state=present or absent
  type: dict
  sample: {release: dra-driver-nvidia-gpu, namespace: dra-driver-nvidia-gpu, version: 0.5.1}
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
  description: Each value that differs between the deployed release and the desired values (empty for another
    owner's release, which is never upgraded).
  returned: state=present
  type: list
  elements: dict
  sample: [{path: featureGates.MPSSupport, before: null, after: true}]
user_overrides:
  description: Derived values that C(dra_driver.values) changed, each with its C(rule) - C(merged) (a list
    extended) or C(yours) (your value replaced gpupool's default); keys gpupool derives are otherwise refused.
  returned: state=present
  type: list
  elements: dict
owner:
  description: Whose release it is - C(owner) (the C(gpupool.io/owner) of the release, this inventory's owner after
    an install or adoption), C(mine), C(adopted) (this run recorded the owner on a release that had none),
    C(serves) (for another owner's release, whether it has everything this inventory's pools need) and
    C(missing) (each thing it lacks - C(need), C(for) (the pools or inventory key), C(release_has)).
  returned: state=present, and state=absent when another owner's release was left
  type: dict
  sample: {owner: team-a, mine: false, adopted: false, serves: false, missing: [{need: gate DynamicMIG on,
           for: "pools[0] (a100).mig.mode", release_has: "off"}]}
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
recovered:
  description: How a release left pending by an interrupted helm was taken over - C(action) (C(rollback) or
    C(reinstall)), C(revision) (the one rolled back to) and C(pending) (C(revision), C(status), C(updated),
    C(made_by) - the gpupool run that left it, or C(not gpupool)).
  returned: when the release was pending
  type: dict
  sample: {action: rollback, revision: 4, pending: {revision: 5, status: pending-upgrade,
           updated: "2026-11-26T18:30:13.144465619Z", made_by: gpupool_host_1a2b3c4d}}
commands:
  description: The helm commands run, credentials replaced by C(********) (none is on a command line).
  returned: always
  type: list
  elements: str
"""
