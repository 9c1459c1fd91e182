# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API client for the collection's modules.

`connect(params)` turns the kubernetes.core-style connection options
(kubeconfig, context, host, api_key, validate_certs, ca_cert, client_cert,
client_key) into a `K8sClient`: a thin REST client over the `kubernetes`
package's configuration loading (kubeconfig parsing, exec/OIDC token refresh,
TLS) with

* every request bounded by a timeout (connect, read);
* retries with exponential backoff and jitter on 429 (honouring Retry-After),
  500/502/503/504 and connection errors (refused, reset, timed out); the
  kubernetes package's own urllib3 retries are switched off so the budget is ours;
* one request budget per client: once a request gave up because the API server could not be reached
  or kept answering 429/5xx after every retry, later requests of the same module run fail at once
  with the same sentence instead of spending the whole retry budget again, node after node;
* API discovery (`preferred_version`) from /apis/<group>, shared by the modules of one playbook run
  through a small on-disk cache (see `DiscoveryCache`), so each group is discovered once per run;
* errors turned into `K8sError` whose `describe()` is a sentence a person can act on
  (401: check credentials, 403: bind the gpupool ClusterRole, connection refused:
  check the address);
* an answer about the server's schema - a field newer than the cluster's Kubernetes release, which server-side
  apply refuses with HTTP 500 "field not declared in schema" and strict decoding with 400 "unknown field" - is
  `FieldNotInSchema`: never retried, never taken for a server in trouble (the caller decides: leave the field
  out, or tell the person which release has it).

The `kubernetes` package is imported lazily: `connect()` raises
`MissingDependency` with the import traceback when it is absent, and the
modules turn that into ansible's missing_required_lib message.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import traceback
from typing import Callable, Optional

from ansible_collections.gpupool.core.plugins.module_utils.k8s.answers import (
    connection_reason,
    read_answer,
    schema_fields,
)
from ansible_collections.gpupool.core.plugins.module_utils.k8s.discovery import DiscoveryCache
from ansible_collections.gpupool.core.plugins.module_utils.k8s.paths import api_path, object_of
from ansible_collections.gpupool.core.plugins.module_utils.k8s.run_view import RunView, kind_key
from ansible_collections.gpupool.core.plugins.module_utils.k8s.workers import NODE_WORKERS
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError, MissingLibrary
from ansible_collections.gpupool.core.plugins.module_utils.model.label_selector import selector_matches

try:
    from urllib.parse import urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported
    raise

# The connection options of every Kubernetes module (argument_specs.AUTH mirrors them 1:1).
CONNECTION_OPTIONS = (
    "kubeconfig",
    "context",
    "host",
    "api_key",
    "validate_certs",
    "ca_cert",
    "client_cert",
    "client_key",
    "request_timeout",
    "request_retries",
)
ENV_FALLBACK = {
    "kubeconfig": "K8S_AUTH_KUBECONFIG",
    "context": "K8S_AUTH_CONTEXT",
    "host": "K8S_AUTH_HOST",
    "api_key": "K8S_AUTH_API_KEY",
    "validate_certs": "K8S_AUTH_VERIFY_SSL",
    "ca_cert": "K8S_AUTH_SSL_CA_CERT",
    "client_cert": "K8S_AUTH_CERT_FILE",
    "client_key": "K8S_AUTH_KEY_FILE",
}
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
GA_ONLY_GROUPS = ("", "core", "apps", "coordination.k8s.io", "policy", "apiextensions.k8s.io")
CONTENT_JSON = "application/json"
# Ask for an object's metadata only (the API server answers a PartialObjectMetadata): for reading the labels of an
# object whose content gpupool must never see, such as the Secret helm stores a release in.
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
CONTENT_APPLY = "application/apply-patch+yaml"
CONTENT_MERGE = "application/merge-patch+json"
CONTENT_JSON_PATCH = "application/json-patch+json"


class MissingDependency(MissingLibrary):
    """The kubernetes Python client is not installed where the module runs."""

    def __init__(self, name, tb):
        super().__init__("%s>=31.0.0" % name, traceback=tb)


class K8sError(GpupoolError):
    """An API request that failed (after retries), with what a person needs to fix it."""

    def __init__(self, message, status=0, reason="", method="", path="", body=None, hint=""):
        super().__init__(message, **({"status": status} if status else {}))
        self.status = status
        self.reason = reason
        self.method = method
        self.path = path
        self.body = body if isinstance(body, dict) else {}
        self.hint = hint

    @property
    def causes(self):
        return (self.body.get("details") or {}).get("causes") or []

    def describe(self):
        text = self.message
        if self.hint:
            text += "; " + self.hint
        return text

    def __str__(self):
        return self.describe()


