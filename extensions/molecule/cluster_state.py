"""What the API server holds for each declared pool, as JSON: the molecule scenarios' verify steps read it.

    python cluster_state.py --kubeconfig FILE --cluster-file host_vars/<cluster>/gpupool.yml

Read with the real kubernetes client, independently of the collection (it imports nothing from plugins/):
a pool's Nodes are those labelled ``gpupool.io/pool=<pool>`` (the label the collection documents in
docs/inventory.md), their devices are what the DRA driver published in ResourceSlices (driver
``gpu.nvidia.com``), its DeviceClasses those labelled with the pool. Output, per pool::

    {"nodes": {name: {"taints": ["key=value:Effect", ...], "labels": {our labels and the MIG manager's},
                      "devices": [names], "full_gpus": count of whole GPUs published,
                      "mig_layouts": [{profile: count} of each GPU in MIG mode, grouped by parentUUID],
                      "mig_config": nvidia.com/mig.config, "mig_state": nvidia.com/mig.config.state}},
     "device_classes": {name: resourceVersion}}

plus ``compute_domains`` ({namespace/name: {"pool": ..., "resource_version": ...}}) and ``mig_configs``
(the mig-parted document of the MIG manager's ConfigMap: {config name: entries}).
"""
from __future__ import annotations

import argparse
import json
import sys

import yaml
from kubernetes import client, config

POOL_LABEL = "gpupool.io/pool"
MANAGED = "app.kubernetes.io/managed-by=gpupool"
DRIVER = "gpu.nvidia.com"
# Labels the verify steps look at: the collection's and the MIG manager's (not NFD/GFD's, not kubelet's).
LABEL_PREFIXES = ("gpupool.io/", "nvidia.com/mig.config", "nvidia.com/gpu.present")


def taint_text(taint) -> str:
    return "%s=%s:%s" % (taint.key, taint.value or "", taint.effect)


def devices_by_node(custom) -> dict:
    out = {}
    for item in custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]:
        spec = item["spec"]
        if spec.get("driver") == DRIVER and spec.get("nodeName"):
            out.setdefault(spec["nodeName"], []).extend(spec.get("devices") or [])
    return out


def node_devices(published: list) -> dict:
    """Whole GPUs and, per GPU in MIG mode (its devices share a parentUUID), the MIG layout it shows."""
    full, layouts = 0, {}
    for device in published:
        attributes = device.get("attributes") or {}
        kind = (attributes.get("type") or {}).get("string")
        if kind == "gpu":
            full += 1
        elif kind == "mig":
            layout = layouts.setdefault(attributes["parentUUID"]["string"], {})
            profile = attributes["profile"]["string"]
            layout[profile] = layout.get(profile, 0) + 1
    return {"devices": sorted(d["name"] for d in published), "full_gpus": full,
            "mig_layouts": [layouts[parent] for parent in sorted(layouts)]}


def pool_state(core, custom, pool: str, devices: dict) -> dict:
    nodes = {}
    for node in core.list_node(label_selector="%s=%s" % (POOL_LABEL, pool)).items:
        labels = node.metadata.labels or {}
        nodes[node.metadata.name] = dict(
            node_devices(devices.get(node.metadata.name, [])),
            taints=sorted(taint_text(t) for t in node.spec.taints or []),
            labels={k: v for k, v in labels.items() if k.startswith(LABEL_PREFIXES)},
            # The MIG manager's contract (docs/mig-catalog.md): the config asked for, and how applying it went.
            mig_config=labels.get("nvidia.com/mig.config"), mig_state=labels.get("nvidia.com/mig.config.state"))
    classes = custom.list_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses",
                                                label_selector="%s,%s=%s" % (MANAGED, POOL_LABEL, pool))["items"]
    return {"nodes": nodes,
            "device_classes": {c["metadata"]["name"]: c["metadata"]["resourceVersion"] for c in classes}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--cluster-file", required=True, help="a YAML file with gpupool_cluster")
    args = parser.parse_args(argv)
    with open(args.cluster_file) as stream:
        cluster = yaml.safe_load(stream)["gpupool_cluster"]
    api = config.new_client_from_config(config_file=args.kubeconfig)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    devices = devices_by_node(custom)
    state = {"pools": {p["name"]: pool_state(core, custom, p["name"], devices) for p in cluster["pools"]}}
    domains = custom.list_cluster_custom_object("resource.nvidia.com", "v1beta1", "computedomains",
                                                label_selector=MANAGED)["items"]
    state["compute_domains"] = {
        "%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"]): {
            "pool": (d["metadata"].get("labels") or {}).get(POOL_LABEL),
            "resource_version": d["metadata"]["resourceVersion"]} for d in domains}
    manager = dict({"config_map": "gpupool-mig-parted-config", "namespace": "gpu-operator"},
                   **(cluster.get("mig_manager") or {}))
    try:
        data = core.read_namespaced_config_map(manager["config_map"], manager["namespace"]).data or {}
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        data = {}
    state["mig_configs"] = (yaml.safe_load(data.get("config.yaml") or "{}") or {}).get("mig-configs") or {}
    json.dump(state, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
