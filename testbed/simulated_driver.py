"""What a platform team sets up on a GPU cluster before gpupool converges it, done on the SANDBOX.

    python -m testbed.simulated_driver --kubeconfig FILE     # idempotent

- the tenants' namespace of the example inventory's ComputeDomain (ml-training).

The DRA driver itself is no longer installed here: site.yml's gpupool.core.dra_driver role installs it (the
sandbox inventory points dra_driver.chart at the SIMULATION chart in testbed/charts/ and
dra_driver_helm_binary at the test bed's helm). The module name stays, so `make demo` and the molecule
scenarios' create step keep calling the same thing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from testbed import binaries

TENANT_NAMESPACES = ("ml-training",)


def install(kubeconfig: str | os.PathLike, log=print) -> None:
    """The tenant namespaces (kubectl apply: idempotent)."""
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))
    kubectl = binaries.find("kubectl").path
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
