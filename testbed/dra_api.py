"""resource.k8s.io as the stand-ins speak it: the version the API server serves, in that version's shape.

The stand-ins (DRA driver simulator, the ResourceSlice builders, the test bed's helpers) build objects in the
v1 shape and publish them in the newest version the server serves; what they read back is turned into the v1
shape again. The test bed's own code (never the collection's), from the reference kubernetes-dra-versions.md
("Shapes that differ"):

- ResourceSlice devices: v1beta1 nests everything but the name under ``basic:`` (attributes, capacity,
  consumesCounters, ...); v1beta2 and v1 put it on the device.
- ResourceClaim / ResourceClaimTemplate requests: v1beta1 puts deviceClassName, selectors, allocationMode,
  count, adminAccess directly on the request; v1beta2 and v1 wrap them in ``exactly:``.
- Everything else the stand-ins touch (DeviceClass selectors, claim status allocation results, slice pools)
  has the same shape in all three.
"""

from __future__ import annotations

GROUP = "resource.k8s.io"
KNOWN_VERSIONS = ("v1", "v1beta2", "v1beta1")  # newest first: the first one the server serves is spoken
# Request fields that v1beta2/v1 move under `exactly:` (v1beta1 ExactDeviceRequest's fields).
EXACT_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


class NoDraApi(RuntimeError):
    """The server serves no resource.k8s.io version the stand-ins know."""


def served_version(kube) -> str:
    """The newest resource.k8s.io version the server serves (discovery: GET /apis/resource.k8s.io).
    `kube`: testbed.simulator_client.Kube."""
    doc = kube.get("/apis/" + GROUP) or {}
    served = [v.get("version") for v in doc.get("versions") or []]
    for version in KNOWN_VERSIONS:
        if version in served:
            return version
    raise NoDraApi("the API server serves resource.k8s.io %s; the test bed knows %s" % (served, KNOWN_VERSIONS))


def path(version: str, plural: str, namespace: str | None = None, name: str | None = None, sub: str | None = None):
    out = "/apis/%s/%s" % (GROUP, version)
    if namespace:
        out += "/namespaces/%s" % namespace
    out += "/" + plural
    if name:
        out += "/" + name
    if sub:
        out += "/" + sub
    return out


# ---- ResourceSlices ----------------------------------------------------------------------------------------
def slice_to(version: str, obj: dict) -> dict:
    """A v1-shaped ResourceSlice in `version`'s shape (a new dict; the input is not changed)."""
    out = dict(obj, apiVersion="%s/%s" % (GROUP, version))
    spec = dict(obj.get("spec") or {})
    if version == "v1beta1":
        spec["devices"] = [
            {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in spec.get("devices") or []
        ]
    out["spec"] = spec
    return out


def slice_from(version: str, obj: dict) -> dict:
    """A ResourceSlice read from the server at `version` in the v1 shape (the items of a LIST carry no
    apiVersion of their own, so the version read is given)."""
    if version != "v1beta1":
        return obj
    spec = dict(obj.get("spec") or {})
    spec["devices"] = [dict({"name": d["name"]}, **(d.get("basic") or {})) for d in spec.get("devices") or []]
    return dict(obj, spec=spec, apiVersion=GROUP + "/v1")


# ---- claims and claim templates --------------------------------------------------------------------------------
def _request_to(version: str, req: dict) -> dict:
    if version != "v1beta1" or "exactly" not in req:
        return req
    out = {k: v for k, v in req.items() if k != "exactly"}
    out.update(req["exactly"])
    return out


def _request_from(version: str, req: dict) -> dict:
    if version != "v1beta1" or "firstAvailable" in req:
        return req
    exact = {k: req[k] for k in EXACT_REQUEST_FIELDS if k in req}
    out = {k: v for k, v in req.items() if k not in EXACT_REQUEST_FIELDS}
    out["exactly"] = exact
    return out


def _claim_spec(spec: dict, convert) -> dict:
    devices = dict(spec.get("devices") or {})
    if "requests" in devices:
        devices["requests"] = [convert(r) for r in devices["requests"]]
    return dict(spec, devices=devices)


def claim_to(version: str, obj: dict) -> dict:
    """A v1-shaped ResourceClaim or ResourceClaimTemplate in `version`'s shape."""
    out = dict(obj, apiVersion="%s/%s" % (GROUP, version))
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        inner = spec.get("spec") or {}
        out["spec"] = dict(spec, spec=_claim_spec(inner, lambda r: _request_to(version, r)))
    else:
        out["spec"] = _claim_spec(spec, lambda r: _request_to(version, r))
    return out


def claim_from(version: str, obj: dict, kind: str = "ResourceClaim") -> dict:
    """A ResourceClaim (or, with kind, ResourceClaimTemplate) read from the server at `version` in the v1 shape."""
    if version != "v1beta1":
        return obj
    spec = obj.get("spec") or {}
    if kind == "ResourceClaimTemplate":
        out_spec = dict(spec, spec=_claim_spec(spec.get("spec") or {}, lambda r: _request_from(version, r)))
    else:
        out_spec = _claim_spec(spec, lambda r: _request_from(version, r))
    return dict(obj, spec=out_spec, apiVersion=GROUP + "/v1")
