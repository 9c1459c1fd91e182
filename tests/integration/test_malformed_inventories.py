"""A corpus of malformed inventories (tests/data/malformed/*.yml): playbooks/site.yml refuses each one with the
key path of the mistake and a sentence about it, and sends no request at all, to Kubernetes or to Magnum.

Each file holds one `gpupool_cluster` and two comment lines saying what the error must name:
``# expect-path: <key path>`` and ``# expect-says: <start of the message>``. All files run as the hosts
of ONE site.yml run (one host per file), their kubeconfig pointing at the real apiserver with an identity
of their own and their Magnum cloud at the emulator, so any request would be counted. No line of any of
their errors is longer than 200 characters.

Inventories as platform teams write them, in real files (the corpus is re-dumped, which would lose them):
YAML anchors and merge keys with overrides are accepted with the overridden values, and a key written twice in
one mapping is refused with its file and line.
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
LINE_LIMIT = 200
VALIDATE = str(Path(ROOT) / "playbooks" / "validate.yml")


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
    # Every line of every error a person reads (the failed task's message) fits in 200 characters.
    too_long = [
        (name, line)
        for name in cases
        for line in (failed.get(name) or {}).get("msg", "").splitlines()
        if len(line) > LINE_LIMIT
    ]
    assert too_long == []
    assert all(failed.get(name, {}).get("msg") for name in cases)  # each was measured
    assert window.select(user=USER, include_dry_run=True) == []  # not even a read
    assert magnum.magnum_requests() == []
    assert all(res.recap[name]["failed"] == 1 and res.recap[name]["changed"] == 0 for name in cases), res.recap


# ---- inventories as people write them: anchors, merge keys, and a key written twice -------------------------

HOSTS = """\
all:
  children:
    gpupool_clusters:
      hosts:
        anchored:
          ansible_connection: local
          ansible_python_interpreter: "{{ ansible_playbook_python }}"
"""

# Two A100 pools from one nodegroup and one GPU description; the second overrides node_count (block style) and
# the flavor (flow style), a tenant's templates share their pool through a merge list.
ANCHORED = """\
x-a100-nodegroup: &a100_ng
  flavor: g4.p2.40g
  node_count: 1
  max_node_count: 4
x-a100-gpu: &a100_gpu {model: A100-40GB, per_node: 2}
x-template: &tpl {pool: gpu-a100-mig}
gpupool_cluster:
  name: anchored
  kubeconfig: /nonexistent/kubeconfig
  magnum: {cloud: openstack, cluster: k8s-gpu}
  pools:
    - name: gpu-a100
      nodegroup: *a100_ng
      gpu: *a100_gpu
    - name: gpu-a100-mig
      nodegroup:
        <<: *a100_ng
        node_count: 2
      gpu: {<<: *a100_gpu, per_node: 1}
      mig:
        mode: static
        layout: {3g.20gb: 1, 2g.10gb: 2}
  tenants:
    - namespace: ml
      templates:
        - {<<: *tpl, name: a100-3g, mig_profile: 3g.20gb}
        - <<: [*tpl]
          name: a100-2g
          mig_profile: 2g.10gb
"""

SHOW = """\
- name: Validate, then show what the model read
  hosts: gpupool_clusters
  gather_facts: false
  tasks:
    - name: Validate
      gpupool.core.validate:
        cluster: "{{ gpupool_cluster }}"
      register: validated
    - name: Show the pools
      ansible.builtin.debug:
        msg: "{{ validated.cluster.pools | map(attribute='name') | zip(validated.cluster.pools
                 | map(attribute='nodegroup.node_count'), validated.cluster.pools | map(attribute='gpu.per_node'))
                 | map('join', '/') | join(' ') }}"
