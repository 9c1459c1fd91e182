"""The server-side-apply engine (k8s/apply_engine.py) against the real kube-apiserver: writes counted in the audit log.

Each test uses its own pool names and object names and cleans up, so the session's control plane can be
shared with the other integration tests.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.k8s.apply_engine import (
    ApplyEngine,
    ConvergeError,
    PruneScope,
)
from ansible_collections.gpupool.core.plugins.module_utils.k8s.client import K8sError, connect
from ansible_collections.gpupool.core.plugins.module_utils.k8s.node_writes import converge_node
from ansible_collections.gpupool.core.plugins.module_utils.model import names as model_names
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan import kinds as plan_kinds
from ansible_collections.gpupool.core.plugins.module_utils.plan.nodes import pool_nodes as plan_nodes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import claim_templates as plan_claim_templates
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import device_classes as plan_device_classes
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects import ownership as plan_ownership
from ansible_collections.gpupool.core.plugins.module_utils.plan.objects.ssa_compare import strip
from tests.integration import k8s_helpers as h

pytestmark = pytest.mark.controlplane
ADMIN = "gpupool-admin"


def engine(cp, **kw):
    client = connect({"kubeconfig": str(cp.kubeconfig)})
    client.discovery_cache.enabled = False  # these tests count every request, discovery included
    return ApplyEngine(client, **kw)


def cluster(*pools):
    return load_cluster({"name": "c", "pools": list(pools)})


def classes(cp, c, pools=None):
    """The DeviceClasses of a cluster in the session release's resource.k8s.io version."""
    api = "resource.k8s.io/" + cp.release.resource_version
    return plan_device_classes.cluster_device_classes(c, pools, api_version=api)


def a100(cp):
    """The A100 pool; with extendedResourceName only on a release that keeps it (the engine is below the
    device_class step's probe, which leaves the field out elsewhere: test_k8s_releases.py)."""
    if cp.release.extended_resource_name:
        return A100
    return dict(
        A100, device_classes={k: v for k, v in A100["device_classes"].items() if k != "extended_resource_names"}
    )


def names(results, action=None):
    return sorted(r.name for r in results if action is None or r.action == action)


@pytest.fixture
def cleanup(control_plane):
    """Delete gpupool's objects of the given pools after the test."""
    pools = []
    yield pools
    if pools:
        e = engine(control_plane)
        e.converge(plan_kinds.DEVICE_CLASS, [], prune=PruneScope(pools=pools))
        e.converge(plan_kinds.RESOURCE_CLAIM_TEMPLATE, [], prune=PruneScope(pools=pools))


T4 = {
    "name": "apply-t4",
    "node_selector": {"x": "t4"},
    "gpu": {"model": "T4"},
    "sharing": {"time_slicing": {"interval": "Medium"}},
}
A100 = {
    "name": "apply-a100",
    "node_selector": {"x": "a100"},
    "gpu": {"model": "A100-40GB", "per_node": 2},
    "mig": {"mode": "static", "layout": {"3g.20gb": 1, "2g.10gb": 2}},
    "device_classes": {
        "extended_resource_names": True,
        "extra": [
            {
                "name": "apply-a100-big",
                "min_memory": "20Gi",
                "selectors": ["device.attributes['gpu.nvidia.com'].architecture == 'Ampere'"],
            }
        ],
    },
}


@pytest.mark.dra_api
def test_discovery_prefers_v1_falls_back_and_explains_missing_apis(control_plane):
    e = engine(control_plane)
    release = control_plane.release
    assert e.version(plan_kinds.DEVICE_CLASS) == release.resource_version  # the newest the release serves
    served = e.client.group_versions("resource.k8s.io")
    assert set(release.resource_versions) <= set(served)
    # On a cluster without v1 the next served version is taken, in the engine's preference order.
    older = [v for v in ("v1beta2", "v1beta1") if v in served]
    assert e.client.preferred_version("resource.k8s.io", ("v9", "v1beta2", "v1beta1")) == (older or [None])[0]
    widget = plan_kinds.Kind("Widget", "widgets.example.com", "widgets", True, ("v1",))
    assert e.version(widget, required=False) is None
    with pytest.raises(K8sError) as err:
        e.version(widget)
    assert "the API server does not serve Widget (widgets.example.com, versions v1)" in str(err.value)
    h.install_compute_domain_crd(control_plane)
    assert engine(control_plane).version(plan_kinds.COMPUTE_DOMAIN) == "v1beta1"  # v1beta2 is not served by this CRD