class NotFound(K8sError):
    pass


class FieldNotInSchema(K8sError):
    """The server does not know a field of the request: the field is newer than the cluster's Kubernetes release.

    `fields`: the field paths the server named (".spec.extendedResourceName")."""

    def __init__(self, message, fields=(), **kw):
        super().__init__(message, **kw)
        self.fields = tuple(fields)


class Conflict(K8sError):
    pass


def _env_bool(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def resolve_params(params, cluster=None):
    """Connection options in order: module option, then the cluster inventory (kubeconfig, context),
    then the K8S_AUTH_* environment variables kubernetes.core uses, then KUBECONFIG/~/.kube/config."""
    out = {k: params.get(k) for k in CONNECTION_OPTIONS}
    if cluster is not None:
        if out.get("kubeconfig") is None and out.get("host") is None and getattr(cluster, "kubeconfig", None):
            out["kubeconfig"] = cluster.kubeconfig
        if out.get("context") is None and getattr(cluster, "context", None):
            out["context"] = cluster.context
    for key, env in ENV_FALLBACK.items():
        if out.get(key) is None and os.environ.get(env):
            out[key] = _env_bool(os.environ[env]) if key == "validate_certs" else os.environ[env]
    if out.get("kubeconfig"):
        out["kubeconfig"] = os.path.expanduser(out["kubeconfig"])
    if out.get("request_timeout") is None:
        out["request_timeout"] = 30.0
    if out.get("request_retries") is None:
        out["request_retries"] = 5
    return out


def connect(params, cluster=None):
    """A K8sClient for the module's connection options (see CONNECTION_OPTIONS)."""
    try:
        from kubernetes import client as kclient
        from kubernetes import config as kconfig
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise MissingDependency("kubernetes", traceback.format_exc())
    p = resolve_params(params, cluster)
    cfg = kclient.Configuration()
    source = ""
    try:
        if p.get("kubeconfig") or not p.get("host"):
            path = p.get("kubeconfig")
            if path is None and os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
                kconfig.load_incluster_config(client_configuration=cfg)
                source = "in-cluster service account"
            else:
                path = path or os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0]
                path = os.path.expanduser(path)
                if not os.path.exists(path):
                    raise K8sError(
                        "kubeconfig %s does not exist" % path,
                        hint="set the module's kubeconfig option, gpupool_cluster.kubeconfig or "
                        "K8S_AUTH_KUBECONFIG to the cluster's kubeconfig file",
                    )
                kconfig.load_kube_config(
                    config_file=path, context=p.get("context"), client_configuration=cfg, persist_config=False
                )
                source = "kubeconfig %s%s" % (path, " (context %s)" % p["context"] if p.get("context") else "")
    except ConfigException as exc:
        raise K8sError(
            "could not load Kubernetes credentials: %s" % exc, hint="check the kubeconfig file and the context name"
        )
    if p.get("host"):
        cfg.host = p["host"]
        source = source or "host %s" % p["host"]
    if p.get("api_key"):
        cfg.api_key = {"authorization": p["api_key"]}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    if p.get("validate_certs") is not None:
        cfg.verify_ssl = bool(p["validate_certs"])
    if p.get("ca_cert"):
        cfg.ssl_ca_cert = p["ca_cert"]
    if p.get("client_cert"):
        cfg.cert_file = p["client_cert"]
    if p.get("client_key"):
        cfg.key_file = p["client_key"]
    cfg.retries = False  # our own retry loop (K8sClient.request) decides
    # one connection per worker that writes nodes at once (k8s/workers.py), kept open between requests
    cfg.connection_pool_maxsize = max(int(getattr(cfg, "connection_pool_maxsize", 0) or 0), NODE_WORKERS)
    if not cfg.host:
        raise K8sError("no Kubernetes API address", hint="give kubeconfig or host")
    api = kclient.ApiClient(cfg)
    return K8sClient(api, cfg, timeout=float(p["request_timeout"]), retries=int(p["request_retries"]), source=source)


