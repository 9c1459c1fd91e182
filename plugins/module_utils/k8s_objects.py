# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure builders: validated pool model -> the Kubernetes objects the collection wants.

Nothing here does I/O. Every object derives from `pool_model.Cluster`/`Pool`
(the one pool structure); the apply engine (k8s_apply.py) converges them.

Objects and names
-----------------
DeviceClasses (resource.k8s.io, cluster-scoped), per present pool with
``device_classes.defaults`` (reference nvidia-dra-mig-imex.md §1.5-1.7):

* ``<pool>``                full GPUs: ``type == 'gpu'`` and the GPU's product names
  (MIG off, dynamic MIG, or static MIG where some GPU index has no layout);
* ``<pool>-<profile>``      one per MIG profile (static: the profiles of the layout(s);
  dynamic: every profile of the GPU), ``type == 'mig' && profile == '<profile>'``;
  ``+`` in a profile name becomes ``-`` (``1g.5gb+me`` -> ``<pool>-1g.5gb-me``);
* ``<pool>-vfio``           with ``passthrough``: ``type == 'vfio'``;
* ``device_classes.extra``  under their own name: the pool's product (and MIG profile
  when given), ``min_memory`` as a capacity comparison, then each user selector.

Sharing (time-slicing, MPS) is an opaque ``GpuConfig``/``MigDeviceConfig`` in the
class. ``device_classes.extended_resource_names`` sets ``extendedResourceName:
gpupool.io/<class>`` on generated classes. A DeviceClass selects devices, never
nodes: pin workloads to a pool's nodes with the pool's node label and toleration.

Every object carries ``app.kubernetes.io/managed-by: gpupool`` and
``gpupool.io/pool: <pool>``; the engine only updates and prunes objects with them.
"""
from __future__ import annotations

import re
from collections import namedtuple

from ansible_collections.gpupool.core.plugins.module_utils.mig_catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.pool_model import (
    DNS_LABEL, LABEL_KEY, MANAGED_BY, POOL_LABEL, InventoryError, Sharing,
)

DRIVER = "gpu.nvidia.com"
CD_DRIVER = "compute-domain.nvidia.com"
NVIDIA_CONFIG_API = "resource.nvidia.com/v1beta1"
EXTENDED_RESOURCE_DOMAIN = "gpupool.io"
NODEGROUP_LABEL = "magnum.openstack.org/nodegroup"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
# The DRA kubelet plugin's required node affinity matches ANY of these (reference §1.3).
DRA_PLUGIN_NODE_LABELS = (
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    (GPU_PRESENT_LABEL, "true"),
)
# Node taints are an atomic list (server-side apply cannot share it): the taints
# gpupool set are recorded here, so a later run removes only its own.
TAINTS_ANNOTATION = "gpupool.io/taints"
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class Kind(namedtuple("Kind", "kind group plural namespaced versions")):
    """A resource kind: API group, plural, scope and its versions, most preferred first."""
    __slots__ = ()

    def api_version(self, version):
        return "%s/%s" % (self.group, version) if self.group else version

    def describe(self, namespace, name):
        return "%s %s" % (self.kind, "%s/%s" % (namespace, name) if namespace else name)


RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
DEVICE_CLASS = Kind("DeviceClass", "resource.k8s.io", "deviceclasses", False, RESOURCE_VERSIONS)
RESOURCE_CLAIM_TEMPLATE = Kind("ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates", True,
                               RESOURCE_VERSIONS)
COMPUTE_DOMAIN = Kind("ComputeDomain", "resource.nvidia.com", "computedomains", True, ("v1beta2", "v1beta1"))
NODE = Kind("Node", "", "nodes", False, ("v1",))
CONFIG_MAP = Kind("ConfigMap", "", "configmaps", True, ("v1",))
NAMESPACE = Kind("Namespace", "", "namespaces", False, ("v1",))

# obj: the object to apply; pool: owning pool name; origin: inventory/option path for messages;
# info: builder facts (role, profile, selector origins) the modules report.
Desired = namedtuple("Desired", "obj pool origin info")


class BuildError(InventoryError):
    """Desired objects cannot be built: each problem as (path, message)."""

    def render(self):
        lines = ["%d problem(s) building the Kubernetes objects; nothing was changed:" % len(self.problems)]
        lines += ["  - %s: %s" % (p, m) for p, m in self.problems]
        return "\n".join(lines)


# ---- shared helpers ----------------------------------------------------------------------------

def ownership_labels(pool_name):
    labels = dict(MANAGED_BY)
    labels[POOL_LABEL] = pool_name
    return labels


def owned_selector(pool_names=None):
    """Label selector of gpupool's objects (of some pools)."""
    key, value = list(MANAGED_BY.items())[0]
    sel = "%s=%s" % (key, value)
    if pool_names:
        sel += ",%s in (%s)" % (POOL_LABEL, ",".join(sorted(pool_names)))
    return sel