"""


def written(tmp_path, cluster_text):
    inv = tmp_path / "inv"
    (inv / "host_vars" / "anchored").mkdir(parents=True)
    (inv / "hosts.yml").write_text(HOSTS)
    (inv / "host_vars" / "anchored" / "gpupool.yml").write_text(cluster_text)
    return inv


def test_anchors_and_merge_keys_with_overrides_are_accepted_with_the_overridden_values(tmp_path):
    inv = written(tmp_path, ANCHORED)
    res = run_playbook(VALIDATE, str(inv), tmp_path)
    assert res.rc == 0, res.stdout + res.stderr
    assert "2 pool(s) valid: gpu-a100, gpu-a100-mig" in res.stdout
    assert "duplicate" not in (res.stdout + res.stderr).lower()
    res = run_playbook(SHOW, str(inv), tmp_path)
    assert res.rc == 0, res.stdout + res.stderr
    assert "gpu-a100/1/2 gpu-a100-mig/2/1" in res.stdout, res.stdout


def test_a_key_written_twice_is_refused_with_its_file_and_line(tmp_path):
    # The second pool gets a second `mig:`; the YAML still loads (the last one would win without a word).
    twice = ANCHORED.replace(
        "        layout: {3g.20gb: 1, 2g.10gb: 2}\n",
        "        layout: {3g.20gb: 1, 2g.10gb: 2}\n      mig: {mode: dynamic}\n",
    )
    assert twice != ANCHORED
    inv = written(tmp_path, twice)
    res = run_playbook(VALIDATE, str(inv), tmp_path, env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    assert res.rc != 0
    (body,) = re.findall(r"^fatal: \[anchored\]: FAILED! => (\{.*\})$", res.stdout, re.M)
    result = json.loads(body)
    where = "host_vars/anchored/gpupool.yml:23: gpupool_cluster.pools[1] (gpu-a100-mig).mig"
    assert [p for p in result["problems"] if p["path"].endswith(where)] == [
        {
            "path": str(inv / "host_vars" / "anchored" / "gpupool.yml")
            + where[len("host_vars/anchored/gpupool.yml") :],
            "message": "written twice (first at line 20): YAML keeps only the last one, silently; delete one (a key "
            "that overrides a `<<` merge is fine)",
        }
    ]
    assert "pool(s) valid" not in res.stdout
    assert all(len(line) <= LINE_LIMIT for line in result["msg"].splitlines())


# ---- inventory files read as written: YAML 1.1's octal, base 60, on/off, tabs, and an alias bomb ---------------

AS_WRITTEN = CORPUS / "as-written"
VALID_AS_WRITTEN = Path(ROOT) / "tests" / "data" / "valid" / "as-written"


def test_inventory_files_are_read_as_written_by_a_real_site_run_that_requests_nothing(control_plane, magnum, tmp_path):
    """Each file of tests/data/malformed/as-written is a host's real host_vars file (never re-dumped: a dump would
    write 8 for 010); one site.yml run refuses every host at the file, line and key of the scalar, with the form
    to write, and sends not one request to Kubernetes or Magnum."""
    kubeconfig = control_plane.mint_kubeconfig(USER, ["system:masters"])
    inv = tmp_path / "inv"
    cases = {}
    hosts = {}
    for path in sorted(AS_WRITTEN.glob("*.yml")):
        text = path.read_text()
        cases[path.stem] = dict(re.findall(r"^# expect-(path|says): (.+)$", text, re.M))
        text = text.replace("KUBECONFIG", str(kubeconfig)).replace("CLOUD", json.dumps(magnum.cloud_config()))
        (inv / "host_vars" / path.stem).mkdir(parents=True)
        (inv / "host_vars" / path.stem / "gpupool.yml").write_text(text)
        hosts[path.stem] = {"ansible_connection": "local", "ansible_python_interpreter": h.PYTHON}
    assert len(cases) >= 4 and all(set(e) == {"path", "says"} for e in cases.values()), cases
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"gpupool_clusters": {"hosts": hosts}}}}))
    mark = control_plane.audit.mark()
    res = run_playbook(
        str(Path(ROOT) / "playbooks" / "site.yml"),
        str(inv),
        tmp_path,
        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_FORKS": "8"},
    )
    window = control_plane.audit.since(mark)
    assert res.rc != 0
    failed = {
        host: json.loads(body)
        for host, body in re.findall(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", res.stdout, re.M)
    }
    wrong = []
    for name, expect in cases.items():
        problems = (failed.get(name) or {}).get("problems") or []
        here = [p for p in problems if p["path"].endswith("gpupool.yml" + expect["path"])]
        if not here or expect["says"] not in here[0]["message"]:
            wrong.append((name, expect, problems[:3]))
    assert wrong == []
    assert window.select(user=USER, include_dry_run=True) == []  # not even a read
    assert magnum.magnum_requests() == []
    assert all(res.recap[name]["failed"] == 1 and res.recap[name]["changed"] == 0 for name in cases), res.recap


def test_the_same_yaml_forms_where_they_mean_what_they_say_are_accepted(tmp_path):
    """The valid twins: on/off under feature gates and booleans, a quoted '010' and 'on' where text is meant."""
    for path in sorted(VALID_AS_WRITTEN.glob("*.yml")):
        inv = written(tmp_path / path.stem, path.read_text())
        res = run_playbook(VALIDATE, str(inv), tmp_path)
        assert res.rc == 0, path.name + res.stdout + res.stderr
        assert "pool(s) valid" in res.stdout
