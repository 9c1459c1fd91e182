"""roles/<role>/README.md, generated from each role's meta/argument_specs.yml (tools/gen_docs.py writes them).

Galaxy's importer refuses a collection whose roles have no README, and a README written by hand drifts from the
argument spec that Ansible validates: so the README says what the spec says - what the role does, its variables
with type, default, required and description, per entry point - and ends with an example playbook.
"""

from __future__ import annotations

import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTION = "gpupool.core"

# Where a role's example runs when it is not the cluster host (one inventory host per cluster, run on the
# controller): the imex role configures the GPU nodes themselves and needs their facts (default IPv4 address).
NODE_ROLES = {"imex": "gpupool_imex_nodes"}

# What runs between a role's entry points in the example (the tasks that hold the run lease).
BETWEEN = {
    "run_lease": [
        "        # ... the run's Kubernetes tasks; the playbooks hand them the lease through module_defaults:",
        '        #   group/gpupool.core.k8s: {run_lease: "{{ run_lease_taken.lease | default(omit) }}"}',
    ]
}

# Ansible's documentation markup (C(), M(), O(), V(), RV(), I(), B()) as Markdown.
_MARKUP = re.compile(r"\b(C|M|O|V|RV|I|B)\(([^()]*)\)")


def markdown(text: str) -> str:
    """One description string of an argument spec as Markdown (markup to code spans, one line)."""

    def one(match: re.Match) -> str:
        kind, body = match.groups()
        if kind == "I":
            return "*%s*" % body
        if kind == "B":
            return "**%s**" % body
        return "`%s`" % body.split("#", 1)[0]  # M(name#filter): the sentence says what kind of plugin

    return _MARKUP.sub(one, " ".join(str(text).split()))


def _paragraphs(description) -> list[str]:
    if description is None:
        return []
    items = description if isinstance(description, list) else [description]
    return [markdown(item) for item in items]


def _type(option: dict) -> str:
    kind = option.get("type", "str")
    if kind == "list" and option.get("elements"):
        kind = "list of %s" % option["elements"]
    if option.get("choices"):
        kind += ": " + ", ".join("`%s`" % c for c in option["choices"])
    return kind


def _default(option: dict) -> str:
    if "default" not in option:
        return ""
    return "`%s`" % yaml.safe_dump(option["default"], default_flow_style=True).strip().removesuffix("...").strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def variables_table(options: dict) -> list[str]:
    lines = ["| variable | type | required | default | description |", "|---|---|---|---|---|"]
    for name, option in options.items():
        lines.append(
            "| `%s` | %s | %s | %s | %s |"
            % (
                name,
                _cell(_type(option)),
                "yes" if option.get("required") else "no",
                _cell(_default(option)),
                _cell(" ".join(_paragraphs(option.get("description")))),
            )
        )
    return lines


def _other_task_files(role_dir: str, entry_points: dict) -> list[tuple[str, str]]:
    """Task files that are no entry point of the spec, with the first sentence of their leading comment."""
    out = []
    tasks = os.path.join(role_dir, "tasks")
    for name in sorted(os.listdir(tasks)):
        stem = name.rsplit(".", 1)[0]
        if stem in entry_points or not name.endswith((".yml", ".yaml")):
            continue
        comment = []
        with open(os.path.join(tasks, name)) as fh:
            for line in fh:
                if line.startswith("---"):
                    continue
                if not line.startswith("#"):
                    break
                comment.append(line.lstrip("#").strip())
        out.append((stem, " ".join(comment)))
    return out


def _include(fqcn: str, point: str, spec: dict, indent: str) -> list[str]:
    return [
        indent + "- name: %s" % markdown(spec.get("short_description", point)).replace("`", ""),
        indent + "  ansible.builtin.include_role:",
        indent + "    name: %s" % fqcn,
        indent + "    tasks_from: %s" % point,
    ]