def is_owned(obj):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())


def pool_of(obj):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)


def select_pools(cluster, names=None, root="gpupool_cluster"):
    """The pools in scope (present and absent), in inventory order; unknown names are an error."""
    if not names:
        return list(cluster.pools)
    known = [p.name for p in cluster.pools]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BuildError([("pools", "pool(s) %s not in %s.pools; known pools: %s"
                           % (", ".join(repr(n) for n in unknown), root, ", ".join(known) or "none"))])
    return [p for p in cluster.pools if p.name in names]


def pool_index(cluster, pool):
    return [p.name for p in cluster.pools].index(pool.name)


def cel_string(text):
    """A CEL string literal."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_attr(name, driver=DRIVER):
    return "device.attributes[%s].%s" % (cel_string(driver), name)


def dns_safe(text):
    """A MIG profile name as part of an object name: 1g.5gb+me -> 1g.5gb-me."""
    return re.sub(r"[^a-z0-9.-]", "-", text.lower()).strip("-.")


def product_names(pool):
    gpu = pool.catalog_gpu
    return list(gpu.product_names) if gpu else [pool.gpu.model]


def cel_product(names):
    if len(names) == 1:
        return "%s == %s" % (cel_attr("productName"), cel_string(names[0]))
    return "%s in [%s]" % (cel_attr("productName"), ", ".join(cel_string(n) for n in names))


def cel_device(device_type, products, profile=None):
    terms = ["device.driver == %s" % cel_string(DRIVER),
             "%s == %s" % (cel_attr("type"), cel_string(device_type))]
    if profile:
        terms.append("%s == %s" % (cel_attr("profile"), cel_string(profile)))
    terms.append(cel_product(products))
    return " && ".join(terms)


def cel_min_memory(quantity):
    return "device.capacity[%s].memory.compareTo(quantity(%s)) >= 0" % (cel_string(DRIVER), cel_string(quantity))


def semver(version):
    """'9.0' -> '9.0.0' (DRA version attributes are semantic versions)."""
    parts = str(version).split(".")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        raise ValueError("%r is not a version such as 8.0 or 9.0" % version)
    return ".".join(parts + ["0"] * (3 - len(parts)))


def cel_min_compute_capability(version):
    return "%s.compareTo(semver(%s)) >= 0" % (cel_attr("cudaComputeCapability"), cel_string(semver(version)))


def selector(expression):
    return {"cel": {"expression": expression}}


# ---- opaque driver configuration ------------------------------------------------------------------

def sharing_parameters(sharing, mig=False):
    """GpuConfig/MigDeviceConfig parameters for a pool_model.Sharing, or None without sharing."""
    if sharing is None or (not sharing.time_slicing and not sharing.mps):
        return None
    if sharing.time_slicing:
        share = {"strategy": "TimeSlicing"}
        if not mig:  # MigDeviceSharing has no timeSlicingConfig (reference §1.7)
            share["timeSlicingConfig"] = {"interval": sharing.time_slicing.interval}
    else:
        share = {"strategy": "MPS"}
        mps = {}
        if sharing.mps.active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.mps.active_thread_percentage
        if sharing.mps.pinned_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = sharing.mps.pinned_memory_limit
        if mps:
            share["mpsConfig"] = mps
    return {"apiVersion": NVIDIA_CONFIG_API, "kind": "MigDeviceConfig" if mig else "GpuConfig", "sharing": share}


def opaque(parameters, driver=DRIVER):
    return {"opaque": {"driver": driver, "parameters": parameters}}


# ---- DeviceClasses ----------------------------------------------------------------------------------

def full_gpu_class_name(pool):
    return pool.name


def mig_class_name(pool, profile):
    return "%s-%s" % (pool.name, dns_safe(profile))


def vfio_class_name(pool):
    return "%s-vfio" % pool.name


def extended_resource_name(class_name):
    return "%s/%s" % (EXTENDED_RESOURCE_DOMAIN, class_name)


def pool_mig_profiles(pool):
    """MIG profiles that get a class: static: in the layout(s), dynamic: all of the GPU's."""
    gpu = pool.catalog_gpu
    if pool.mig.mode == "dynamic" and gpu is not None and gpu.mig:
        return [p.name for p in gpu.mig.profiles]
    if pool.mig.mode != "static":
        return []
    seen = []
    layouts = [pool.mig.layout] if pool.mig.layout is not None else list((pool.mig.layouts or {}).values())
    for layout in layouts:
        for name in layout or {}:
            if name not in seen:
                seen.append(name)
    return seen