class K8sClient:
    """REST calls with retries and timeouts; JSON in, JSON out."""

    def __init__(self, api_client, configuration, timeout=30.0, retries=5, source="", sleep=time.sleep):
        self.api = api_client
        self.cfg = configuration
        self.host = configuration.host.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.source = source
        self._sleep = sleep
        self._groups = {}
        self._gave_up = None  # the K8sError after which no request is sent any more (see request())
        self.discovery_cache = DiscoveryCache(self.host)
        self.view = RunView(self.host, None)  # the run's view (k8s/run_view.py); no run, no view
        self.requests = 0  # requests sent (retries included): for tests and benchmarks
        self._count = threading.Lock()  # requests may be sent from several workers at once (k8s/workers.py)
        # Called with "METHOD path" before every write; raises to stop it (k8s/lease_keeper.py: a run that lost its
        # run lease stops before its next write). The helm runner and the drain of a step share it with this client.
        self.write_guard: Optional[Callable[[str], None]] = None

    # ---- raw --------------------------------------------------------------------------------
    def _headers(self, content_type, accept=CONTENT_JSON):
        headers = {"Accept": accept, "User-Agent": "gpupool.core"}
        if content_type:
            headers["Content-Type"] = content_type
        for auth in (self.cfg.auth_settings() or {}).values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        if getattr(self.cfg, "username", None) and getattr(self.cfg, "password", None):
            headers["Authorization"] = self.cfg.get_basic_auth_token()
        return headers

    def request(
        self, method, path, query=None, body=None, content_type=None, retry_status=RETRY_STATUS, accept=CONTENT_JSON
    ):
        """Send one request (retrying transient failures); return the decoded JSON body.

        `retry_status`: the HTTP statuses retried here. An Eviction passes it without 429, because there 429
        means "a PodDisruptionBudget says not now", which the drain waits out with its own deadline."""
        import urllib3

        if self._gave_up is not None:
            # The API server was unreachable or overloaded a moment ago, after every retry: one sentence,
            # not the same back-off again for each of the remaining objects.
            raise K8sError(
                "%s; not sent: %s %s" % (self._gave_up.message, method, path),
                status=self._gave_up.status,
                method=method,
                path=path,
                hint=self._gave_up.hint,
            )
        url = self.host + path
        if query:
            url += "?" + urlencode([(k, v) for k, v in query.items() if v is not None], doseq=True)
        data = None
        if body is not None:
            data = json.dumps(body, sort_keys=True).encode("utf-8")
            content_type = content_type or CONTENT_JSON
        timeout = urllib3.Timeout(connect=min(10.0, self.timeout), read=self.timeout)
        attempt = 0
        while True:
            attempt += 1
            if method != "GET" and self.write_guard is not None:
                # before every attempt: a retry after a back-off may come after this run lost its lease
                self.write_guard("%s %s" % (method, path))
            with self._count:
                self.requests += 1
            try:
                resp = self.api.rest_client.pool_manager.request(
                    method,
                    url,
                    body=data,
                    headers=self._headers(content_type, accept),
                    timeout=timeout,
                    retries=False,
                    preload_content=True,
                )
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt <= self.retries and self._gave_up is None:
                    self._backoff(attempt, None)
                    continue
                self._gave_up = K8sError(
                    "cannot reach the Kubernetes API at %s (%s %s): %s after %d attempt(s)"
                    % (self.host, method, path, connection_reason(exc), attempt),
                    method=method,
                    path=path,
                    hint="check that the API server is up and that host/kubeconfig (%s) point at it, then rerun: "
                    "the run stopped at the first request that could not be sent, and a rerun continues from "
                    "what is in the cluster" % (self.source or "default"),
                )
                raise self._gave_up
            status = resp.status
            raw = resp.data or b""
            if 200 <= status < 300:
                if not raw:
                    out = {}
                else:
                    try:
                        out = json.loads(raw.decode("utf-8"))
                    except ValueError:
                        return {"raw": raw.decode("utf-8", "replace")}
                if method != "GET" and self.view.enabled:
                    self._keep_view(method, path, query, body, out)
                return out
            schema = status in (400, 422, 500) and bool(schema_fields(raw))
            if status in retry_status and not schema and attempt <= self.retries and self._gave_up is None:
                self._backoff(attempt, resp.headers.get("Retry-After"))
                continue
            err = _error(method, path, status, resp.reason, raw, self)
            if status in retry_status and not schema:
                # gave up on a status this request retried: the server is in trouble, later requests fail at once.
                # Not for an answer the caller waits out itself (an Eviction's 429 is a PodDisruptionBudget), nor
                # for an answer about the schema (a field newer than the server's release).
                self._gave_up = err
            raise err

    def _keep_view(self, method, path, query, body, out):
        """A write gpupool made (not a dry run) keeps the run's view current: the answer is the object now."""
        if (query or {}).get("dryRun") or (isinstance(body, dict) and body.get("dryRun")):
            return
        target = object_of(path)
        if target is None:
            return
        key, namespace, name, subresource = target
        if subresource not in (None, "status"):
            return  # an eviction or a scale answers with something else than the object
        if method == "DELETE":
            if name:
                self.view.drop(key, namespace, name)
        elif isinstance(out, dict) and (out.get("metadata") or {}).get("name"):
            self.view.record(key, out)

    def _backoff(self, attempt, retry_after):
        delay = min(8.0, 0.25 * (2 ** (attempt - 1)))
        delay = delay * (0.5 + random.random() / 2)
        if retry_after:
            try:
                delay = max(delay, min(30.0, float(retry_after)))
            except ValueError:
                pass
        self._sleep(delay)

    # ---- discovery ----------------------------------------------------------------------------
    def group_versions(self, group):
        """Versions the server serves for an API group, in the server's order ([] when not served)."""
        if group not in self._groups:
            if group in GA_ONLY_GROUPS:
                # served at v1 by every release gpupool supports (apps/v1 since 1.9): nothing to discover
                self._groups[group] = ["v1"]
            else:
                cached = self.discovery_cache.get(group)
                if cached:
                    self._groups[group] = cached
                    return cached
                try:
                    doc = self.request("GET", "/apis/%s" % group)
                    self._groups[group] = [v["version"] for v in doc.get("versions", [])]
                except NotFound:
                    self._groups[group] = []
                # Only a served group is remembered: a CRD installed a moment later is seen at once.
                if self._groups[group]:
                    self.discovery_cache.put(group, self._groups[group])
        return self._groups[group]

    def forget_group(self, group):
        """Discover `group` again next time (its collection answered 404: the cached versions are stale)."""
        self._groups.pop(group, None)
        self.discovery_cache.forget(group)

    def preferred_version(self, group, candidates):
        """First of `candidates` (most preferred first) that the server serves, else None."""
        served = self.group_versions(group)
        for version in candidates:
            if version in served:
                return version
        return None

    def server_version(self):
        return self.request("GET", "/version")

    # ---- helpers ------------------------------------------------------------------------------
    path = staticmethod(api_path)  # k8s/paths.py: the one place an API path is made

    def list(self, group, version, plural, namespace=None, label_selector=None, limit=None):
        """Every object of a kind (in a namespace), read now. One request, whatever the size (the physical limit
        of a read is one LIST; `limit` pages with limit/continue where a caller wants pages). A cluster-wide list
        becomes the run's view of the kind (k8s/run_view.py)."""
        items, token = [], None
        while True:
            doc = self.request(
                "GET",
                self.path(group, version, plural, namespace),
                query={"labelSelector": label_selector, "limit": limit, "continue": token},
            )
            items.extend(doc.get("items") or [])
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                break
        if namespace is None and not label_selector:
            self.view.put(kind_key(group, plural), items)
        return items

    def observe(self, group, version, plural, label_selector=None):
        """The run's view of a cluster-wide kind: listed once per run, then read from the view (kept current with
        gpupool's own writes) by every later step; label selectors are matched here. Never for waiting: a wait
        must see the world move, it uses `list`."""
        items = self.view.get(kind_key(group, plural))
        if items is None:
            items = self.list(group, version, plural)
        if label_selector:
            return [o for o in items if selector_matches(label_selector, (o.get("metadata") or {}).get("labels") or {})]
        return items


def lease_check(client, what):
    """Between two looks of a wait that only reads (a MIG wave, pods leaving a drained node): stop there, with the
    client's write guard's LeaseLost, once this run lost its run lease (k8s/lease_keeper.py), not at the deadline."""
    guard = getattr(client, "write_guard", None)
    if guard is not None:
        guard(what)


def _error(method, path, status, reason, raw, client):
    """The K8sError (or subclass) of an error answer (k8s/answers.py reads it)."""
    answer = read_answer(method, path, status, reason, raw, client.host, client.source, status in RETRY_STATUS)
    cls = {"schema": FieldNotInSchema, "not_found": NotFound, "conflict": Conflict}.get(answer.kind, K8sError)
    extra = {"fields": answer.fields} if answer.kind == "schema" else {}
    return cls(
        answer.message,
        status=status,
        reason=answer.reason,
        method=method,
        path=path,
        body=answer.body,
        hint=answer.hint,
        **extra,
    )
