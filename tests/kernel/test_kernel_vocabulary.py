"""The kernel names no feature, in code: what it says in its identifiers and string literals
uses the features' vocabulary (:data:`VOCABULARY`) in at most :data:`ALLOWANCE` names, each
of which ``docs/layout.md`` says why it stays. A slice's errors, event types, settings and id
formats live in the slice and fill the kernel's registries; the kernel only keeps them.

A feature word here is one identifier or string literal of the kernel's code that holds a
word of the vocabulary, counted once however often it recurs: an identifier split at ``_``
and at a capital (``owner_org_id``, ``audienceOrgIds``), a literal at anything not a letter.
Not counted: the import statements, the comments and docstrings (the words a reader reads
there are kept few by hand, not by this test), the names imported from outside the package
(``MetricUnit``) and a call's keyword names (``unit=``), which are the callee's words.

Read from the source (AST), as the layering test does, so nothing is imported to check it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.disable_socket

KERNEL = Path(__file__).resolve().parents[2] / "layers" / "common" / "reservations" / "kernel"

# The features' own words: the slices' nouns and what they do. Not in it: "history" and
# "review", the words of two kernel mechanisms (how long what is recorded is kept, the
# stack's HISTORY_RETENTION_DAYS; what the relay derives from an event), nor the kernel's
# own "operator", "org", "caller", "key", "event", "feed", "partition", "write".
VOCABULARY = frozenset(
    {
        *("node", "nodes", "unit", "units", "topology"),
        *("reservation", "reservations", "reserve", "reserved", "reservable"),
        *("workload", "workloads", "placement", "placements", "place", "placed", "scheduler"),
        *("termination", "terminations", "terminate", "terminated", "sweeper"),
        *("webhook", "webhooks", "subscription", "subscriptions", "subscribe"),
        *("delivery", "deliveries", "deliver", "delivered"),
        *("reclaim", "reclaims", "reclaimed", "release", "releases", "released"),
        *("lend", "lending", "lent", "spot", "sellable", "fleet", "audience"),
        *("owner", "owners", "broker", "brokers"),
    }
)
# The most feature words the kernel's code may hold (docs/layout.md lists them, and why).
ALLOWANCE = 10


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes: a module's, a class's, a function's first string."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }


def _skipped(tree: ast.Module) -> tuple[set[int], set[str]]:
    """The nodes not read (imports, call keywords, docstrings) and the names imported from
    outside the package."""
    skipped = _docstrings(tree)
    foreign: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            skipped |= {id(inner) for inner in ast.walk(node)}
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                if not (module or alias.name).startswith("reservations"):
                    foreign.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Call):
            skipped |= {id(keyword) for keyword in node.keywords}
    return skipped, foreign


def _names(source: str) -> Iterator[str]:
    """Every identifier and string literal the code says (docstrings, imports, call keywords
    and foreign names aside)."""
    tree = ast.parse(source)
    skipped, foreign = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Name) and node.id not in foreign:
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def words(name: str) -> set[str]:
    """The words of an identifier or a literal, lower-case: ``audienceOrgIds`` -> audience,
    org, ids; ``MAX_UNITS`` -> max, units; ``"/v1/nodes/"`` -> v, nodes."""
    found = set()
    for part in re.findall(r"[A-Za-z]+", name):
        found |= {w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", part)}
    return found


def feature_words(package: Path) -> dict[str, list[str]]:
    """Each identifier or literal of the package's code that holds a word of the
    vocabulary, with the files that say it."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        where = str(path.relative_to(package))
        for name in sorted(set(_names(path.read_text()))):
            if words(name) & VOCABULARY:
                found.setdefault(name, []).append(where)
    return found


def test_the_kernels_code_says_at_most_the_allowance_of_feature_words():
    found = feature_words(KERNEL)
    listed = "; ".join(f"{name!r} in {', '.join(files)}" for name, files in sorted(found.items()))
    assert len(found) <= ALLOWANCE, (
        f"{len(found)} feature words in the kernel (at most {ALLOWANCE}): {listed}"
    )


def test_a_planted_feature_word_is_counted_where_code_says_it_and_nowhere_else(tmp_path):
    (tmp_path / "planted.py").write_text(
        '"""A docstring naming a workload and a webhook: not counted."""\n'
        "from reservations.nodes import Node  # an import (and this comment): not counted\n"
        "from aws_lambda_powertools.metrics import MetricUnit\n"
        "\n"
        "SWEEPER_PACE = 5\n"
        "\n"
        "\n"
        "def note(node_id: str) -> str:\n"
        '    """Nor this docstring about a reservation."""\n'
        '    add(name="x", unit=MetricUnit.Count)  # the callee\'s words\n'
        '    return f"reclaimed on {node_id}" + LEASE.reservedUnitIds\n'
    )
    assert feature_words(tmp_path) == {
        "SWEEPER_PACE": ["planted.py"],
        "node_id": ["planted.py"],
        "reclaimed on ": ["planted.py"],
        "reservedUnitIds": ["planted.py"],
    }


def test_above_the_allowance_the_test_lists_what_it_found(tmp_path, monkeypatch):
    (tmp_path / "many.py").write_text(
        "".join(f"WORKLOAD_{n} = 'fleet'\n" for n in range(ALLOWANCE + 1))
    )
    monkeypatch.setattr(f"{__name__}.KERNEL", tmp_path)
    with pytest.raises(
        AssertionError,
        match=r"^12 feature words in the kernel \(at most 10\): 'WORKLOAD_0' in many\.py; ",
    ):
        test_the_kernels_code_says_at_most_the_allowance_of_feature_words()