def pool_has_full_gpus(pool):
    if pool.mig.mode != "static":
        return True
    if pool.mig.layout is not None:
        return not pool.mig.layout
    return any(not pool.layout_for(i) for i in range(pool.gpu.per_node))


def _device_class(api_version, name, pool, origin, role, selectors, config=None, ext_name=None, profile=None,
                  selector_origins=None):
    spec = {"selectors": [selector(s) for s in selectors]}
    if config:
        spec["config"] = [opaque(config)]
    if ext_name:
        spec["extendedResourceName"] = ext_name
    obj = {"apiVersion": api_version, "kind": "DeviceClass",
           "metadata": {"name": name, "labels": ownership_labels(pool.name)}, "spec": spec}
    info = {"role": role, "profile": profile, "selector_origins": selector_origins or [origin] * len(selectors)}
    return Desired(obj, pool.name, origin, info)


def pool_device_classes(pool, at="gpupool_cluster.pools[0]", api_version="resource.k8s.io/v1"):
    """DeviceClasses of one present pool."""
    if pool.state != "present":
        return []
    products = product_names(pool)
    ext = pool.device_classes.extended_resource_names
    out = []
    if pool.device_classes.defaults:
        if pool_has_full_gpus(pool):
            name = full_gpu_class_name(pool)
            out.append(_device_class(api_version, name, pool, at, "gpu", [cel_device("gpu", products)],
                                     sharing_parameters(pool.sharing), extended_resource_name(name) if ext else None))
        for profile in pool_mig_profiles(pool):
            name = mig_class_name(pool, profile)
            out.append(_device_class(api_version, name, pool, at + ".mig", "mig", [cel_device("mig", products, profile)],
                                     sharing_parameters(pool.sharing, mig=True),
                                     extended_resource_name(name) if ext else None, profile=profile))
        if pool.passthrough:
            name = vfio_class_name(pool)
            out.append(_device_class(api_version, name, pool, at + ".passthrough", "vfio", [cel_device("vfio", products)],
                                     None, extended_resource_name(name) if ext else None))
    for j, extra in enumerate(pool.device_classes.extra):
        where = "%s.device_classes.extra[%d]" % (at, j)
        profile = extra.mig_profile
        selectors = [cel_device("mig" if profile else "gpu", products, profile)]
        origins = [where]
        if extra.min_memory:
            selectors.append(cel_min_memory(extra.min_memory))
            origins.append(where + ".min_memory")
        min_cc = getattr(extra, "min_compute_capability", None)  # accepted once the model has the key
        if min_cc:
            selectors.append(cel_min_compute_capability(min_cc))
            origins.append(where + ".min_compute_capability")
        for k, sel in enumerate(extra.selectors):
            selectors.append(sel)
            origins.append("%s.selectors[%d]" % (where, k))
        out.append(_device_class(api_version, extra.name, pool, where, "extra", selectors,
                                 sharing_parameters(pool.sharing, mig=bool(profile)), extra.extended_resource_name,
                                 profile=profile, selector_origins=origins))
    return out


