#!/usr/bin/env python3
"""Converge benchmark: playbooks/site.yml against kubernetes.core, side by side, on real apiservers.

    BENCH_SIZE=small|full  python bench/bench_converge.py      (make bench runs it)

For each size point a generated inventory (bench/inventory_generator.py) gets fresh control planes
with its Nodes (bench/bench_bed.py); then, for each tool, three measured runs: the first converge,
a no-op converge (the same inventory again) and a one-pool change (one more node label on one
pool). Each run reports wall time, CPU, peak memory (bench/measure.py) and, from the audit log,
the exact reads, writes and objects modified with their ratio to the physical limit
(bench/physical_limits.py). kubernetes.core runs only where it is compared (it needs one module
run per object: minutes at a few hundred objects); gpupool runs every point.

Writes .build/bench/report.md (the table), results.json and cost-vs-nodes.png, prints the table.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / ".build" / "collections")]

from bench import kubernetes_core_playbook, measure, physical_limits  # noqa: E402
from bench.bench_bed import BenchBed  # noqa: E402
from bench.inventory_generator import changed_pool, generate, with_one_pool_changed  # noqa: E402

OUT = Path(os.environ.get("BENCH_OUT") or ROOT / ".build" / "bench")
GPUPOOL_USER = "bench:gpupool"
KUBERNETES_CORE_USER = "bench:kubernetes-core"
SETUP_USER = "bench:setup"
SCENARIOS = ("first", "noop", "change")
# kubernetes.core does the same work on a no-op and on the one-pool change (it patches every object
# each run), so the small size measures its change only where it is cheap to.
NODEGROUPS_PLAYBOOK = """---
- name: Create the Magnum nodegroups before the measured runs
  hosts: gpupool_clusters
  gather_facts: false
  tasks:
    - name: Nodegroups
      ansible.builtin.include_role:
        name: gpupool.core.nodegroups
