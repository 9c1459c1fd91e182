"""Render the DRA driver chart with the real helm (``helm template``, no cluster) and read what it would run.

    out = render(helm, "/path/dra-driver-nvidia-gpu-0.5.1.tgz", values)
    out.error                      # the chart's refusal (helm's message), or None
    out.plugin                     # the kubelet-plugin DaemonSet
    out.container_gates()          # {(kind, object, container): {gate: bool}} from FEATURE_GATES
    out.startup_errors()           # what the driver's binaries would refuse at start-up (dra_driver_rules)

A test bed helper: it uses helm and the test bed's own tables (dra_chart_facts, dra_driver_rules),
never the collection's code. ``helm template`` runs with a fixed kube version (helm's own default
is far older than the chart's kubeVersion) and helm's default capabilities, which list the
resource.k8s.io group/versions.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed import dra_chart_facts as facts
from testbed import dra_driver_rules

KUBE_VERSION = "1.34.0"
RELEASE = "dra-driver-nvidia-gpu"


@dataclass
class Rendered:
    version: str
    objects: list = field(default_factory=list)
    error: str | None = None

    @property
    def line(self) -> str:
        return facts.line_of(self.version)

    def find(self, kind: str, suffix: str) -> dict | None:
        for obj in self.objects:
            if obj.get("kind") == kind and obj["metadata"]["name"].endswith(suffix):
                return obj
        return None

    def names(self, kind: str) -> list:
        return sorted(o["metadata"]["name"] for o in self.objects if o.get("kind") == kind)

    @property
    def plugin(self) -> dict | None:
        return self.find("DaemonSet", facts.PLUGIN_SUFFIX)

    @property
    def plugin_pod(self) -> dict:
        return ((self.plugin or {}).get("spec") or {}).get("template", {}).get("spec") or {}

    def containers(self) -> list:
        """[(kind, object name, container dict)] of every workload container (init containers apart)."""
        out = []
        for obj in self.objects:
            if obj.get("kind") in ("DaemonSet", "Deployment"):
                for c in obj["spec"]["template"]["spec"].get("containers") or []:
                    out.append((obj["kind"], obj["metadata"]["name"], c))
        return out

    def init_containers(self) -> list:
        return list(self.plugin_pod.get("initContainers") or [])

    def container_gates(self) -> dict:
        """{(kind, object, container): gates} for every container; None where no FEATURE_GATES is set."""
        return {
            (kind, name, c["name"]): parse_gates(env_of(c).get("FEATURE_GATES")) for kind, name, c in self.containers()
        }

    def startup_errors(self) -> dict:
        """{(kind, object, container): why the driver's binary would exit at start-up} for the driver's
        containers, read the way the binaries read their env (FEATURE_GATES, on 0.5 IMEX_MODE/ISOLATION)."""
        out = {}
        for kind, name, c in self.containers():
            env = env_of(c)
            gates = parse_gates(env.get("FEATURE_GATES")) or {}
            why = dra_driver_rules.startup_error(
                self.version, gates, env.get("IMEX_MODE", ""), env.get("IMEX_ISOLATION", "")
            )
            if why:
                out[(kind, name, c["name"])] = why
        return out


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or [] if "name" in e}


def parse_gates(text: str | None) -> dict | None:
    """FEATURE_GATES as the driver's flag parsing reads it ("K=V,K=V,"); None when the env is absent."""
    if text is None:
        return None
    out = {}
    for item in str(text).split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            out[key.strip()] = value.strip().lower() == "true"
    return out


def render(
    helm: str,
    chart: str | Path,
    values: dict,
    version: str | None = None,
    namespace: str = RELEASE,
    release: str = RELEASE,
    kube_version: str = KUBE_VERSION,
) -> Rendered:
    """helm template of `chart` (a directory or a packaged archive) with `values`. `version` defaults to
    the chart's own (read with helm show chart)."""
    if version is None:
        shown = subprocess.run([helm, "show", "chart", str(chart)], capture_output=True, text=True, check=True)
        version = str(yaml.safe_load(shown.stdout)["version"])
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="gpupool-values-") as fh:
        json.dump(values, fh)
        fh.flush()
        proc = subprocess.run(
            [
                helm,
                "template",
                release,
                str(chart),
                "--namespace",
                namespace,
                "--kube-version",
                kube_version,
                "--values",
                fh.name,
            ],
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0:
        return Rendered(version=version, error=proc.stderr.strip() or proc.stdout.strip())
    objects = [doc for doc in yaml.safe_load_all(proc.stdout) if isinstance(doc, dict) and doc.get("kind")]
    return Rendered(version=version, objects=objects)


def value_paths(values: dict, line: str) -> frozenset:
    """The dotted keys of a values.yaml (maps walked, free-form values as leaves), for comparison with
    dra_chart_facts.VALUE_PATHS."""
    opaque = facts.OPAQUE[line]
    out = set()

    def walk(tree: dict, prefix: str) -> None:
        for key, value in tree.items():
            path = prefix + str(key)
            out.add(path)
            if path not in opaque and isinstance(value, dict):
                walk(value, path + ".")

    walk(values, "")
    return frozenset(out)