def cluster_device_classes(cluster, pools=None, root="gpupool_cluster", api_version="resource.k8s.io/v1"):
    """DeviceClasses of the pools in scope; names are checked across every present pool
    (DeviceClasses are cluster-scoped, so two pools must not claim one name)."""
    scope = set(p.name for p in select_pools(cluster, pools, root))
    problems, seen, out = [], {}, []
    for i, pool in enumerate(cluster.pools):
        for d in pool_device_classes(pool, "%s.pools[%d]" % (root, i), api_version):
            name = d.obj["metadata"]["name"]
            if name in seen:
                problems.append((d.origin, "DeviceClass name %r is also generated by %s; DeviceClass names are "
                                 "cluster-wide, rename one of them" % (name, seen[name])))
                continue
            seen[name] = d.origin
            if not DNS_SUBDOMAIN.match(name) or len(name) > 253:
                problems.append((d.origin, "%r is not a valid DeviceClass name (DNS subdomain: lowercase letters, "
                                 "digits, '-' and '.')" % name))
            ext = d.obj["spec"].get("extendedResourceName")
            if ext and not _extended_resource_ok(ext):
                problems.append((d.origin, "%r is not a valid extended resource name: use <domain>/<name>, the "
                                 "name at most 63 characters of [A-Za-z0-9-_.], outside kubernetes.io" % ext))
            if d.pool in scope:
                out.append(d)
    if problems:
        raise BuildError(problems)
    return out


def _extended_resource_ok(name):
    if "/" not in name:
        return False
    domain, short = name.split("/", 1)
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or domain.endswith("requests."):
        return False
    return bool(DNS_SUBDOMAIN.match(domain)) and len(short) <= 63 and bool(QUALIFIED_NAME.match(short))


def without_extended_resource_names(desired):
    """The same classes without extendedResourceName (for clusters that drop the field)."""
    out = []
    for d in desired:
        obj = dict(d.obj, spec=dict((k, v) for k, v in d.obj["spec"].items() if k != "extendedResourceName"))
        out.append(d._replace(obj=obj))
    return out


# ---- ResourceClaimTemplates ------------------------------------------------------------------------

def resource_claim_template(name, namespace, pool_name, device_class, api_version="resource.k8s.io/v1",
                            count=1, allocation_mode="ExactCount", config=None, match_attribute=None,
                            request="gpu"):
    """One ResourceClaimTemplate: one request for `count` devices of `device_class`."""
    version = api_version.split("/")[-1]
    exact = {"deviceClassName": device_class, "allocationMode": allocation_mode}
    if allocation_mode == "ExactCount":
        exact["count"] = int(count)
    req = {"name": request}
    if version == "v1beta1":
        req.update(exact)  # v1beta1: the request is flat (no `exactly`)
    else:
        req["exactly"] = exact
    devices = {"requests": [req]}
    if match_attribute:
        devices["constraints"] = [{"requests": [request], "matchAttribute": match_attribute}]
    if config:
        devices["config"] = [dict(opaque(config), requests=[request])]
    return {"apiVersion": api_version, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace, "labels": ownership_labels(pool_name)},
            "spec": {"metadata": {"labels": {POOL_LABEL: pool_name}}, "spec": {"devices": devices}}}


