"""A corpus of malformed inventories (tests/data/malformed/*.yml): playbooks/site.yml refuses each one with the
key path of the mistake and a sentence about it, and sends no request at all, to Kubernetes or to Magnum.

Each file holds one `gpupool_cluster` and two comment lines saying what the error must name:
``# expect-path: <key path>`` and ``# expect-says: <start of the message>``. All files run as the hosts
of ONE site.yml run (one host per file), their kubeconfig pointing at the real apiserver with an identity
of their own and their Magnum cloud at the emulator, so any request would be counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.integration import k8s_helpers as h
from tests.integration.playbook import ROOT, run_playbook

CORPUS = Path(ROOT) / "tests" / "data" / "malformed"
USER = "gpupool-malformed"


def corpus():
    out = {}
    for path in sorted(CORPUS.glob("*.yml")):
        text = path.read_text()
        expect = dict(re.findall(r"^# expect-(path|says): (.+)$", text, re.M))
        out[path.stem] = (yaml.safe_load(text)["gpupool_cluster"], expect)
    return out


POOL_NAME = re.compile(r"(pools\[\d+\]) \([^)]*\)")


def test_the_corpus_is_big_enough_and_each_file_says_what_it_expects():
    cases = corpus()
    assert len(cases) >= 30
    for name, (_cluster, expect) in cases.items():
        assert set(expect) == {"path", "says"}, name


def test_every_malformed_inventory_gets_its_key_path_and_nothing_is_requested(control_plane, magnum, tmp_path):
    kubeconfig = control_plane.mint_kubeconfig(USER, ["system:masters"])
    hosts = {}
    cases = corpus()
    for name, (cluster, _expect) in cases.items():
        cluster["kubeconfig"] = str(kubeconfig)
        if isinstance(cluster.get("magnum"), dict):
            cluster["magnum"]["cloud"] = magnum.cloud_config()  # any Magnum request would reach the emulator
        hosts[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": h.PYTHON,
            "gpupool_cluster": cluster,
        }
    inventory = yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": hosts}}}})
    mark = control_plane.audit.mark()
    res = run_playbook(
        str(Path(ROOT) / "playbooks" / "site.yml"),
        inventory,
        tmp_path,
        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_FORKS": "8"},
    )
    window = control_plane.audit.since(mark)
    assert res.rc != 0
    # the default callback prints each failed host's result as one JSON line
    failed = {
        host: json.loads(body)
        for host, body in re.findall(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", res.stdout, re.M)
    }
    wrong = []
    for name, (_cluster, expect) in cases.items():
        result = failed.get(name) or {}
        # The model names the pool after its index (`pools[1] (gpu-a100).mig`); the corpus states index paths.
        msg = POOL_NAME.sub(r"\1", result.get("msg", ""))
        paths = [POOL_NAME.sub(r"\1", p["path"]) for p in result.get("problems") or []]
        says = POOL_NAME.sub(r"\1", expect["says"])
        if expect["path"] not in paths or expect["path"] not in msg or says not in msg:
            wrong.append((name, expect, msg[:400]))
    assert wrong == []
    assert window.select(user=USER, include_dry_run=True) == []  # not even a read
    assert magnum.magnum_requests() == []
    assert all(res.recap[name]["failed"] == 1 and res.recap[name]["changed"] == 0 for name in cases), res.recap
