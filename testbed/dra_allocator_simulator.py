"""DRA allocator SIMULATOR: what kube-scheduler's DynamicResources plugin writes for the simple claims tests make.

The test bed runs a real kube-apiserver but no kube-scheduler, so nothing ever allocates a ResourceClaim. A test
that wants to see claims allocated calls this simulator (it is not part of the sandbox loop: the test decides
when "the scheduler" runs). For each pending claim (no ``status.allocation``), oldest first, it does what the
scheduler's allocator does for the cases the tests need (reference kubernetes-dra-versions.md; KEP-4381
"structured parameters"):

- candidate devices are those of the *published* ResourceSlices, only the newest ``spec.pool.generation`` of
  each pool, that the request's DeviceClass selectors and the request's own selectors select;
- a device named in any claim's ``status.allocation.devices.results`` (driver, pool, device) is taken;
- ``allocationMode: ExactCount`` takes ``count`` devices, ``All`` every matching device of the node;
- every device of one claim comes from one node (the slice's ``spec.nodeName``), and a ``matchAttribute``
  constraint keeps the devices of its requests on one value of that attribute;
- the result is written to the claim's status subresource in the served version's field layout
  (``allocation.devices.results[{request, driver, pool, device}]`` and ``allocation.nodeSelector`` with a
  ``metadata.name`` matchFields term, as the scheduler writes for node-local devices).

Requests are read in both shapes (v1/v1beta2 ``exactly:``, v1beta1 fields on the request); of ``firstAvailable``
the first alternative that fits is taken, and the result's ``request`` names it ``<request>/<subrequest>``.

CEL: only the shapes the test bed's DeviceClasses use are evaluated, and anything else raises
`UnsupportedSelector` (a test never passes on a guess): conjunctions (``&&``) of ``device.driver == '...'``,
``device.attributes['<domain>'].<name> == <literal>``, ``... in [<literals>]`` and
``device.capacity['<domain>'].<name>.compareTo(quantity('<q>')) >= 0`` (binary and decimal suffixes). Not
simulated: node affinity and taints of pods (no pods are scheduled), device taints, admin access, partitionable
devices' shared counters (DynamicMIG), prioritised scoring - the first node that fits, by name, wins.
Independent of the collection: it imports nothing from plugins/.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from testbed.simulator_client import Kube, KubeError

IDENTITY = "testbed:dra-allocator-simulator"
GROUP = "resource.k8s.io"
VERSIONS = ("v1", "v1beta2", "v1beta1")


def _log(msg: str) -> None:
    print("[dra-allocator-simulator] %s" % msg, file=sys.stderr, flush=True)


class UnsupportedSelector(ValueError):
    """A CEL expression outside the shapes this simulator evaluates (see the module docstring)."""


# ---- CEL, the shapes the test bed uses (pure) --------------------------------------------------------------
_STR = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_LIT = r"(?:%s|-?\d+|true|false)" % _STR
_DRIVER = re.compile(r"^device\.driver\s*==\s*(%s)$" % _STR)
_ATTR_EQ = re.compile(r"^device\.attributes\[(%s)\]\.(\w+)\s*==\s*(%s)$" % (_STR, _LIT))
_ATTR_IN = re.compile(r"^device\.attributes\[(%s)\]\.(\w+)\s+in\s+\[(.*)\]$" % _STR)
_CAP_GE = re.compile(r"^device\.capacity\[(%s)\]\.(\w+)\.compareTo\(quantity\((%s)\)\)\s*>=\s*0$" % (_STR, _STR))
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _lit(text: str) -> Any:
    if text[:1] in "'\"":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if text in ("true", "false"):
        return text == "true"
    return int(text)


def quantity(text: str) -> float:
    """A Kubernetes quantity ('81559Mi', '79Gi', '4') as a number."""
    match = re.match(r"^(\d+(?:\.\d+)?)([kMGT]i?|)$", str(text).strip())
    if not match or match.group(2) not in _SUFFIX:
        raise UnsupportedSelector("quantity %r is not of the forms this simulator reads" % text)
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def _value(device: dict, driver: str, domain: str, name: str, field: str = "attributes") -> Any:
    spec = device.get("basic") or device  # v1beta1 nests attributes and capacity under basic
    items = spec.get(field) or {}
    value = items.get("%s/%s" % (domain, name))
    if value is None and domain == driver:
        value = items.get(name)  # the driver's own domain may be left out when it publishes
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version", "value"):
            if key in value:
                return value[key]
    return value


def compile_selector(expression: str) -> Callable[[str, dict], bool]:
    """(driver, device) -> selected, for the shapes above; raises UnsupportedSelector for anything else."""
    tests: List[Callable[[str, dict], bool]] = []
    text = expression.strip()
    if "||" in text or text.startswith("!"):
        raise UnsupportedSelector("CEL expression %r is outside what the allocator simulator evaluates" % expression)
    for part in text.split("&&"):
        part = part.strip()
        while part.startswith("(") and part.endswith(")"):
            part = part[1:-1].strip()
        m = _DRIVER.match(part)
        if m:
            want = _lit(m.group(1))
            tests.append(lambda drv, dev, want=want: drv == want)
            continue
        m = _ATTR_EQ.match(part)
        if m:
            domain, name, want = _lit(m.group(1)), m.group(2), _lit(m.group(3))
            tests.append(lambda drv, dev, d=domain, n=name, w=want: _value(dev, drv, d, n) == w)
            continue
        m = _ATTR_IN.match(part)
        if m:
            domain, name = _lit(m.group(1)), m.group(2)
            allowed = [_lit(v) for v in re.findall(_LIT, m.group(3))]
            tests.append(lambda drv, dev, d=domain, n=name, a=tuple(allowed): _value(dev, drv, d, n) in a)
            continue
        m = _CAP_GE.match(part)
        if m:
            domain, name, least = _lit(m.group(1)), m.group(2), quantity(_lit(m.group(3)))
            tests.append(
                lambda drv, dev, d=domain, n=name, q=least: (
                    _value(dev, drv, d, n, "capacity") is not None and quantity(_value(dev, drv, d, n, "capacity")) >= q
                )
            )
            continue
        raise UnsupportedSelector("CEL term %r is outside what the allocator simulator evaluates" % part)
    return lambda drv, dev: all(t(drv, dev) for t in tests)


# ---- claims (pure) -------------------------------------------------------------------------------------------
def _requests(claim: dict) -> List[Tuple[str, List[dict]]]:
    """[(request name, [alternatives: {name, deviceClassName, selectors, allocationMode, count}])]."""
    out = []
    for raw in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if raw.get("firstAvailable"):
            out.append(
                (raw["name"], [dict(sub, name="%s/%s" % (raw["name"], sub["name"])) for sub in raw["firstAvailable"]])
            )
        else:
            fields = raw.get("exactly") or raw  # v1/v1beta2 wrap the fields, v1beta1 puts them on the request
            out.append((raw["name"], [dict(fields, name=raw["name"])]))
    return out


def _taken(claims: List[dict]) -> set:
    out = set()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for res in (allocation.get("devices") or {}).get("results") or []:
            out.add((res.get("driver"), res.get("pool"), res.get("device")))
    return out


def newest_slices(slices: List[dict]) -> List[dict]:
    """Only the newest generation of each (driver, pool): older ones are being replaced."""
    newest: Dict[tuple, int] = {}
    for sl in slices:
        spec = sl["spec"]
        key = (spec["driver"], spec["pool"]["name"])
        newest[key] = max(newest.get(key, 0), int(spec["pool"].get("generation") or 0))
    return [
        sl
        for sl in slices
        if int(sl["spec"]["pool"].get("generation") or 0) == newest[(sl["spec"]["driver"], sl["spec"]["pool"]["name"])]
    ]


class DraAllocatorSimulator:
    """See the module docstring. `allocate()` runs one pass of "the scheduler" over the pending claims."""

    def __init__(self, kube: Kube, log=_log) -> None:
        self.kube = kube
        self.log = log
        self.version = self._served_version()

    def _served_version(self) -> str:
        group = self.kube.get("/apis/%s" % GROUP) or {}
        served = [v.get("version") for v in group.get("versions") or []]
        for version in VERSIONS:
            if version in served:
                return version
        raise RuntimeError("the API server serves no resource.k8s.io version this simulator writes")

    def _path(self, plural: str, namespace: Optional[str] = None, name: Optional[str] = None) -> str:
        base = "/apis/%s/%s" % (GROUP, self.version)
        if namespace:
            base += "/namespaces/%s" % namespace
        return base + "/" + plural + ("/" + name if name else "")

    def allocate(self, namespace: Optional[str] = None) -> Dict[str, Any]:
        """Allocate every pending claim (of `namespace`, or all) that fits now, oldest first.

        Returns {"allocated": {"ns/name": {"node", "devices": [...]}}, "pending": {"ns/name": why}}."""
        every = self.kube.list(self._path("resourceclaims"))
        classes = {c["metadata"]["name"]: c for c in self.kube.list(self._path("deviceclasses"))}
        devices = [
            (sl["spec"]["nodeName"], sl["spec"]["driver"], sl["spec"]["pool"]["name"], dev)
            for sl in newest_slices(self.kube.list(self._path("resourceslices")))
            if sl["spec"].get("nodeName")
            for dev in sl["spec"].get("devices") or []
        ]
        taken = _taken(every)
        out: Dict[str, Any] = {"allocated": {}, "pending": {}}
        pending = [c for c in every if not (c.get("status") or {}).get("allocation")]
        if namespace:
            pending = [c for c in pending if c["metadata"]["namespace"] == namespace]
        pending.sort(key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
        for claim in pending:
            ref = "%s/%s" % (claim["metadata"]["namespace"], claim["metadata"]["name"])
            try:
                found = self._fit(claim, classes, devices, taken)
            except UnsupportedSelector as exc:
                out["pending"][ref] = str(exc)
                continue
            if isinstance(found, str):
                out["pending"][ref] = found
                continue
            node, results = found
            status = {
                "allocation": {
                    "devices": {"results": results},
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                        ]
                    },
                }
            }
            try:
                self.kube.patch(
                    self._path("resourceclaims", claim["metadata"]["namespace"], claim["metadata"]["name"]) + "/status",
                    {"status": status},
                )
            except KubeError as exc:
                out["pending"][ref] = "the API server refused the allocation: %s" % exc
                continue
            taken.update((r["driver"], r["pool"], r["device"]) for r in results)
            out["allocated"][ref] = {"node": node, "devices": [r["device"] for r in results]}
            self.log("allocated %s on %s: %s" % (ref, node, ", ".join(r["device"] for r in results)))
        return out

    def _fit(self, claim: dict, classes: dict, devices: list, taken: set):
        """(node, results) for the claim on the first node (by name) where every request fits, or why not."""
        spec = (claim.get("spec") or {}).get("devices") or {}
        constraints = [c for c in spec.get("constraints") or [] if c.get("matchAttribute")]
        requests = _requests(claim)
        if not requests:
            return "the claim has no device requests"
        matchers: Dict[str, Callable[[str, dict], bool]] = {}
        for _name, alternatives in requests:
            for alt in alternatives:
                device_class = classes.get(alt.get("deviceClassName"))
                if device_class is None:
                    return "DeviceClass %s does not exist" % alt.get("deviceClassName")
                exprs = [
                    s["cel"]["expression"]
                    for s in (device_class.get("spec") or {}).get("selectors") or []
                    if s.get("cel")
                ]
                exprs += [s["cel"]["expression"] for s in alt.get("selectors") or [] if s.get("cel")]
                tests = [compile_selector(e) for e in exprs]
                matchers[alt["name"]] = lambda drv, dev, tests=tests: all(t(drv, dev) for t in tests)
        for node in sorted({d[0] for d in devices}):
            free = [d for d in devices if d[0] == node and (d[1], d[2], d[3]["name"]) not in taken]
            results = self._fit_node(requests, constraints, matchers, free)
            if results is not None:
                return node, results
        return "no node has free devices that fit every request"

    @staticmethod
    def _fit_node(requests, constraints, matchers, free) -> Optional[List[dict]]:
        """Pick devices for every request on one node; a matchAttribute constraint is tried value by value."""

        def attribute_of(entry, name):
            _node, driver, _pool, dev = entry
            domain, _, short = name.rpartition("/")
            return _value(dev, driver, domain, short)

        def pick(values: Dict[str, Any]) -> Optional[List[dict]]:
            used: set = set()
            results = []
            for name, alternatives in requests:
                chosen = None
                for alt in alternatives:
                    fits = [
                        e
                        for e in free
                        if id(e) not in used
                        and matchers[alt["name"]](e[1], e[3])
                        and all(
                            attribute_of(e, c["matchAttribute"]) == values[c["matchAttribute"]]
                            for c in constraints
                            if not c.get("requests") or name in c["requests"]
                        )
                    ]
                    mode = alt.get("allocationMode") or "ExactCount"
                    want = len(fits) if mode == "All" else int(alt.get("count") or 1)
                    if fits and len(fits) >= want:
                        chosen = (alt["name"], fits[:want])
                        break
                if chosen is None:
                    return None
                for e in chosen[1]:
                    used.add(id(e))
                    results.append({"request": chosen[0], "driver": e[1], "pool": e[2], "device": e[3]["name"]})
            return results

        keys = sorted({c["matchAttribute"] for c in constraints})
        if not keys:
            return pick({})
        options = [sorted({attribute_of(e, k) for e in free if attribute_of(e, k) is not None}, key=str) for k in keys]
        combos: List[Dict[str, Any]] = [{}]
        for key, values in zip(keys, options):
            combos = [dict(c, **{key: v}) for c in combos for v in values]
        for values in combos:
            found = pick(values)
            if found is not None:
                return found
        return None
