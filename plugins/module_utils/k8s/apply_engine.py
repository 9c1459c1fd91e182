# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The server-side-apply engine every gpupool Kubernetes module uses (see `ApplyEngine`)."""

from __future__ import annotations

import copy
import re
import time

from ansible_collections.gpupool.core.plugins.module_utils.k8s.answers import missing_api_hint
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import (
    CONTENT_APPLY,
    CONTENT_MERGE,
    Conflict,
    K8sError,
    NotFound,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import GpupoolError
from ansible_collections.gpupool.core.plugins.module_utils.model.names import FIELD_MANAGER
from ansible_collections.gpupool.core.plugins.module_utils.plan.kinds import NAMESPACE
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ownership import (
    LEGACY,
    adopted_message,
    clash_message,
    classify,
    is_owned,
    legacy_left_message,
    legacy_pruned_message,
    may_prune,
    owner_clashes,
    owner_of,
    pool_of,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ownership import ref as object_ref
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ssa_compare import (
    diff_view,
    differences,
    needs_apply,
    strip,
)


class ConvergeError(GpupoolError):
    """One or more objects could not be converged."""

    def __init__(self, message, results=None):
        super().__init__(message)
        self.message = message
        self.results = results or []


class Result:
    """What happened to one object."""

    def __init__(self, kind, name, namespace=None, pool=None, origin=None):
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.pool = pool
        self.origin = origin
        self.action = "unchanged"
        self.changed = False
        self.before = None
        self.after = None
        self.error = None
        self.object = None  # the server's object after the operation
        self.notes = []
        self.pending = None  # check mode, a kind not served yet: what must happen first ("once ... installed")

    @property
    def ref(self):
        return "%s %s" % (self.kind, "%s/%s" % (self.namespace, self.name) if self.namespace else self.name)

    def as_dict(self):
        out = {"kind": self.kind, "name": self.name, "action": self.action, "changed": self.changed}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.pool:
            out["pool"] = self.pool
        if self.error:
            out["error"] = self.error
        if self.notes:
            out["notes"] = list(self.notes)
        if self.pending:
            out["pending"] = self.pending
        return out

    def diff(self):
        header = self.ref + (" (pool %s)" % self.pool if self.pool else "")
        if self.pending:
            header = "would %s %s %s" % ({"created": "create"}.get(self.action, self.action), header, self.pending)
        return {
            "before": diff_view(self.before),
            "after": diff_view(self.after),
            "before_header": header,
            "after_header": header,
        }


class PruneScope:
    """Which gpupool objects may be deleted when no longer desired.

    pools: only objects labelled with one of these pools (None: every gpupool object of the kind).
    namespaces: for namespaced kinds, limit to these namespaces (None: all namespaces).
    owner: the inventory's gpupool.io/owner (cluster.owner_id): only this owner's objects are pruned, plus objects
    made before the owner label whose pool is one of `inventory_pools` (the rule: plan/objects/ownership.py).
    None: every gpupool object in scope, whoever made it (the engine used on its own, without an inventory).
    """

    def __init__(self, pools=None, namespaces=None, owner=None, inventory_pools=None):
        self.pools = set(pools) if pools else None
        self.namespaces = set(namespaces) if namespaces else None
        self.owner = owner
        self.inventory_pools = set(inventory_pools or ())

    @classmethod
    def of(cls, cluster, pools=None, namespaces=None):
        """The scope of a step converging `cluster`'s objects (pools/namespaces as above)."""
        return cls(pools, namespaces, cluster.owner_id, [p.name for p in cluster.pools])

    def in_scope(self, obj):
        if self.pools is not None and pool_of(obj) not in self.pools:
            return False
        ns = (obj.get("metadata") or {}).get("namespace")
        return self.namespaces is None or ns in self.namespaces

    def covers(self, obj):
        if not is_owned(obj) or not self.in_scope(obj):
            return False
        return self.owner is None or may_prune(obj, self.owner, self.inventory_pools)


CONFLICT_CAUSE = re.compile(r'conflict with "([^"]+)"(?: with subresource "([^"]+)")?(?: using ([^:\s]+))?')


def conflict_owners(err):
    """[(manager, field)] from a server-side apply 409 Conflict."""
    out = []
    for cause in err.causes:
        if cause.get("reason") != "FieldManagerConflict":
            continue
        m = CONFLICT_CAUSE.search(cause.get("message") or "")
        out.append((m.group(1) if m else cause.get("message"), cause.get("field")))
    if not out:
        for m in CONFLICT_CAUSE.finditer(err.message or ""):
            after = m.end()
            rest = err.message[after:].split("\n")[0]
            fields = re.findall(r"\.[A-Za-z0-9_.\[\]=\"'-]+", rest)
            out.extend((m.group(1), f) for f in (fields or [None]))
    return out


def conflict_message(ref, err):
    owners = conflict_owners(err)
    by_manager = {}
    for manager, field in owners:
        by_manager.setdefault(manager, []).append(field or "?")
    parts = ["%s owned by field manager %r" % (", ".join(sorted(set(f))), m) for m, f in sorted(by_manager.items())]
    return (
        "%s: server-side apply conflict: %s, not by %r. Another tool manages these fields; gpupool will not "
        "take them over silently. Either stop managing them there (or remove them with that tool), or rerun "
        "with force_conflicts: true to make gpupool their owner."
        % (ref, "; ".join(parts) or err.message, FIELD_MANAGER)
    )


def invalid_message(ref, err, origins=None, pool=None):
    """422 from the server (e.g. a CEL selector that does not compile), with where it came from."""
    lines = []
    for cause in err.causes:
        field = cause.get("field") or ""
        msg = (cause.get("message") or "").strip()
        where = ""
        m = re.match(r"spec\.selectors\[(\d+)\]", field)
        if m and origins and int(m.group(1)) < len(origins):
            where = " (from %s)" % origins[int(m.group(1))]
        lines.append("%s: %s%s" % (field, msg, where))
    text = "%s%s was rejected by the API server: " % (ref, " (pool %s)" % pool if pool else "")
    text += "; ".join(lines) if lines else err.message
    return text


class ApplyEngine:
    def __init__(
        self,
        client,
        check_mode=False,
        force_conflicts=False,
        field_manager=FIELD_MANAGER,
        sleep=time.sleep,
        clock=time.monotonic,
        versions=None,
    ):
        """versions: {Kind: version} to pin instead of discovering (e.g. an older served version)."""
        self.client = client
        self.check_mode = check_mode
        self.force_conflicts = force_conflicts
        self.field_manager = field_manager
        self._versions = dict(versions or {})
        self._live = {}
        self._sleep = sleep
        self._clock = clock
        self.warnings = []

    # ---- discovery -------------------------------------------------------------------------------
    def version(self, kind, required=True):
        """The version of `kind` to use: the first of kind.versions the server serves."""
        if kind not in self._versions:
            self._versions[kind] = self.client.preferred_version(kind.group or "core", kind.versions)
        v = self._versions[kind]
        if v is None and required:
            raise K8sError(
                "the API server does not serve %s (%s, versions %s)"
                % (kind.kind, kind.group or "core", ", ".join(kind.versions)),
                hint=missing_api_hint(kind),
            )
        return v

    def api_version(self, kind):
        return kind.api_version(self.version(kind))

    # ---- raw operations ----------------------------------------------------------------------------
    def _path(self, kind, namespace=None, name=None, subresource=None):
        return self.client.path(
            kind.group, self.version(kind), kind.plural, namespace if kind.namespaced else None, name, subresource
        )

    def list(self, kind, namespace=None, label_selector=None):
        scope = namespace if kind.namespaced else None
        try:
            return self.client.list(kind.group, self.version(kind), kind.plural, scope, label_selector)
        except NotFound:
            # A collection that answers 404 is a kind the server no longer serves (a CRD deleted since it was
            # discovered, perhaps remembered by the discovery cache): discover again; not served means none.
            self.client.forget_group(kind.group or "core")
            self._versions.pop(kind, None)
            if self.version(kind, required=False) is None:
                return []
            return self.client.list(kind.group, self.version(kind), kind.plural, scope, label_selector)

    def observe(self, kind, namespace=None, label_selector=None):
        """The run's view of a kind (k8s/run_view.py): the run's one cluster-wide list of it, kept current with
        gpupool's writes; a namespace and a label selector are matched here. For planning, never for waiting
        (waits use `list`)."""
        try:
            items = self.client.observe(kind.group, self.version(kind), kind.plural, label_selector)
        except NotFound:
            self.client.forget_group(kind.group or "core")
            self._versions.pop(kind, None)
            if self.version(kind, required=False) is None:
                return []
            items = self.client.observe(kind.group, self.version(kind), kind.plural, label_selector)
        if namespace and kind.namespaced:
            items = [o for o in items if (o.get("metadata") or {}).get("namespace") == namespace]
        return items

    def get(self, kind, name, namespace=None):
        try:
            return self.client.request("GET", self._path(kind, namespace, name))
        except NotFound:
            return None

    def apply(self, kind, obj, dry_run=None, force=None):
        """One server-side apply PATCH; returns the server's object."""
        meta = obj["metadata"]
        query = {"fieldManager": self.field_manager}
        if self.force_conflicts if force is None else force:
            query["force"] = "true"
        if self.check_mode if dry_run is None else dry_run:
            query["dryRun"] = "All"
        return self.client.request(
            "PATCH",
            self._path(kind, meta.get("namespace"), meta["name"]),
            query=query,
            body=obj,
            content_type=CONTENT_APPLY,
        )

    def merge_patch(self, kind, name, patch, namespace=None, dry_run=None):
        query = {"fieldManager": self.field_manager}
        if self.check_mode if dry_run is None else dry_run:
            query["dryRun"] = "All"
        return self.client.request(
            "PATCH", self._path(kind, namespace, name), query=query, body=patch, content_type=CONTENT_MERGE
        )

    def delete(self, kind, name, namespace=None, uid=None, dry_run=None):
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        query = {}
        if self.check_mode if dry_run is None else dry_run:
            # With a DeleteOptions body the API server ignores the query parameters, so dry run
            # must be in the body; it is in the query as well so the request reads as one in logs.
            body["dryRun"] = ["All"]
            query["dryRun"] = "All"
        try:
            return self.client.request("DELETE", self._path(kind, namespace, name), query=query or None, body=body)
        except NotFound:
            return None

    def wait_gone(self, kind, name, namespace=None, timeout=120.0, interval=1.0):
        deadline = self._clock() + timeout
        while True:
            if self.get(kind, name, namespace) is None:
                return True
            if self._clock() >= deadline:
                return False
            self._sleep(interval)

    # ---- converge ------------------------------------------------------------------------------------
    def live_by_name(self, kind, namespaces):
        """{(namespace, name): obj} from one LIST per namespace (one for cluster-scoped kinds; None in `namespaces`
        for a namespaced kind: one LIST of all namespaces)."""
        live = {}
        for ns in sorted(set(namespaces), key=lambda n: n or ""):
            if (kind, ns) not in self._live:  # cached until this engine writes that kind
                self._live[(kind, ns)] = self.list(kind, ns)
            for obj in self._live[(kind, ns)]:
                meta = obj.get("metadata") or {}
                live[(meta.get("namespace") if kind.namespaced else None, meta["name"])] = obj
        return live

    def converge(self, kind, desired, prune=None, immutable=None, recreate=False, delete_timeout=120.0):
        """Converge `desired` (k8s_objects.Desired) of one kind; returns [Result].

        prune: PruneScope or None. immutable: top-level keys the server forbids changing (e.g. "spec"
        for ComputeDomains): a change there fails with a clear message unless `recreate`, which deletes
        the object and applies it again. Raises ConvergeError (with the results so far) when any object failed.
        """
        api_version = self.api_version(kind)
        namespaces = [d.obj["metadata"].get("namespace") if kind.namespaced else None for d in desired]
        if not kind.namespaced:
            namespaces = [None]
        elif prune is not None and prune.namespaces:
            namespaces += list(prune.namespaces)
        # A namespaced kind spread over several namespaces, or pruned in all of them: ONE cluster-wide LIST
        # serves both the comparison and the prune (not one LIST per namespace plus a labelled one for pruning).
        every_namespace = kind.namespaced and (
            (prune is not None and prune.namespaces is None) or len(set(namespaces)) > 1
        )
        live = self.live_by_name(kind, [None] if every_namespace else namespaces)
        for key in [k for k in self._live if k[0] == kind]:
            del self._live[key]  # what follows may write
        self._refuse_other_owners(kind, desired, live)  # before the first write of this kind
        results, errors = [], []
        wanted = set()
        adopted = []
        for d in desired:
            obj = copy.deepcopy(d.obj)
            obj["apiVersion"] = api_version
            meta = obj["metadata"]
            ns = meta.get("namespace") if kind.namespaced else None
            wanted.add((ns, meta["name"]))
            res = Result(kind.kind, meta["name"], ns, d.pool, d.origin)
            results.append(res)
            before = live.get((ns, meta["name"]))
            try:
                self._converge_one(kind, obj, before, res, d, immutable, recreate, delete_timeout)
                if res.changed and owner_of(obj) and before is not None and classify(before, owner_of(obj)) == LEGACY:
                    res.action = "adopted" if res.action == "updated" else res.action  # "recreated" says more
                    adopted.append(res.ref)
            except K8sError as err:
                res.action = "failed"
                res.error = self.explain(kind, res, err, d)
                errors.append(res.error)
        if adopted:
            self.warnings.append(adopted_message(adopted))
        if errors:  # never prune while the desired state could not be applied
            raise ConvergeError("\n".join(errors), results)
        if prune is not None:
            self._report_legacy(kind, prune, [o for k, o in live.items() if k not in wanted])
            candidates = list(live.values())  # prune.covers() keeps gpupool's, of the pools and namespaces in scope
            for obj in sorted(candidates, key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"])):
                meta = obj["metadata"]
                key = (meta.get("namespace") if kind.namespaced else None, meta["name"])
                if key in wanted or not prune.covers(obj):
                    continue
                res = Result(kind.kind, meta["name"], key[0], pool_of(obj))
                results.append(res)
                res.before = strip(obj)
                try:
                    self.delete(kind, meta["name"], key[0], uid=meta.get("uid"))
                    res.action, res.changed, res.after = "deleted", True, {}
                except K8sError as err:
                    res.action = "failed"
                    res.error = self.explain(kind, res, err, None)
                    errors.append(res.error)
        if errors:
            raise ConvergeError("\n".join(errors), results)
        return results

    def _refuse_other_owners(self, kind, desired, live):
        """A desired object whose name (and namespace) another gpupool owner's live object holds: refused, all of
        them in one message, before anything of this kind is written (plan/objects/ownership.py)."""
        wanted, pools = {}, {}
        for d in desired:
            meta = d.obj["metadata"]
            owner = owner_of(d.obj)
            if owner:
                key = (meta.get("namespace") if kind.namespaced else None, meta["name"])
                wanted[key], pools[key] = owner, d.pool
        clashes = owner_clashes(wanted, live)
        if clashes:
            raise ConvergeError(
                "\n".join(clash_message(kind.kind, k, theirs, ours, pools[k]) for k, theirs, ours in clashes)
            )

    def _report_legacy(self, kind, prune, unwanted):
        """Say which objects made before owner labels this prune deletes, and which it leaves to their owner."""
        if prune.owner is None:
            return
        pruned, left = [], []
        for obj in unwanted:
            if classify(obj, prune.owner) != LEGACY or not prune.in_scope(obj):
                continue
            meta = obj["metadata"]
            key = (meta.get("namespace") if kind.namespaced else None, meta["name"])
            (pruned if prune.covers(obj) else left).append(object_ref(kind.kind, key))
        if pruned:
            self.warnings.append(legacy_pruned_message(sorted(pruned)))
        if left:
            self.warnings.append(legacy_left_message(sorted(left)))

    def _converge_one(self, kind, obj, live, res, d, immutable, recreate, delete_timeout):
        if live is not None and not is_owned(live):
            res.action = "failed"
            raise K8sError(
                "%s (wanted by pool %s) already exists and is not managed by gpupool (it lacks the "
                "label app.kubernetes.io/managed-by=gpupool), so gpupool leaves it alone" % (res.ref, res.pool),
                hint="rename the object in the inventory (%s), or delete/relabel the existing one "
                "if gpupool should own it" % (d.origin or "inventory"),
            )
        res.before = strip(live)
        needed, reasons = needs_apply(obj, live, self.field_manager)
        if not needed:
            res.object, res.after = live, strip(live)
            return
        res.notes = reasons
        changed_immutable = [k for k in (immutable or ()) if live is not None and differences(obj.get(k), live.get(k))]
        if changed_immutable:
            fields = [
                r[: -len(" differs")] if r.endswith(" differs") else r
                for r in reasons
                if r.split(".", 1)[0] in changed_immutable
            ]
            if not recreate:
                what = ", ".join(fields) or ", ".join(changed_immutable)
                raise K8sError(
                    "%s (pool %s): %s cannot be changed in place: %s is immutable (the API server "
                    "rejects any change to it)" % (res.ref, res.pool, what, ", ".join(changed_immutable)),
                    hint="set recreate: true to delete and re-create it (workloads using it lose it until "
                    "they are restarted), or revert the inventory change at %s" % (d.origin or "inventory"),
                )
            self._recreate(kind, obj, live, res, delete_timeout)
            return
        after = self.apply(kind, obj)
        res.object, res.after = after, strip(after)
        res.changed = live is None or diff_view(res.before) != diff_view(res.after)
        res.action = "created" if live is None else ("updated" if res.changed else "unchanged")

    def preview(self, kind, desired, pending):
        """Check mode for a kind the API server does not serve yet, which an earlier step of the run brings (the DRA
        driver's chart brings the ComputeDomain CRD): each desired object would be created `pending` ("once the DRA
        driver's CRDs are installed"). Nothing of the kind can be sent, not even as a dry run (the server would
        answer 404); its namespaces are read, as the apply would need them. Returns [Result]; raises ConvergeError
        (with the results) when a namespace is missing."""
        results, errors, namespaces = [], [], {}
        for d in desired:
            meta = d.obj["metadata"]
            ns = meta.get("namespace") if kind.namespaced else None
            res = Result(kind.kind, meta["name"], ns, d.pool, d.origin)
            results.append(res)
            if ns is not None and ns not in namespaces:
                namespaces[ns] = self._namespace_exists(ns)
            if ns is not None and not namespaces[ns]:
                res.action = "failed"
                res.error = missing_namespace_message(res.ref + (" (pool %s)" % res.pool if res.pool else ""), ns)
                errors.append(res.error)
                continue
            res.action, res.changed, res.pending = "created", True, pending
            res.after = strip(d.obj)
        if errors:
            raise ConvergeError("\n".join(errors), results)
        return results

    def _namespace_exists(self, name):
        try:
            return self.get(NAMESPACE, name) is not None
        except K8sError as err:
            if err.status != 403:
                raise
            return True  # the least-privilege ClusterRole reads no namespaces (docs/rbac): the converge will tell

    def _recreate(self, kind, obj, live, res, delete_timeout):
        meta = obj["metadata"]
        if self.check_mode:
            # Predict with a dry-run create under a scratch name (the real name still exists).
            probe = copy.deepcopy(obj)
            probe["metadata"]["name"] = meta["name"][:200] + "-gpupool-dry-run"
            after = self.apply(kind, probe, dry_run=True)
            after["metadata"]["name"] = meta["name"]
        else:
            self.delete(kind, meta["name"], meta.get("namespace"), uid=live["metadata"].get("uid"))
            if not self.wait_gone(kind, meta["name"], meta.get("namespace"), timeout=delete_timeout):
                raise K8sError(
                    "%s was deleted for re-creation but still exists after %ds (finalizers: %s)"
                    % (res.ref, delete_timeout, ", ".join(live["metadata"].get("finalizers") or []) or "none"),
                    hint="check the controller that owns its finalizer, then rerun",
                )
            after = self.apply(kind, obj)
        res.object = after
        res.after = strip(after)
        res.action, res.changed = "recreated", True

    def explain(self, kind, res, err, d):
        ref = res.ref + (" (pool %s)" % res.pool if res.pool else "")
        if isinstance(err, Conflict) and conflict_owners(err):
            return conflict_message(ref, err)
        if err.status == 422:
            return invalid_message(res.ref, err, (d.info or {}).get("selector_origins") if d else None, res.pool)
        if err.status == 404 and kind.namespaced and res.namespace and "namespaces" in (err.message or ""):
            return missing_namespace_message(ref, res.namespace)
        text = err.describe()
        return text if res.ref in text else "%s: %s" % (ref, text)


def missing_namespace_message(ref, namespace):
    return "%s: namespace %s does not exist; create it first (gpupool does not create tenant namespaces)" % (
        ref,
        namespace,
    )


def results_summary(results):
    counts = {}
    for r in results:
        counts[r.action] = counts.get(r.action, 0) + 1
    return counts