def example(role: str, entry_points: dict) -> list[str]:
    """An example playbook: the role's entry points as its playbooks use them."""
    fqcn = "%s.%s" % (COLLECTION, role)
    hosts = NODE_ROLES.get(role, "gpupool_clusters")
    first = next(iter(entry_points.values()))
    title = markdown(first.get("short_description", role)).replace("`", "").split(" - ", 1)[-1]
    play = [
        "- name: %s" % (title[:1].upper() + title[1:]),
        "  hosts: %s" % hosts,
        "  gather_facts: %s" % ("true" if role in NODE_ROLES else "false"),
    ]
    if list(entry_points) == ["main"]:
        optional = {n: o for n, o in first.get("options", {}).items() if not o.get("required")}
        play += ["  roles:", "    - role: %s" % fqcn]
        if optional:
            play.append("      # optional (default shown, or none):")
            play += [
                "      # %s: %s" % (n, _default(o).strip("`") or "...")
                for n, o in optional.items()
                if n != "gpupool_pools"
            ]
            if "gpupool_pools" in optional:
                play.append("      # gpupool_pools: [gpu-a100]")
    else:
        # Every entry point but the last in a block, the last one in its `always` (it hands back what the first took).
        *body, last = entry_points
        play += ["  tasks:", "    - name: Run under the role", "      block:"]
        for point in body:
            play += _include(fqcn, point, entry_points[point], "        ")
        play += BETWEEN.get(role, []) + ["      always:"] + _include(fqcn, last, entry_points[last], "        ")
    where = (
        "the GPU nodes of multi-node NVLink pools, as inventory hosts in group `%s`" % hosts
        if role in NODE_ROLES
        else "one inventory host per cluster in group `gpupool_clusters`, with its `gpupool_cluster` variable "
        "(docs/inventory.md; `inventories/example/` is a complete inventory)"
    )
    return ["Runs on %s." % where, "", "```yaml", "---"] + play + ["```"]


def readme(role: str) -> str:
    role_dir = os.path.join(ROOT, "roles", role)
    with open(os.path.join(role_dir, "meta", "argument_specs.yml")) as fh:
        entry_points = yaml.safe_load(fh)["argument_specs"]
    lines = [
        "# %s.%s" % (COLLECTION, role),
        "",
        "<!-- Generated by `make docs` (tools/role_readmes.py) from meta/argument_specs.yml; do not edit by hand. -->",
        "",
    ]
    for point, spec in entry_points.items():
        if len(entry_points) > 1 or point != "main":
            lines += ["## Entry point `%s`" % point, "", "`tasks_from: %s`" % point, ""]
        lines += [markdown(spec.get("short_description", "")) + ".", ""]
        for paragraph in _paragraphs(spec.get("description")):
            lines += [paragraph, ""]
        heading = "##" if len(entry_points) == 1 and point == "main" else "###"
        lines += ["%s Variables" % heading, ""]
        lines += variables_table(spec.get("options") or {}) + [""]
    others = _other_task_files(role_dir, entry_points)
    if others:
        lines += ["## Other task files", ""]
        lines += ["- `tasks_from: %s` - %s" % (stem, markdown(text)) for stem, text in others] + [""]
    lines += ["## Example", ""] + example(role, entry_points) + [""]
    lines += [
        "The playbook `gpupool.core.site` runs every role in order (`ansible-playbook -i <inventory> gpupool.core.site`), "
        "and the collection's docs/playbooks.md says what each playbook does.",
        "",
    ]
    return "\n".join(lines)


def roles() -> list[str]:
    base = os.path.join(ROOT, "roles")
    return sorted(r for r in os.listdir(base) if os.path.isfile(os.path.join(base, r, "meta", "argument_specs.yml")))


def targets() -> dict[str, str]:
    """README path to its text, for every role with an argument spec."""
    return {os.path.join(ROOT, "roles", role, "README.md"): readme(role) for role in roles()}
