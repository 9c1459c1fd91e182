"""A ``systemctl`` SIMULATOR for tests of the IMEX module: there is no systemd on the test machine.

Put on PATH as ``systemctl`` (`install(dir, state_dir)` writes the wrapper script), it answers the
verbs gpupool.core.imex uses the way systemd 252+ answers them, for units described in a JSON state
file, and appends every invocation to ``calls.log`` so a test can count stops, masks and restarts:

- ``show UNIT -p LoadState,ActiveState,UnitFileState`` (also ``--property=``): ``Key=value`` lines;
  an unknown unit: LoadState=not-found, ActiveState=inactive, UnitFileState empty;
- ``start``/``restart``: a masked unit refuses ("Unit X is masked.", exit 1), an unknown unit too
  ("Unit X not found.", exit 5); otherwise active. ``restart`` also counts the restart;
- ``stop``: inactive (a masked unit can still be stopped); ``enable``/``disable`` (``--now`` starts/stops
  too): a masked unit refuses to enable ("Unit file X is masked.", exit 1);
- ``mask`` (a masked unit keeps running until stopped, as systemd does) / ``unmask``;
- ``is-active`` / ``is-enabled``: the state word and exit 0/3 (is-active) or 0/1 (is-enabled);
- ``daemon-reload``: recorded, no effect.
What it does not model: dependencies, unit files on disk, the service actually reading its config.

State file ($SYSTEMCTL_SIMULATOR_DIR/units.json):
    {"nvidia-imex.service": {"installed": true, "enabled": true, "masked": false, "active": true}}
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

ENV = "SYSTEMCTL_SIMULATOR_DIR"


def _state_dir() -> Path:
    return Path(os.environ[ENV])


def load(state_dir: Path) -> dict:
    path = state_dir / "units.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save(state_dir: Path, units: dict) -> None:
    (state_dir / "units.json").write_text(json.dumps(units, indent=1, sort_keys=True))


def calls(state_dir: Path) -> list[list[str]]:
    path = state_dir / "calls.log"
    return [shlex.split(line) for line in path.read_text().splitlines()] if path.exists() else []


def install(bin_dir: Path, state_dir: Path, units: dict | None = None) -> Path:
    """Write an executable `systemctl` into bin_dir that runs this simulator on state_dir."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    if units is not None:
        save(state_dir, units)
    script = bin_dir / "systemctl"
    script.write_text(
        '#!/bin/sh\n%s=%s exec %s %s "$@"\n'
        % (ENV, shlex.quote(str(state_dir)), shlex.quote(sys.executable), shlex.quote(os.path.abspath(__file__)))
    )
    script.chmod(0o755)
    return script


def _props(unit: dict | None) -> dict:
    if unit is None or not unit.get("installed", True) and not unit.get("masked"):
        return {"LoadState": "not-found", "ActiveState": "inactive", "UnitFileState": ""}
    masked = unit.get("masked", False)
    return {
        "LoadState": "masked" if masked else "loaded",
        "ActiveState": "active" if unit.get("active") else "inactive",
        "UnitFileState": "masked" if masked else ("enabled" if unit.get("enabled") else "disabled"),
    }


def main(argv: list[str]) -> int:
    state_dir = _state_dir()
    with open(state_dir / "calls.log", "a") as fh:
        fh.write(" ".join(shlex.quote(a) for a in argv) + "\n")
    units = load(state_dir)
    args = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    props = []
    for i, a in enumerate(argv):
        if a in ("-p", "--property") and i + 1 < len(argv):
            props += argv[i + 1].split(",")
            args.remove(argv[i + 1])
        elif a.startswith("--property="):
            props += a.split("=", 1)[1].split(",")
    if not args:
        print("systemctl simulator: no verb", file=sys.stderr)
        return 1
    verb, names = args[0], args[1:]
    if verb == "daemon-reload":
        return 0
    rc = 0
    for name in names:
        unit = units.get(name)
        known = unit is not None and (unit.get("installed", True) or unit.get("masked"))
        if verb == "show":
            values = _props(unit)
            for key in props or list(values):
                print("%s=%s" % (key, values.get(key, "")))
            continue
        if verb == "is-active":
            word = _props(unit)["ActiveState"]
            print(word)
            rc = rc or (0 if word == "active" else 3)
            continue
        if verb == "is-enabled":
            word = _props(unit)["UnitFileState"] or "not-found"
            print(word)
            rc = rc or (0 if word == "enabled" else 1)
            continue
        if verb in ("mask", "unmask"):
            unit = units.setdefault(name, {"installed": False})
            unit["masked"] = verb == "mask"
            continue
        if not known:
            print("Failed to %s %s: Unit %s not found." % (verb, name, name), file=sys.stderr)
            rc = 5
            continue
        if verb in ("start", "restart"):
            if unit.get("masked"):
                print("Failed to %s %s: Unit %s is masked." % (verb, name, name), file=sys.stderr)
                rc = 1
                continue
            unit["active"] = True
            if verb == "restart":
                unit["restarts"] = unit.get("restarts", 0) + 1
        elif verb == "stop":
            unit["active"] = False
        elif verb in ("enable", "disable"):
            if verb == "enable" and unit.get("masked"):
                print("Failed to enable unit: Unit file %s is masked." % name, file=sys.stderr)
                rc = 1
                continue
            unit["enabled"] = verb == "enable"
            if "--now" in flags:
                unit["active"] = verb == "enable"
        else:
            print("systemctl simulator: verb %r is not simulated" % verb, file=sys.stderr)
            return 1
    save(state_dir, units)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