@pytest.mark.dra_api
def test_device_classes_first_run_writes_second_run_and_check_mode_do_not(control_plane, cleanup):
    cleanup += ["apply-t4", "apply-a100"]
    c = cluster(T4, a100(control_plane))
    want = classes(control_plane, c)
    assert len(want) == 4

    mark = control_plane.audit.mark()
    dry = engine(control_plane, check_mode=True).converge(plan_kinds.DEVICE_CLASS, want)
    window = control_plane.audit.since(mark)
    assert [r.action for r in dry] == ["created"] * 4 and all(r.changed for r in dry)
    assert window.writes(user=ADMIN) == []
    assert len(window.select(verbs={"patch"}, user=ADMIN, include_dry_run=True)) == 4  # dryRun=All
    assert control_plane.kubectl("get", "deviceclass", "apply-t4", check=False).returncode != 0

    mark = control_plane.audit.mark()
    real = engine(control_plane).converge(plan_kinds.DEVICE_CLASS, want)
    window = control_plane.audit.since(mark)
    assert [r.action for r in real] == ["created"] * 4
    assert h.write_counts(window) == {("patch", "deviceclasses"): 4}
    # check mode predicted exactly what the real run did
    assert [r.after for r in dry] == [r.after for r in real]
    live = h.kubectl_json(control_plane, "get", "deviceclass", "apply-a100-3g.20gb")
    assert live["spec"].get("extendedResourceName") == (
        "gpupool.io/apply-a100-3g.20gb" if control_plane.release.extended_resource_name else None
    )
    assert strip(live)["metadata"]["labels"] == plan_ownership.ownership_labels("apply-a100", "c")

    mark = control_plane.audit.mark()
    e = engine(control_plane)
    again = e.converge(plan_kinds.DEVICE_CLASS, want)
    window = control_plane.audit.since(mark)
    assert [r.action for r in again] == ["unchanged"] * 4 and not any(r.changed for r in again)
    assert window.writes(user=ADMIN) == []
    assert e.client.requests == 2  # discovery of resource.k8s.io + one LIST of DeviceClasses

    # a change: check mode shows it without writing, the real run applies the same
    c2 = cluster(dict(T4, sharing={"time_slicing": {"interval": "Long"}}), a100(control_plane))
    want2 = classes(control_plane, c2)
    mark = control_plane.audit.mark()
    dry = engine(control_plane, check_mode=True).converge(plan_kinds.DEVICE_CLASS, want2)
    assert control_plane.audit.since(mark).writes(user=ADMIN) == []
    real = engine(control_plane).converge(plan_kinds.DEVICE_CLASS, want2)
    assert [(r.name, r.action) for r in real if r.changed] == [("apply-t4", "updated")]
    assert [(r.before, r.after) for r in dry] == [(r.before, r.after) for r in real]
    params = real[0].after["spec"]["config"][0]["opaque"]["parameters"]
    assert params["sharing"]["timeSlicingConfig"] == {"interval": "Long"}


@pytest.mark.dra_api
def test_prune_deletes_only_gpupool_objects_of_the_pools_in_scope(control_plane, cleanup):
    cleanup += ["apply-t4", "apply-a100"]
    e = engine(control_plane)
    e.converge(plan_kinds.DEVICE_CLASS, classes(control_plane, cluster(T4, a100(control_plane))))
    control_plane.kubectl("create", "-f", "-", input=dc_yaml(control_plane) % ("apply-foreign", "{}"))
    control_plane.kubectl(
        "create", "-f", "-", input=dc_yaml(control_plane) % ("apply-half", '{"gpupool.io/pool": "apply-a100"}')
    )
    try:
        # drop the extra class of apply-a100; prune limited to apply-a100
        no_extra = dict(A100, device_classes={"extended_resource_names": control_plane.release.extended_resource_name})
        want = classes(control_plane, cluster(T4, no_extra), ["apply-a100"])
        mark = control_plane.audit.mark()
        dry = engine(control_plane, check_mode=True).converge(
            plan_kinds.DEVICE_CLASS, want, prune=PruneScope(["apply-a100"])
        )
        assert control_plane.audit.since(mark).writes(user=ADMIN) == []
        assert names(dry, "deleted") == ["apply-a100-big"]
        # (the audit reader treats dryRun=All in the URI as dry; make sure the server did too)
        assert control_plane.kubectl("get", "deviceclass", "apply-a100-big", check=False).returncode == 0
        mark = control_plane.audit.mark()
        res = engine(control_plane).converge(plan_kinds.DEVICE_CLASS, want, prune=PruneScope(["apply-a100"]))
        window = control_plane.audit.since(mark)
        assert names(res, "deleted") == ["apply-a100-big"]
        assert h.writes(window) == [("delete", "deviceclasses", "apply-a100-big")]
        # prune over every gpupool object: our T4 class goes, the classes without our labels stay
        res = engine(control_plane).converge(plan_kinds.DEVICE_CLASS, [], prune=PruneScope(["apply-t4", "apply-a100"]))
        assert names(res, "deleted") == ["apply-a100-2g.10gb", "apply-a100-3g.20gb", "apply-t4"]
        for name in ("apply-foreign", "apply-half"):
            assert control_plane.kubectl("get", "deviceclass", name, check=False).returncode == 0
    finally:
        control_plane.kubectl("delete", "deviceclass", "apply-foreign", "apply-half", "--ignore-not-found")