def cluster_resource_claim_templates(cluster, pools=None, namespaces=(), templates=None,
                                     api_version="resource.k8s.io/v1", root="gpupool_cluster"):
    """Templates per tenant namespace.

    templates None: one per DeviceClass of each present pool in scope, named like the class, count 1.
    Otherwise each entry: name, pool, optional device_class | mig_profile, count, allocation_mode,
    sharing (pool_model.Sharing keys), match_attribute, namespaces (default: `namespaces`).
    """
    in_scope = select_pools(cluster, pools, root)
    classes = cluster_device_classes(cluster, None, root)
    by_pool = {}
    for d in classes:
        by_pool.setdefault(d.pool, []).append(d)
    problems, out, seen = [], [], {}
    for ns in namespaces or ():
        if not DNS_LABEL.match(ns):
            problems.append(("namespaces", "%r is not a valid namespace name" % ns))
    if templates is None:
        for pool in in_scope:
            if pool.state != "present":
                continue
            for d in by_pool.get(pool.name, []):
                name = d.obj["metadata"]["name"]
                for ns in namespaces or ():
                    obj = resource_claim_template(name, ns, pool.name, name, api_version)
                    out.append(Desired(obj, pool.name, d.origin, {"device_class": name, "count": 1}))
    else:
        scope_names = [p.name for p in in_scope]
        for i, t in enumerate(templates):
            at = "templates[%d]" % i
            pool_name = t.get("pool")
            try:
                pool = cluster.pool(pool_name)
            except KeyError:
                problems.append((at + ".pool", "pool %r not in %s.pools" % (pool_name, root)))
                continue
            if pool.name not in scope_names or pool.state != "present":
                continue
            device_class, problem = _template_class(pool, t, by_pool.get(pool.name, []))
            if problem:
                problems.append((at, problem))
                continue
            config = None
            if t.get("sharing"):
                try:
                    sharing = Sharing.model_validate(t["sharing"])
                except Exception as exc:  # pydantic ValidationError
                    problems.append((at + ".sharing", _first_line(exc)))
                    continue
                if sharing.time_slicing and sharing.mps:
                    problems.append((at + ".sharing", "time_slicing and mps cannot be used together; keep one"))
                    continue
                is_mig = _is_mig_class(pool, device_class, t, by_pool.get(pool.name, []))
                config = sharing_parameters(sharing, mig=bool(is_mig))
            match = t.get("match_attribute")
            if match and not LABEL_KEY.match(match):
                problems.append((at + ".match_attribute", "%r is not a qualified attribute name such as "
                                 "resource.kubernetes.io/pcieRoot" % match))
                continue
            count = t.get("count") or 1
            mode = t.get("allocation_mode") or "ExactCount"
            for ns in t.get("namespaces") or namespaces or ():
                key = (ns, t["name"])
                if key in seen:
                    problems.append((at + ".name", "template %s/%s is also defined by %s" % (ns, t["name"], seen[key])))
                    continue
                seen[key] = at
                obj = resource_claim_template(t["name"], ns, pool.name, device_class, api_version, count, mode,
                                              config, match)
                out.append(Desired(obj, pool.name, at, {"device_class": device_class, "count": count}))
            if not (t.get("namespaces") or namespaces):
                problems.append((at + ".namespaces", "no namespace: give namespaces for the module or the template"))
    if problems:
        raise BuildError(problems)
    return out


def _first_line(exc):
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return " ".join(lines[1:3]) if len(lines) > 1 else (lines[0] if lines else repr(exc))


