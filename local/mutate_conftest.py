"""The root conftest of `make mutate`'s staging copy (local/mutate.sh copies it there).

mutmut runs, for each mutant, the tests that reached its function in one recording run
over every test file the configuration selects. This narrows that per module, because a
moto-based handler test costs a hundred times a fast one (a fresh in-memory AWS each):

- at most FAST_TESTS fast tests (no AWS, or one call over moto): the FOCUSED_TESTS that
  reached the fewest functions, then the rest spread over the files that reach the
  function, run quickest first;
- then at most MOTO_TESTS moto-based handler and security tests: for the modules that talk
  to AWS or HTTP (the DAL, the request path, the keys, the settings), from the files mapped
  to the module below; for a function no mapped file or no fast test reaches, from any
  file that reached it. A mutant those do not catch is reported as surviving.

What each module is judged by, and why: docs/mutation.md.
"""

from __future__ import annotations

import collections
import functools
import importlib
import json
import logging
import os
import pkgutil
import signal
import sys
from pathlib import Path
from typing import Any

# A fast test: its file is in process without moto (no `pytest.mark.moto` in its
# `pytestmark`), or is one of these, which call the DAL over moto once a test.
DAL_OVER_MOTO = (
    "tests/events/test_late_event_writes.py",
    "tests/kernel/test_idempotency_store.py",
    "tests/nodes/test_node_reads_store.py",
    "tests/nodes/test_named_orgs_pruning.py",
    "tests/webhooks/test_hook_table.py",
    "tests/webhooks/test_outlet.py",
    "tests/webhooks/test_table.py",
)
# The document's generator is judged by the test that compares it with the committed one
# (the other contract tests run handlers over moto: slow, like the handler files).
SPEC_DRIFT = "tests/api/test_openapi.py::test_the_committed_spec_matches_the_code"
SECURITY = ("tests/api/test_security.py",)
EVENTS = ("tests/events/test_events_handler.py", "tests/events/test_event_access.py")
IDEMPOTENCY = "tests/kernel/test_idempotency_handler.py"
RESERVATIONS = "tests/lifecycle/test_reservations_handler.py"
WRITES = (RESERVATIONS, IDEMPOTENCY)
REQUEST_PATH = (*SECURITY, RESERVATIONS)
NODES = "tests/nodes/test_nodes_handler.py"
WORKLOADS = "tests/workloads/test_workloads_handler.py"
LOOP = "tests/terminations/test_termination_loop.py"
HISTORY = "tests/lifecycle/test_history_handler.py"
CANCEL = "tests/lifecycle/test_cancel_handler.py"
RELEASE = "tests/capacity/test_release_handler.py"
NODE_READS = "tests/nodes/test_node_reads_handler.py"
DELIVERIES = "tests/webhooks/test_deliveries_handler.py"
SUBSCRIPTIONS = "tests/webhooks/test_subscriptions_handler.py"
OUTLET = "tests/webhooks/test_outlet_handler.py"
WEBHOOKS = ("tests/webhooks/test_sender_handler.py", SUBSCRIPTIONS, OUTLET)
# A module's dotted name prefix -> the moto-based test files its mutants also run; the
# first prefix that matches wins. A module listed nowhere runs the fast tests only.
MOTO: tuple[tuple[str, tuple[str, ...]], ...] = (
    # The node partition's table: each write's own handler file, then the files that write
    # or read through the shared store, keys, items and records.
    ("reservations.nodes.table.writes.", (NODES,)),
    ("reservations.nodes.table.reads.", (NODE_READS, WORKLOADS)),
    ("reservations.nodes.table.access.", (RESERVATIONS, HISTORY, NODES)),
    ("reservations.nodes.table.actions.", (*WRITES, NODES, WORKLOADS)),
    (
        "reservations.nodes.table.",  # store, keys, items, records, queries
        (*WRITES, NODES, WORKLOADS, HISTORY, NODE_READS),
    ),
    ("reservations.workloads.table.", (WORKLOADS, NODES)),
    ("reservations.terminations.table.", (LOOP,)),  # the store and the queues
    ("reservations.events.table.", EVENTS),  # the feeds and the outlets
    ("reservations.lifecycle.table.changes.", (CANCEL, RELEASE, *EVENTS)),
    ("reservations.lifecycle.table.history.", (HISTORY,)),
    ("reservations.lifecycle.table.create.", WRITES),
    ("reservations.webhooks.table.deliveries.", WEBHOOKS),
    ("reservations.webhooks.table.items.", (*WEBHOOKS, DELIVERIES)),
    ("reservations.webhooks.table.subscriptions.", (SUBSCRIPTIONS, DELIVERIES)),
    ("reservations.webhooks.table.relay_outlet.", (OUTLET,)),
    # Use cases and rules that only the real handlers reach (reads, history, deliveries).
    ("reservations.nodes.read.", (NODE_READS,)),
    ("reservations.webhooks.deliveries.", (DELIVERIES,)),
    ("reservations.lifecycle.rules.history.", (HISTORY,)),
    # The kernel's AWS access, which every slice's table goes through.
    ("reservations.kernel.idempotency.table.", (IDEMPOTENCY,)),
    ("reservations.kernel.aws.queries.", (*WRITES, HISTORY)),
    ("reservations.kernel.aws.actions.", (*WRITES, NODES, WORKLOADS)),
    ("reservations.kernel.aws.transactions.", (*WRITES, NODES)),
    ("reservations.kernel.aws.clients.", (*WRITES, LOOP)),
    ("reservations.kernel.aws.codec.", (*WRITES, NODES, WORKLOADS)),
    ("reservations.kernel.aws.event_items.", (*EVENTS, RESERVATIONS, NODES)),
    ("reservations.kernel.aws.batches.", (*EVENTS, OUTLET)),
    # The request path: routes, the resolver, the functions' signatures, the keys.
    ("reservations.kernel.http.openapi.", ("tests/api/test_openapi.py", *REQUEST_PATH)),
    ("reservations.kernel.http.", REQUEST_PATH),
    ("reservations.kernel.auth.", SECURITY),
    ("reservations.kernel.api_keys.", SECURITY),
    ("reservations.events.endpoints.", EVENTS),
    ("reservations.webhooks.endpoints.", (SUBSCRIPTIONS,)),
    # What the functions are wired from: settings, the entry point, each slice's ports.
    ("reservations.kernel.settings.", (LOOP,)),
    ("reservations.kernel.wiring.", (NODES, LOOP)),
    ("reservations.nodes.wiring.", (NODES, NODE_READS)),
    ("reservations.lifecycle.wiring.", (RESERVATIONS, HISTORY)),
    ("reservations.workloads.wiring.", (WORKLOADS,)),
    ("reservations.terminations.wiring.", (LOOP,)),
    ("reservations.events.wiring.", EVENTS),
    ("reservations.webhooks.wiring.", (*WEBHOOKS, DELIVERIES)),
    ("reservations.capacity.wiring.", (RELEASE, *SECURITY)),
)
# The most fast tests, and then moto-based tests, one mutant runs; of the fast ones, the
# FOCUSED_TESTS that reached the fewest functions of the layer come first, wherever they are
# (a rule's own table, when dozens of files pass through the rule), then 60 a file in turn
# (a write's own small test file, when every write's files pass through the pipeline).
FOCUSED_TESTS = 20
FAST_TESTS = FOCUSED_TESTS + 60
MOTO_TESTS = 4
# The longest a mutant's tests may take: on an idle machine the slowest kept set takes about
# 6 s, a mutant of a function that runs at import (imported again, below) a few more, and
# three times that on a busy one. mutmut's own limit is fifteen times every test that
# reached the function, narrowed or not: ten minutes for the most used ones, which a mutant
# that loops for ever spent whole.
HANG_SECONDS = 20
TIMEOUT = 36  # the exit status mutmut reads as "timeout"