"""


@dataclass(frozen=True)
class Point:
    clusters: int
    pools: int
    nodes: int
    magnum: bool = False
    compare: bool = False  # also run the kubernetes.core playbook
    forks: int = 5  # ansible-playbook --forks: clusters converged at once (one inventory host each)
    kubernetes_core_scenarios: tuple = SCENARIOS

    @property
    def label(self) -> str:
        return "%dc/%dp/%dn%s%s" % (
            self.clusters,
            self.pools,
            self.nodes,
            "+magnum" if self.magnum else "",
            " --forks %d" % self.forks if self.forks != 5 else "",
        )


SIZES = {
    # a smoke run of the whole machinery (seconds, not a measurement)
    "tiny": [Point(1, 3, 9, compare=True), Point(2, 4, 8, magnum=True)],
    "small": [
        Point(1, 6, 6),  # the demo's size (inventories/example: 6 pools, one node each)
        Point(1, 6, 50),
        Point(1, 6, 200, compare=True, kubernetes_core_scenarios=("first", "noop")),
        Point(2, 10, 200, magnum=True),
        Point(1, 50, 2000),  # a real site's scale (issue #27): 50 pools over 2,000 nodes in one cluster
    ],
    "full": [
        Point(1, 6, 6),  # the demo's size (inventories/example: 6 pools, one node each)
        Point(1, 6, 50),
        Point(1, 6, 200, compare=True),
        Point(1, 6, 500),
        Point(1, 6, 1000),
        Point(1, 6, 2000),
        Point(1, 50, 2000),  # a real site's scale (issue #27): 50 pools over 2,000 nodes in one cluster
        Point(10, 50, 2000, magnum=True, forks=10),
    ],
}


def _log(msg: str) -> None:
    print("[bench] %s" % msg, flush=True)


def ansible_env() -> dict:
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "ANSIBLE_DEPRECATION_WARNINGS": "false",
            "PYTHONPATH": os.pathsep.join([str(ROOT / ".build" / "collections"), str(ROOT)]),
        }
    )
    if os.environ.get("BENCH_PROFILE"):  # each run's log (<out>/<point>/<scenario>.log) ends with time per task
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
    return env


def playbook_cmd(inventory: Path, playbook: Path, forks: int = 5) -> list[str]:
    # The interpreter running the bench runs ansible-playbook, so kubernetes.core (the `ansible`
    # package of requirements-bench.txt) is found on its sys.path.
    return [sys.executable, "-m", "ansible.cli.playbook", "-i", str(inventory), str(playbook), "--forks", str(forks)]


def have_kubernetes_core() -> bool:
    try:
        import ansible_collections.kubernetes.core  # noqa: F401

        return True
    except ImportError:
        return False


def forget_discovery() -> None:
    """Remove gpupool's on-disk discovery cache (k8s/client.py DiscoveryCache): one run must not profit from
    the one before it."""
    import tempfile

    shutil.rmtree(os.path.join(tempfile.gettempdir(), "gpupool-discovery-%d" % os.getuid()), ignore_errors=True)


def run_tool(point: Point, tool: str, workdir: Path) -> list[dict]:
    plans = generate(point.clusters, point.pools, point.nodes, magnum=point.magnum)
    change_at = changed_pool(plans)
    user = GPUPOOL_USER if tool == "gpupool" else KUBERNETES_CORE_USER
    rows = []
    bed = BenchBed(plans, workdir / "bed", magnum=point.magnum)
    _log("%s %s: starting %d control plane(s), registering %d nodes" % (point.label, tool, len(plans), point.nodes))
    bed.start()
    try:
        if point.magnum:
            setup = bed.write_inventory(workdir / "setup-inventory", SETUP_USER)
            (workdir / "nodegroups.yml").write_text(NODEGROUPS_PLAYBOOK)
            run = measure.run_measured(
                playbook_cmd(setup, workdir / "nodegroups.yml", point.forks), ansible_env(), str(ROOT)
            )
            if run.rc != 0:
                raise RuntimeError("creating the nodegroups failed:\n" + run.stdout[-4000:])
            _log("%s: %d nodegroups created in Magnum (%.0fs, not measured)" % (point.label, point.pools, run.wall))
        for scenario in SCENARIOS:
            if tool != "gpupool" and scenario not in point.kubernetes_core_scenarios:
                continue
            clusters = {}
            if scenario == "change":
                plan = next(p for p in plans if p.name == change_at[0])
                clusters[plan.name] = with_one_pool_changed(plan.cluster, change_at[1])
            inventory = workdir / ("inventory-" + scenario)
            if tool == "gpupool":
                bed.write_inventory(inventory, user, clusters)
                playbook = ROOT / "playbooks" / "site.yml"
            else:
                bed.write_inventory(inventory, user, clusters)
                for plan in plans:
                    data = bed.cluster_data(plan, user, clusters.get(plan.name))
                    host = inventory / "host_vars" / plan.name / "kubernetes_core.yml"
                    host.write_text(
                        yaml.safe_dump(
                            {
                                "bench_kubeconfig": data["kubeconfig"],
                                "bench_objects": kubernetes_core_playbook.objects(plan, data),
                            }
                        )
                    )
                playbook = workdir / "kubernetes-core.yml"
                playbook.write_text(kubernetes_core_playbook.PLAYBOOK)
            forget_discovery()  # each measured run discovers the API groups itself (once, then its cache serves it)
            before = measure.snapshot(bed)
            marks = {name: bed.clusters[name].cp.audit.mark() for name in bed.clusters}
            magnum_since = len(bed.magnum.magnum_requests()) if bed.magnum else 0
            run = measure.run_measured(playbook_cmd(inventory, playbook, point.forks), ansible_env(), str(ROOT))
            (workdir / ("%s.log" % scenario)).write_text(run.stdout)
            requests = measure.api_requests(bed, marks, user, before, measure.snapshot(bed))
            requests.update(measure.magnum_requests(bed.magnum, magnum_since))
            limit = physical_limits.limits(plans, scenario, change_at)
            changed = sum(r.get("changed", 0) for r in run.recap.values())
            row = {
                "point": point.label,
                "clusters": point.clusters,
                "pools": point.pools,
                "nodes": point.nodes,
                "objects_total": physical_limits.object_count(plans),
                "mig_nodes": sum(p.mig_nodes for p in plans),
                "magnum": point.magnum,
                "tool": tool,
                "scenario": scenario,
                "rc": run.rc,
                "wall_s": round(run.wall, 2),
                "cpu_s": round(run.cpu, 2),
                "peak_mib": round(run.peak_mib, 1),
                "changed_tasks": changed,
                "limit": limit,
                **requests,
            }
            rows.append(row)
            _log(
                "%s %s %s: rc=%d %.1fs wall, %.1fs CPU, %.0f MiB, reads %d+%d disc (limit %d), writes %d "
                "(limit %d), objects %d%s"
                % (
                    point.label,
                    tool,
                    scenario,
                    run.rc,
                    run.wall,
                    run.cpu,
                    run.peak_mib,
                    requests["reads"],
                    requests["discovery"],
                    limit["reads"],
                    requests["writes"],
                    limit["writes"],
                    requests["objects"],
                    ", Magnum %d reads %d writes" % (requests["magnum_reads"], requests["magnum_writes"])
                    if point.magnum
                    else "",
                )
            )
            if run.rc != 0:
                _log("the run failed; last lines:\n" + run.stdout[-3000:])
    finally:
        bed.stop()
    return rows


# ---- report -----------------------------------------------------------------------------------------
def _ratio(value: int, limit: int) -> str:
    if limit == 0:
        return "%d (limit 0)" % value
    return "%d / %d = %.2f×" % (value, limit, value / limit)


def table(rows: list[dict]) -> str:
    head = (
        "| size (clusters/pools/nodes) | objects | tool | run | wall s | CPU s | peak MiB | reads (+discovery) "
        "/ limit | writes / limit | objects modified | run lease requests | Magnum reads / limit, writes | rc |"
    )
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        reads = r["reads"] + r["discovery"]
        lines.append(
            "| %s | %d | %s | %s | %.1f | %.1f | %.0f | %s (%d disc) | %s | %d | %s | %s | %d |"
            % (
                r["point"],
                r["objects_total"],
                r["tool"],
                r["scenario"],
                r["wall_s"],
                r["cpu_s"],
                r["peak_mib"],
                _ratio(reads, r["limit"]["reads"]),
                r["discovery"],
                _ratio(r["writes"], r["limit"]["writes"]),
                r["objects"],
                r.get("lease", 0) if r["tool"] == "gpupool" else "-",
                "%s, %d" % (_ratio(r["magnum_reads"], r["limit"]["magnum_reads"]), r["magnum_writes"])
                if r["magnum"]
                else "-",
                r["rc"],
            )
        )
    return "\n".join(lines)


def comparisons(rows: list[dict]) -> str:
    out = []
    for r in rows:
        if r["tool"] != "kubernetes.core":
            continue
        g = next(
            (x for x in rows if x["tool"] == "gpupool" and x["point"] == r["point"] and x["scenario"] == r["scenario"]),
            None,
        )
        if g:
            out.append(
                "- %s %s: gpupool %.1f s vs kubernetes.core %.1f s (%.1f %%), writes %d vs %d"
                % (
                    r["point"],
                    r["scenario"],
                    g["wall_s"],
                    r["wall_s"],
                    100.0 * g["wall_s"] / max(r["wall_s"], 1e-9),
                    g["writes"],
                    r["writes"],
                )
            )
    return "\n".join(out)


def memory_per_node(rows: list[dict]) -> str:
    series = sorted(
        (r for r in rows if r["tool"] == "gpupool" and r["scenario"] == "noop" and r["clusters"] == 1),
        key=lambda r: r["nodes"],
    )
    out = []
    for prev, cur in zip(series, series[1:]):
        slope = (cur["peak_mib"] - prev["peak_mib"]) * 1024 * 1024 / (cur["nodes"] - prev["nodes"])
        out.append(
            "- no-op peak memory %d → %d nodes: %.0f → %.0f MiB, %.0f bytes per added node"
            % (prev["nodes"], cur["nodes"], prev["peak_mib"], cur["peak_mib"], slope)
        )
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("matplotlib is not installed (requirements-bench.txt): no plot")
        return False
    fig, (ax_time, ax_req) = plt.subplots(1, 2, figsize=(12, 4.5))
    single = [r for r in rows if r["clusters"] == 1]
    for tool, marker in (("gpupool", "o"), ("kubernetes.core", "s")):
        for scenario, style in (("first", "-"), ("noop", "--"), ("change", ":")):
            pts = sorted((r["nodes"], r) for r in single if r["tool"] == tool and r["scenario"] == scenario)
            if not pts:
                continue
            xs = [n for n, _ in pts]
            ax_time.plot(xs, [r["wall_s"] for _, r in pts], style, marker=marker, label="%s %s" % (tool, scenario))
            ax_req.plot(
                xs,
                [r["reads"] + r["discovery"] + r["writes"] for _, r in pts],
                style,
                marker=marker,
                label="%s %s" % (tool, scenario),
            )
    for scenario, style in (("first", "-"), ("noop", "--")):
        pts = sorted((r["nodes"], r) for r in single if r["tool"] == "gpupool" and r["scenario"] == scenario)
        if pts:
            ax_req.plot(
                [n for n, _ in pts],
                [r["limit"]["reads"] + r["limit"]["writes"] for _, r in pts],
                style,
                color="grey",
                alpha=0.6,
                label="physical limit, %s" % scenario,
            )
    ax_time.set(
        xlabel="GPU nodes (one cluster, 6 pools)",
        ylabel="wall time (s)",
        title="Converge wall time",
        xscale="log",
        yscale="log",
    )
    ax_req.set(
        xlabel="GPU nodes (one cluster, 6 pools)",
        ylabel="API requests (reads + writes)",
        title="API requests against the physical limit",
        xscale="log",
        yscale="log",
    )
    for ax in (ax_time, ax_req):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def machine() -> str:
    import platform

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return "%d CPU(s) %s, %.0f GiB RAM, %s, Python %s" % (
        measure.cpu_count(),
        model,
        mem,
        platform.platform(),
        platform.python_version(),
    )


def main() -> int:
    size = os.environ.get("BENCH_SIZE", "small")
    if size not in SIZES:
        print("BENCH_SIZE must be one of %s" % ", ".join(SIZES), file=sys.stderr)
        return 2
    compare = os.environ.get("BENCH_COMPARE", "1") != "0"
    if compare and not have_kubernetes_core():
        print(
            "kubernetes.core is not importable: run through `make bench` (installs requirements-bench.txt) or "
            "set BENCH_COMPARE=0",
            file=sys.stderr,
        )
        return 2
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    rows = []
    t0 = time.monotonic()
    only = [p for p in os.environ.get("BENCH_ONLY", "").split(",") if p]  # e.g. BENCH_ONLY=1c/6p/2000n
    for i, point in enumerate(SIZES[size]):
        if only and point.label.split()[0] not in only:
            continue
        tools = ["gpupool"] + (["kubernetes.core"] if point.compare and compare else [])
        for tool in tools:
            rows += run_tool(point, tool, OUT / ("%d-%s" % (i, tool.replace(".", "-"))))
            (OUT / "results.json").write_text(json.dumps(rows, indent=1))
    report = [
        "# Converge benchmark (BENCH_SIZE=%s)" % size,
        "",
        "Machine: " + machine(),
        "Total bench time: %.0f s" % (time.monotonic() - t0),
        "",
        table(rows),
        "",
    ]
    extra = comparisons(rows)
    if extra:
        report += ["gpupool against kubernetes.core (wall time share, writes):", extra, ""]
    mem = memory_per_node(rows)
    if mem:
        report += ["Memory:", mem, ""]
    if plot(rows, OUT / "cost-vs-nodes.png"):
        report.append("Plot: %s" % (OUT / "cost-vs-nodes.png"))
    text = "\n".join(report)
    (OUT / "report.md").write_text(text + "\n")
    print(text)
    failed = [r for r in rows if r["rc"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