def _template_class(pool, t, pool_classes):
    if t.get("device_class"):
        if t.get("mig_profile"):
            return None, "give device_class or mig_profile, not both"
        return t["device_class"], None
    if t.get("mig_profile"):
        for d in pool_classes:
            if d.info.get("role") == "mig" and d.info.get("profile") == t["mig_profile"]:
                return d.obj["metadata"]["name"], None
        gpu = pool.catalog_gpu
        if gpu is None or profile_by_name(gpu, t["mig_profile"]) is None:
            return None, "pool %s's GPU (%s) has no MIG profile %r" % (pool.name, pool.gpu.model, t["mig_profile"])
        return None, ("pool %s publishes no DeviceClass for MIG profile %r (its MIG mode is %s); add the profile "
                      "to the pool's mig.layout or name a device_class" % (pool.name, t["mig_profile"], pool.mig.mode))
    for d in pool_classes:
        if d.info.get("role") == "gpu":
            return d.obj["metadata"]["name"], None
    return None, ("pool %s publishes no full-GPU DeviceClass (MIG layout on every GPU, or "
                  "device_classes.defaults: false); give mig_profile or device_class" % pool.name)


def _is_mig_class(pool, device_class, t, pool_classes):
    if t.get("mig_profile"):
        return True
    for d in pool_classes:
        if d.obj["metadata"]["name"] == device_class:
            return d.info.get("role") == "mig" or bool(d.info.get("profile"))
    return False


# ---- ComputeDomains ---------------------------------------------------------------------------------

def compute_domain_name(pool):
    return pool.nvlink.compute_domain.name or pool.name


def channel_template_name(pool):
    return pool.nvlink.compute_domain.channel_template or "%s-channel" % compute_domain_name(pool)


def compute_domain(pool, api_version="resource.nvidia.com/v1beta1", at="gpupool_cluster.pools[0]"):
    cd = pool.nvlink.compute_domain
    obj = {"apiVersion": api_version, "kind": "ComputeDomain",
           "metadata": {"name": compute_domain_name(pool), "namespace": cd.namespace,
                        "labels": ownership_labels(pool.name)},
           "spec": {"channel": {"resourceClaimTemplate": {"name": channel_template_name(pool)},
                                "allocationMode": cd.allocation_mode}}}
    return Desired(obj, pool.name, at + ".nvlink.compute_domain", {})


def cluster_compute_domains(cluster, pools=None, api_version="resource.nvidia.com/v1beta1", root="gpupool_cluster"):
    scope = set(p.name for p in select_pools(cluster, pools, root))
    problems, seen, out = [], {}, []
    for i, pool in enumerate(cluster.pools):
        if pool.state != "present" or pool.nvlink.mode != "compute_domain":
            continue
        d = compute_domain(pool, api_version, "%s.pools[%d]" % (root, i))
        key = (d.obj["metadata"]["namespace"], d.obj["metadata"]["name"])
        if key in seen:
            problems.append((d.origin, "ComputeDomain %s/%s is also wanted by %s; give each pool its own "
                             "compute_domain.name" % (key[0], key[1], seen[key])))
            continue
        seen[key] = d.origin
        for what, value in (("name", key[1]), ("channel_template", channel_template_name(pool))):
            if not DNS_SUBDOMAIN.match(value) or len(value) > 253:
                problems.append((d.origin + "." + what, "%r is not a valid object name" % value))
        if not DNS_LABEL.match(key[0]):
            problems.append((d.origin + ".namespace", "%r is not a valid namespace name" % key[0]))
        if pool.name in scope:
            out.append(d)
    if problems:
        raise BuildError(problems)
    return out


# ---- Nodes --------------------------------------------------------------------------------------------

def node_labels_of(node):
    return dict((node.get("metadata") or {}).get("labels") or {})


def nodegroup_name(pool):
    return (pool.nodegroup.name or pool.name) if pool.nodegroup else None


