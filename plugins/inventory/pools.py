# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: pools
short_description: GPU clusters and the nodes of their pools as Ansible hosts and groups
version_added: "1.0.0"
description:
  - Reads GPU-pool cluster descriptions (the C(gpupool_cluster) data of the collection's C(docs/inventory.md)),
    validates each with the collection's pool model and expands it into hosts and groups.
  - One host per cluster, named after C(gpupool_cluster.name), in the group C(gpupool_clusters), with
    C(ansible_connection=local) and the cluster's data as C(gpupool_cluster); the collection's playbooks
    (C(gpupool.core.site), C(gpupool.core.validate)) run on these hosts.
  - One host per GPU node of every present pool, in the groups C(pool_<name>) and C(gpupool_nodes), so that
    node-side roles and modules (M(gpupool.core.mig_config), M(gpupool.core.gpu_facts), host IMEX) can target
    a pool. The pool's name has its dashes replaced by C(_) in the group name (V(gpu-t4) is C(pool_gpu_t4));
    an empty pool still has its group.
  - Nodes of multi-node NVLink pools (C(nvlink.mode) V(compute_domain) or V(host_imex)) are also in the group
    C(gpupool_imex_nodes), where the C(gpupool.core.site) playbook sets their host C(nvidia-imex) service in
    the pool's mode (role C(gpupool.core.imex)).
  - Nodes come from the first source in O(sources) that answers. From Kubernetes the host is the Node's name,
    C(ansible_host) its C(InternalIP), and a node belongs to the pool the modules would assign it to (the pool's
    C(node_selector), else the Magnum nodegroup label, plus O(name_pattern)). From Magnum, which knows
    addresses but not node names, the host is named by the address of each server of the pool's nodegroup.
  - When no source answers (no credentials, an unreachable API) the inventory holds the declared data only
    (the cluster hosts and empty pool groups) and a warning says why, unless O(strict_discovery) is set.
  - Works as an AWX or Automation Controller inventory source (a file of this plugin in the project,
    C(source=scm)); see the collection's C(docs/awx.md).
  - The file name must end in C(pools.yml) or C(pools.yaml), for example C(inventories/site.pools.yml).
author:
  - gpupool.core developers (@gpupool)
requirements:
  - pydantic >= 2.6
  - kubernetes >= 31.0.0 (Python client, for O(sources=kubernetes))
  - openstacksdk >= 4.0.0 (for O(sources=magnum))
extends_documentation_fragment:
  - constructed
options:
  plugin:
    description: The name of this plugin; this is how Ansible knows the file is for it.
    required: true
    type: str
    choices: [gpupool.core.pools]
  clusters:
    description:
      - Cluster descriptions written in this file, each one what C(gpupool_cluster) holds.
    type: list
    elements: dict
    default: []
  cluster_files:
    description:
      - YAML files (shell globs allowed), relative to this file, each with a top-level C(gpupool_cluster)
        key, for example the C(host_vars/<cluster>/gpupool.yml) files of a static inventory.
      - Vault-encrypted files work like in host_vars.
      - A pattern that matches no file is an error.
    type: list
    elements: str
    default: []
  sources:
    description:
      - Where GPU nodes are read from, tried in this order per cluster; the first that answers is used.
      - V(kubernetes) lists the cluster's Nodes with C(gpupool_cluster.kubeconfig) and C(context) (else
        E(K8S_AUTH_KUBECONFIG), E(KUBECONFIG), C(~/.kube/config) or the pod's service account).
      - V(magnum) reads the nodegroups of C(gpupool_cluster.magnum) with its C(cloud) (a clouds.yaml name or a
        cloud dict).
      - An empty list reads nothing, so the inventory holds the declared data only.
    type: list
    elements: str
    choices: [kubernetes, magnum]
    default: [kubernetes, magnum]
  nodegroup_label:
    description:
      - Node label that holds the Magnum nodegroup name (as in the modules' option of that name).
    type: str
    default: magnum.openstack.org/nodegroup
  name_pattern:
    description:
      - Python regular expression; Nodes whose name matches it also belong to the pool (as in the modules).
      - C({pool}) and C({nodegroup}) are replaced by the pool and nodegroup names.
    type: str
  request_timeout:
    description:
      - Seconds to wait for each answer of Kubernetes or Magnum; an inventory should not hang on a dead API.
    type: float
    default: 10
  strict_discovery:
    description:
      - Fail when no source in O(sources) answers for a cluster, instead of a warning and declared data only.
    type: bool
    default: false
notes:
  - A key written twice in one mapping of this file or of a O(cluster_files) file fails the inventory with the
    file, the line and the key path (YAML would keep the last value without a word); a key that overrides what a
    C(<<) merge key brings in is standard YAML and accepted.
  - Every cluster is validated before any API is asked; an invalid one fails the inventory with every problem
    and the path of its key, as M(gpupool.core.validate) does.
  - Credentials are never copied into host variables other than C(gpupool_cluster), which holds what the
    cluster description holds; keep passwords out of it (a clouds.yaml name, or vault).
"""

EXAMPLES = r"""
# inventories/cern.pools.yml: the example inventory's cluster, expanded into its GPU nodes
plugin: gpupool.core.pools
cluster_files:
  - example/host_vars/*/gpupool.yml

# Another file, inventories/lab.pools.yml: inline clusters, nodes read from Kubernetes only, a group per pool label:
#   plugin: gpupool.core.pools
#   clusters:
#     - name: lab
#       kubeconfig: ~/.kube/lab.conf
#       pools:
#         - name: gpu-t4
#           node_selector: {nvidia.com/gpu.product: Tesla-T4}
#           gpu: {model: T4}
#   sources: [kubernetes]
#   keyed_groups:
#     - key: gpupool_pool
#       prefix: gpupool
"""

import glob
import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.model.names import nodegroup_name
from ansible_collections.gpupool.core.plugins.module_utils.model.strict import PYDANTIC_IMPORT_ERROR
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import problems_of
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes.inventory_hosts import (
    CLUSTERS_GROUP,
    NODES_GROUP,
    groups_of,
    hosts_from_nodegroups,
    hosts_from_nodes,
)
from ansible_collections.gpupool.core.plugins.plugin_utils.inventory_files import keys_written_twice, text_reader


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "gpupool.core.pools"
    # The cluster data comes from files the operator wrote, trusted like host_vars (ansible-core >= 2.19 marks
    # it so; ansible-inventory --list then prints plain strings, which AWX's inventory import reads). What
    # discovery adds is DNS names, addresses and booleans, which cannot hold a template.
    trusted_by_default = True

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("pools.yml", "pools.yaml"))

    def parse(self, inventory, loader, path, cache=False):
        super().parse(inventory, loader, path, cache)
        self._refuse_keys_written_twice([path])
        self._read_config_data(path)
        if PYDANTIC_IMPORT_ERROR is not None:
            raise AnsibleParserError(
                "gpupool.core.pools needs the Python package pydantic >= 2.6 on the controller "
                "(pip install 'pydantic>=2.6'): %s" % PYDANTIC_IMPORT_ERROR
            )
        declared = self._declared(os.path.dirname(os.path.abspath(path)))
        clusters = []
        for where, raw in declared:  # every cluster is checked before any API is asked
            try:
                clusters.append((load_cluster(raw, root=where), raw))
            except Problems as exc:
                raise AnsibleParserError("%s: %s" % (path, exc.render()))
        names = [cluster.name for cluster, unused_raw in clusters]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise AnsibleParserError(
                "%s: cluster(s) %s are declared more than once; each cluster is one host" % (path, ", ".join(twice))
            )
        self.inventory.add_group(CLUSTERS_GROUP)
        self.inventory.add_group(NODES_GROUP)
        node_owner = {}
        for cluster, raw in clusters:
            self._add_cluster(cluster, raw)
            for host in self._discover(cluster):
                if host["name"] in node_owner or host["name"] in names:
                    taken = (
                        "a node of %s" % node_owner[host["name"]]
                        if host["name"] in node_owner
                        else "the cluster host %s" % host["name"]
                    )
                    raise AnsibleParserError(
                        "%s: host name %s is taken twice (a node of %s, and %s); Ansible host names must be unique, "
                        "so list these clusters in separate inventory files" % (path, host["name"], cluster.name, taken)
                    )
                node_owner[host["name"]] = cluster.name
                self._add_node(host)

    # ---- declared clusters -----------------------------------------------------------------------
    def _declared(self, base):
        """[(path of the data for error messages, raw gpupool_cluster data)] from clusters and cluster_files."""
        out = [("clusters[%d]" % index, raw) for index, raw in enumerate(self.get_option("clusters") or [])]
        for index, pattern in enumerate(self.get_option("cluster_files") or []):
            full = os.path.join(base, os.path.expanduser(pattern))
            matches = sorted(glob.glob(full))
            if not matches:
                raise AnsibleParserError(
                    "cluster_files[%d]: %s matches no file (relative to %s)" % (index, pattern, base)
                )
            self._refuse_keys_written_twice(matches)
            for match in matches:
                data = self.loader.load_from_file(match, cache="none") or {}
                if not isinstance(data, dict) or "gpupool_cluster" not in data:
                    raise AnsibleParserError(
                        "%s (cluster_files[%d]) has no top-level gpupool_cluster key; it must hold "
                        "one cluster as in host_vars/<cluster>/gpupool.yml" % (match, index)
                    )
                out.append(("%s: gpupool_cluster" % os.path.relpath(match, base), data["gpupool_cluster"]))
        return out

    def _refuse_keys_written_twice(self, paths):
        """A key written twice in one mapping of these files: YAML would keep the last value without a word, and
        ansible-core's own check cannot tell it from a `<<` merge override (ansible.cfg, docs/inventory.md)."""
        twice = keys_written_twice(paths, text_reader(self.loader))
        if twice:
            raise AnsibleParserError(Problems(problems_of(twice), subject="in the inventory's YAML").render())

    def _add_cluster(self, cluster, raw):
        self.inventory.add_host(cluster.name, group=CLUSTERS_GROUP)
        self.inventory.set_variable(cluster.name, "ansible_connection", "local")
        self.inventory.set_variable(cluster.name, "ansible_python_interpreter", "{{ ansible_playbook_python }}")
        self.inventory.set_variable(cluster.name, "gpupool_cluster", raw)
        for group in groups_of(cluster):
            self.inventory.add_group(group)

    def _add_node(self, host):
        name = host["name"]
        for group in host["groups"]:
            self.inventory.add_group(group)
            self.inventory.add_host(name, group=group)
        for key, value in host["vars"].items():
            self.inventory.set_variable(name, key, value)
        strict = self.get_option("strict")
        variables = self.inventory.get_host(name).get_vars()
        self._set_composite_vars(self.get_option("compose"), variables, name, strict=strict)
        self._add_host_to_composed_groups(self.get_option("groups"), variables, name, strict=strict)
        self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, name, strict=strict)

    # ---- discovery -------------------------------------------------------------------------------
    def _discover(self, cluster):
        """The node hosts of the first source that answers; declared data only (a warning) when none does."""
        failures = []
        for source in self.get_option("sources") or []:
            try:
                hosts, warnings = (self._from_kubernetes if source == "kubernetes" else self._from_magnum)(cluster)
            except _Unavailable as exc:
                failures.append("%s: %s" % (source, exc))
                continue
            except GpupoolError as exc:
                failures.append("%s: %s" % (source, exc.describe()))
                continue
            for warning in warnings:
                self.display.warning("gpupool.core.pools: %s" % warning)
            self.display.vvv("gpupool.core.pools: %s: %d GPU node(s) from %s" % (cluster.name, len(hosts), source))
            return hosts
        if failures:
            if self.get_option("strict_discovery"):
                raise AnsibleParserError(
                    "gpupool.core.pools: cluster %s: no source of GPU nodes answered and "
                    "strict_discovery is set: %s" % (cluster.name, "; ".join(failures))
                )
            self.display.warning(
                "gpupool.core.pools: cluster %s: no source of GPU nodes answered, so only its "
                "declared data is in the inventory (no node hosts): %s" % (cluster.name, "; ".join(failures))
            )
        return []

    def _from_kubernetes(self, cluster):
        from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import (
            K8sError,
            MissingDependency,
            connect,
        )
        from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NODE

        try:
            client = connect({"request_timeout": self.get_option("request_timeout"), "request_retries": 0}, cluster)
            nodes = client.list(NODE.group, NODE.versions[0], NODE.plural)
        except MissingDependency as exc:
            raise _Unavailable(str(exc))
        except K8sError as exc:
            raise _Unavailable(exc.describe())
        return hosts_from_nodes(cluster, nodes, self.get_option("nodegroup_label"), self.get_option("name_pattern"))

    def _from_magnum(self, cluster):
        if cluster.magnum is None:
            raise _Unavailable("the cluster has no magnum section")
        from ansible_collections.gpupool.core.plugins.module_utils.openstack.connection import (
            ConnectionConfigError,
            connect_from_params,
        )
        from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum import MagnumClient
        from ansible_collections.gpupool.core.plugins.module_utils.openstack.magnum_errors import MagnumError

        timeout = int(max(1, self.get_option("request_timeout")))
        cloud = cluster.magnum.cloud
        params = (
            {"cloud": dict(cloud, api_timeout=cloud.get("api_timeout", timeout))}
            if isinstance(cloud, dict)
            else {"cloud": cloud, "api_timeout": timeout}
        )
        try:
            client = MagnumClient(connect_from_params(params), retries=0)
            client.negotiate()
            magnum_cluster = client.get_cluster(cluster.magnum.cluster)
            views = {}
            for pool in cluster.present_pools:
                name = nodegroup_name(pool)
                if name is not None:
                    views[name] = client.get_nodegroup(magnum_cluster["uuid"], name)
        except (ConnectionConfigError, MagnumError) as exc:
            raise _Unavailable(str(exc))
        return hosts_from_nodegroups(cluster, views)


class _Unavailable(Exception):
    """A source of GPU nodes that did not answer; the message says why."""
