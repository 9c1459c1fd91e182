# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which YAML files can define a host's variables (its gpupool_cluster), found the way ansible-core finds them.

gpupool.core.validate runs in the controller, so it can read the files the inventory came from and check them
for keys written twice (model/yaml_duplicates.py): ansible-core's own check cannot tell a real duplicate from a
key that overrides a ``<<`` merge (docs/inventory.md, "Anchors and merge keys"). The files are those
ansible-core reads for the host, following its inventory manager and its host_group_vars vars plugin:

* each inventory source: a file, or every file under a directory source (hidden entries, host_vars,
  group_vars and vars_plugins skipped, as the inventory manager skips them);
* next to each source (a directory source itself, a file source's directory) and next to the playbook:
  ``group_vars/<group>`` for ``all`` and each of the host's groups, ``host_vars/<host>``; each as
  ``<name>``, ``<name>.yml``, ``<name>.yaml`` or ``<name>.json``, a directory of that name read recursively.

Only YAML and JSON files are returned (an INI inventory or an inventory script holds no YAML mapping).
Plain paths and names in, paths out, so it is tested on a temporary directory.
"""

from __future__ import annotations

import os
from typing import Callable, Iterable, List, Optional, Sequence, Union

from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_duplicates import (
    DuplicateKey,
    TooLarge,
    find_duplicate_keys,
    too_large,
)
from ansible_collections.gpupool.core.plugins.module_utils.model.yaml_traps import YamlTrap, find_yaml_traps

# ansible-core's YAML_FILENAME_EXTENSIONS, with '' first: a name without extension may be a directory or a file.
VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")
# Directory entries the inventory manager never parses as sources (IGNORED_ALWAYS in ansible.inventory.manager).
SKIPPED_IN_SOURCE_DIRS = ("host_vars", "group_vars", "vars_plugins")


def inventory_var_files(
    sources: Iterable[Optional[str]], host: str, groups: Sequence[str] = (), playbook_dir: Optional[str] = None
) -> List[str]:
    """The existing YAML/JSON files that can hold `host`'s variables, each once, in a stable order."""
    found: List[str] = []
    bases: List[str] = []
    for source in sources:
        if not source or ("," in source and not os.path.exists(source)):  # a host list such as "a,b,"
            continue
        source = os.path.abspath(source)
        if os.path.isdir(source):
            bases.append(source)
            found += _source_dir_files(source)
        elif os.path.isfile(source):
            bases.append(os.path.dirname(source))
            if _yaml_like(source):
                found.append(source)
    if playbook_dir:
        bases.append(os.path.abspath(playbook_dir))
    entities = [("group_vars", name) for name in ["all"] + [g for g in groups if g != "all"]]
    entities.append(("host_vars", host))
    for base in _unique(bases):
        for subdir, name in entities:
            found += vars_files(os.path.join(base, subdir), name)
    return _unique(found)


def vars_files(directory: str, name: str) -> List[str]:
    """ansible-core's DataLoader.find_vars_files: `name` as a directory (every file in it, recursively) or the
    first of name, name.yml, name.yaml, name.json that exists."""
    if not name or name.startswith(os.sep) or not os.path.isdir(directory):
        return []
    base = os.path.join(directory, name)
    for ext in VARS_EXTENSIONS:
        path = base + ext
        if os.path.isdir(path):
            return _vars_dir_files(path)
        if os.path.isfile(path):
            return [path]
    return []


def _vars_dir_files(directory: str) -> List[str]:
    """Files of a host_vars/<host>/ or group_vars/<group>/ directory: hidden files and backups (~) skipped,
    subdirectories read, files with a YAML extension or none (DataLoader._get_dir_vars_files)."""
    out: List[str] = []
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(".") or entry.endswith("~"):
            continue
        path = os.path.join(directory, entry)
        ext = os.path.splitext(entry)[1]
        if os.path.isdir(path) and not ext:
            out += _vars_dir_files(path)
        elif os.path.isfile(path) and ext in VARS_EXTENSIONS:
            out.append(path)
    return out


def _source_dir_files(directory: str) -> List[str]:
    out: List[str] = []
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(".") or entry.endswith("~") or entry in SKIPPED_IN_SOURCE_DIRS:
            continue
        path = os.path.join(directory, entry)
        if os.path.isdir(path):
            out += _source_dir_files(path)
        elif _yaml_like(path):
            out.append(path)
    return out


def _yaml_like(path: str) -> bool:
    """A YAML or JSON file; a file without extension too unless it is executable (an inventory script)."""
    ext = os.path.splitext(path)[1]
    if ext == "":
        return os.path.isfile(path) and not os.access(path, os.X_OK)
    return ext in VARS_EXTENSIONS


def _unique(items: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(items))


def shown(path: str, start: Optional[str] = None) -> str:
    """A path as a message shows it: relative to the working directory when below it (what a terminal
    opens), else absolute."""
    relative = os.path.relpath(path, start or os.getcwd())
    return path if relative.startswith("..") else relative


def keys_written_twice(
    files: Iterable[str], read: Callable[[str], str]
) -> List[Union[DuplicateKey, TooLarge, YamlTrap]]:
    """Every key written twice in one mapping of these files (model.yaml_duplicates), every scalar YAML 1.1 reads
    otherwise than written and data past the expansion bound (model.yaml_traps), and every file too large to
    read (model.bounds.MAX_FILE_BYTES); `read` gives a file's
    text (ansible-core's loader decrypts vaulted files). A file that cannot be read is skipped: ansible-core
    has read it already, or says why it cannot."""
    out: List[Union[DuplicateKey, TooLarge, YamlTrap]] = []
    for path in files:
        try:
            big = too_large(shown(path), os.path.getsize(path))
        except OSError:
            big = None
        if big is not None:  # refused with its size, before anything reads it (model/bounds.py)
            out.append(big)
            continue
        try:
            text = read(path)
        except Exception:  # noqa: BLE001 - see above: ansible-core reports unreadable files itself
            continue
        out += find_duplicate_keys(str(text), shown(path))
        out += find_yaml_traps(str(text), shown(path))
    return out


def text_reader(loader) -> Callable[[str], str]:
    """A file's text through ansible-core's loader (relative to its basedir, vault-decrypted): get_text_file_contents
    where the loader has it (ansible-core >= 2.19), else the decrypted bytes of _get_file_contents decoded as UTF-8
    (2.16 - 2.18, the older end of meta/runtime.yml's requires_ansible)."""
    read = getattr(loader, "get_text_file_contents", None)
    if read is not None:
        return read
    return lambda path: loader._get_file_contents(path)[0].decode("utf-8", errors="surrogateescape")
