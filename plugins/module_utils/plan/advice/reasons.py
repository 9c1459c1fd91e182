# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why each waiting claim waits, in words. Pure.

Claims are taken oldest first, and what a claim could get is reserved for it (ledger.py: the free units per pool), so
ten claims for eight free GPUs read as eight that can be allocated now and two that wait because every GPU is
taken. The reasons, in the order they are looked for (the first that holds is the claim's):

``no_device_class``      no DeviceClass of that name exists (with what gpupool would make of the name);
``class_not_evaluated``  a class the inventory does not declare, with selectors the advisor does not read;
``compute_domain``       the NVIDIA driver's IMEX channel or daemon class (or a class selecting only those devices):
                         a ComputeDomain serves it, not a GPU layout or more nodes;
``selects_nothing``      the class selects no device of any pool;
``no_nodes``             the pool has no node (``node_count: 0``, or no node matches it);
``nodes_unusable``       the pool's nodes that publish the unit are cordoned or NotReady;
``no_match``             a ``matchAttribute`` constraint no device can meet: no device of the pool publishes the
                         attribute, or each device has its own value (a MIG device's ``uuid``) and it covers more than
                         one device;
``too_many``             more devices on one node, or under one ``matchAttribute`` value, than any node has;
``free_now``             devices are free for it now: it waits for the scheduler (or for a pod to use it);
``fragmented``           free memory exists but no free device of the profile: the GPUs and their free slices;
``apart``                enough devices are free, but never together: a request's ``count`` not on one node (under
                         one ``matchAttribute`` value), or the claim's requests not all on one node;
``all_allocated``        fewer devices of the unit are free than it asks for: the others are allocated (or reserved
                         for an older waiting claim).

An ``all_allocated`` message counts only devices on usable nodes, and names the free ones it leaves out: those on
cordoned or NotReady nodes, and free ones never ``count`` on one node (under one ``matchAttribute`` value). A claim's
requests are reserved together on ONE node (the scheduler allocates a claim on one node). Only each request's first
``firstAvailable`` alternative is considered: docs/advisor.md lists the limits.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.model.names import CD_DRIVER
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice import selectors
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.classes import (
    declared_offers,
    pattern_offer,
    published_units,
    selected_offers,
)
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.ledger import Ledger
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.supply import groups, unit_slices
from ansible_collections.gpupool.core.plugins.module_utils.plan.report.capacity import FULL_GPU

SERVABLE = (
    "no_device_class",
    "no_nodes",
    "nodes_unusable",
    "too_many",
    "free_now",
    "fragmented",
    "all_allocated",
    "apart",
)


# The NVIDIA DRA driver's own ComputeDomain classes (its chart makes them; reference: the driver's published devices):
# each node where the compute-domain plugin runs publishes one IMEX channel and one daemon device, and a
# ComputeDomain's controller, not a GPU layout, decides where they are allocated.
IMEX_CLASSES = {
    "compute-domain-default-channel.nvidia.com": "channel",
    "compute-domain-daemon.nvidia.com": "daemon",
}
_IMEX_DEVICES = {
    kind: {"name": "%s-0" % kind, "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
    for kind in ("channel", "daemon")
}


def imex_kind(name: str, device_class: Optional[dict]) -> Optional[str]:
    """ "channel" or "daemon" when the class is the driver's IMEX class of that kind, or a class whose selectors
    (of the shapes selectors.py reads) select that device of compute-domain.nvidia.com; else None."""
    if name in IMEX_CLASSES:
        return IMEX_CLASSES[name]
    expressions = [
        (s.get("cel") or {}).get("expression") or ""
        for s in ((device_class or {}).get("spec") or {}).get("selectors") or []
    ]
    selects = selectors.parse(expressions) if expressions else None
    if selects is None:
        return None
    for kind, device in _IMEX_DEVICES.items():
        if selects(CD_DRIVER, device):
            return kind
    return None


def unit_words(unit: str) -> str:
    return "whole GPU(s)" if unit == FULL_GPU else "%s MIG device(s)" % unit


def slice_ranges(slices: List[int]) -> str:
    """[0, 1, 2, 6, 7] -> '0-2, 6-7'."""
    out, start = [], None
    for k, s in enumerate(slices):
        if start is None:
            start = s
        if k + 1 == len(slices) or slices[k + 1] != s + 1:
            out.append("%d" % start if start == s else "%d-%d" % (start, s))
            start = None
    return ", ".join(out)


def _most_per_group(supply: dict, unit: str, attribute: Optional[str]) -> int:
    """The most devices of `unit` any node has (under one `attribute` value), allocated or not."""
    best = 0
    for row in supply["nodes"]:
        for indices in groups(row, attribute).values():
            best = max(best, sum(row["gpus"][i]["total"].get(unit, 0) for i in indices))
    return best


def _fragments(pool, supply: dict, unit: str, limit: int = 3) -> List[str]:
    """Usable GPUs with enough free memory slices for one `unit` device but no free device of it."""
    need = unit_slices(pool, unit)
    out = []
    for row in supply["nodes"]:
        if not row["usable"]:
            continue
        for index, gpu in sorted(row["gpus"].items()):
            if not gpu["device"]["memory_slices"] or gpu["free"].get(unit):
                continue
            if len(gpu["free_slices"]) >= need:
                out.append(
                    "node %s GPU %d (free memory slices %s)" % (row["name"], index, slice_ranges(gpu["free_slices"]))
                )
                if len(out) == limit:
                    return out
    return out


def _placement_rule(pool, unit: str) -> str:
    gpu = pool.catalog_gpu
    profile = profile_by_name(gpu, unit) if gpu is not None and gpu.mig and unit != FULL_GPU else None
    if profile is None:
        return "a whole GPU needs a GPU without MIG instances"
    return "%s takes %d memory slice(s) in a row, starting at %s" % (
        unit,
        profile.memory_slices,
        " or ".join(str(s) for s in profile.starts),
    )


def _left_out(
    supply: dict, unit: str, count: int, attribute: Optional[str], ledger: Ledger, limit: int = 3
) -> Tuple[str, str]:
    """What an `all_allocated` message must not hide: (free devices of `unit` on cordoned or NotReady nodes, free
    ones on usable nodes that are never `count` on one node, or under one `attribute` value), each "" when none."""
    parts = []
    down = [
        (row["name"], row["why"], sum(g["free"].get(unit, 0) for g in row["gpus"].values()))
        for row in supply["nodes"]
        if not row["usable"]
    ]
    down = [d for d in down if d[2]]
    if down:
        parts.append(
            "%d free on node(s) that take no new pod: %s%s"
            % (
                sum(d[2] for d in down),
                ", ".join("%s (%d, %s)" % (name, n, why) for name, why, n in down[:limit]),
                " and %d more" % (len(down) - limit) if len(down) > limit else "",
            )
        )
    left, spread = ledger.left(supply["pool"].name, unit), ""
    if left:
        where = ledger.free(supply["pool"].name, unit)
        if attribute:
            seen: Dict[Tuple[str, Any], int] = {}
            rows = {r["name"]: r for r in supply["nodes"]}
            for (node, index), n in sorted(where.items()):
                value = rows[node]["gpus"][index]["attributes"].get(attribute)
                seen[(node, value)] = seen.get((node, value), 0) + n
            shown = [
                "node %s %s=%s: %d" % (node, attribute.rsplit("/", 1)[-1], value, n)
                for (node, value), n in list(seen.items())[:limit]
            ]
            spread = "never %d on one node under one %s value (%s%s)" % (
                count,
                attribute,
                "; ".join(shown),
                "; ..." if len(seen) > limit else "",
            )
        else:
            nodes: Dict[str, int] = {}
            for (node, _index), n in sorted(where.items()):
                nodes[node] = nodes.get(node, 0) + n
            spread = "never %d on one node (%s%s)" % (
                count,
                ", ".join("%s: %d" % kv for kv in list(nodes.items())[:limit]),
                ", ..." if len(nodes) > limit else "",
            )
    return "; ".join(parts), spread


def _result(request, reason: str, message: str, offer=None, servable: bool = False, node=None) -> Dict[str, Any]:
    return {
        "request": request.name,
        "device_class": request.device_class,
        "count": request.count,
        "match_attribute": request.match_attribute,
        "pool": offer.pool if offer else None,
        "unit": offer.unit if offer else None,
        "reason": reason,
        "message": message,
        "servable": servable,
        "node": node,
    }


class Reasoner:
    """Says why each request of each waiting claim waits (see the module docstring)."""

    def __init__(self, cluster, supplies: Dict[str, dict], live_classes: Dict[str, dict], by_node) -> None:
        self.cluster = cluster
        self.supplies = supplies
        self.live = live_classes
        self.by_node = by_node
        self.declared = declared_offers(cluster)
        self.ledger = Ledger(supplies)
        self._published: Optional[Dict[str, List[tuple]]] = None
        self._most: Dict[tuple, int] = {}
        self._fragments: Dict[tuple, List[str]] = {}
        self._totals: Dict[tuple, int] = {}
        self._publishing: Dict[tuple, tuple] = {}
        self._take = True

    def most(self, pool: str, unit: str, attribute: Optional[str]) -> int:
        key = (pool, unit, attribute)
        if key not in self._most:
            self._most[key] = _most_per_group(self.supplies[pool], unit, attribute)
        return self._most[key]

    def publishing(self, pool: str, unit: str) -> tuple:
        """(usable nodes that publish `unit`, "name (why)" of the unusable ones that do)."""
        key = (pool, unit)
        if key not in self._publishing:
            rows = [r for r in self.supplies[pool]["nodes"] if any(g["total"].get(unit) for g in r["gpus"].values())]
            self._publishing[key] = (
                [r["name"] for r in rows if r["usable"]],
                ["%s (%s)" % (r["name"], r["why"]) for r in rows if not r["usable"]],
            )
        return self._publishing[key]

    def published(self) -> Dict[str, List[tuple]]:
        if self._published is None:  # only for classes the inventory does not declare
            self._published = {
                name: published_units([r["name"] for r in s["nodes"]], self.by_node)
                for name, s in self.supplies.items()
            }
        return self._published

    def offers(self, request) -> Tuple[List, Optional[Dict[str, Any]]]:
        """([Offer], None) or ([], the reason it has none)."""
        name = request.device_class
        declared = self.declared.get(name)
        if name not in self.live:
            if declared is not None:
                return [], _result(
                    request,
                    "no_device_class",
                    "no DeviceClass %s in the cluster; the inventory declares it for pool %s: run site.yml "
                    "(its device_classes step) to create it" % (name, declared.pool),
                    declared,
                )
            pattern = pattern_offer(self.cluster, name)
            if pattern is not None:
                return [pattern], _result(
                    request,
                    "no_device_class",
                    "no DeviceClass %s: it is the name of pool %s's class for %s, which gpupool creates once the "
                    "pool offers them (it does not now)" % (name, pattern.pool, unit_words(pattern.unit)),
                    pattern,
                    servable=True,
                )
            return [], _result(
                request,
                "no_device_class",
                "no DeviceClass %s, and no pool would make one of that name: create the class or name one of the "
                "pools' classes in the claim" % name,
            )
        if declared is not None:
            return [declared], None
        if name in IMEX_CLASSES:
            return [], self._imex(request, name, IMEX_CLASSES[name])
        offers = selected_offers(self.live[name], self.published())
        if offers is None:
            return [], _result(
                request,
                "class_not_evaluated",
                "DeviceClass %s is not one of the inventory's classes and its selectors are not of the simple shapes "
                "the advisor reads (== and in over device attributes, joined by &&); it is not evaluated" % name,
            )
        if not offers:
            kind = imex_kind(name, self.live[name])
            if kind is not None:
                return [], self._imex(request, name, kind)
            return [], _result(
                request,
                "selects_nothing",
                "DeviceClass %s selects no device any pool%s publishes" % (name, "" if self.supplies else " in scope"),
            )
        return offers, None

    def _imex(self, request, name: str, kind: str) -> Dict[str, Any]:
        what = (
            "the IMEX channel of a ComputeDomain (a workload's claim, made from the ComputeDomain's channel template)"
            if kind == "channel"
            else "an IMEX daemon of a ComputeDomain (the claim the driver makes for each daemon)"
        )
        return _result(
            request,
            "compute_domain",
            "DeviceClass %s selects %s, a device of %s on every node where its plugin runs: the ComputeDomain "
            "serves it once its pods are placed on NVLink-connected nodes, not a GPU layout or more nodes (see "
            "kubectl get computedomains, and the pool's imex settings)" % (name, what, CD_DRIVER),
        )

    def request(self, claim, request, take: bool = True) -> Dict[str, Any]:
        """The request's reason; take False: a free_now only says its devices are free on their own (nothing is
        reserved: Reasoner.claim reserves all requests of a claim together, on one node)."""
        self._take = take
        offers, early = self.offers(request)
        if early is not None and not early["servable"]:
            return early
        if request.selectors:
            note = "; the request's own selectors are not evaluated"
        else:
            note = ""
        in_scope = [o for o in offers if o.pool in self.supplies]
        if not in_scope:
            return _result(
                request, "out_of_scope", "its pool(s) %s are not in scope" % ", ".join(o.pool for o in offers)
            )
        offer = in_scope[0]
        result = self._on_pool(claim, request, offer, early)
        if len(in_scope) > 1 and result["reason"] != "free_now":
            for other in in_scope[1:]:
                alt = self._on_pool(claim, request, other, early)
                if alt["reason"] == "free_now":
                    return alt
            result["servable"] = False
            result["message"] += " (the class selects devices of pools %s: the advisor changes no pool for it)" % (
                ", ".join(o.pool for o in in_scope)
            )
        if note:
            result["message"] += note
        return result

    def _on_pool(self, claim, request, offer, early) -> Dict[str, Any]:
        cluster_pool = self.cluster.pool(offer.pool)
        supply = self.supplies[offer.pool]
        unit, count, attribute = offer.unit, request.count, request.match_attribute
        if early is not None:  # a pattern name: no class yet, so nothing is looked up on the nodes
            return early
        if not supply["nodes"]:
            group = cluster_pool.nodegroup
            why = (
                "its nodegroup's node_count is 0"
                if group is not None and group.node_count == 0
                else "no node matches it"
            )
            return _result(request, "no_nodes", "pool %s has no nodes: %s" % (offer.pool, why), offer, True)
        unmet = self._unmet(offer.pool, attribute, count)
        if unmet:
            return _result(request, "no_match", unmet, offer)
        most = self.most(offer.pool, unit, attribute)
        if most == 0:
            return _result(
                request,
                "selects_nothing",
                "DeviceClass %s selects no device: no node of pool %s publishes %s (see gpupool.core.pool_info: a "
                "MIG layout not applied yet, or a node without the DRA driver)"
                % (request.device_class, offer.pool, unit_words(unit)),
                offer,
            )
        if count > most:
            where = "under one %s value" % attribute if attribute else "on one node"
            return _result(
                request,
                "too_many",
                "it asks for %d %s %s; the most any node of pool %s has is %d"
                % (count, unit_words(unit), where, offer.pool, most),
                offer,
                True,
            )
        usable, down = self.publishing(offer.pool, unit)
        if not usable:
            return _result(
                request,
                "nodes_unusable",
                "the nodes of pool %s that publish %s are cordoned or NotReady: %s"
                % (offer.pool, unit_words(unit), ", ".join(down)),
                offer,
                True,
            )
        if self._take:
            node = self.ledger.take(offer.pool, unit, count, attribute)
        else:
            node = self.ledger.can_take(offer.pool, unit, count, attribute)
        if node is not None:
            waits = "pod(s) %s wait for the scheduler" % ", ".join(claim.pods) if claim.pods else "no pod uses it yet"
            return _result(
                request,
                "free_now",
                "%d %s free for it now on node %s: it can be allocated (%s)" % (count, unit_words(unit), node, waits),
                offer,
                True,
                node,
            )
        if (offer.pool, unit) not in self._fragments:  # from the published state: the same for every claim
            self._fragments[(offer.pool, unit)] = _fragments(cluster_pool, supply, unit)
        fragments = self._fragments[(offer.pool, unit)]
        if fragments:
            return _result(
                request,
                "fragmented",
                "pool %s has free memory but no free %s: %s; %s"
                % (offer.pool, unit_words(unit), "; ".join(fragments), _placement_rule(cluster_pool, unit)),
                offer,
                True,
            )
        if (offer.pool, unit) not in self._totals:  # usable nodes only: a cordoned node's devices serve nobody
            self._totals[(offer.pool, unit)] = sum(
                g["total"].get(unit, 0) for r in supply["nodes"] if r["usable"] for g in r["gpus"].values()
            )
        total = self._totals[(offer.pool, unit)]
        down, spread = _left_out(supply, unit, count, attribute, self.ledger)
        left = self.ledger.left(offer.pool, unit)
        if left >= count:  # enough free, never together: the table's `apart`, not `all_allocated`
            message = (
                "%d of the %d %s on pool %s's usable nodes are free (not reserved for an older waiting claim), but %s"
                % (
                    left,
                    total,
                    unit_words(unit),
                    offer.pool,
                    spread,
                )
            )
            if down:
                message += "; not counted: %s" % down
            return _result(request, "apart", message, offer, True)
        if left:
            message = (
                "%d of the %d %s on pool %s's usable nodes are free (not reserved for an older waiting claim), but %s"
                % (left, total, unit_words(unit), offer.pool, spread)
            )
        else:
            message = (
                "every one of the %d %s on pool %s's usable nodes is allocated or reserved for an older waiting claim"
                % (total, unit_words(unit), offer.pool)
            )
        if down:
            message += "; not counted: %s" % down
        return _result(request, "all_allocated", message, offer, True)

    def _unmet(self, pool: str, attribute: Optional[str], count: int) -> str:
        """Why a matchAttribute constraint over `count` devices of `pool` can never hold, or ""."""
        kind = self.supplies[pool].get("attribute_kinds", {}).get(attribute) if attribute else None
        if kind == "none":
            return (
                "its matchAttribute %s is published by no device of pool %s, and the scheduler allocates no device "
                "without it under the constraint: name an attribute the devices publish (e.g. "
                "gpu.nvidia.com/parentUUID for one GPU, resource.kubernetes.io/pcieRoot for one PCIe root)"
                % (attribute, pool)
            )
        if kind == "device" and count > 1:
            return (
                "its matchAttribute %s covers %d devices, but each device of pool %s has its own value (as a MIG "
                "device's uuid): no two devices share one; match gpu.nvidia.com/parentUUID for devices of one GPU"
                % (attribute, count, pool)
            )
        return ""

    def _whole_constraints(self, results: List[Dict[str, Any]]) -> None:
        """Requests of one claim under the same matchAttribute share ONE value: a constraint whose devices, all
        requests together, can never share one (each device its own value) is no_match for each of them."""
        totals: Dict[Tuple[str, str], int] = {}
        for r in results:
            if r["match_attribute"] and r["pool"] and r["pool"] in self.supplies:
                key = (r["pool"], r["match_attribute"])
                totals[key] = totals.get(key, 0) + r["count"]
        for r in results:
            key = (r["pool"], r["match_attribute"])
            if r["reason"] != "no_match" and key in totals:
                unmet = self._unmet(r["pool"], r["match_attribute"], totals[key])
                if unmet:
                    r.update(reason="no_match", message=unmet, servable=False, node=None)

    def claim(self, claim) -> Dict[str, Any]:
        together = len(claim.requests) > 1
        results = [self.request(claim, r, take=not together) for r in claim.requests]
        if together:
            self._whole_constraints(results)
        if together and all(r["reason"] == "free_now" for r in results):
            self._together(claim, results)
        waiting = [r for r in results if r["reason"] != "free_now"] or results
        first = waiting[0] if waiting else None
        return {
            "namespace": claim.namespace,
            "name": claim.name,
            "pods": claim.pods,
            "requests": results,
            "reason": first["reason"] if first else "no_requests",
            "message": first["message"] if first else "the claim has no device requests",
            "servable": bool(results) and all(r["servable"] for r in results),
            "no_change_serves": None,  # set when no change of its pool could serve it (advise.py)
        }

    def _together(self, claim, results: List[Dict[str, Any]]) -> None:
        """A claim whose requests are each free on their own is free now only when ONE node has them all (the
        scheduler allocates all devices of a claim on one node): reserve them there, else say they are apart."""
        node = self.ledger.take_all([(r["pool"], r["unit"], r["count"], r["match_attribute"]) for r in results])
        waits = "pod(s) %s wait for the scheduler" % ", ".join(claim.pods) if claim.pods else "no pod uses it yet"
        asked: Dict[Tuple[str, str], int] = {}
        for r in results:
            asked[(r["pool"], r["unit"])] = asked.get((r["pool"], r["unit"]), 0) + r["count"]
        short = [(k, n, self.ledger.left(*k)) for k, n in asked.items() if n > self.ledger.left(*k)]
        for r in results:
            if node is None and short:  # fewer free than its requests ask for together: not a matter of where
                r["reason"] = "all_allocated"
                r["node"] = None
                r["message"] = "its requests ask for %s in all; %s free (not reserved for an older waiting claim)" % (
                    ", ".join("%d %s" % (n, unit_words(k[1])) for k, n, _left in short),
                    ", ".join("%d" % left for _k, _n, left in short),
                )
            elif node is not None:
                r["node"] = node
                r["message"] = (
                    "%d %s free for it now on node %s, with the claim's other requests: it can be allocated (%s)"
                    % (r["count"], unit_words(r["unit"]), node, waits)
                )
            else:
                r["reason"] = "apart"
                r["node"] = None
                r["message"] = (
                    "its %d requests (%s) are each free on some node, but no usable node of pool(s) %s has them all "
                    "free at once, and the scheduler takes all devices of a claim from one node"
                    % (
                        len(results),
                        ", ".join("%d %s" % (x["count"], unit_words(x["unit"])) for x in results),
                        ", ".join(sorted({x["pool"] for x in results})),
                    )
                )
