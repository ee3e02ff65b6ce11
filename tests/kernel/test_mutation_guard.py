"""A fast guard in `make test` (`make mutate` is the full run, too slow for CI): hand-written
mutants of the most expensive rules, each swapped into its functions in this process, with
the fast tests that must catch it run against it. A mutant whose tests still pass means
those tests no longer pin the rule.

A mutant whose original text is gone from its module fails too: the rule was rewritten,
so its mutant must be rewritten with it (docs/mutation.md)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FunctionType

import pytest
from pytest_socket import disable_socket, enable_socket

pytestmark = pytest.mark.disable_socket


@dataclass(frozen=True)
class Mutant:
    what: str
    module: str
    old: str
    new: str
    tests: tuple[str, ...]


LIST = "tests/nodes/test_list_units.py"
RECLAIM = "tests/capacity/test_reclaim.py"
REPORTS = "tests/terminations/test_reports.py"
HOLES = "tests/capacity/test_reclaim.py"  # a spanning workload, a late report
TRANSACTION = "tests/capacity/test_reclaim_transaction.py"
SIGNALS = "tests/capacity/test_operator_signals.py"

MUTANTS = [
    Mutant(
        "a unit that is not sellable is reservable",
        "reservations.nodes.rules.units",
        "if not unit.sellable:",
        "if unit.sellable is None:",
        (LIST, "tests/lifecycle/test_rules.py"),
    ),
    Mutant(
        "any allocation class is reservable",
        "reservations.nodes.rules.units",
        "if unit.alloc_class not in RESERVABLE_ALLOC_CLASSES:",
        "if unit.alloc_class in ():",
        (LIST,),
    ),
    Mutant(
        "a manager of an ended reservation still sees the node",
        "reservations.nodes.rules.access",
        "        and effective_status(reservation, snapshot.node, now) in _MANAGER_VISIBLE\n",
        "",
        (LIST,),
    ),
    Mutant(
        "the reservation's audience may reclaim",
        "reservations.capacity.rules.access",
        "    managers = reservation.managing_org_ids\n",
        "    managers = reservation.allowed_org_ids\n",
        (RECLAIM,),
    ),
    Mutant(
        "an on-demand workload is terminated",
        "reservations.capacity.rules.plan",
        "spot = [w for w in holders if w.tier is Tier.SPOT]",
        "spot = [w for w in holders if w.tier is not Tier.RESERVED]",
        (RECLAIM,),
    ),
    Mutant(
        "a workload spanning an unnamed unit is left running",
        "reservations.capacity.rules.plan",
        "named.intersection(workload.unit_ids)",
        "named.issuperset(workload.unit_ids)",
        (RECLAIM,),
    ),
    Mutant(
        "a workload already terminating is terminated again",
        "reservations.capacity.rules.plan",
        "to_terminate=tuple(w for w in spot if w.state is WorkloadState.RUNNING)",
        "to_terminate=tuple(spot)",
        (HOLES,),
    ),
    Mutant(
        "the workloads a reclaim skips are not conditioned on",
        "reservations.capacity.table",
        "        *(version_check(workload_key(node_id, w.id), w.version) for w in write.unchanged_workloads),\n",
        "",
        (TRANSACTION,),
    ),
    Mutant(
        "a terminated workload's update is unconditional",
        "reservations.capacity.table",
        '"ConditionExpression": "version = :v",\n            "ExpressionAttributeNames"',
        '"ExpressionAttributeNames"',
        (TRANSACTION,),
    ),
    Mutant(
        "a report of another termination of the workload closes it",
        "reservations.terminations.rules.delivery",
        "open_here and same",
        "open_here",
        (REPORTS,),
    ),
    Mutant(
        "a release naming a lent unit and a new one lends nothing",
        "reservations.capacity.rules.lending",
        "if before.issuperset(unit_ids):",
        "if before.intersection(unit_ids):",
        ("tests/capacity/test_release.py",),
    ),
    Mutant(
        "a sweep sends again what another sweep delivered since the index was read",
        "reservations.terminations.sweeper",
        "    if not is_due(termination.workload, policy, now):\n        return SweepOutcome.WAITING",
        "    if False:\n        pass",
        ("tests/terminations/test_sweeper.py",),
    ),
    Mutant(
        "no time is kept back for the answer after the last try",
        "reservations.kernel.aws.clients",
        "seconds_left - ANSWER_SECONDS",
        "seconds_left",
        ("tests/kernel/test_request_deadline.py",),
    ),
    Mutant(
        "a path id no route takes is a 404 before the key is looked at",
        "reservations.kernel.http.resolver",
        "        current_caller(app)\n",
        "        pass\n",
        (
            "tests/api/test_key_before_path.py::"
            "test_no_key_or_an_unknown_one_is_401_before_any_404_for_a_malformed_path",
        ),
    ),
    Mutant(
        "every committed termination is counted unqueued, with an error",
        "reservations.terminations.outbox",
        "if unsent := len(terminations) - len(sent):",
        "if unsent := len(terminations):",
        (SIGNALS,),
    ),
    Mutant(
        "a report that closed its termination is counted dropped",
        "reservations.terminations.reports",
        "if result is ReportOutcome.UNKNOWN:",
        "if result is not ReportOutcome.UNKNOWN:",
        (SIGNALS,),
    ),
    Mutant(
        "a late report frees a unit another workload holds",
        "reservations.terminations.rules.delivery",
        " and unit.claimed_by == workload.claim",
        "",
        (REPORTS, HOLES),
    ),
]


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The module's functions run the mutated code until the block ends, wherever they are
    referenced from (their code objects are swapped, so earlier imports see it too)."""
    module = importlib.import_module(mutant.module)
    source = inspect.getsource(module)
    assert source.count(mutant.old) == 1, f"{mutant.module} no longer holds {mutant.old!r} once"
    namespace: dict[str, object] = {"__name__": mutant.module}
    exec(compile(source.replace(mutant.old, mutant.new), module.__file__ or "", "exec"), namespace)
    originals = {
        function: function.__code__
        for function in vars(module).values()
        if isinstance(function, FunctionType) and function.__module__ == mutant.module
    }
    changed = [f for f in originals if f.__code__ != namespace[f.__name__].__code__]  # type: ignore[attr-defined]
    assert changed, f"the mutant changes no function of {mutant.module}"
    try:
        for function in changed:
            function.__code__ = namespace[function.__name__].__code__  # type: ignore[attr-defined]
        yield
    finally:
        for function, code in originals.items():
            function.__code__ = code


def run(tests: tuple[str, ...]) -> int:
    """The tests' exit code, run by a pytest inside this one."""
    # Collecting may import modules that open a socket at import (the X-Ray recorder); the
    # tests themselves run with sockets disabled by their own folder's fixture.
    enable_socket()
    try:
        return int(pytest.main(["-q", "-x", "-p", "no:cacheprovider", "--no-header", *tests]))
    finally:
        disable_socket()


def test_the_guarded_tests_pass_on_the_code_as_it_is():
    # Without this, a broken test would "kill" every mutant.
    assert run(tuple(sorted({test for mutant in MUTANTS for test in mutant.tests}))) == 0


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.what for m in MUTANTS])
def test_each_mutant_of_an_expensive_rule_is_killed(mutant):
    with applied(mutant):
        # 1: some test failed. Anything else (a collection error, say) is no kill.
        assert run(mutant.tests) == pytest.ExitCode.TESTS_FAILED, f"survived: {mutant.what}"
