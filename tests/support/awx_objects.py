"""The AWX objects gpupool.core ships (extensions/awx/templates/configure.yml), read as data, and AWX's handling of a
credential: its injectors rendered the way AWX renders them (a sandboxed Jinja environment over the credential's
inputs; `tower.filename` is the file the `file` injector wrote), giving the environment a job runs with."""

from __future__ import annotations

from pathlib import Path

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.support.user_install import ROOT

AWX = Path(ROOT, "extensions", "awx", "templates")


class _Loader(yaml.SafeLoader):
    """YAML as Ansible reads it, for these files: !unsafe marks a string Ansible must not template."""


def _unsafe(loader, node):
    return loader.construct_scalar(node)


_Loader.add_constructor("!unsafe", _unsafe)


def configure_play() -> dict:
    (play,) = yaml.load(Path(AWX, "configure.yml").read_text(), Loader=_Loader)
    return play


def configure_tasks() -> list[tuple[str, str, dict]]:
    """(task name, awx.awx module, its arguments) of every task of configure.yml."""
    out = []
    for task in configure_play()["tasks"]:
        (module,) = [k for k in task if k.startswith("awx.awx.")]
        out.append((task["name"], module.split(".")[-1], task[module]))
    return out


def objects(module: str) -> list[dict]:
    return [args for task_module, args in ((t[1], t[2]) for t in configure_tasks()) if task_module == module]


def named(module: str, name: str) -> dict:
    (found,) = [o for o in objects(module) if o["name"] == name]
    return found


def render(template: str, inputs: dict, **extra) -> str:
    return ImmutableSandboxedEnvironment().from_string(template).render(**inputs, **extra)


def inject(credential_type: str, inputs: dict, directory: Path) -> dict:
    """A credential of this type with these inputs, injected as AWX does: the file written into directory, and the
    environment variables it sets (returned)."""
    kind = named("credential_type", credential_type)
    defaults = {f["id"]: f.get("default", "") for f in kind["inputs"]["fields"]}
    values = {**defaults, **inputs}
    missing = [k for k in kind["inputs"].get("required", []) if not values.get(k)]
    assert not missing, "credential %r lacks %s" % (credential_type, missing)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ("cred-" + credential_type.replace(" ", "-"))
    path.write_text(render(kind["injectors"]["file"]["template"], values))
    path.chmod(0o600)
    return {k: render(v, values, tower={"filename": str(path)}) for k, v in kind["injectors"]["env"].items()}
