"""Find or build the real Kubernetes binaries the test bed runs: etcd, the control plane (kube-apiserver,
kube-scheduler, kube-controller-manager), kubectl, helm.

First hit wins, per binary:
  1. env var (ETCD, KUBE_APISERVER, KUBE_SCHEDULER, KUBE_CONTROLLER_MANAGER, KUBECTL, HELM) - must exist;
  2. PATH - only when its version has the wanted major.minor (e.g. /usr/bin/kubectl v1.32 is skipped);
  3. the cache $GPUPOOL_CACHE/bin/<k8s version>/ (default ~/.cache/gpupool);
  4. the official release binaries, when the network allows (short timeout, checksum verified);
  5. a build from the Go module proxy with the installed Go (tools/build-binaries.sh).
Versions come from the build modules (tools/kube/go.mod, tools/helm/go.mod): one source of truth.
The compatibility matrix's older releases (testbed/k8s_releases.py) add only their control plane each, in
$GPUPOOL_CACHE/bin/<its version>/, built from a module generated from that release's go.mod.

    python -m testbed.binaries ensure                  # resolve all six, print where each came from
    python -m testbed.binaries ensure --k8s 1.32,1.33  # and the control plane of these releases (or: all)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
# The binaries that differ per Kubernetes release (the compatibility matrix); etcd, kubectl and helm do not.
CONTROL_PLANE = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
NAMES = ("etcd", *CONTROL_PLANE, "kubectl", "helm")
ENV_VARS = {
    "etcd": "ETCD",
    "kube-apiserver": "KUBE_APISERVER",
    "kube-scheduler": "KUBE_SCHEDULER",
    "kube-controller-manager": "KUBE_CONTROLLER_MANAGER",
    "kubectl": "KUBECTL",
    "helm": "HELM",
}
DOWNLOAD_TIMEOUT = 5  # seconds: an offline machine must fall through to the build at once


def _gomod_version(gomod: Path, module: str) -> str:
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v[0-9][^\s]*)", gomod.read_text(), re.M)
    if not m:
        raise RuntimeError(f"{module} is not required in {gomod}")
    return m.group(1)


def wanted_versions() -> dict[str, str]:
    kube = _gomod_version(TOOLS / "kube" / "go.mod", "k8s.io/kubernetes")
    return {
        **dict.fromkeys(CONTROL_PLANE, kube),
        "kubectl": kube,
        "etcd": _gomod_version(TOOLS / "kube" / "go.mod", "go.etcd.io/etcd/server/v3"),
        "helm": _gomod_version(TOOLS / "helm" / "go.mod", "helm.sh/helm/v3"),
    }


K8S_VERSION = wanted_versions()["kube-apiserver"]


def cache_dir(version: str | None = None) -> Path:
    base = Path(os.environ.get("GPUPOOL_CACHE") or Path.home() / ".cache" / "gpupool")
    return base / "bin" / (version or K8S_VERSION)


@dataclass(frozen=True)
class Binary:
    name: str
    path: Path
    version: str
    source: str  # env, PATH, cache, download, build


_VERSION_ARGS = {
    "etcd": ["--version"],
    **{name: ["--version"] for name in CONTROL_PLANE},
    "kubectl": ["version", "--client"],
    "helm": ["version", "--short"],
}


def probe_version(name: str, path: Path) -> str | None:
    """The binary's own version string (v1.37.1, v3.7.0, ...), None if it does not run."""
    try:
        out = subprocess.run([str(path), *_VERSION_ARGS[name]], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"v?(\d+\.\d+\.\d+[^\s+]*)", out)
    return "v" + m.group(1) if m else None


def same_minor(a: str | None, b: str) -> bool:
    """v1.37.1 matches v1.37.0; v1.32.4-dispatcher does not match v1.37.1."""
    return bool(a) and a.lstrip("v").split(".")[:2] == b.lstrip("v").split(".")[:2]


def _log(msg: str) -> None:
    print(f"[binaries] {msg}", file=sys.stderr, flush=True)


# ---- official downloads -------------------------------------------------------------------------
def _arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())


