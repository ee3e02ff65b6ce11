"""No function longer than 40 lines, from its ``def`` to its last line, in the product's
code: the layer, the functions, the tools, the agent, the local stack and the benchmark.
Read from the source (AST), nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.disable_socket

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("layers", "functions", "tools", "agent", "local", "bench")
LIMIT = 40


def _long_functions(source: str, name: str) -> list[str]:
    tree = ast.parse(source, name)
    return [
        f"{name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_function_is_longer_than_40_lines() -> None:
    files = [
        path
        for folder in CHECKED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not {".aws-sam", ".venv", "build"} & set(path.parts)
    ]
    assert len(files) > 100  # the folders are there, and read
    too_long = [
        line
        for path in files
        for line in _long_functions(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert too_long == []


def test_a_41_line_function_is_caught() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(40))
    assert _long_functions(f"def f():\n{body}", "planted.py") == ["planted.py:1 f (41 lines)"]
    assert _long_functions(f"def f():\n{body[: body.rindex('    x39')]}", "ok.py") == []
