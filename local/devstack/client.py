"""Generate the typed Python client (clients/python/reservations_api_client) from
docs/openapi.json with openapi-python-client, as pinned in requirements-dev.txt.

    python -m devstack.client            # regenerate clients/python/reservations_api_client
    python -m devstack.client --check    # exit 1 when the committed client differs

The generator's own output, no post hooks: the same document always gives the same files.

What it is given is the document with every enum and const relaxed to a plain string (its
known values kept in the description): the generated models check each enum strictly, so a
value the API adds later (an event type, a workload state, an error code) would raise
``TypeError`` in every client already installed. The API checks what it is sent; the client
keeps what it reads, as it came. Unknown fields are kept by the generator itself (each
model's ``additional_properties``).
"""

from __future__ import annotations

import argparse
import copy
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "openapi.json"
CLIENTS = ROOT / "clients" / "python"
CONFIG = CLIENTS / "openapi-python-client.yaml"
PACKAGE = CLIENTS / "reservations_api_client"


def tolerant(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``document`` whose every string ``enum`` and ``const`` is a plain string,
    the values it knows named in its description (so in the models' docstrings)."""
    relaxed = copy.deepcopy(document)
    stack: list[Any] = [relaxed]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack += node
            continue
        if not isinstance(node, dict):
            continue
        known = node.get("enum", [node["const"]] if "const" in node else None)
        if isinstance(known, list) and known and all(isinstance(v, str) for v in known):
            node.pop("enum", None)
            node.pop("const", None)
            note = f"known values: {', '.join(known)}; a newer API may send others"
            given = node.get("description")
            node["description"] = f"{given}; {note}" if given else note
        stack += node.values()
    return relaxed


def generate(into: Path) -> None:
    """The client generated from the committed document, relaxed (:func:`tolerant`), into
    ``into`` (made here)."""
    generator = Path(sys.executable).parent / "openapi-python-client"
    with tempfile.TemporaryDirectory() as scratch:
        document = Path(scratch) / "openapi.json"
        document.write_text(json.dumps(tolerant(json.loads(SPEC.read_text())), indent=2))
        subprocess.run(  # the pinned generator, with paths of this repository
            [str(generator), "generate", "--path", str(document), "--config", str(CONFIG),
             "--output-path", str(into), "--meta", "none"],
            check=True, capture_output=True, text=True,
            env={**os.environ,
                 "PATH": f"{generator.parent}{os.pathsep}{os.environ.get('PATH', '')}"},
        )  # fmt: skip


def differences(left: Path, right: Path) -> list[str]:
    """The files that differ between two trees, or are in one only (caches aside)."""
    found: list[str] = []
    compared = filecmp.dircmp(left, right, ignore=["__pycache__"])
    stack = [(compared, Path())]
    while stack:
        node, where = stack.pop()
        found += [str(where / name) for name in node.left_only + node.right_only]
        found += [str(where / name) for name in node.diff_files]
        stack += [(sub, where / name) for name, sub in node.subdirs.items()]
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "reservations_api_client"
        generate(fresh)
        if args.check:
            drift = differences(fresh, PACKAGE) if PACKAGE.exists() else ["(no client)"]
            if drift:
                print(f"the client is out of date ({', '.join(drift)}): run `make client`",
                      file=sys.stderr)  # fmt: skip
            return 1 if drift else 0
        shutil.rmtree(PACKAGE, ignore_errors=True)
        shutil.copytree(fresh, PACKAGE)
    print(f"wrote {PACKAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