def node_matcher(pool, nodegroup_label=NODEGROUP_LABEL, name_pattern=None):
    """A predicate over Node objects: is this node one of the pool's?

    Order: the pool's node_selector (all labels must match); else the Magnum nodegroup label;
    plus, when `name_pattern` is given (a regex with {pool}/{nodegroup} placeholders), nodes whose
    name matches it. A pool with none of these has no way to find its nodes: BuildError.
    """
    pattern = None
    if name_pattern:
        ng = nodegroup_name(pool) or pool.name
        pattern = re.compile(name_pattern.replace("{pool}", re.escape(pool.name)).replace("{nodegroup}", re.escape(ng)))
    if pool.node_selector:
        wanted = dict(pool.node_selector)
    elif pool.nodegroup is not None:
        wanted = {nodegroup_label: nodegroup_name(pool)}
    else:
        wanted = None
    if wanted is None and pattern is None:
        raise BuildError([("pools[%s]" % pool.name, "pool %s has no node_selector and no nodegroup, so its nodes cannot "
                           "be found; add node_selector to the pool or give the module a name_pattern" % pool.name)])

    def match(node):
        labels = node_labels_of(node)
        if wanted is not None and all(labels.get(k) == v for k, v in wanted.items()):
            return True
        return bool(pattern is not None and pattern.search(node["metadata"]["name"]))
    match.describe = " or ".join(
        ([",".join("%s=%s" % kv for kv in sorted(wanted.items()))] if wanted else [])
        + (["name ~ /%s/" % pattern.pattern] if pattern else []))
    return match


def assign_nodes(pools, nodes, nodegroup_label=NODEGROUP_LABEL, name_pattern=None):
    """{pool name: [nodes]} for present pools; a node matched by two pools is an error."""
    matchers = [(p, node_matcher(p, nodegroup_label, name_pattern)) for p in pools if p.state == "present"]
    out = dict((m[0].name, []) for m in matchers)
    owner, problems = {}, []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        for pool, match in matchers:
            if match(node):
                if name in owner:
                    problems.append(("pools", "node %s matches pools %s and %s; make their node_selector or "
                                     "nodegroups disjoint" % (name, owner[name], pool.name)))
                    continue
                owner[name] = pool.name
                out[pool.name].append(node)
    if problems:
        raise BuildError(problems)
    return out


def node_ready(node):
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def node_schedulable(node):
    return not (node.get("spec") or {}).get("unschedulable", False)


def needs_gpu_present_label(node, owned_label_keys=()):
    """True when no label the DRA kubelet plugin's affinity needs was set by someone else
    (NFD or GPU Feature Discovery): then gpupool sets nvidia.com/gpu.present=true itself."""
    labels = node_labels_of(node)
    for key, value in DRA_PLUGIN_NODE_LABELS:
        if labels.get(key) == value and key not in owned_label_keys:
            return False
    return True


def desired_node_labels(pool, node, owned_label_keys=(), set_gpu_present=True):
    labels = dict(pool.node_labels)
    labels[POOL_LABEL] = pool.name
    if set_gpu_present and needs_gpu_present_label(node, owned_label_keys):
        labels[GPU_PRESENT_LABEL] = "true"
    return labels


def desired_node_taints(pool):
    return [dict((k, v) for k, v in t.items() if k in ("key", "value", "effect")) for t in pool.all_taints]


def taint_id(taint):
    return "%s:%s" % (taint["key"], taint.get("effect", ""))


def recorded_taints(node):
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(TAINTS_ANNOTATION) or ""
    return [t for t in text.split(",") if t]


def merge_taints(live, ours_before, desired):
    """New taint list: others' taints kept (in order), ours removed when no longer wanted, ours added
    or updated. Returns (taints, changed). `ours_before`: taint ids ("key:effect") gpupool set before."""
    want = dict((taint_id(t), t) for t in desired)
    out, changed, placed = [], False, set()
    for t in live or []:
        tid = taint_id(t)
        if tid in want:
            new = dict(t)
            new.update(want[tid])
            if new.get("value", "") != t.get("value", ""):
                changed = True
            if "value" in new and new["value"] == "":
                new.pop("value")
            out.append(new)
            placed.add(tid)
        elif tid in ours_before:
            changed = True  # ours, no longer wanted
        else:
            out.append(t)
    for tid, t in want.items():
        if tid not in placed:
            t = dict(t)
            if t.get("value", None) == "":
                t.pop("value")
            out.append(t)
            changed = True
    return out, changed


def taints_annotation(desired):
    return ",".join(sorted(taint_id(t) for t in desired))
