"""What a slice shows the others: its ``__init__``'s ``__all__`` (``test_layering``: a slice
reaches another only through it). ``nodes`` is the floor every other slice stands on, a slice
and not a second kernel: its face names what other slices share of a node's partition (the
model, the rules of status they share, the writes' base and writer, the store's ports, the
views) and no more; what one other slice alone uses belongs to that slice, and what only
``nodes`` uses stays inside it.

Read from the source (AST), as the layering test is: nothing is imported to check it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.disable_socket

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "common" / "reservations"
# How many names nodes' face may have.
NODES_LIMIT = 40
# How many it has today: it may shrink, never grow (each name moved out lowers this; the
# unit ids' formats and the one refusal every slice that claims units shares came from the
# kernel, which names no feature; lending by the clock added three that its pass and the
# partition's writers share: a unit's lending record, and the lending index's key and shards,
# spelled where the table's other keys are; the history's rules, a reservation's view and the
# outbox's value went to the slices that own them, docs/layout.md).
NODES_TODAY = 79


def public_names(package: Path, slice_name: str) -> list[str]:
    """The names a slice's ``__init__`` lists in ``__all__`` (none when it has none)."""
    init = package / slice_name / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []


def names_used_by_other_slices(package: Path, slice_name: str) -> set[str]:
    """The names other slices import from the slice's package."""
    module = f"reservations.{slice_name}"
    used: set[str] = set()
    for path in package.rglob("*.py"):
        if path.relative_to(package).parts[0] == slice_name:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == module:
                used |= {alias.name for alias in node.names}
    return used


def face_problems(package: Path, slice_name: str, limit: int) -> list[str]:
    """What is wrong with the slice's face: too many names, or a name no other slice uses."""
    names = public_names(package, slice_name)
    problems = [f"{slice_name} shows {len(names)} names (at most {limit})"] * (len(names) > limit)
    unused = sorted(set(names) - names_used_by_other_slices(package, slice_name))
    return problems + [f"{slice_name} shows {name}, which no other slice uses" for name in unused]


@pytest.mark.xfail(
    strict=True,
    reason="nodes still shows the table's keys, item codecs and actions that the other slices' "
    "writers compose on the one partition, and rules and values one other slice shares with "
    "nodes itself (docs/layout.md); when it is down to 40, this passes and the mark goes",
)
def test_nodes_shows_at_most_40_names():
    assert len(public_names(PACKAGE, "nodes")) <= NODES_LIMIT


def test_nodes_face_never_grows_and_every_name_on_it_is_used_by_another_slice():
    assert face_problems(PACKAGE, "nodes", NODES_TODAY) == []


def _house(root: Path, names: list[str], used: list[str]) -> Path:
    for folder in ("nodes", "capacity"):
        (root / folder).mkdir(parents=True)
    (root / "nodes" / "__init__.py").write_text(f"__all__ = {names!r}\n")
    imports = "".join(f"from reservations.nodes import {name}\n" for name in used)
    (root / "capacity" / "__init__.py").write_text(imports)
    return root


def test_a_face_over_its_limit_and_a_name_no_other_slice_uses_are_caught(tmp_path):
    names = [f"name_{i}" for i in range(41)]
    house = _house(tmp_path, names, names[1:])
    assert face_problems(house, "nodes", NODES_LIMIT) == [
        "nodes shows 41 names (at most 40)",
        "nodes shows name_0, which no other slice uses",
    ]


def test_a_face_within_its_limit_that_others_use_passes(tmp_path):
    names = [f"name_{i}" for i in range(40)]
    assert face_problems(_house(tmp_path, names, names), "nodes", NODES_LIMIT) == []