DC_YAML = """apiVersion: resource.k8s.io/{version}
kind: DeviceClass
metadata: {name: %s, labels: %s}
spec:
  selectors: [{cel: {expression: "device.driver == 'example.com'"}}]
"""


def dc_yaml(cp):
    return DC_YAML.replace("{version}", cp.release.resource_version)


@pytest.mark.dra_api
def test_a_device_class_we_do_not_own_is_never_modified(control_plane, cleanup):
    cleanup += ["apply-own"]
    control_plane.kubectl("create", "-f", "-", input=dc_yaml(control_plane) % ("apply-own-big", "{}"))
    try:
        pool = {
            "name": "apply-own",
            "node_selector": {"x": "y"},
            "gpu": {"model": "T4"},
            "device_classes": {"extra": [{"name": "apply-own-big", "min_memory": "10Gi"}]},
        }
        before = h.kubectl_json(control_plane, "get", "deviceclass", "apply-own-big")
        mark = control_plane.audit.mark()
        with pytest.raises(ConvergeError) as err:
            engine(control_plane).converge(
                plan_kinds.DEVICE_CLASS, classes(control_plane, cluster(pool)), prune=PruneScope()
            )
        window = control_plane.audit.since(mark)
        assert (
            "DeviceClass apply-own-big (wanted by pool apply-own) already exists and is not managed by gpupool"
        ) in err.value.message
        assert (
            "rename the object in the inventory (gpupool_cluster.pools[0].device_classes.extra[0])" in err.value.message
        )
        # the other class was still converged; the foreign one saw no write
        assert [(r.name, r.action) for r in err.value.results] == [
            ("apply-own", "created"),
            ("apply-own-big", "failed"),
        ]
        assert h.writes(window) == [("patch", "deviceclasses", "apply-own")]
        after = h.kubectl_json(control_plane, "get", "deviceclass", "apply-own-big")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    finally:
        control_plane.kubectl("delete", "deviceclass", "apply-own-big", "--ignore-not-found")


@pytest.mark.dra_api
def test_field_manager_conflict_names_the_other_manager_and_force_takes_over(control_plane, cleanup):
    cleanup += ["apply-conflict"]
    pool = {"name": "apply-conflict", "node_selector": {"x": "y"}, "gpu": {"model": "T4"}}
    want = classes(control_plane, cluster(pool))
    engine(control_plane).converge(plan_kinds.DEVICE_CLASS, want)
    other = dc_yaml(control_plane) % (
        "apply-conflict",
        '{"app.kubernetes.io/managed-by": gpupool, "gpupool.io/pool": apply-conflict}',
    )
    control_plane.kubectl(
        "apply", "--server-side", "--field-manager=other-tool", "--force-conflicts", "-f", "-", input=other
    )
    mark = control_plane.audit.mark()
    with pytest.raises(ConvergeError) as err:
        engine(control_plane).converge(plan_kinds.DEVICE_CLASS, want)
    msg = err.value.message
    assert msg.startswith(
        "DeviceClass apply-conflict (pool apply-conflict): server-side apply conflict: "
        ".spec.selectors owned by field manager 'other-tool', not by 'gpupool'."
    )
    assert "force_conflicts: true" in msg
    assert [e["responseStatus"]["code"] for e in control_plane.audit.since(mark).writes(user=ADMIN)] == [409]
    live = h.kubectl_json(control_plane, "get", "deviceclass", "apply-conflict")
    assert live["spec"]["selectors"][0]["cel"]["expression"] == "device.driver == 'example.com'"
    res = engine(control_plane, force_conflicts=True).converge(plan_kinds.DEVICE_CLASS, want)
    assert [(r.name, r.action) for r in res] == [("apply-conflict", "updated")]
    live = h.kubectl_json(control_plane, "get", "deviceclass", "apply-conflict")
    assert "Tesla T4" in live["spec"]["selectors"][0]["cel"]["expression"]


