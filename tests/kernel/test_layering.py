"""Dependencies point one way inside the layer package: handlers -> logic -> dal -> rules ->
models, with auth beside logic, http on top of both, and egress (outbound HTTP) beside dal.
Read from the source (AST), so an import inside a function counts too, and nothing is
imported to check it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.disable_socket

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "common" / "reservations"

# What each part of ``reservations`` may import from ``reservations`` (itself included).
ALLOWED: dict[str, frozenset[str]] = {
    # Entities, API shapes, errors, id formats, messages, the writes: nothing above them.
    "models": frozenset({"models"}),
    # Pure rules decide from models alone: no I/O, no settings, the clock a parameter.
    "rules": frozenset({"models", "rules"}),
    # The table and the queues: the layout, and the settings naming them.
    "dal": frozenset({"models", "rules", "dal", "config"}),
    # Outbound HTTP to customers' endpoints (webhooks): the rules' checks, no table, no settings.
    "egress": frozenset({"models", "rules", "egress"}),
    # The API key header and its cache: rules on models, no data access of its own.
    "auth": frozenset({"models", "rules", "auth"}),
    # Use cases: rules over the ports; the dal only for names of its layout, never settings.
    "logic": frozenset({"models", "rules", "dal", "logic", "observability"}),
    # The resolver: errors to responses, the caller from the key (logic's errors and models).
    "http": frozenset(
        {
            "models",
            "rules",
            "dal",
            "auth",
            "logic",
            "http",
            "config",
            "clock",
            "observability",
            "wiring",
        }
    ),
}


def _imported_parts(source: str) -> set[str]:
    """The first component under ``reservations`` of every module the source imports."""
    parts: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            pieces = name.split(".")
            if pieces[0] == "reservations" and len(pieces) > 1:
                parts.add(pieces[1])
    return parts


def upward_imports(package: Path) -> list[str]:
    """Every import in ``package`` that its part may not make, as ``file: part``."""
    found = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((package / layer).rglob("*.py")):
            for part in sorted(_imported_parts(path.read_text()) - allowed):
                found.append(f"{path.relative_to(package)}: imports reservations.{part}")
    return found


def test_every_import_in_the_layer_package_points_down():
    assert upward_imports(PACKAGE) == []


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


@pytest.mark.parametrize(
    ("layer", "statement"),
    [
        ("models", "from reservations.nodes.rules.status import effective_status"),
        ("rules", "from reservations.dal import items"),
        ("dal", "from reservations.logic import reclaim"),
        ("logic", "from reservations.kernel.http.resolver import create_app"),
        ("logic", "from reservations.kernel.settings import settings"),
        ("logic", "from reservations.webhooks.egress.client import WebhookClient"),
        ("egress", "from reservations.dal import webhooks"),
        ("models", "import reservations.capacity.reclaim"),
    ],
)
def test_a_planted_upward_import_is_caught(tmp_path, layer, statement):
    for name in ALLOWED:
        (tmp_path / name).mkdir()
    (tmp_path / layer / "planted.py").write_text(f"def late():\n    {statement}\n")
    assert upward_imports(tmp_path) == [
        f"{layer}/planted.py: imports reservations.{statement.split()[1].split('.')[1]}"
    ]


def test_the_benchmark_and_the_local_stack_import_nothing_from_the_tests():
    """What bench/ and local/ share with the tests lives in local/devstack, never in tests/."""
    root = PACKAGE.parents[2]
    importing_tests = [
        str(path.relative_to(root))
        for folder in ("bench", "local", "tools", "functions")
        for path in sorted((root / folder).rglob("*.py"))
        if any(
            name.split(".")[0] == "tests"
            for node in ast.walk(ast.parse(path.read_text()))
            for name in _module_names(node)
        )
    ]
    assert importing_tests == []


def _module_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module]
    return []
