# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Semantic checks: what spans fields or pools, so that `validate` refuses whatever a later module would.

Every check is a function (cluster, root) -> [(path, message)] with the pool's index and name in the path and
a fix in the message; nothing here does I/O. `CHECKS` is the one list load_cluster runs, once per run
(module_utils/run_cluster.py); the builders in plan/ take the validated cluster and do not run them again. A name
that one pool may hold alone is checked with model/claims.py.
"""

from __future__ import annotations

from typing import Callable, List, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.model.claims import Claims
from ansible_collections.gpupool.core.plugins.module_utils.model.cluster_checks import (
    cluster_identity_problems,
    orphan_guard_problems,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.compute_domain_checks import compute_domain_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.device_class_checks import device_class_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.dra_driver_checks import dra_driver_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.drain_checks import drain_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.gates import _gate_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.gpu_checks import gpu_model_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.imex_checks import imex_node_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_checks import (
    mig_layout_problems,
    mig_mode_mix_problems,
    time_slicing_interval_problems,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_configs import mig_config_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.mig_group_checks import mig_group_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.nodegroup_checks import (
    node_lookup_problems,
    nodegroup_name_problems,
    nodegroup_owner_problems,
    nodegroup_size_problems,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.paths import pool_label, pool_path
from ansible_collections.gpupool.core.plugins.module_utils.model.sharing_checks import sharing_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.syntax import DNS_LABEL_RULE, is_dns_label
from ansible_collections.gpupool.core.plugins.module_utils.model.taint_checks import taint_problems
from ansible_collections.gpupool.core.plugins.module_utils.model.tenant_checks import tenant_problems

Problem = Tuple[str, str]
Check = Callable[..., List[Problem]]


def pool_name_problems(cluster, root: str) -> List[Problem]:
    """Pool names are DNS labels and unique."""
    out, claims = [], Claims()
    for pool in cluster.pools:
        at = pool_path(root, pool) + ".name"
        if not is_dns_label(pool.name):
            out.append((at, "%r is not a DNS label: use %s" % (pool.name, DNS_LABEL_RULE)))
        clash = claims.clash(pool.name, pool._index)
        if clash:
            out.append(
                (
                    at,
                    "duplicate pool name %r (also %s); pool names must be unique"
                    % (pool.name, pool_label(clash.holder, None)),
                )
            )
    return out


def empty_cluster_problems(cluster, root: str) -> List[Problem]:
    """A cluster without any present pool needs allow_empty: true (the modules would prune every gpupool object)."""
    if cluster.present_pools or cluster.allow_empty:
        return []
    what = "has no pools" if not cluster.pools else "has only absent pools"
    return [
        (
            root + ".pools",
            "the cluster %s, so the modules would delete every DeviceClass, ComputeDomain, MIG config "
            "and node label that gpupool manages in it; if that is what you want, set %s.allow_empty: true, "
            "otherwise add the pools" % (what, root),
        )
    ]


def gate_problems(cluster, root: str) -> List[Problem]:
    """The DRA feature gates the pools need are not switched off, and no two of them conflict (the driver would not start)."""
    return _gate_problems(cluster, root)


# In the order the problems are reported: the pool list, each pool's own settings, what spans pools, then the
# tenants (their templates stand on the pools' classes) and the driver gates all of them need.
CHECKS: List[Check] = [
    cluster_identity_problems,
    orphan_guard_problems,
    pool_name_problems,
    empty_cluster_problems,
    nodegroup_size_problems,
    nodegroup_name_problems,
    nodegroup_owner_problems,
    node_lookup_problems,
    gpu_model_problems,
    mig_layout_problems,
    mig_group_problems,
    time_slicing_interval_problems,
    sharing_problems,
    taint_problems,
    drain_problems,
    mig_config_problems,
    device_class_problems,
    compute_domain_problems,
    imex_node_problems,
    mig_mode_mix_problems,
    dra_driver_problems,
    tenant_problems,
    gate_problems,
]


def semantic_problems(cluster, root: str = "gpupool_cluster", skip=()) -> List[Problem]:
    """Every problem of a shape-valid cluster; `skip`: checks that do not apply (e.g. on a partial cluster)."""
    problems: List[Problem] = []
    for check in CHECKS:
        if check not in skip:
            problems += check(cluster, root)
    return problems
