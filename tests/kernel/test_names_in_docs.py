"""What the docs name exists: every module path, Python dotted name and repository file path
that docs/*.md (and the README) give in code (``reservations.kernel.pipeline``,
``nodes/rules/status.py``, ``dal/records.written_with``, ``tests/x.py::test_y``) or link to
is found in the repository, with the function, class or attribute it names. A module moved
or renamed without its docs fails here, naming the doc and the name.

Read from the tree and the source (AST): nothing is imported to check it. A name is looked for
as written from the repository's root or below any folder, as the docs name modules and files
relative to their slice (``rules/fanout.py``) or package (``events.table.outlets``, under
``reservations``); ``Class.member`` in any class of that name the repository defines. Code
that is not a name of ours (an event type, the standard library's ``http.client``, a media
type) is left alone."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import get_args

import pytest

from reservations.events.models import EVENT_TYPES
from reservations_tools.fleet.model import Permission

pytestmark = pytest.mark.disable_socket

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
# What is not the repository's: made by a run (.local, .mutmut and the mutmut copy's
# mutants/ and src/), or Git's own.
NOT_TRACKED = {".git", ".venv", ".local", ".mutmut", ".aws-sam", "mutants", "node_modules",
               "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
               ".hypothesis"}  # fmt: skip
FILE_TYPES = {"py", "md", "json", "yaml", "yml", "toml", "sh", "ini", "txt", "cfg"}
# Code that is not a name of ours: the API's permissions and event types (``events.read``),
# media types, a JSON pointer, a purpose string, what `make mutate` makes in its copy.
NOT_NAMES = {*get_args(Permission), *EVENT_TYPES, "application/json",
             "components/schemas", "reservations/reclaim-plan/v1", "src/reservations",
             "mutants/", "import_time.json"}  # fmt: skip

CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"\.?[\w.*-]*[A-Za-z][\w.*-]*(?:/[\w.*-]*)+(?:::\w+)?")
SUBJECT = re.compile(r"(?:reservations|workloads|nodes)/[\w:-]+")  # an event's, not a path
CLASS = re.compile(r"^\s*class ([A-Z]\w*)\b", re.M)
PROSE_MODULE = re.compile(r"\b(?:reservations|reservations_client|reservations_api_client|"
                          r"devstack|reservations_tools|node_agent)(?:\.\w+)+")  # fmt: skip


@cache
def tree() -> tuple[str, ...]:
    """Every file and folder of the repository, relative to its root (``a/b.py``, ``a/``)."""
    found: list[str] = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in NOT_TRACKED]
        where = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if where == "." else f"{where}/"
        found += [f"{prefix}{name}/" for name in subfolders]
        found += [f"{prefix}{name}" for name in files]
    return tuple(found)


@cache
def found(path: str) -> list[str]:
    """The repository's files or folders that ``path`` (a glob perhaps) names: from the root,
    or as the end of a longer path."""
    folder = path.endswith("/")
    pattern = path.rstrip("/") + ("/" if folder else "")
    return [
        entry for entry in tree()
        if (entry.endswith("/") or not folder)
        and (fnmatch.fnmatchcase(entry, pattern) or fnmatch.fnmatchcase(entry, f"*/{pattern}")
             or fnmatch.fnmatchcase(entry.rstrip("/"), pattern.rstrip("/"))
             or fnmatch.fnmatchcase(entry.rstrip("/"), f"*/{pattern.rstrip('/')}"))
    ]  # fmt: skip


def defined(source: Path, attributes: list[str]) -> bool:
    """Whether the module defines ``attributes`` (``Class.method``, ``function``), or imports
    its first (then what follows is another module's, not looked into)."""
    body: list[ast.stmt] = ast.parse(source.read_text()).body
    for index, name in enumerate(attributes):
        match = _named(body, name)
        if match is None:
            return False
        if isinstance(match, ast.Import | ast.ImportFrom) or index == len(attributes) - 1:
            return True
        if not isinstance(match, ast.ClassDef):
            return False
        body = match.body
    return True


def _named(body: list[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return node
        elif isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING, optional imports
            inner = _named([*node.body, *getattr(node, "orelse", [])], name)
            if inner is not None:
                return inner
    return None


@cache
def classes() -> dict[str, list[Path]]:
    """The repository's Python files by the classes they define."""
    found: dict[str, list[Path]] = {}
    for entry in tree():
        if entry.endswith(".py"):
            for name in CLASS.findall((ROOT / entry).read_text()):
                found.setdefault(name, []).append(ROOT / entry)
    return found


def member_exists(parts: list[str]) -> bool | None:
    """Whether ``Class.member`` is a member of a class of that name; None when the
    repository has no such class (then it is not one of ours)."""
    sources = classes().get(parts[0])
    if sources is None:
        return None
    return any(defined(source, parts) for source in sources)


def module_exists(parts: list[str]) -> bool:
    """Whether some split of ``parts`` is a module of the repository (``a/b.py`` or
    ``a/b/__init__.py``) that defines the rest."""
    for split in range(len(parts), 0, -1):
        path = "/".join(parts[:split])
        for source in found(f"{path}.py") + found(f"{path}/__init__.py"):
            if defined(ROOT / source, parts[split:]):
                return True
    return False


def path_exists(text: str) -> bool:
    """Whether a path the docs give exists: a file or folder; ``file.py::test``; or a module
    and what it defines (``dal/records.written_with``)."""
    path, _, test = text.partition("::")
    if test:
        return any(defined(ROOT / source, [test]) for source in found(path))
    if path.endswith("/") or "*" in path:
        return bool(found(path))
    folder, _, last = path.rpartition("/")
    stem, _, rest = last.partition(".")
    if rest and rest.split(".")[-1] not in FILE_TYPES:  # a module and its names
        return module_exists([*folder.split("/"), stem, *rest.split(".")])
    return bool(found(path))


def is_ours(dotted: str) -> bool:
    """Whether a dotted name is one of this repository's modules (not the standard library's
    or another package's, not an API name)."""
    first = dotted.split(".", 1)[0]
    if dotted in NOT_NAMES or first in sys.stdlib_module_names:
        return False
    return any(entry.rstrip("/").rsplit("/", 1)[-1] == first for entry in tree()
               if entry.endswith("/"))  # fmt: skip


def named(text: str) -> list[str]:
    """The names of modules and files the doc's code spans, links and prose give."""
    prose = FENCE.sub("", text)
    names: list[str] = []
    for span in CODE_SPAN.findall(prose):
        code = span.strip().removesuffix("()")
        if code in NOT_NAMES:
            continue
        if SUBJECT.fullmatch(code):
            continue
        if PATH.fullmatch(code) and not code.startswith(("./", "/", ".local", ".mutmut")):
            names.append(code)
        elif DOTTED.fullmatch(code):
            last = code.rsplit(".", 1)[-1]
            if last in FILE_TYPES and "." not in code[: -len(last) - 1]:
                names.append(code)  # a file's name: wiring.py
            elif is_ours(code) or member_exists(code.split(".")) is not None:
                names.append(code)
    names += [m for m in PROSE_MODULE.findall(CODE_SPAN.sub("", prose))]
    return names


def missing(doc: Path) -> list[str]:
    """What the doc names that the repository does not have."""
    text = doc.read_text()
    absent: list[str] = []
    for name in named(text):
        if "/" in name:
            ok = path_exists(name)
        elif name.rsplit(".", 1)[-1] in FILE_TYPES and name.count(".") == 1:
            ok = bool(found(name))
        else:
            parts = name.split(".")
            ok = (module_exists(parts) or module_exists(["reservations", *parts])
                  or bool(member_exists(parts)))  # fmt: skip
        if not ok:
            absent.append(name)
    for target in LINK.findall(FENCE.sub("", text)):
        local = "://" not in target and not target.startswith("mailto:")
        if local and not (doc.parent / target).exists():
            absent.append(f"link {target}")
    return sorted(set(absent))


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_module_and_file_a_doc_names_exists(doc):
    assert missing(doc) == []


def test_a_moved_module_is_caught(tmp_path):
    doc = tmp_path / "moved.md"
    doc.write_text(
        "Held by `reservations.kernel.pipeline` (`kernel/pipeline.py`, `run_write` in\n"
        "`reservations.kernel.pipeline.run_write`), not `dal/records.written_with` nor\n"
        "`reservations.kernel.nowhere`; `tests/kernel/test_layering.py::test_no_such_test`;\n"
        "`OrgFeeds._deliver_settled`, not `OrgFeeds.deliver` nor `Logger.inject_lambda_context`;\n"
        "see [the API](../nowhere.md) and `events.read`, `application/json`, `http.client`,\n"
        "`reservations/res-a-active`, `6/4`.\n"
    )
    assert missing(doc) == sorted(["dal/records.written_with", "reservations.kernel.nowhere",
                                   "tests/kernel/test_layering.py::test_no_such_test",
                                   "OrgFeeds._deliver_settled", "link ../nowhere.md"])  # fmt: skip
