"""A kube-apiserver SIMULATOR in memory, served to the collection's real K8sClient at its HTTP transport.

Unit tests of a step (tests/unit/plugins/action/) run the step as Ansible does - options, model, client, apply
engine - and only the HTTP exchange is answered here, the way requests_mock answers openstacksdk in
test_nodegroup.py. It models what the steps meet in a real API server, no more:
- discovery (/version, /apis/<group>: the groups and versions `served` lists; 404 for one it does not);
- GET of one object (404 when missing) or of a collection, filtered by labelSelector (the client's own matcher) and
  by equality fieldSelectors on dotted paths (spec.nodeName=n0, metadata.name=x);
- POST create (409 AlreadyExists; 404 when the namespace does not exist), PUT replace, DELETE, each with
  metadata.resourceVersion / uid preconditions (409) and ?dryRun=All (answered, nothing stored);
- PATCH as server-side apply (application/apply-patch+yaml: the manager's managedFields, fields it no longer applies
  removed, lists atomic, an unchanged apply keeps the resourceVersion) and as a JSON merge patch (RFC 7386);
- a new resourceVersion per stored change, a uid and creationTimestamp at creation.
It does not run admission, schema validation (unknown fields are kept), controllers, kubelets or the scheduler:
nothing becomes Ready, no pod is created from a DaemonSet, no ComputeDomain or ResourceClaim gets a status unless a
test writes it (`put`) or plays the controller (`reactions`). Paths are parsed with the client's own parser (k8s/paths.py object_of), not a copy.
Integration tests (tests/integration/) run the steps against a real kube-apiserver.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sClient
from ansible_collections.gpupool.core.plugins.module_utils.k8s.paths import object_of
from tests.unit.plugins.module_utils.k8s.kube_api_simulator import merge_patch

HOST = "https://apiserver.simulated:6443"
CONNECTION = {"host": HOST, "api_key": "simulated-token"}  # a step's connection options that reach the simulator
# Served API groups and versions, most preferred first (a 1.37 cluster with the NVIDIA DRA driver's CRDs).
SERVED = {
    "resource.k8s.io": ["v1", "v1beta2", "v1beta1"],
    "resource.nvidia.com": ["v1beta1"],
    "apps": ["v1"],
    "coordination.k8s.io": ["v1"],
    "apiextensions.k8s.io": ["v1"],
}
CORE_KINDS = {"nodes": "Node", "pods": "Pod", "namespaces": "Namespace", "configmaps": "ConfigMap"}


class Response:
    """What urllib3 answers (status, reason, data, headers): all K8sClient.request reads."""

    def __init__(self, status: int, body: Any, reason: str = "") -> None:
        self.status = status
        self.reason = reason or ("OK" if status < 300 else "Error")
        self.data = json.dumps(body).encode("utf-8") if body is not None else b""
        self.headers: Dict[str, str] = {}


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def field_paths(obj: Any, prefix: Tuple[str, ...] = ()) -> set:
    """Leaf paths of an applied object (lists are atomic, as gpupool's kinds declare none as a map)."""
    if not isinstance(obj, dict) or not obj:
        return {prefix} if prefix else set()
    out = set()
    for key, value in obj.items():
        out |= field_paths(value, prefix + (key,))
    return out


def fields_v1(paths: set) -> dict:
    out: dict = {}
    for path in paths:
        node = out
        for key in path:
            node = node.setdefault("f:" + key, {})
    return out


def paths_of_fields_v1(fields: dict, prefix: Tuple[str, ...] = ()) -> set:
    out = set()
    for key, value in (fields or {}).items():
        path = prefix + (key[2:],)
        out |= paths_of_fields_v1(value, path) if value else {path}
    return out


def remove_path(obj: dict, path: Tuple[str, ...]) -> None:
    node = obj
    for key in path[:-1]:
        node = node.get(key)
        if not isinstance(node, dict):
            return
    node.pop(path[-1], None)


def deep_merge(base: Any, applied: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(applied, dict):
        return copy.deepcopy(applied)
    out = dict(base)
    for key, value in applied.items():
        out[key] = deep_merge(base.get(key), value)
    return out


def content(obj: Optional[dict]) -> Optional[dict]:
    """An object without the server's bookkeeping: what decides whether a write changed it."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    for key in ("resourceVersion", "managedFields", "generation"):
        out.get("metadata", {}).pop(key, None)
    return out


def selector_matches(selector: str, labels: dict) -> bool:
    """A labelSelector as the API server reads it (key=v, key==v, key!=v, key in (a,b), key notin (a,b), key, !key);
    written here, not taken from gpupool's own matcher, so a fault there shows in the step tests."""
    terms, depth, word = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms, word = terms + [word.strip()], ""
        else:
            word += char
    terms.append(word.strip())
    for term in filter(None, terms):
        words = term.replace("(", " ( ").replace(")", " ) ").split()
        if len(words) > 2 and words[1] in ("in", "notin"):
            values = {v.strip() for v in " ".join(words[3:-1]).split(",")}
            if (labels.get(words[0]) in values) != (words[1] == "in") or (words[1] == "in" and words[0] not in labels):
                return False
        elif "!=" in term:
            key, value = (x.strip() for x in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = (x.strip() for x in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def at(obj: Any, path: Tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def dotted(obj: dict, path: str) -> Any:
    """A field selector's value (spec.nodeName, metadata.name)."""
    return at(obj, tuple(path.split(".")))


class ApiServerSimulator:
    """Objects by (kind key, namespace, name); every request in `requests` as (method, path, query, body)."""

    def __init__(self, served: Optional[Dict[str, List[str]]] = None, minor: int = 37) -> None:
        self.served = dict(SERVED if served is None else served)
        self.minor = minor
        self.objects: Dict[Tuple[str, Optional[str], str], dict] = {}
        self.requests: List[Tuple[str, str, dict, Any]] = []
        self.version = 0
        # Controllers a test plays (the MIG manager setting its state label): called with (key, object) after each
        # stored write; they change the store with put().
        self.reactions: List[Any] = []
        for ns in ("default", "kube-system"):
            self.put("", "v1", "namespaces", {"metadata": {"name": ns}})

    # ---- the test's side: what is there, what was sent -----------------------------------------------------
    def put(self, group: str, version: str, plural: str, obj: dict) -> dict:
        """Store an object as another client would have made it (no managedFields of gpupool's)."""
        obj = copy.deepcopy(obj)
        kind = CORE_KINDS.get(plural) if not group else None
        obj.setdefault("apiVersion", "%s/%s" % (group, version) if group else version)
        if kind:
            obj.setdefault("kind", kind)
        meta = obj["metadata"]
        path = K8sClient.path(group, version, plural, meta.get("namespace"), meta["name"])
        key = object_of(path)[:3]
        meta.setdefault("uid", "uid-%d" % (len(self.objects) + 1))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self._bump(obj)
        self.objects[key] = obj
        return copy.deepcopy(obj)

    def get(self, group: str, plural: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        found = self.objects.get(("%s_%s" % (group or "core", plural), namespace, name))
        return copy.deepcopy(found)

    def items(self, group: str, plural: str) -> List[dict]:
        key = "%s_%s" % (group or "core", plural)
        return [copy.deepcopy(o) for (k, _ns, _n), o in sorted(self.objects.items(), key=str) if k == key]

    def writes(self) -> List[Tuple[str, str]]:
        """Writes that changed or could have changed the store (dry runs excluded)."""
        return [
            (method, path)
            for method, path, query, _body in self.requests
            if method in ("POST", "PUT", "PATCH", "DELETE") and "dryRun" not in query
        ]

    # ---- the transport ----------------------------------------------------------------------------------------
    def serve(self, method: str, url: str, body: Optional[bytes] = None, headers: Optional[dict] = None) -> Response:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        doc = json.loads(body) if body else None
        self.requests.append((method, parts.path, query, doc))
        content_type = (headers or {}).get("Content-Type", "")
        try:
            return Response(
                200 if method != "POST" else 201, self._answer(method, parts.path, query, doc, content_type)
            )
        except ApiError as err:
            status = {"kind": "Status", "status": "Failure", "message": err.message, "reason": err.reason}
            return Response(err.status, dict(status, code=err.status), err.reason)

    def _answer(self, method, path, query, doc, content_type):
        if path == "/version":
            return {"major": "1", "minor": str(self.minor), "gitVersion": "v1.%d.0" % self.minor}
        segments = [p for p in path.split("/") if p]
        if segments[:1] == ["apis"] and len(segments) == 2:
            versions = self.served.get(segments[1])
            if not versions:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            group_versions = [{"groupVersion": "%s/%s" % (segments[1], v), "version": v} for v in versions]
            return {"kind": "APIGroup", "name": segments[1], "versions": group_versions}
        target = object_of(path)
        if target is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        key, namespace, name, subresource = target
        group = segments[1] if segments[0] == "apis" else ""
        if group and segments[2] not in self.served.get(group, []):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        api_version = "/".join(segments[1:3]) if group else segments[1]
        if method == "GET":
            return self._get(key, namespace, name, query, api_version)
        dry = query.get("dryRun") == "All" or (isinstance(doc, dict) and doc.get("dryRun"))
        if subresource == "eviction" and method == "POST":
            self._delete((key, namespace, name), {}, dry)
            return {"kind": "Status", "status": "Success", "code": 201}
        if namespace is not None and ("core_namespaces", None, namespace) not in self.objects:
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % namespace)
        if method == "POST":
            return self._create((key, namespace, doc["metadata"]["name"]), doc, dry, query)
        if method == "DELETE":
            return self._delete((key, namespace, name), doc or {}, dry)
        if method == "PUT":
            return self._replace((key, namespace, name), doc, dry)
        if method == "PATCH" and content_type.startswith("application/apply-patch"):
            return self._apply((key, namespace, name), doc, dry, query)
        if method == "PATCH" and content_type.startswith("application/merge-patch"):
            return self._merge((key, namespace, name), doc, dry, query)
        raise AssertionError("the simulator does not serve %s %s (%s)" % (method, path, content_type))

    def _get(self, key, namespace, name, query, api_version):
        if name:
            obj = self.objects.get((key, namespace, name))
            if obj is None:
                raise ApiError(404, "NotFound", '%s "%s" not found' % (key.split("_", 1)[1], name))
            return copy.deepcopy(obj)
        selector = query.get("labelSelector")
        fields = [part.split("=", 1) for part in (query.get("fieldSelector") or "").split(",") if part]
        items = [
            copy.deepcopy(o)
            for (k, ns, _n), o in sorted(self.objects.items(), key=lambda kv: (kv[0][1] or "", kv[0][2]))
            if k == key
            and (namespace is None or ns == namespace)
            and (not selector or selector_matches(selector, o["metadata"].get("labels") or {}))
            and all(str(dotted(o, f) or "") == v.lstrip("=") for f, v in fields)
        ]
        return {"apiVersion": api_version, "metadata": {"resourceVersion": str(self.version)}, "items": items}

    def _bump(self, obj):
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)

    def _precondition(self, key, live, doc):
        meta = (doc or {}).get("metadata") or {}
        wanted = meta.get("resourceVersion")
        if wanted is not None and live is not None and wanted != live["metadata"].get("resourceVersion"):
            raise ApiError(
                409,
                "Conflict",
                'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your changes '
                "to the latest version and try again" % (key[0].split("_", 1)[1], key[2]),
            )

    def _store(self, key, before, after, dry):
        """Keep `after` (a new resourceVersion when it differs from `before`); the answer is the object now."""
        after.setdefault("metadata", {}).setdefault("uid", (before or {}).get("metadata", {}).get("uid"))
        if before is None:
            after["metadata"]["uid"] = after["metadata"]["uid"] or "uid-%d" % (self.version + 1000)
            after["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        if content(after) != content(before):
            if dry:
                after["metadata"]["resourceVersion"] = (before or {}).get("metadata", {}).get("resourceVersion", "")
            else:
                self._bump(after)
        if not dry:
            self.objects[key] = after
            answer = copy.deepcopy(after)
            for react in self.reactions:
                react(key, copy.deepcopy(after))
            return answer
        return copy.deepcopy(after)

    def _create(self, key, doc, dry, query):
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (key[0].split("_", 1)[1], key[2]))
        obj = copy.deepcopy(doc)
        obj.pop("dryRun", None)
        return self._store(key, None, obj, dry)

    def _replace(self, key, doc, dry):
        live = self.objects.get(key)
        if live is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (key[0].split("_", 1)[1], key[2]))
        self._precondition(key, live, doc)
        obj = copy.deepcopy(doc)
        obj["metadata"]["managedFields"] = live["metadata"].get("managedFields", [])
        return self._store(key, live, obj, dry)

    def _delete(self, key, doc, dry):
        live = self.objects.get(key)
        if live is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (key[0].split("_", 1)[1], key[2]))
        uid = ((doc.get("preconditions") or {}) if isinstance(doc, dict) else {}).get("uid")
        if uid and uid != live["metadata"].get("uid"):
            raise ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s")
        if not dry:
            del self.objects[key]
        return {"kind": "Status", "status": "Success"}

    def _managed(self, obj, manager, operation, paths):
        entries = [
            e
            for e in obj["metadata"].get("managedFields") or []
            if (e["manager"], e["operation"]) != (manager, operation)
        ]
        if paths:
            entries.append(
                {"manager": manager, "operation": operation, "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}
            )
        obj["metadata"]["managedFields"] = entries

    def _apply(self, key, doc, dry, query):
        manager = query.get("fieldManager") or "unknown"
        live = self.objects.get(key)
        applied = copy.deepcopy(doc)
        applied_paths = {p for p in field_paths(applied) if p[:2] != ("metadata", "resourceVersion")}
        if live is None:
            obj = applied
        else:
            obj = copy.deepcopy(live)
            owned = set()
            for entry in live["metadata"].get("managedFields") or []:
                if (entry["manager"], entry["operation"]) == (manager, "Apply"):
                    owned = paths_of_fields_v1(entry.get("fieldsV1") or {})
            for path in sorted(owned - applied_paths, key=len, reverse=True):
                remove_path(obj, path)
            obj = deep_merge(obj, applied)
        self._managed(obj, manager, "Apply", {p for p in applied_paths if p[0] not in ("apiVersion", "kind")})
        return self._store(key, live, obj, dry)

    def _merge(self, key, doc, dry, query):
        live = self.objects.get(key)
        if live is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (key[0].split("_", 1)[1], key[2]))
        self._precondition(key, live, doc)
        patch = copy.deepcopy(doc)
        (patch.get("metadata") or {}).pop("resourceVersion", None)
        obj = merge_patch(live, patch)
        manager = query.get("fieldManager")
        if manager:
            owned = set()
            for entry in live["metadata"].get("managedFields") or []:
                if (entry["manager"], entry["operation"]) == (manager, "Update"):
                    owned = paths_of_fields_v1(entry.get("fieldsV1") or {})
            set_now = {p for p in field_paths(patch) if at(obj, p) is not None}
            cleared = {p for p in field_paths(patch) if p not in set_now}
            self._managed(obj, manager, "Update", (owned - cleared) | set_now)
        return self._store(key, live, obj, dry)


def transport(monkeypatch, server: ApiServerSimulator) -> None:
    """Answer every request the kubernetes client's urllib3 pool sends to HOST from `server`."""
    import urllib3

    real = urllib3.PoolManager.request

    def request(self, method, url, body=None, headers=None, **kw):
        if not url.startswith(HOST):
            return real(self, method, url, body=body, headers=headers, **kw)
        return server.serve(method, url, body, headers)

    monkeypatch.setattr(urllib3.PoolManager, "request", request)
    monkeypatch.setenv("GPUPOOL_DISCOVERY_CACHE", "off")