def _module(mutant: str) -> str:
    return mutant.rpartition(".")[0] + "."


def _file(test: str) -> str:
    return test.split("::")[0]


@functools.cache
def _fast(file: str) -> bool:
    """No moto (its marker says so), or one DAL call over it a test (DAL_OVER_MOTO)."""
    return file in DAL_OVER_MOTO or "pytest.mark.moto" not in Path(file).read_text()


# Test -> how many functions of the layer it reached, written at the end of the recording run
# (pytest imports this conftest afresh in every session, so a file, not a global).
REACH = Path("reach.json")


def _reach() -> collections.Counter[str]:
    """REACH as a Counter: a test it does not name (no recording run) counts 0."""
    return collections.Counter(json.loads(REACH.read_text()) if REACH.exists() else {})


def pytest_sessionfinish(session: Any) -> None:
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        import mutmut

        reached = mutmut.tests_by_mangled_function_name.values()
        REACH.write_text(json.dumps(collections.Counter(t for tests in reached for t in tests)))


def _spread(tests: list[str], most: int, reach: collections.Counter[str]) -> list[str]:
    """At most ``most`` of ``tests``, taken a file at a time in turn, each file's most
    focused first (the fewest functions reached; then the quickest): a function that
    hundreds of tests reach is judged by a few tests of every file that reaches it, not by
    the first file's hundred, and of a file by the tests that are about it, not the ones
    that pass through it on their way elsewhere."""
    by_file: dict[str, list[str]] = {}
    for test in tests:
        by_file.setdefault(_file(test), []).append(test)
    queues = [sorted(queue, key=reach.__getitem__) for queue in by_file.values()]
    kept: list[str] = []
    while queues and len(kept) < most:
        queues = [queue for queue in queues if queue]
        kept.extend(queue.pop(0) for queue in queues[: most - len(kept)])
    return kept


