"""A real Helm chart repository on loopback, holding the DRA driver SIMULATION chart at 0.4.1 and 0.5.1.

The chart source is testbed/charts/dra-driver-nvidia-gpu (not NVIDIA's chart: its README says what it
models). `helm package --version X --app-version X` makes one archive per driver line; the templates
switch on .Chart.Version (0.5: the IMEX values and checks, no daemon DeviceClass with hostManaged), and a
0.4 archive's values.yaml leaves out the keys marked ``# line: 0.5+`` (`values_for_version`), so each
archive lists the values its real line has (testbed/dra_chart_facts.py holds the real lists). A
plain HTTP server serves them with the index `helm repo index` writes, so the collection meets helm's
own repository code path (``--repo URL``, ``--version``) - the path air-gapped sites use with a
mirror. OCI registries are not served here (no registry implementation on the test bed).

    repo = ChartRepo(helm="/path/to/helm").start()    # packages and serves
    repo.url, repo.versions                           # http://127.0.0.1:PORT, ("0.4.1", "0.5.1")
    repo.archive("0.5.1")                             # the .tgz, e.g. for a local-path install
    repo.stop()

With ``auth=(user, password)`` every request needs HTTP basic auth with those credentials (401 otherwise), as
a private mirror would; ``repo.requests`` counts the answered (user or None, status) pairs.
"""

from __future__ import annotations

import base64
import functools
import http.server
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "testbed" / "charts" / "dra-driver-nvidia-gpu"
CHART_NAME = "dra-driver-nvidia-gpu"
VERSIONS = ("0.4.1", "0.5.1")
LINE_MARK = re.compile(r"#\s*line:\s*(\d+)\.(\d+)\+\s*$")


def values_for_version(text: str, version: str) -> str:
    """values.yaml of the chart source for one version: a key whose line ends with ``# line: X.Y+`` is
    dropped, with everything indented below it, when `version` is older than X.Y; comments just above
    it stay (harmless). Text-based, so every other comment of the file is kept."""
    match = re.match(r"^(\d+)\.(\d+)", version)
    have = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    out, drop_below = [], None
    for line in text.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip(" "))
        if drop_below is not None:
            if not line.strip() or indent > drop_below:
                continue
            drop_below = None
        mark = LINE_MARK.search(line)
        if mark and have < (int(mark.group(1)), int(mark.group(2))):
            drop_below = indent
            continue
        out.append(line)
    return "".join(out)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    auth = None  # (user, password) the handler demands, or None
    requests = None  # list of (user, status) the server answered

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        user = None
        if self.auth is not None:
            header = self.headers.get("Authorization") or ""
            expected = "Basic " + base64.b64encode(("%s:%s" % self.auth).encode()).decode()
            if header != expected:
                self.requests.append((None, 401))
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            user = self.auth[0]
        self.requests.append((user, 200))
        super().do_GET()


class ChartRepo:
    def __init__(
        self,
        helm: str,
        versions=VERSIONS,
        directory: str | Path | None = None,
        chart: Path = CHART,
        auth: tuple | None = None,
    ):
        self.helm = helm
        self.auth = auth
        self.requests: list = []
        self.versions = tuple(versions)
        self.chart = Path(chart)
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="gpupool-charts-")
        self.dir = Path(directory or self._tmp.name)
        self._server = None
        self.url = ""

    def archive(self, version: str) -> Path:
        return self.dir / ("%s-%s.tgz" % (CHART_NAME, version))

    def package(self) -> None:
        for version in self.versions:
            source = self.dir / ".src" / version / self.chart.name
            shutil.rmtree(source.parent, ignore_errors=True)
            shutil.copytree(self.chart, source)
            values = source / "values.yaml"
            values.write_text(values_for_version(values.read_text(), version))
            subprocess.run(
                [
                    self.helm,
                    "package",
                    str(source),
                    "--version",
                    version,
                    "--app-version",
                    version,
                    "--destination",
                    str(self.dir),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
        shutil.rmtree(self.dir / ".src", ignore_errors=True)

    def start(self) -> "ChartRepo":
        self.dir.mkdir(parents=True, exist_ok=True)
        handler_class = type("_Handler", (_Quiet,), {"auth": self.auth, "requests": self.requests})
        handler = functools.partial(handler_class, directory=str(self.dir))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]
        self.package()
        subprocess.run(
            [self.helm, "repo", "index", str(self.dir), "--url", self.url], check=True, capture_output=True, text=True
        )
        threading.Thread(target=self._server.serve_forever, name="chart-repo", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
