# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An advised change as inventory: the changed pool data (checked by the model like validate checks it), the YAML
snippet to paste, and a diff of the inventory file. Pure (the file's text comes in, text goes out).

The file is edited in place, line by line, where YAML puts the keys (``yaml.compose`` gives each node's line):
only the pool's ``mig`` block and its nodegroup's ``node_count`` change, so comments and the rest of the file stay as
they were. The edited text is read back and compared with the intended data; if they differ (a layout of the file
the editor does not handle), the diff is made from the data instead, and says so.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any, Dict, List, Optional, Tuple

try:
    import yaml
except ImportError:  # the step reports it (required_libraries); the advice itself needs no YAML below this file
    yaml = None

from ansible_collections.gpupool.core.plugins.module_utils.mig.catalog import profile_by_name
from ansible_collections.gpupool.core.plugins.module_utils.model.errors import Problems
from ansible_collections.gpupool.core.plugins.module_utils.model.load import load_cluster
from ansible_collections.gpupool.core.plugins.module_utils.plan.advice.candidates import Candidate, current_layouts
from ansible_collections.gpupool.core.plugins.module_utils.plan.mig.node_groups import assign_groups

Obj = Dict[str, Any]


def _ordered(model, layout: Dict[str, int]) -> Dict[str, int]:
    """A layout with its biggest instances first (how people write them: 3g.20gb + 2 x 2g.10gb)."""

    def size(name):
        prof = profile_by_name(model, name) if model is not None and model.mig else None
        return (-prof.memory_slices, -prof.compute_slices) if prof else (0, 0)

    return {p: layout[p] for p in sorted(layout, key=lambda p: (size(p), p)) if layout[p]}


def mig_after(pool, raw_mig: Optional[Obj], candidate: Candidate) -> Optional[Obj]:
    """The pool's `mig` after the change: `layout` when every GPU gets the same one, else `layouts` per index."""
    if not candidate.changed:
        return raw_mig
    layouts = {**current_layouts(pool), **candidate.changed}
    partitioned = {i: _ordered(pool.catalog_gpu, lay) for i, lay in sorted(layouts.items()) if lay is not None}
    out: Obj = {"mode": "off" if not partitioned else "static"}
    for key, value in (raw_mig or {}).items():
        if key not in ("mode", "layout", "layouts"):
            out[key] = value
    values = list(partitioned.values())
    if len(partitioned) == pool.gpu.per_node and all(v == values[0] for v in values):
        out["layout"] = values[0]
    elif partitioned:
        out["layouts"] = partitioned
    return out


def group_entry(pool, candidate: Candidate) -> Obj:
    """The MIG group a group candidate's nodes join: `layout` when every GPU gets the same one, else `layouts`."""
    layouts = candidate.group_layout or {}
    partitioned = {i: _ordered(pool.catalog_gpu, lay) for i, lay in sorted(layouts.items()) if lay is not None}
    values = list(partitioned.values())
    out: Obj = {"nodes": len(candidate.group_nodes)}
    if len(partitioned) == pool.gpu.per_node and all(v == values[0] for v in values):
        out["layout"] = values[0]
    else:
        out["layouts"] = partitioned
    out["prefer"] = list(candidate.group_nodes)
    return out


def _layout_key(layout: Any) -> Optional[frozenset]:
    """One GPU's layout as a comparable value: its profiles with a count, None for a whole GPU (no layout)."""
    if not isinstance(layout, dict):
        return None
    return frozenset((str(p), int(n)) for p, n in layout.items() if n)


def _per_gpu(group: Obj, per_node: int) -> Tuple[Optional[frozenset], ...]:
    """What a group's nodes carry on each GPU index, however the group spells it: `layout` for every GPU, or
    `layouts` per index (keys as numbers or strings, an index it leaves out whole), the same on every index or not."""
    layouts = group.get("layouts")
    if isinstance(layouts, dict):
        by_index = {}
        for key, layout in layouts.items():
            try:
                by_index[int(key)] = layout
            except (TypeError, ValueError):
                return ()  # not a spelling the model accepts: never taken for the advised layout
        return tuple(_layout_key(by_index.get(i)) for i in range(per_node))
    return tuple(_layout_key(group.get("layout")) for _i in range(per_node))


def _free_group_name(groups: List[Any]) -> Optional[str]:
    """None when a group appended to `groups` may keep its default name (g<position>); else the first g<N> no
    group has (a group pinned by name, e.g. `name: g3`, would otherwise clash with it and validate refuse)."""
    taken = {
        (g.get("name") if isinstance(g, dict) and g.get("name") else "g%d" % (k + 1)) for k, g in enumerate(groups)
    }
    default = "g%d" % (len(groups) + 1)
    if default not in taken:
        return None
    return next("g%d" % n for n in range(1, len(groups) + 2) if "g%d" % n not in taken)


def groups_after(pool, raw_mig: Optional[Obj], candidate: Candidate) -> List[Obj]:
    """The pool's `mig.groups` with the candidate's nodes: a group whose nodes carry the same layout on every GPU
    (in whichever spelling) grows by them (they come first in its `prefer`, so node_groups.assign_groups picks
    them), else a new group is appended, under a name no group has."""
    groups = [copy.deepcopy(g) for g in (raw_mig or {}).get("groups") or []]
    new = group_entry(pool, candidate)
    per_node = pool.gpu.per_node
    wanted = _per_gpu(new, per_node)
    for group in groups:
        if isinstance(group, dict) and _per_gpu(group, per_node) == wanted:
            group["nodes"] = int(group.get("nodes", 0)) + new["nodes"]
            group["prefer"] = new["prefer"] + [n for n in group.get("prefer") or [] if n not in new["prefer"]]
            return groups
    name = _free_group_name(groups)
    if name is not None:
        new = {"name": name, **new}
    return groups + [new]


def pool_after(pool, raw_pool: Obj, candidate: Candidate) -> Obj:
    """The pool's inventory data after the change."""
    out = copy.deepcopy(raw_pool)
    if candidate.changed:
        out["mig"] = mig_after(pool, raw_pool.get("mig"), candidate)
    if candidate.group_nodes:
        mig = dict(out.get("mig") or {})
        mig["groups"] = groups_after(pool, mig, candidate)
        out["mig"] = mig
    if candidate.nodes_added:
        group = dict(out.get("nodegroup") or {})
        group["node_count"] = int(group.get("node_count", 1)) + candidate.nodes_added
        out["nodegroup"] = group
    return out


def cluster_after(cluster, raw: Obj, candidates: List[Candidate]) -> Obj:
    """The inventory's cluster data with every candidate's pool changed."""
    out = dict(raw)
    pools = list(raw.get("pools") or [])
    for candidate in candidates:
        for index, raw_pool in enumerate(pools):
            if isinstance(raw_pool, dict) and raw_pool.get("name") == candidate.pool:
                pools[index] = pool_after(cluster.pool(candidate.pool), raw_pool, candidate)
    out["pools"] = pools
    return out


def problems_of(raw: Obj, root: str = "gpupool_cluster") -> List[Tuple[str, str]]:
    """What validate would refuse in the changed inventory ([] when it is valid)."""
    try:
        load_cluster(raw, root)
    except Problems as exc:
        return exc.problems
    return []


def group_problems(cluster, raw: Obj, candidate: Candidate, nodes: List[Obj], root: str = "gpupool_cluster"):
    """[(path, why)] when node_groups.assign_groups, on the changed inventory, would not move exactly the nodes the
    candidate names into its group ([] when it does): the advice names the nodes the rollout will re-partition."""
    before = assign_groups(cluster.pool(candidate.pool), nodes)
    after_cluster = load_cluster(cluster_after(cluster, raw, [candidate]), root)
    after = assign_groups(after_cluster.pool(candidate.pool), nodes)
    moved = sorted(n for n in after if after[n] != before.get(n))
    if moved != sorted(candidate.group_nodes):
        return [
            (
                "%s.pools[%s].mig.groups" % (root, candidate.pool),
                "the group would take nodes %s, not the chosen %s"
                % (", ".join(moved) or "none", ", ".join(candidate.group_nodes)),
            )
        ]
    return []


def change_data(pool, raw_pool: Obj, candidate: Candidate) -> Obj:
    """Only the keys the change sets, under the pool's name (what the snippet shows)."""
    after = pool_after(pool, raw_pool, candidate)
    out: Obj = {"name": candidate.pool}
    if candidate.changed or candidate.group_nodes:
        out["mig"] = after["mig"]
    if candidate.nodes_added:
        out["nodegroup"] = {"node_count": after["nodegroup"]["node_count"]}
    return out


def _flow(value: Any) -> str:
    """One value in YAML flow style, on one line (a scalar as YAML writes it in a flow sequence)."""
    return yaml.safe_dump([value], default_flow_style=True, sort_keys=False, width=10000).strip()[1:-1]


def _block(key: str, value: Any, indent: int) -> List[str]:
    """`key: value` at `indent`, a mapping as a block whose own mappings are in flow style (the example's style)."""
    pad = " " * indent
    if not isinstance(value, dict):
        return ["%s%s: %s" % (pad, key, _flow(value))]
    lines = ["%s%s:" % (pad, key)]
    for k, v in value.items():
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            lines.append("%s  %s:" % (pad, k))
            lines += ["%s    %s: %s" % (pad, _flow(kk), _flow(vv)) for kk, vv in v.items()]
        else:
            lines.append("%s  %s: %s" % (pad, _flow(k), _flow(v)))
    return lines


def snippet(cluster_name: str, changes: List[Obj]) -> str:
    """The YAML to paste: per changed pool, its name and the keys to set."""
    if not changes:
        return ""
    lines = [
        "# gpupool.core.pool_advice for cluster %s: in gpupool_cluster.pools, set these keys of these pools"
        % cluster_name,
        "# (the rest of each pool stays as it is). Preview the rollout: ansible-playbook playbooks/site.yml --check --diff",
    ]
    for change in changes:
        lines.append("- name: %s" % change["name"])
        for key in ("mig", "nodegroup"):
            if key in change:
                lines += _block(key, change[key], 2)
    return "\n".join(lines) + "\n"


# ---- editing the inventory file --------------------------------------------------------------------------------


def _last_line(node) -> int:
    """The last line holding content of `node` (a block mapping's end mark is the next key's line)."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return node.end_mark.line if node.end_mark.column else node.end_mark.line - 1
    children = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            children += [key, value]
    else:
        children = list(node.value)
    return max([_last_line(c) for c in children] + [node.start_mark.line])


def _get(mapping, key: str):
    for k, v in mapping.value if isinstance(mapping, yaml.MappingNode) else []:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None, None


def _pool_node(root, name: str):
    """The mapping node of pool `name` under gpupool_cluster.pools, wherever gpupool_cluster is in the file."""
    todo = [root]
    while todo:
        node = todo.pop(0)
        if isinstance(node, yaml.MappingNode):
            _ck, cluster = _get(node, "gpupool_cluster")
            _pk, pools = _get(cluster, "pools") if cluster is not None else (None, None)
            if isinstance(pools, yaml.SequenceNode):
                for item in pools.value:
                    _nk, value = _get(item, "name")
                    if value is not None and value.value == name:
                        return item
            todo += [v for _k2, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return None


def _replace_key(lines: List[str], mapping, key: str, value: Any, after_key: Optional[str] = None) -> None:
    """Set `key` of `mapping` to `value` in `lines`: the key's lines replaced, or new lines after `after_key`'s."""
    knode, vnode = _get(mapping, key)
    if knode is not None:
        indent = knode.start_mark.column
        first, last = knode.start_mark.line, _last_line(vnode)
        if getattr(vnode, "flow_style", False) or not isinstance(value, dict):
            new = ["%s%s: %s" % (" " * indent, key, _flow(value))]
        else:
            new = _block(key, value, indent)
        lines[first : last + 1] = new
        return
    anchor_key, anchor = _get(mapping, after_key) if after_key else (None, None)
    if anchor is None:
        anchor_key, anchor = mapping.value[-1]
    indent = anchor_key.start_mark.column
    at = _last_line(anchor) + 1
    lines[at:at] = (
        _block(key, value, indent) if isinstance(value, dict) else ["%s%s: %s" % (" " * indent, key, _flow(value))]
    )


def edit_text(text: str, pool_name: str, after: Obj) -> Optional[str]:
    """The file's text with pool `pool_name`'s mig and node_count set as in `after` (its data after the change);
    None when the pool is not found in the file."""
    pool = _pool_node(yaml.compose(text), pool_name)
    if pool is None:
        return None
    lines = text.split("\n")
    group = after.get("nodegroup") or {}
    _gk, gnode = _get(pool, "nodegroup")
    if "node_count" in group and gnode is not None:
        _ck, count = _get(gnode, "node_count")
        if count is not None and count.value != str(group["node_count"]):
            if getattr(gnode, "flow_style", False):
                _replace_key(lines, pool, "nodegroup", group)
            else:
                _replace_key(lines, gnode, "node_count", group["node_count"])
        elif count is None:
            if getattr(gnode, "flow_style", False):
                _replace_key(lines, pool, "nodegroup", group)
            else:
                _replace_key(lines, gnode, "node_count", group["node_count"], after_key="flavor")
        pool = _pool_node(yaml.compose("\n".join(lines)), pool_name)  # lines moved: read the marks again
    if "mig" in after:
        _mk, mnode = _get(pool, "mig")
        if mnode is None or yaml.safe_load(yaml.serialize(mnode)) != after["mig"]:
            _replace_key(lines, pool, "mig", after["mig"], after_key="gpu")
    return "\n".join(lines)


def _cluster_of(data: Any) -> Optional[Obj]:
    todo = [data]
    while todo:
        item = todo.pop(0)
        if isinstance(item, dict):
            if isinstance(item.get("gpupool_cluster"), dict):
                return item["gpupool_cluster"]
            todo += list(item.values())
        elif isinstance(item, list):
            todo += item
    return None


def _without_change(pool: Any) -> Any:
    """A pool's data without the keys an advice may set (mig, nodegroup.node_count)."""
    if not isinstance(pool, dict):
        return pool
    out = {k: v for k, v in pool.items() if k != "mig"}
    if isinstance(out.get("nodegroup"), dict):
        out["nodegroup"] = {k: v for k, v in out["nodegroup"].items() if k != "node_count"}
    return out


def _as_advised(before: Optional[Obj], edited: Optional[Obj], afters: Dict[str, Obj]) -> bool:
    """The edited file holds the advised keys of each changed pool, and nothing else of the file changed."""
    if before is None or edited is None:
        return False
    if {k: v for k, v in before.items() if k != "pools"} != {k: v for k, v in edited.items() if k != "pools"}:
        return False
    old, new = before.get("pools") or [], edited.get("pools") or []
    if len(old) != len(new) or [_without_change(p) for p in old] != [_without_change(p) for p in new]:
        return False
    for was, now in zip(old, new):
        name = was.get("name") if isinstance(was, dict) else None
        after = afters.get(name)
        if after is None:
            if was != now:
                return False
            continue
        if now.get("mig") != after.get("mig"):
            return False
        count = (after.get("nodegroup") or {}).get("node_count")
        if count is not None and (now.get("nodegroup") or {}).get("node_count") != count:
            return False
    return True


def file_diff(text: str, path: str, afters: Dict[str, Obj]) -> Tuple[str, Optional[str]]:
    """(unified diff of the inventory file with the changed pools, None), or ("", why the file could not be edited)
    - the caller then shows a diff of the data. Only `mig` and `nodegroup.node_count` of the changed pools are
    compared with the advice, so values the inventory templates (Jinja) do not get in the way."""
    edited: Optional[str] = text
    try:
        for name, after in afters.items():
            edited = edit_text(edited, name, after) if edited is not None else None
        before = _cluster_of(yaml.safe_load(text))
        got = _cluster_of(yaml.safe_load(edited)) if edited is not None else None
    except yaml.YAMLError as exc:
        return "", "the inventory file is not YAML the advisor can read: %s" % exc
    if _as_advised(before, got, afters):
        return _diff(text, edited, path), None
    return (
        "",
        "the file's layout could not be kept (its pools are not where the advisor looks for them); the diff is of the data",
    )


def _diff(before: str, after: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), fromfile=path, tofile="%s (advised)" % path
        )
    )


def data_diff(before_pools: List[Obj], after_pools: List[Obj], where: str = "gpupool_cluster.pools") -> str:
    """A diff of the changed pools as YAML (when there is no inventory file to edit)."""
    return _diff(_dump(before_pools), _dump(after_pools), where)


def _dump(pools: List[Obj]) -> str:
    return yaml.safe_dump(pools, sort_keys=False, default_flow_style=None, width=120)