def _kept(module: str, tests: list[str]) -> list[str]:
    """A mutant's fast tests, then its module's moto-based files; a module that no such
    file reaches, or a function no fast test reaches, is judged by any moto-based test
    that reached it (the map is a preference, never a reason to judge by nothing)."""
    mapped = next((files for prefix, files in MOTO if module.startswith(prefix)), None)
    fast = [test for test in tests if _fast(_file(test))]
    slow = [test for test in tests if not _fast(_file(test))]
    preferred = [test for test in slow if _file(test) in (mapped or ())]
    if preferred:
        slow = preferred
    elif mapped is None and fast:
        slow = []
    reach = _reach()
    focused = sorted(fast, key=reach.__getitem__)[:FOCUSED_TESTS]  # stable: then the quickest
    rest = [test for test in fast if test not in focused]
    kept = {*focused, *_spread(rest, FAST_TESTS - len(focused), reach)}
    kept |= set(_spread(slow, MOTO_TESTS, reach))
    # In the order mutmut gave, the quickest first (the fast ones, then the moto-based
    # ones): a mutant that a quick test kills costs that test, not a file's round of them.
    return [test for test in fast + slow if test in kept]


def pytest_configure(config: Any) -> None:
    """A mutant's tests narrowed before pytest collects anything: mutmut names every test
    that reached the function (over a thousand for the most used ones); pytest then
    collects only the files of the few kept."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if "__mutmut_" not in mutant:
        return  # the recording run, the clean run and the forced failure run everything
    module = _module(mutant)
    tests = _kept(module, [str(arg) for arg in config.args])
    if module.startswith("reservations.kernel.http.openapi.") and SPEC_DRIFT not in tests:
        tests.append(SPEC_DRIFT)
    if tests:  # never none: pytest given no test runs every one
        config.args = [*tests, *DECLARATION_TESTS] if _AGAIN else tests
    signal.signal(signal.SIGALRM, lambda *_: os._exit(TIMEOUT))
    signal.alarm(HANG_SECONDS)
    _log_to_this_session()


def _log_to_this_session() -> None:
    """The layer's logger was made in the recording run, writing to that session's captured
    output, closed since: every line a mutant's tests log would fail to write, and logging
    prints a traceback for each (three quarters of a mutant's time, in the event relay's
    tests). Its handlers write to this session's, as in a test run of its own."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.StreamHandler) and handler.stream.closed:
                handler.stream = sys.stdout  # not setStream(): it flushes the closed one


def pytest_collection_modifyitems(items: list[Any]) -> None:
    # mutmut 3.7 reads item._nodeid, which pytest 9 no longer sets: give it the public id.
    for item in items:
        item._nodeid = item.nodeid


# Functions that run while their module is imported (the routes' and the query parameters'
# declarations, the errors' registration, a body's field): mutmut picks a mutant when its
# function runs, and these ran once in mutmut's own process, before any mutant existed.
# The recording run lists them (below); a mutant of one gets a fresh import of this
# project's packages, so the declaration is made again with the mutant in force, and is
# judged by the tests that read the declarations whole.
AT_IMPORT = Path("import_time.json")
FIRST_PARTY = {"reservations", "tests", "devstack", "reservations_tools", "node_agent"}
DECLARATION_TESTS = [
    "tests/api/test_openapi.py",
    "tests/kernel/test_error_codes.py",
    "tests/capacity/test_reclaim_bodies.py",
]


def _record_import_time() -> None:
    """In the recording run: import every module of the layer and keep which functions
    ran. mutmut puts those calls down to the first test, which is what gives their mutants
    a test to run at all; the declaration tests join it (``pytest_configure``)."""
    import mutmut

    # The tests' settings first: the layer reads its environment when imported.
    importlib.import_module("tests.conftest")
    import reservations

    for module in pkgutil.walk_packages(reservations.__path__, "reservations."):
        importlib.import_module(module.name)
    AT_IMPORT.write_text(json.dumps(sorted(mutmut._stats)))


def _runs_at_import(mutant: str) -> bool:
    if "__mutmut_" not in mutant or not AT_IMPORT.exists():
        return False
    return mutant.rpartition("__mutmut_")[0] in json.loads(AT_IMPORT.read_text())


def _import_again() -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] in FIRST_PARTY]:
        del sys.modules[name]


_MUTANT = os.environ.get("MUTANT_UNDER_TEST", "")
if _MUTANT == "stats" and not AT_IMPORT.exists():
    _record_import_time()
_AGAIN = _runs_at_import(_MUTANT)
if _AGAIN:
    _import_again()
