"""The AWX material that ships (#33): extensions/awx/templates/configure.yml (AWX objects as code) and extensions/awx/templates/project
(the small AWX project that runs gpupool.core's playbooks by full name), in the built tarball.

AWX's object shapes come from the awx.awx collection (AWX's own modules, from the `ansible` package:
tests/support/awx_collection.py): every awx.awx task of configure.yml is validated against that module's
argument_spec with ansible-core's own validator (unknown keys, types, choices, sub-options). The credential types'
injectors are rendered as AWX renders them (a Jinja sandbox over the inputs, `tower.filename` for the file) and the
result read by the libraries the steps use: the kubeconfig file by name in K8S_AUTH_KUBECONFIG, the clouds.yaml by
openstacksdk through OS_CLIENT_CONFIG_FILE under the credential's cloud name. No AWX runs here; test_awx_runner.py
runs the surveyed job through ansible-runner with these injected credentials.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.awx_objects import AWX, configure_play, configure_tasks, named, objects, render
from tests.support.user_install import ROOT, build_tarball

# AWX's survey question types (awx/main/models/mixins.py SurveyJobTemplateMixin, the survey editor's choices).
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


def test_every_awx_object_matches_its_awx_awx_module_argument_spec():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from tests.support.awx_collection import module_argument_spec

    checked = set()
    for name, module, args in configure_tasks():
        spec = module_argument_spec(module)
        kwargs = {
            k: v
            for k, v in spec["kwargs"].items()
            if k in ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")
        }
        result = ArgumentSpecValidator(spec["argument_spec"], **kwargs).validate(dict(args))
        assert not result.error_messages, "%s (awx.awx.%s): %s" % (name, module, result.error_messages)
        checked.add(module)
    assert {"credential_type", "project", "inventory_source", "job_template"} <= checked


def test_the_job_templates_cover_converge_pool_changes_report_and_advice_from_the_project():
    templates = {t["name"]: t for t in objects("job_template")}
    playbooks = {t["playbook"] for t in templates.values()}
    assert {"site.yml", "scale.yml", "report.yml", "advise.yml", "validate.yml"} <= playbooks
    for template in templates.values():
        # the project's playbook runs the collection's by its full name
        text = Path(AWX, "project", template["playbook"]).read_text()
        (target,) = re.findall(r"import_playbook: gpupool\.core\.(\w+)$", text, re.M)
        collection_playbook = Path(ROOT, "playbooks", target + ".yml")
        assert collection_playbook.is_file(), template["playbook"]
        read = "".join(p.read_text() for p in Path(ROOT, "playbooks").glob("*.yml"))
        for question in template["survey_spec"]["spec"]:
            assert question["type"] in SURVEY_TYPES, question
            assert {"question_name", "variable", "type", "required"} <= set(question), question
            assert question["variable"] in read, "no playbook reads %s" % question["variable"]
    requirements = yaml.safe_load(Path(AWX, "project", "collections", "requirements.yml").read_text())
    version = yaml.safe_load(Path(ROOT, "galaxy.yml").read_text())["version"]
    assert requirements["collections"] == [{"name": "gpupool.core", "version": "==%s" % version}]


def test_the_inventory_source_is_a_pools_plugin_file_of_the_project():
    (source,) = objects("inventory_source")
    play = configure_play()
    path = source["source_path"].replace("{{ gpupool_awx_inventory_file }}", play["vars"]["gpupool_awx_inventory_file"])
    assert source["source"] == "scm" and path.endswith("pools.yml")
    data = yaml.safe_load(Path(AWX, "project", path).read_text())
    assert data["plugin"] == "gpupool.core.pools"
    (pattern,) = data["cluster_files"]
    assert list(Path(AWX, "project", path).parent.glob(pattern)), pattern


def test_the_kubeconfig_credential_injects_the_file_the_steps_read(tmp_path):
    kind = named("credential_type", "gpupool kubeconfig")
    kubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n"
    path = tmp_path / "kubeconfig"
    path.write_text(render(kind["injectors"]["file"]["template"], {"kubeconfig": kubeconfig}))
    env = {k: render(v, {}, tower={"filename": str(path)}) for k, v in kind["injectors"]["env"].items()}
    # plugins/module_utils/k8s/client.py reads the kubeconfig's path from K8S_AUTH_KUBECONFIG
    assert '"kubeconfig": "K8S_AUTH_KUBECONFIG"' in Path(ROOT, "plugins/module_utils/k8s/client.py").read_text()
    assert Path(env["K8S_AUTH_KUBECONFIG"]).read_text() == kubeconfig


@pytest.mark.parametrize("region", ["", "RegionOne"])
def test_the_magnum_credential_writes_a_clouds_yaml_openstacksdk_reads_under_its_cloud_name(tmp_path, region):
    import openstack.config

    kind = named("credential_type", "gpupool magnum cloud")
    fields = {f["id"]: f for f in kind["inputs"]["fields"]}
    inputs = {k: f.get("default", "") for k, f in fields.items()}
    inputs.update(
        cloud_name="site-magnum",
        auth_url="https://keystone.example.org:5000/v3",
        username="gpupool",
        password='p@ss: "word"\n#x',
        project_name="gpu-team",
        region_name=region,
    )
    assert set(kind["inputs"]["required"]) <= set(fields)
    assert fields["password"].get("secret") is True
    path = tmp_path / "clouds.yaml"
    path.write_text(render(kind["injectors"]["file"]["template"], inputs))
    env = {k: render(v, inputs, tower={"filename": str(path)}) for k, v in kind["injectors"]["env"].items()}
    assert env == {"OS_CLIENT_CONFIG_FILE": str(path)}
    config = openstack.config.OpenStackConfig(config_files=[env["OS_CLIENT_CONFIG_FILE"]], load_envvars=False)
    cloud = config.get_one(cloud="site-magnum")
    assert cloud.config["auth"]["password"] == inputs["password"]
    assert cloud.config["auth"]["auth_url"] == inputs["auth_url"]
    assert cloud.config["auth"]["project_domain_name"] == "Default"
    assert (cloud.config.get("region_name") or "") == region


def test_the_awx_material_ships(tmp_path):
    with tarfile.open(build_tarball(tmp_path)) as tar:
        names = set(tar.getnames())
    shipped = sorted(str(p.relative_to(ROOT)) for p in AWX.rglob("*") if p.is_file())
    assert {"extensions/awx/templates/configure.yml", "extensions/awx/templates/project/site.yml"} <= set(shipped)
    assert [name for name in shipped if name not in names] == []
