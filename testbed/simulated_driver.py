"""What a platform team installs on a GPU cluster before gpupool converges it, done on the SANDBOX.

    python -m testbed.simulated_driver --kubeconfig FILE     # idempotent: helm upgrade --install, namespaces

- the SIMULATION chart of the NVIDIA DRA driver in testbed/charts/ (not NVIDIA's; docs/testbed.md), with the
  GPU taint the pools set tolerated by its kubelet plugin, so the DRA driver simulator publishes slices;
- the tenants' namespace of the example inventory's ComputeDomain (ml-training).

Used by `make demo` (testbed/demo.py) and the molecule scenarios' create step; the collection's own DRA
driver role arrives with its issue and will replace the chart step.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from testbed import binaries

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu"
RELEASE = NAMESPACE = "dra-driver-nvidia-gpu"
TENANT_NAMESPACES = ("ml-training",)
TOLERATIONS = ('[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},'
               '{"key":"node-role.kubernetes.io/gpu","operator":"Exists","effect":"NoSchedule"}]')


def install(kubeconfig: str | os.PathLike, log=print) -> None:
    """helm upgrade --install of the simulation chart (waits for readiness), then the tenant namespaces."""
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))
    helm, kubectl = binaries.find("helm").path, binaries.find("kubectl").path
    command = [str(helm), "upgrade", "--install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
               "--set", "gpuResourcesEnabledOverride=true", "--set-json", "kubeletPlugin.tolerations=" + TOLERATIONS,
               "--wait", "--timeout", "120s"]
    log("$ " + " ".join(command))
    subprocess.run(command, env=env, check=True)
    for namespace in TENANT_NAMESPACES:
        manifest = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n" % namespace
        log("$ kubectl apply namespace %s" % namespace)
        subprocess.run([str(kubectl), "apply", "-f", "-"], input=manifest, text=True, env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.simulated_driver", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="the sandbox's admin kubeconfig")
    args = parser.parse_args(argv)
    try:
        install(args.kubeconfig, log=lambda text: print("[simulated-driver] %s" % text, flush=True))
    except subprocess.CalledProcessError as exc:
        print("[simulated-driver] failed: %s (exit %d)" % (exc.cmd[0], exc.returncode), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
