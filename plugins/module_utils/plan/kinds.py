# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes kinds the collection converges: API group, plural, scope and versions, most preferred first."""

from __future__ import annotations

from collections import namedtuple


class Kind(namedtuple("Kind", "kind group plural namespaced versions")):
    """A resource kind: API group, plural, scope and its versions, most preferred first."""

    __slots__ = ()

    def api_version(self, version):
        return "%s/%s" % (self.group, version) if self.group else version

    def describe(self, namespace, name):
        return "%s %s" % (self.kind, "%s/%s" % (namespace, name) if namespace else name)


RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")


DEVICE_CLASS = Kind("DeviceClass", "resource.k8s.io", "deviceclasses", False, RESOURCE_VERSIONS)


RESOURCE_CLAIM_TEMPLATE = Kind(
    "ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates", True, RESOURCE_VERSIONS
)


COMPUTE_DOMAIN = Kind("ComputeDomain", "resource.nvidia.com", "computedomains", True, ("v1beta2", "v1beta1"))


NODE = Kind("Node", "", "nodes", False, ("v1",))


CONFIG_MAP = Kind("ConfigMap", "", "configmaps", True, ("v1",))


NAMESPACE = Kind("Namespace", "", "namespaces", False, ("v1",))


# obj: the object to apply; pool: owning pool name; origin: inventory/option path for messages;
# info: builder facts (role, profile, selector origins) the modules report.
Desired = namedtuple("Desired", "obj pool origin info")
RESOURCE_SLICE = Kind("ResourceSlice", "resource.k8s.io", "resourceslices", False, RESOURCE_VERSIONS)
RESOURCE_CLAIM = Kind("ResourceClaim", "resource.k8s.io", "resourceclaims", True, RESOURCE_VERSIONS)
DAEMON_SET = Kind("DaemonSet", "apps", "daemonsets", True, ("v1",))
DEPLOYMENT = Kind("Deployment", "apps", "deployments", True, ("v1",))
CUSTOM_RESOURCE_DEFINITION = Kind(
    "CustomResourceDefinition", "apiextensions.k8s.io", "customresourcedefinitions", False, ("v1",)
)
# The NVIDIA GPU Operator's singleton configuration (read only: gpupool never writes it).
CLUSTER_POLICY = Kind("ClusterPolicy", "nvidia.com", "clusterpolicies", False, ("v1",))
# Read by the advisor (which pods wait on a claim, which a re-partition would evict); never written.
POD = Kind("Pod", "", "pods", True, ("v1",))
