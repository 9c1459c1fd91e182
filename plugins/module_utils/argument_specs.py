# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec pieces shared by the modules, 1:1 with the doc fragments in plugins/doc_fragments/.

Each piece here has a fragment of the same name (``gpupool.core.k8s_auth`` is AUTH, ``.pools`` POOLS,
``.apply`` APPLY, ``.nodes`` NODES, ``.wait`` WAIT, ``.drain`` DRAIN; ``gpupool.core.openstack`` is OPENSTACK), and a unit
test holds the two together, so an option has one spelling, one type and one default everywhere.
A module composes the pieces it documents with `compose()` and adds its own options.
"""

from __future__ import annotations

import copy

# Connection to the Kubernetes API server (fragment k8s_auth). Environment fallbacks follow kubernetes.core.
AUTH = dict(
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
    request_timeout=dict(type="float", default=30.0),
    request_retries=dict(type="int", default=5),
)

# The run this task belongs to (fragment k8s_auth.lease): every Kubernetes module checks its lease.
LEASE = dict(
    run_lease=dict(type="dict"),
)

# The validated inventory and the pools to work on (fragment k8s_auth.pools).
# `pools` is a list; Ansible also turns a comma-separated string or a single name into one.
POOLS = dict(
    # raw, not dict: the model answers a cluster that is not a mapping with its own message and example
    cluster=dict(type="raw", required=True),
    pools=dict(type="list", elements="str"),
)

# Modules that write through the server-side-apply engine (fragment k8s_auth.apply).
APPLY = dict(
    force_conflicts=dict(type="bool", default=False),
)

# How a pool's nodes are found (fragment k8s_auth.nodes).
NODES = dict(
    nodegroup_label=dict(type="str", default="magnum.openstack.org/nodegroup"),
    name_pattern=dict(type="str"),
)

# Waiting for the result (fragment k8s_auth.wait). Skipped in check mode.
WAIT = dict(
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=600),
    wait_sleep=dict(type="float", default=5.0),
)

# Draining nodes before they change or go away (fragment k8s_auth.drain); one spelling in every module.
# No defaults: an option left out means "as the inventory's drain policy says" (gpupool_cluster.drain, the pool's drain).
DRAIN = dict(
    drain=dict(type="bool"),
    drain_timeout=dict(type="int"),
    drain_grace_period=dict(type="int"),
)

# Connection to OpenStack (fragment gpupool.core.openstack), as openstack.cloud spells it.
OPENSTACK = dict(
    cloud=dict(type="raw"),
    auth_type=dict(type="str"),
    auth=dict(type="dict", no_log=True),
    region_name=dict(type="str"),
    validate_certs=dict(type="bool", aliases=["verify"]),
    ca_cert=dict(type="str", aliases=["cacert"]),
    client_cert=dict(type="str", aliases=["cert"]),
    client_key=dict(type="str", no_log=True, aliases=["key"]),
    api_timeout=dict(type="int"),
    interface=dict(type="str", default="public", choices=["admin", "internal", "public"], aliases=["endpoint_type"]),
)

PIECES = {
    "AUTH": AUTH,
    "LEASE": LEASE,
    "POOLS": POOLS,
    "APPLY": APPLY,
    "NODES": NODES,
    "WAIT": WAIT,
    "DRAIN": DRAIN,
    "OPENSTACK": OPENSTACK,
}


def compose(*pieces: dict, **own: dict) -> dict:
    """One argument spec from shared pieces and the module's own options.

    A module may re-declare a shared option only to change its default (its documentation says so);
    anything else about a shared option is fixed here.
    """
    spec: dict = {}
    for piece in pieces:
        for name, option in piece.items():
            if name in spec:
                raise ValueError("option %s is in two shared pieces" % name)
            spec[name] = copy.deepcopy(option)
    for name, option in own.items():
        if name in spec:
            changed = {k for k in set(option) | set(spec[name]) if option.get(k) != spec[name].get(k)}
            if changed - {"default"}:
                raise ValueError(
                    "option %s re-declares %s of a shared piece; only its default may change"
                    % (name, ", ".join(sorted(changed - {"default"})))
                )
        spec[name] = copy.deepcopy(option)
    return spec