@pytest.mark.dra_api
def test_invalid_cel_comes_back_with_class_pool_and_inventory_key(control_plane, cleanup):
    cleanup += ["apply-cel"]
    pool = {
        "name": "apply-cel",
        "node_selector": {"x": "y"},
        "gpu": {"model": "T4"},
        "device_classes": {
            "defaults": False,
            "extra": [
                {
                    "name": "apply-cel-bad",
                    "min_memory": "8Gi",
                    "selectors": ["device.attributes['gpu.nvidia.com'].productName =="],
                }
            ],
        },
    }
    want = classes(control_plane, cluster(pool))
    for check in (True, False):
        mark = control_plane.audit.mark()
        with pytest.raises(ConvergeError) as err:
            engine(control_plane, check_mode=check).converge(plan_kinds.DEVICE_CLASS, want)
        msg = err.value.message
        assert msg.startswith(
            "DeviceClass apply-cel-bad (pool apply-cel) was rejected by the API server: "
            "spec.selectors[2].cel.expression: Invalid value:"
        ), msg
        assert "compilation failed" in msg
        assert "(from gpupool_cluster.pools[0].device_classes.extra[0].selectors[0])" in msg
        assert all(e["responseStatus"]["code"] == 422 for e in control_plane.audit.since(mark).writes(user=ADMIN))
    assert control_plane.kubectl("get", "deviceclass", "apply-cel-bad", check=False).returncode != 0


@pytest.mark.dra_api
def test_older_resource_api_versions_converge_idempotently(control_plane, cleanup):
    """Each beta version the release serves: v1beta1 and v1beta2 on 1.37 (switched on), v1beta1 on 1.33, none on
    1.32 and 1.34 (there the newest is the only one: the tests above converge it)."""
    cleanup += ["apply-t4"]
    ns = "apply-tenant"
    h.ensure_namespace(control_plane, ns)
    c = cluster(T4)
    served = engine(control_plane).client.group_versions("resource.k8s.io")
    newest = control_plane.release.resource_version
    older = [v for v in ("v1beta1", "v1beta2") if v in served and v != newest]
    if not older:
        pytest.skip(
            "Kubernetes %s serves no resource.k8s.io version older than %s" % (control_plane.release.minor, newest)
        )
    for version in older:
        pinned = {plan_kinds.RESOURCE_CLAIM_TEMPLATE: version, plan_kinds.DEVICE_CLASS: version}
        api = "resource.k8s.io/" + version
        tpl = [
            {
                "name": "two-t4-" + version,
                "pool": "apply-t4",
                "count": 2,
                "match_attribute": "resource.kubernetes.io/pcieRoot",
            }
        ]
        want = plan_claim_templates.cluster_resource_claim_templates(c, None, [ns], tpl, api_version=api)
        res = engine(control_plane, versions=pinned).converge(plan_kinds.RESOURCE_CLAIM_TEMPLATE, want)
        assert [r.action for r in res] == ["created"]
        mark = control_plane.audit.mark()
        res = engine(control_plane, versions=pinned).converge(plan_kinds.RESOURCE_CLAIM_TEMPLATE, want)
        assert [r.action for r in res] == ["unchanged"]
        assert control_plane.audit.since(mark).writes(user=ADMIN) == []
        live = h.kubectl_json(
            control_plane, "get", "resourceclaimtemplates.%s.resource.k8s.io" % newest, "-n", ns, "two-t4-" + version
        )
        req = live["spec"]["spec"]["devices"]["requests"][0]
        assert req["exactly"]["count"] == 2 and req["exactly"]["deviceClassName"] == "apply-t4"
        dcs = plan_device_classes.cluster_device_classes(c, api_version=api)
        expected = "created" if version == older[0] else "unchanged"  # same DeviceClass, read at another version
        assert [r.action for r in engine(control_plane, versions=pinned).converge(plan_kinds.DEVICE_CLASS, dcs)] == [
            expected
        ]


