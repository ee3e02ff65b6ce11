"""The layer package is arranged by feature around a kernel, and its dependencies point one way:

- the kernel (``reservations.kernel``) imports no slice;
- a slice imports another only through that slice's package (its public ``__init__``),
  never one of its modules, and no two slices need each other (no cycle);
- inside a slice, ``endpoints`` / ``kernel.wiring`` -> use cases and ``ports`` -> ``table`` /
  ``egress`` -> ``rules`` -> ``models`` and ``writes``; a slice's ``__init__`` names what others may use;
- ``reservations.endpoints``, the API's table of contents, is imported by no slice.

Read from the source (AST), so an import inside a function counts too, and nothing is
imported to check it."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.disable_socket

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "common" / "reservations"
KERNEL = "kernel"
# Inside a slice: how low each part is (any other name is a use case, or its ports);
# ``writes``: the slice's writes on a node's partition, models its table commits.
LOW = {
    "models": 0,
    "writes": 0,
    "errors": 0,
    "settings": 0,
    "ids": 0,
    "rules": 1,
    "table": 2,
    "egress": 2,
    "endpoints": 4,
    "wiring": 4,
}
USE_CASE = 3


def _imports(source: str) -> Iterator[str]:
    """Every ``reservations...`` module the source imports, a name imported from a package
    counted as the package (``from reservations.nodes import Node``: ``reservations.nodes``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "reservations":
            yield from (f"reservations.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _modules(package: Path) -> Iterator[tuple[tuple[str, ...], Path]]:
    """Each module of the package as its dotted parts under ``reservations``."""
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        yield (parts[:-1] if parts[-1] == "__init__" else parts), path


def _slices(package: Path) -> set[str]:
    return {p.name for p in package.iterdir() if p.is_dir() and p.name != KERNEL} - {"__pycache__"}


def _rank(inside: tuple[str, ...]) -> int:
    """How low a module of a slice is, by its part's name (``inside``: the parts after the
    slice's name; empty for the slice's ``__init__``)."""
    return LOW.get(inside[0], USE_CASE) if inside else LOW["wiring"]


def misplaced_imports(package: Path) -> list[str]:
    """Every import that breaks the rules above, as ``file: imports module (why)``."""
    slices = _slices(package)
    found: list[str] = []
    for parts, path in _modules(package):
        where = str(path.relative_to(package))
        own = parts[0] if parts else None
        for module in sorted(set(_imports(path.read_text()))):
            target = module.split(".")
            if target[0] != "reservations" or len(target) < 2:
                continue
            name = target[1]
            if name == own:
                found += _inside(where, parts[1:], target[2:], module) if own in slices else []
                continue
            if own == KERNEL and (name in slices or name == "endpoints"):
                found.append(f"{where}: imports {module} (the kernel names no slice)")
            elif own in slices and name == "endpoints":
                found.append(f"{where}: imports {module} (no slice imports the catalog)")
            elif own in slices and name in slices and len(target) > 2:
                found.append(f"{where}: imports {module} (another slice's module)")
    return found


def _inside(where: str, here: tuple[str, ...], there: list[str], module: str) -> list[str]:
    """An import inside one slice points down (or across one part), never up."""
    if not here or not there:  # the slice's __init__, or the slice itself
        return [] if not here else [f"{where}: imports {module} (its own slice's __init__)"]
    if _rank(tuple(there)) > _rank(here):
        return [f"{where}: imports {module} (up, inside its slice)"]
    return []


def slice_cycles(package: Path) -> list[tuple[str, str]]:
    """Pairs of slices that need each other, directly or through others."""
    slices = _slices(package)
    needs: dict[str, set[str]] = {name: set() for name in slices}
    for parts, path in _modules(package):
        if parts and parts[0] in slices:
            for module in _imports(path.read_text()):
                target = module.split(".")
                other = target[1] if target[0] == "reservations" and len(target) > 1 else None
                if other in slices and other != parts[0]:
                    needs[parts[0]].add(other)
    for _ in slices:  # the transitive closure: at most one round per slice
        for name in slices:
            needs[name] |= set().union(*(needs[other] for other in needs[name]))
    pairs = itertools.combinations(sorted(slices), 2)
    return [(a, b) for a, b in pairs if b in needs[a] and a in needs[b]]


def test_every_import_in_the_layer_package_points_one_way():
    assert misplaced_imports(PACKAGE) == []


def test_no_two_slices_need_each_other():
    assert slice_cycles(PACKAGE) == []


def test_relative_imports_are_not_used_so_the_check_sees_every_import():
    relative = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.ImportFrom) and node.level > 0
            for node in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert relative == []


def _house(root: Path) -> Path:
    """A small house of the same shape: a kernel, two slices, the catalog."""
    for folder in ("kernel", "nodes/models", "nodes/rules", "nodes/table", "capacity"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "endpoints.py").write_text("import reservations.capacity.endpoints\n")
    return root


@pytest.mark.parametrize(
    ("planted", "statement", "why"),
    [
        ("kernel/pipeline.py", "from reservations.nodes import Node", "the kernel names no slice"),
        ("kernel/http.py", "import reservations.endpoints", "the kernel names no slice"),
        (
            "capacity/reclaim.py",
            "from reservations.nodes.table.store import NodeTable",
            "another slice's module",
        ),
        (
            "nodes/rules/status.py",
            "from reservations.nodes.table.items import node_item",
            "up, inside its slice",
        ),
        ("nodes/models/partition.py", "import reservations.nodes.register", "up, inside its slice"),
        ("nodes/table/store.py", "from reservations.nodes import Node", "its own slice's __init__"),
        (
            "capacity/reclaim.py",
            "from reservations import endpoints",
            "no slice imports the catalog",
        ),
        (
            "nodes/register.py",
            "from reservations.endpoints import ALL",
            "no slice imports the catalog",
        ),
    ],
)
def test_a_planted_import_against_the_layout_is_caught(tmp_path, planted, statement, why):
    house = _house(tmp_path)
    (house / planted).write_text(f"def late():\n    {statement}\n")
    words = statement.split()
    module = ".".join(words[1::2]) if words[1] == "reservations" else words[1]
    assert misplaced_imports(house) == [f"{planted}: imports {module} ({why})"]


def test_the_house_as_it_is_and_a_slice_importing_another_through_its_package_pass(tmp_path):
    house = _house(tmp_path)
    (house / "capacity" / "reclaim.py").write_text("from reservations.nodes import Node\n")
    (house / "nodes" / "table" / "store.py").write_text("from reservations.nodes.rules import x\n")
    assert misplaced_imports(house) == []
    assert slice_cycles(house) == []


def test_a_planted_cycle_between_slices_is_caught(tmp_path):
    house = _house(tmp_path)
    (house / "capacity" / "reclaim.py").write_text("from reservations.nodes import Node\n")
    (house / "nodes" / "register.py").write_text("def f():\n    import reservations.capacity\n")
    assert slice_cycles(house) == [("capacity", "nodes")]


def test_the_benchmark_and_the_local_stack_import_nothing_from_the_tests():
    """What bench/ and local/ share with the tests lives in local/devstack, never in tests/."""
    root = PACKAGE.parents[2]
    importing_tests = [
        str(path.relative_to(root))
        for folder in ("bench", "local", "tools", "functions")
        for path in sorted((root / folder).rglob("*.py"))
        if any(name.split(".")[0] == "tests" for name in _imports(path.read_text()))
    ]
    assert importing_tests == []
