"""A Kubernetes API SIMULATOR at the JSON level of the collection's K8sClient (request/list/path), for unit tests.

It models what a drain meets in a real kube-apiserver, nothing else:
- GET /api/v1/nodes/<name> (404 when missing), the node list with a label selector (equality only);
- GET /api/v1/pods?fieldSelector=spec.nodeName=<node> (all namespaces);
- PATCH /api/v1/nodes/<name> as a JSON merge patch (RFC 7386: null deletes a key) of labels, annotations and spec,
  with metadata.resourceVersion as a precondition (409 when the node changed since), a new resourceVersion per write;
- POST /api/v1/namespaces/<ns>/pods/<name>/eviction: 201 and the pod is deleted (with grace period 0, as the
  integration tests use), 404 for a missing pod, and 429 "Cannot evict pod as it would violate the pod's disruption
  budget." (the API server's message) while the pod's budget allows no disruption.

The error classes the client raises are handed in (`error(status, msg)`); paths come from the client's own
K8sClient.path. apiserver_simulator.py serves the same API at the HTTP level to the real client, for the step tests.
Integration tests run the same code against a real kube-apiserver.
"""

from __future__ import annotations

import copy

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sClient


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class KubeApiSimulator:
    def __init__(self, error, nodes=(), pods=()):
        self.error = error
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.version = 0
        for node in self.nodes.values():
            self.bump(node)
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): copy.deepcopy(p) for p in pods}
        self.budget_refusals = {}  # (namespace, name) -> how many evictions to refuse with 429
        self.requests = []  # (method, path, body)
        self.host = "https://simulated-apiserver"

    def bump(self, node):
        """A new resourceVersion, as the API server gives every write (the client never chooses it)."""
        self.version += 1
        node["metadata"]["resourceVersion"] = str(self.version)

    @staticmethod
    def own_unschedulable(node, manager, value):
        """The API server's field management of spec.unschedulable (what the cordon ledger reads): a patch that
        changes it takes it from every other manager, and the writer owns it while it is set."""
        entries = []
        for entry in node["metadata"].get("managedFields") or []:
            entry = copy.deepcopy(entry)
            (entry.get("fieldsV1") or {}).get("f:spec", {}).pop("f:unschedulable", None)
            entries.append(entry)
        if value is not None:
            fields = {"f:spec": {"f:unschedulable": {}}}
            entries.append({"manager": manager or "unknown", "operation": "Update", "fieldsV1": fields})
        node["metadata"]["managedFields"] = entries

    # The client's own path logic, not a copy: a path the simulator parses is one the client builds.
    path = staticmethod(K8sClient.path)

    def list(self, group, version, plural, namespace=None, label_selector=None, limit=500):
        assert (group, version, plural) == ("", "v1", "nodes"), "the simulator lists nodes only"
        self.requests.append(("GET", "/api/v1/nodes", {"labelSelector": label_selector}))
        wanted = dict(part.split("=", 1) for part in (label_selector or "").split(",") if part)
        return [
            copy.deepcopy(n)
            for _name, n in sorted(self.nodes.items())
            if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]

    def request(self, method, path, query=None, body=None, content_type=None, retry_status=None):
        self.requests.append((method, path, body))
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
            node = self.nodes.get(parts[3])
            if node is None:
                raise self.error(404, 'nodes "%s" not found' % parts[3])
            if method == "PATCH":
                precondition = (body.get("metadata") or {}).get("resourceVersion")
                if precondition is not None and precondition != node["metadata"].get("resourceVersion"):
                    raise self.error(
                        409,
                        'Operation cannot be fulfilled on nodes "%s": the object has been '
                        "modified; please apply your changes to the latest version and try again" % parts[3],
                    )
                node.update(merge_patch(node, body))
                if "unschedulable" in (body.get("spec") or {}):
                    self.own_unschedulable(node, (query or {}).get("fieldManager"), body["spec"]["unschedulable"])
                self.bump(node)
            return copy.deepcopy(node)
        if parts == ["api", "v1", "pods"] and method == "GET":
            node_name = query["fieldSelector"].split("=", 1)[1]
            return {
                "items": [
                    copy.deepcopy(p) for _key, p in sorted(self.pods.items()) if p["spec"].get("nodeName") == node_name
                ],
                "metadata": {},
            }
        if (
            len(parts) == 7
            and parts[:3] == ["api", "v1", "namespaces"]
            and parts[4] == "pods"
            and parts[6] == "eviction"
            and method == "POST"
        ):
            key = (parts[3], parts[5])
            if key not in self.pods:
                raise self.error(404, 'pods "%s" not found' % parts[5])
            if self.budget_refusals.get(key):
                self.budget_refusals[key] -= 1
                raise self.error(429, "Cannot evict pod as it would violate the pod's disruption budget.")
            del self.pods[key]
            return {"kind": "Status", "status": "Success", "code": 201}
        raise AssertionError("the simulator does not serve %s %s" % (method, path))

    def writes(self):
        return [(method, path) for method, path, _body in self.requests if method in ("POST", "PATCH", "PUT", "DELETE")]