def test_nodes_labels_and_taints_keep_what_others_set(control_plane):
    other_taint = {"key": "example.com/maintenance", "value": "x", "effect": "NoSchedule"}
    names_ = ["apply-node-0", "apply-node-1"]
    for n in names_:
        h.make_node(control_plane, n, {"team": "x", "magnum.openstack.org/nodegroup": "apply-ng"}, taints=[other_taint])
    pool = load_cluster(
        {
            "name": "c",
            "magnum": {"cloud": "o", "cluster": "k"},
            "pools": [
                {
                    "name": "apply-np",
                    "nodegroup": {"flavor": "f", "name": "apply-ng"},
                    "gpu": {"model": "T4"},
                    "node_labels": {"site": "cern"},
                }
            ],
        }
    ).pools[0]
    try:

        def converge(check=False, pool=pool, release=False):
            e = engine(control_plane, check_mode=check)
            nodes = [n for n in e.list(plan_kinds.NODE) if n["metadata"]["name"] in names_]
            out = []
            for node in nodes:
                labels = {} if release else plan_nodes.desired_node_labels(pool, node, ka_owned(node))
                taints = [] if release else plan_nodes.desired_node_taints(pool)
                out.append(converge_node(e, node, labels, taints, pool=pool.name))
            return out

        mark = control_plane.audit.mark()
        dry = converge(check=True)
        assert control_plane.audit.since(mark).writes(user=ADMIN) == []
        mark = control_plane.audit.mark()
        real = converge()
        window = control_plane.audit.since(mark)
        assert [r.action for r in real] == ["updated", "updated"]
        assert [r.after for r in dry] == [r.after for r in real]
        assert h.write_counts(window) == {("patch", "nodes"): 2}  # per node: ONE merge patch, labels and taints
        node = h.core(control_plane).read_node("apply-node-0")
        assert node.metadata.labels["team"] == "x" and node.metadata.labels["site"] == "cern"
        assert node.metadata.labels["gpupool.io/pool"] == "apply-np"
        assert node.metadata.labels["nvidia.com/gpu.present"] == "true"
        assert [(t.key, t.effect) for t in node.spec.taints][:1] == [("example.com/maintenance", "NoSchedule")]
        assert ("node-role.kubernetes.io/gpu", "NoSchedule") in [(t.key, t.effect) for t in node.spec.taints]

        mark = control_plane.audit.mark()
        assert [r.action for r in converge()] == ["unchanged", "unchanged"]
        assert control_plane.audit.since(mark).writes(user=ADMIN) == []

        # a second module labelling nodes with its own field manager leaves node_pool's labels and taints
        mig = engine(control_plane, field_manager="gpupool-mig")
        res = converge_node(mig, mig.get(plan_kinds.NODE, "apply-node-0"), {"nvidia.com/mig.config": "all-1g.5gb"})
        assert res.action == "updated"
        node = h.core(control_plane).read_node("apply-node-0")
        assert node.metadata.labels["nvidia.com/mig.config"] == "all-1g.5gb"
        assert node.metadata.labels["site"] == "cern" and "node-role.kubernetes.io/gpu" in taint_keys(node)
        mark = control_plane.audit.mark()
        assert [r.action for r in converge()] == ["unchanged", "unchanged"]
        assert control_plane.audit.since(mark).writes(user=ADMIN) == []

        # another tool changes the node between our LIST and our PATCH: the resourceVersion
        # precondition fails, the engine reads the node again and retries
        e = engine(control_plane)
        stale = e.get(plan_kinds.NODE, "apply-node-1")
        control_plane.kubectl("label", "node", "apply-node-1", "late=1")
        mark = control_plane.audit.mark()
        res = converge_node(e, stale, {"gpupool.io/pool": "apply-np"}, [], pool="apply-np")
        assert res.action == "updated"
        codes = [ev["responseStatus"]["code"] for ev in control_plane.audit.since(mark).writes(user=ADMIN)]
        assert codes == [409, 200]  # the stale patch, retried after a GET (labels and taints in one patch)
        node = h.core(control_plane).read_node("apply-node-1")
        assert taint_keys(node) == ["example.com/maintenance"]
        assert node.metadata.labels["late"] == "1" and "site" not in node.metadata.labels
        assert (node.metadata.annotations or {}).get(model_names.TAINTS_ANNOTATION) is None

        # release: our labels and taints go, the others' stay
        converge(release=True)
        node = h.core(control_plane).read_node("apply-node-0")
        assert "gpupool.io/pool" not in node.metadata.labels and node.metadata.labels["team"] == "x"
        assert taint_keys(node) == ["example.com/maintenance"]

        # a node deleted after the LIST is not re-created by the label apply
        gone = e.get(plan_kinds.NODE, "apply-node-1")
        h.delete_nodes(control_plane, ["apply-node-1"])
        res = converge_node(engine(control_plane), gone, {"gpupool.io/pool": "apply-np"}, [], pool="apply-np")
        assert res.action == "vanished"
        assert control_plane.kubectl("get", "node", "apply-node-1", check=False).returncode != 0
    finally:
        h.delete_nodes(control_plane, names_)


