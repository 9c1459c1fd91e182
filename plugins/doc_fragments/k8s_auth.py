# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Connection options shared by every gpupool.core Kubernetes module (action group gpupool.core.k8s).
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to the kubeconfig file.
      - Defaults to C(gpupool_cluster.kubeconfig) from the O(cluster) data, then the E(K8S_AUTH_KUBECONFIG)
        environment variable, then E(KUBECONFIG) or C(~/.kube/config) (in a pod without either, the pod's
        service account).
    type: path
  context:
    description:
      - Kubeconfig context to use.
      - Defaults to C(gpupool_cluster.context), then E(K8S_AUTH_CONTEXT), then the kubeconfig's current context.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://k8s.example.org:6443).
      - Overrides the kubeconfig's server; with O(api_key) no kubeconfig is needed. Env E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API server. Env E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Env E(K8S_AUTH_VERIFY_SSL).
      - Defaults to the kubeconfig's setting (verify).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate file that signed the API server's certificate. Env E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate file for TLS client authentication. Env E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key file of O(client_cert). Env E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  request_timeout:
    description:
      - Seconds to wait for each API response (connecting takes at most 10 seconds of it).
    type: float
    default: 30
  request_retries:
    description:
      - How often a request is retried, with exponential backoff, after HTTP 429 (honouring C(Retry-After)),
        500, 502, 503, 504 or a connection error (refused, reset, timed out).
    type: int
    default: 5
requirements:
  - kubernetes >= 31.0.0 (Python client)
notes:
  - Use C(module_defaults) with the C(group/gpupool.core.k8s) action group to set the connection options once.
  - The identity needs the permissions of the ClusterRole in the collection's C(docs/rbac/gpupool-clusterrole.yaml);
    a request it is not allowed to make fails with the server's 403 message and a pointer to that file.
"""

    # The run lease every Kubernetes module checks (gpupool.core.run_lease).
    LEASE = r"""
options:
  run_lease:
    description:
      - The run lease this task belongs to, as M(gpupool.core.run_lease) returns it (its C(lease) value). Before its
        first request the module checks that its run still holds that C(coordination.k8s.io) Lease (one GET) and
        renews it when a third of its duration has passed (one write, never in check mode); when another run holds
        it, the module fails before any write, naming the holder.
      - While the task runs (a MIG wave, a drain, a Magnum resize, a helm upgrade) the lease is renewed in the
        background a third of its duration apart. Once a renewal finds it taken, deleted or released, or renewals
        fail for a whole lease duration, the task stops before its next write (and at the next look of a wait)
        and fails saying so; what it wrote before is finished by the next run.
      - Every write is fenced. It is sent only if less than the lease duration has passed, by the process's
        monotonic clock, since the last renewal that reached the server (no request is made for that check). A
        task never takes the lease again; one that names another run, or was deleted or released, fails the task
        before its first write, naming the holder.
      - playbooks/site.yml sets it for every task through C(module_defaults) (the nodegroups role passes it to
        M(gpupool.core.nodegroup), whose Magnum writes and drains it guards the same way). Omitted, no lease is
        looked at.
    type: dict
"""

    # The validated inventory and the pools to work on.
    POOLS = r"""
options:
  cluster:
    description:
      - The cluster's GPU-pool description, usually C({{ gpupool_cluster }}).
      - Validated with the collection's pool model before anything is read or written; an invalid inventory fails
        with every problem and its path (see M(gpupool.core.validate)).
      - A value that is not a mapping is refused by the model with the expected shape.
    type: raw
    required: true
  pools:
    description:
      - Names of the pools to work on. Default is every pool in O(cluster).
      - Pruning, where the module prunes, is limited to objects of these pools.
    type: list
    elements: str
"""

    # Modules that write through the server-side-apply engine.
    APPLY = r"""
options:
  force_conflicts:
    description:
      - Take over fields another field manager owns (server-side apply C(force)).
      - Without it such a conflict fails and names the other manager and the fields.
    type: bool
    default: false
"""

    # How a pool's nodes are found (node_pool, mig_layout, pool_info).
    NODES = r"""
options:
  nodegroup_label:
    description:
      - Node label that holds the Magnum nodegroup name; a pool's nodes are those with its nodegroup's name
        (or those matching the pool's C(node_selector)).
    type: str
    default: magnum.openstack.org/nodegroup
  name_pattern:
    description:
      - Python regular expression; nodes whose name matches it also belong to the pool.
      - C({pool}) and C({nodegroup}) are replaced by the pool and nodegroup names, for example V(-{nodegroup}-\\d+$).
    type: str
"""

    # Waiting for the result (node_pool, compute_domain). Skipped in check mode.
    WAIT = r"""
options:
  wait:
    description:
      - Wait for the result to be ready (what "ready" means is in the module's description). Skipped in check mode.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait at most.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two checks while waiting.
    type: float
    default: 5.0
"""

    # Draining nodes before their GPUs change or they go away (nodegroup, mig_layout).
    DRAIN = r"""
options:
  drain:
    description:
      - Cordon the nodes and evict the pods that use GPUs before the nodes change, and wait until those pods are gone.
      - "Default: the inventory's drain policy for each pool (C(gpupool_cluster.drain), changed by the pool's
        C(drain)), which drains unless it says C(enabled: false); without the inventory (standalone), V(false).
        The policy also names pods never evicted (C(skip_pods), a label selector) and what a refusing
        PodDisruptionBudget does (C(when_budget_blocks): wait until the timeout, or fail at once)."
      - "GPU pods: pods requesting C(nvidia.com/gpu*), C(nvidia.com/mig-*) or C(gpupool.io/*) resources, or with DRA
        resource claims. DaemonSet and static pods are not evicted (a warning names them); pods that do not use GPUs
        are left alone."
      - Evictions go through the Eviction API, so PodDisruptionBudgets apply.
      - Skipped in check mode; the result and the diff list the nodes and the pods that would be evicted.
    type: bool
  drain_timeout:
    description:
      - Seconds for one drain (evictions a PodDisruptionBudget refuses, and waiting for the evicted pods to go).
      - Default the drain policy's C(timeout) (600 unless the inventory says otherwise).
    type: int
  drain_grace_period:
    description:
      - Grace period for evicted pods, in seconds. Default the drain policy's C(grace_period), else each pod's own
        C(terminationGracePeriodSeconds).
    type: int
"""
