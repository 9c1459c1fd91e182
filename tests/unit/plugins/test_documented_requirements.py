"""The library versions the plugins' documentation states (ansible-doc's "requirements") are requirements.txt's.

A user reads `openstacksdk >= X` in ansible-doc and installs requirements.txt: both must say the same floor, and
the runtime check (plugins/module_utils/openstack/connection.py) must refuse exactly what the file excludes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from plugins.module_utils.openstack import connection

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTED = re.compile(r"^([A-Za-z0-9_.-]+) >= ([0-9][0-9.]*)\b")


def requirement_floors() -> dict[str, Version]:
    floors = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (floor,) = [spec.version for spec in req.specifier if spec.operator == ">="] or [None]
            floors[canonicalize_name(req.name)] = Version(floor) if floor else None
    return floors


def documented_floors() -> list[tuple[str, str, Version]]:
    """(plugin file, library, version) for every `<library> >= <version>` in a DOCUMENTATION's requirements."""
    found = []
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION" for t in node.targets)
                and isinstance(node.value, ast.Constant)
            ):
                for item in yaml.safe_load(node.value.value).get("requirements") or []:
                    match = DOCUMENTED.match(item)
                    if match and match.group(1) not in ("python", "helm"):
                        found.append((str(path.relative_to(ROOT)), match.group(1), Version(match.group(2))))
    return found


def test_every_documented_library_floor_is_requirements_txt_floor():
    floors = requirement_floors()
    documented = documented_floors()
    assert {entry[1] for entry in documented} >= {"pydantic", "kubernetes", "openstacksdk"}, documented
    wrong = [
        "%s says %s >= %s, requirements.txt %s" % (path, name, version, floors.get(canonicalize_name(name), "nothing"))
        for path, name, version in documented
        if floors.get(canonicalize_name(name)) != version
    ]
    assert wrong == []


def test_the_runtime_openstacksdk_check_refuses_what_requirements_txt_excludes():
    assert Version(connection.MINIMUM_SDK_VERSION) == requirement_floors()["openstacksdk"]