def taint_keys(node):
    """Taints except the node.kubernetes.io/not-ready one the API server adds to a new Node."""
    return [t.key for t in node.spec.taints or [] if not t.key.startswith("node.kubernetes.io/")]


def ka_owned(node):
    return plan_nodes.gpupool_label_keys(node)


# ---- retries and timeouts (a local HTTP stand-in: the real client stack, scripted server answers) -----------


class Script(http.server.BaseHTTPRequestHandler):
    answers = []
    seen = []

    def do_GET(self):  # noqa: N802
        Script.seen.append(self.path)
        kind = Script.answers.pop(0) if Script.answers else "ok"
        if kind == "reset":
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if kind == "hang":
            time.sleep(3)
            return
        if isinstance(kind, int):
            self.send_response(kind)
            self.send_header("Retry-After", "0")
            body = b'{"kind":"Status","message":"busy","code":%d}' % kind
        else:
            self.send_response(200)
            body = b'{"major":"1","minor":"37"}'
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Script)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Script.answers, Script.seen = [], []
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()


def test_retries_with_backoff_on_429_5xx_and_connection_resets(scripted):
    client = connect({"host": scripted, "api_key": "t", "request_timeout": 2, "request_retries": 4})
    sleeps = []
    client._sleep = sleeps.append
    Script.answers[:] = [429, 503, "reset", 500]
    assert client.request("GET", "/version") == {"major": "1", "minor": "37"}
    assert len(Script.seen) == 5 and len(sleeps) == 4
    assert sleeps[1] <= sleeps[3] or sleeps[3] <= 8  # exponential, capped
    Script.answers[:] = [503] * 3
    client.retries = 2
    with pytest.raises(K8sError) as err:
        client.request("GET", "/version")
    assert err.value.status == 503 and "still failing after retries" in str(err.value)
    assert "overloaded or failing" in str(err.value) and "rerun" in str(err.value)
    # Given up once: the rest of the run is not sent (no second full back-off per object).
    seen = len(Script.seen)
    with pytest.raises(K8sError) as err:
        client.request("GET", "/apis")
    assert len(Script.seen) == seen and "not sent: GET /apis" in str(err.value) and err.value.status == 503
    client = connect({"host": scripted, "api_key": "t", "request_timeout": 2, "request_retries": 4})
    Script.answers[:] = [404]
    with pytest.raises(K8sError) as err:
        client.request("GET", "/version")
    assert err.value.status == 404  # not retried


def test_timeouts_and_refused_connections_fail_with_a_sentence(scripted):
    client = connect({"host": scripted, "api_key": "t", "request_timeout": 0.5, "request_retries": 0})
    Script.answers[:] = ["hang"]
    t0 = time.monotonic()
    with pytest.raises(K8sError) as err:
        client.request("GET", "/version")
    assert time.monotonic() - t0 < 2.5
    assert "cannot reach the Kubernetes API at %s (GET /version): timed out" % scripted in str(err.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = connect({"host": "https://127.0.0.1:%d" % port, "request_retries": 1})
    client._sleep = lambda s: None
    with pytest.raises(K8sError) as err:
        client.request("GET", "/version")
    assert "connection refused after 2 attempt(s)" in str(err.value)
    assert "check that the API server is up" in str(err.value)
