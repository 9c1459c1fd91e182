# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: compute_domain
short_description: Converge the ComputeDomains of multi-node NVLink GPU pools
version_added: "1.0.0"
description:
  - For each present pool with C(nvlink.mode=compute_domain) or C(nvlink.mode=host_imex) (GB200 NVL72 and other
    multi-node NVLink GPUs; with host-managed IMEX the driver still hands out the domain's channel), converges
    a C(resource.nvidia.com) ComputeDomain with server-side apply (field manager C(gpupool)).
  - The ComputeDomain is named C(nvlink.compute_domain.name) (default the pool name) in
    C(nvlink.compute_domain.namespace); its C(spec.channel.resourceClaimTemplate.name) is
    C(nvlink.compute_domain.channel_template) (default C(<name>-channel)), the ResourceClaimTemplate the NVIDIA DRA
    driver's controller then creates for workloads, and C(spec.channel.allocationMode) is
    C(nvlink.compute_domain.allocation_mode).
  - Uses C(resource.nvidia.com/v1beta2) where the cluster serves it, else C(v1beta1).
  - The ComputeDomain spec is immutable (the CRD validates C(self == oldSelf)). A changed spec fails with the fields
    that differ unless O(recreate=true), which deletes the ComputeDomain, waits until it is gone and creates it again.
  - ComputeDomains carry C(app.kubernetes.io/managed-by=gpupool) and C(gpupool.io/pool=<pool>); ComputeDomains without
    these labels are never modified or deleted. With O(prune), gpupool's ComputeDomains that are no longer wanted are
    deleted.
  - Every object also carries C(gpupool.io/owner=<owner>) (C(gpupool_cluster.owner), default its C(name)). Prune
    deletes only this owner's objects, so two inventories on one cluster never prune each other's; a name another
    owner's object holds is refused before the task writes anything. Objects made before the owner label are
    adopted when wanted (action C(adopted), with a warning), pruned only when their pool is one of this
    inventory's, and otherwise left alone with a warning.
  - Needs the ComputeDomain CRD (the NVIDIA DRA driver chart with C(resources.computeDomains.enabled=true)) and the
    namespace. In check mode on a cluster without the CRD, when the inventory's DRA driver is enabled (the driver
    step of the run installs the CRDs), each ComputeDomain is reported as one that would be created once the
    driver's CRDs are installed; outside check mode, or with the driver disabled, a missing CRD fails with its fix.
author:
  - gpupool.core developers (@gpupool)
options:
  recreate:
    description:
      - Delete and re-create a ComputeDomain whose spec must change. Workloads using its IMEX channels lose them.
    type: bool
    default: false
  wait:
    description:
      - Wait until every ComputeDomain reports C(status.status=Ready) (set by the DRA driver's controller once its IMEX
        daemons are ready). Skipped in check mode.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for Ready (and for a deleted ComputeDomain to go away with O(recreate)).
    type: int
    default: 300
  wait_sleep:
    description: Seconds between two checks while waiting.
    type: float
    default: 5.0
  prune:
    description:
      - Delete gpupool's ComputeDomains of the pools in scope that are no longer wanted, in any namespace.
    type: bool
    default: true
extends_documentation_fragment:
  - gpupool.core.k8s_auth
  - gpupool.core.k8s_auth.lease
  - gpupool.core.k8s_auth.pools
  - gpupool.core.k8s_auth.wait
  - gpupool.core.k8s_auth.apply
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpupool.core.attributes.controller
  - gpupool.core.attributes
attributes:
  check_mode:
    details: Writes are sent with C(dryRun=All); with O(recreate) the new object is predicted by a dry-run create.
      Before the DRA driver's CRDs are installed nothing of the kind can be sent; the objects are reported as would be
      created once they are (C(pending)).
"""

EXAMPLES = r"""
- name: ComputeDomains of the NVLink pools, waiting for Ready
  gpupool.core.compute_domain:
    cluster: "{{ gpupool_cluster }}"
    wait: true
    wait_timeout: 600

- name: Apply a changed allocation mode (re-creates the ComputeDomain)
  gpupool.core.compute_domain:
    cluster: "{{ gpupool_cluster }}"
    pools: [gpu-gb200]
    recreate: true
"""

RETURN = r"""
objects:
  description: One entry per ComputeDomain converged or pruned.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(ComputeDomain).
      type: str
    name:
      description: Name.
      type: str
    namespace:
      description: Namespace.
      type: str
    pool:
      description: Pool.
      type: str
    action:
      description: C(created), C(updated), C(adopted), C(recreated), C(unchanged), C(deleted) or C(failed).
      type: str
    changed:
      description: Whether the object changed (or would, in check mode).
      type: bool
    status:
      description: C(status.status) of the ComputeDomain (C(Ready), C(NotReady)) or null when not reported.
      type: str
    pending:
      description: In check mode before the DRA driver's CRDs are installed, what must happen first
        (C(once the DRA driver's CRDs are installed)).
      type: str
  sample: [{kind: ComputeDomain, name: gb200-domain, namespace: ml-training, pool: gpu-gb200, action: created,
            changed: true, status: null}]
api_version:
  description: The C(resource.nvidia.com) version used (null when no ComputeDomain is wanted and the CRD is absent).
  returned: success
  type: str
  sample: resource.nvidia.com/v1beta1
msg:
  description: In check mode before the DRA driver's CRDs are installed, what would be created once they are.
  returned: check mode, when the cluster does not serve ComputeDomain yet
  type: str
  sample: would create ComputeDomain ml-training/gb200-domain once the DRA driver's CRDs are installed
wait_log:
  description: Progress lines while waiting.
  returned: when O(wait=true)
  type: list
  elements: str
diff:
  description: Before and after of each changed ComputeDomain (with C(--diff)).
  returned: when diff mode is on
  type: list
  elements: dict
"""