def _release(name: str, version: str) -> tuple[str, str, str | None]:
    """(url, checksum url, member of the tarball or None for a bare binary)."""
    arch = _arch()
    if name in (*CONTROL_PLANE, "kubectl"):
        url = f"https://dl.k8s.io/release/{version}/bin/linux/{arch}/{name}"
        return url, url + ".sha256", None
    if name == "etcd":
        base = f"https://github.com/etcd-io/etcd/releases/download/{version}"
        return f"{base}/etcd-{version}-linux-{arch}.tar.gz", f"{base}/SHA256SUMS", f"etcd-{version}-linux-{arch}/etcd"
    url = f"https://get.helm.sh/helm-{version}-linux-{arch}.tar.gz"
    return url, url + ".sha256sum", f"linux-{arch}/helm"


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as r:
        return r.read()


def download(name: str, version: str, dest: Path) -> Path:
    url, sum_url, member = _release(name, version)
    _log(f"{name}: downloading {url}")
    data = _fetch(url)
    file = url.rsplit("/", 1)[1]
    sums = _fetch(sum_url).decode()
    # .sha256 holds the bare digest; SHA256SUMS / .sha256sum hold "digest  filename" lines.
    digests = {
        f[0] for f in map(str.split, sums.splitlines()) if len(f) == 1 or (len(f) == 2 and f[1].lstrip("*") == file)
    }
    if hashlib.sha256(data).hexdigest() not in digests:
        raise RuntimeError(f"checksum mismatch for {url}")
    if member:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            data = tar.extractfile(member).read()
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(dest)
    return dest


# ---- build from the Go module proxy ---------------------------------------------------------------
def _go() -> str | None:
    return shutil.which("go") or next((p for p in ("/usr/local/go/bin/go",) if os.access(p, os.X_OK)), None)


def build(name: str, dest: Path, version: str | None = None) -> Path:
    go = _go()
    if not go:
        raise RuntimeError(
            f"{name}: not found anywhere and no Go toolchain to build it "
            f"(install Go >= 1.26 or set {ENV_VARS[name]}=/path/to/{name})"
        )
    env = dict(
        os.environ,
        K8S_VERSION=version or K8S_VERSION,
        GPUPOOL_CACHE=str(dest.parent.parent.parent),
        PATH=f"{Path(go).parent}:{os.environ.get('PATH', '')}",
    )
    what = f"{name} {version}" if version and version != K8S_VERSION else name
    _log(f"{what}: building from the Go module proxy (cold, on 2 cores: kube-apiserver ~8 min, all six ~16 min)")
    t0 = time.monotonic()
    proc = subprocess.Popen(["bash", str(TOOLS / "build-binaries.sh"), name], env=env, stdout=sys.stderr)
    while True:  # go prints nothing for many minutes: show that it is alive
        try:
            rc = proc.wait(timeout=60)
            break
        except subprocess.TimeoutExpired:
            _log(f"{what}: still building ({time.monotonic() - t0:.0f}s)")
    if rc:
        raise RuntimeError(f"{what}: tools/build-binaries.sh failed with exit status {rc}")
    _log(f"{what}: built in {time.monotonic() - t0:.0f}s")
    return dest


# ---- resolution ---------------------------------------------------------------------------------
def find(name: str, *, allow_fetch: bool = True, state: dict | None = None, version: str | None = None) -> Binary:
    """Resolve one binary. With allow_fetch=False only env/PATH/cache are looked at.
    version: a control-plane binary of another release (the compatibility matrix); only those differ."""
    want = wanted_versions()[name]
    if version and version != want:
        if name not in CONTROL_PLANE:
            raise ValueError(f"only the control plane differs per release; {name} is {want}")
        return _find_release_binary(name, version, allow_fetch, state if state is not None else {})
    state = state if state is not None else {}
    if env := os.environ.get(ENV_VARS[name]):
        path = Path(env)
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{ENV_VARS[name]}={env} is not an executable file")
        version = probe_version(name, path) or "unknown"
        if not same_minor(version, want):
            _log(f"warning: {ENV_VARS[name]}={env} is {version}, the test bed is built for {want}")
        return Binary(name, path, version, "env")
    for on_path in _all_on_path(name):  # every PATH entry, not just the first: /usr/bin/kubectl is v1.32
        version = probe_version(name, on_path)
        if same_minor(version, want):
            return Binary(name, on_path, version, "PATH")
        _log(f"{name}: skipping {on_path} ({version}, want {want})")
    cached = cache_dir() / name
    if allow_fetch:  # serialize fetch/build across processes (make and pytest may race)
        cached.parent.mkdir(parents=True, exist_ok=True)
        with _locked(cached.parent / ".lock"):
            return _from_cache_or_fetch(name, want, cached, allow_fetch, state)
    return _from_cache_or_fetch(name, want, cached, allow_fetch, state)


def _find_release_binary(name: str, version: str, allow_fetch: bool, state: dict) -> Binary:
    """A control-plane binary of a matrix release: its env var or PATH only when of that minor, else its cache dir."""
    for candidate, source in [(Path(p), "env") for p in [os.environ.get(ENV_VARS[name])] if p] + [
        (p, "PATH") for p in _all_on_path(name)
    ]:
        found = probe_version(name, candidate) if os.access(candidate, os.X_OK) else None
        if same_minor(found, version):
            return Binary(name, candidate, found, source)
    cached = cache_dir(version) / name
    if allow_fetch:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with _locked(cached.parent / ".lock"):
            return _from_cache_or_fetch(name, version, cached, allow_fetch, state, version)
    return _from_cache_or_fetch(name, version, cached, allow_fetch, state, version)


def _all_on_path(name: str) -> list[Path]:
    seen, hits = set(), []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = Path(d or ".") / name
        if p.is_file() and os.access(p, os.X_OK) and p.resolve() not in seen:
            seen.add(p.resolve())
            hits.append(p)
    return hits


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _from_cache_or_fetch(
    name: str, want: str, cached: Path, allow_fetch: bool, state: dict, release: str | None = None
) -> Binary:
    if cached.exists():
        version = probe_version(name, cached)
        if same_minor(version, want):
            return Binary(name, cached, version, "cache")
        if allow_fetch:
            _log(f"{name}: replacing {cached} in the cache ({version}, want {want})")
            cached.unlink()
    if not allow_fetch:
        hint = f"make binaries K8S_RELEASES={release}" if release else "make binaries"
        raise FileNotFoundError(f"{name} {want} not found (env {ENV_VARS[name]}, PATH, {cached.parent}); run `{hint}`")
    if not state.get("offline") and not os.environ.get("GPUPOOL_OFFLINE"):
        try:
            download(name, want, cached)
            return Binary(name, cached, probe_version(name, cached) or "unknown", "download")
        except Exception as e:  # noqa: BLE001 - any failure means: build it instead
            _log(f"{name}: download failed ({type(e).__name__}: {e}); building instead")
            state["offline"] = True  # one failure is enough: do not wait on the network again
    build(name, cached, release)
    version = probe_version(name, cached)
    if not same_minor(version, want):
        raise RuntimeError(f"{name}: the build produced {version}, want {want}")
    return Binary(name, cached, version, "build")


def ensure(*, allow_fetch: bool = True, releases: tuple[str, ...] = ()) -> dict[str, Binary]:
    """The six binaries, plus the control plane of each release version in `releases` (keyed "<name> <version>")."""
    state: dict = {}
    out = {name: find(name, allow_fetch=allow_fetch, state=state) for name in NAMES}
    for version in releases:
        if version != K8S_VERSION:  # built one at a time: each takes both cores for minutes
            for name in CONTROL_PLANE:
                out[f"{name} {version}"] = find(name, allow_fetch=allow_fetch, state=state, version=version)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] != ["ensure"] or len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--k8s"):
        print("usage: python -m testbed.binaries ensure [--k8s 1.32,1.33|all]", file=sys.stderr)
        return 2
    releases: tuple[str, ...] = ()
    if len(argv) == 3 and argv[2].strip():
        from testbed import k8s_releases

        names = k8s_releases.MATRIX if argv[2] == "all" else argv[2].replace(",", " ").split()
        releases = tuple(k8s_releases.release(n).version for n in names)
    t0 = time.monotonic()
    for b in ensure(releases=releases).values():
        print(f"{b.name:23} {b.version:10} {b.source:9} {b.path}")
    print(f"[binaries] ready in {time.monotonic() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
