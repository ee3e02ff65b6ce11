"""`make mutate`'s mutmut: mutmut 3.7's own command line, with three of its steps made cheap
for a run of twelve thousand mutants (local/mutate.sh runs this instead of `mutmut`), and
the time each step took printed after it.

- The type check: mutmut runs mypy over its copy, then finds the mutant function around
  each error with libcst's position metadata, a pass over every mutated file (every mutant
  of every function written out) that took two minutes of the run. The standard library's
  ``ast`` gives the same lines (a mutant function's first and last) in seconds.
- The progress line: mutmut sums every mutant's verdict again before each mutant it
  starts; here at most a few times a second (and always when forced, at the end).
- The clean run: after recording which tests reach which function (every selected test,
  over the unmutated code, the run stopped if one fails), mutmut runs every selected test
  over the same code once more to see them pass: minutes, to learn nothing new. Here the
  recording run stands for it.

All three replace what mutmut looks up at call time (a function of its module, a method of
its runner); mutmut is pinned (3.7.0), and a newer one is checked against this file before
the pin moves.
"""

from __future__ import annotations

import ast
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mutmut import __main__ as mutmut_main
from mutmut.__main__ import PytestRunner
from mutmut.configuration import Config
from mutmut.mutation.file_mutation import (
    FailedTypeCheckMutant,
    MutatedMethodLocation,
    group_by_path,
)
from mutmut.type_checking import run_type_checker
from mutmut.utils.file_utils import change_cwd
from mutmut.utils.format_utils import get_mutant_name, is_mutated_method_name


def _mutant_spans(path: Path) -> list[MutatedMethodLocation]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        MutatedMethodLocation(path, node.name, node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and is_mutated_method_name(node.name)
    ]


def filter_mutants_with_type_checker() -> dict[str, FailedTypeCheckMutant]:
    """mutmut's own (mutmut.mutation.file_mutation), the spans read with ``ast``."""
    with change_cwd(Path("mutants")):
        caught: dict[str, FailedTypeCheckMutant] = {}
        errors = run_type_checker(Config.get().type_check_command)
        for path, errors_of_file in group_by_path(errors).items():
            spans = _mutant_spans(path)
            for error in errors_of_file:
                span = next(
                    (
                        s
                        for s in spans
                        if s.line_number_start <= error.line_number <= s.line_number_end
                    ),
                    None,
                )
                if span is None:
                    raise RuntimeError(
                        f"a type error outside every mutant: {path}:{error.line_number}"
                    )
                name = get_mutant_name(path.relative_to(Path(".").absolute()), span.function_name)
                caught[name] = FailedTypeCheckMutant(method_location=span, name=name, error=error)
        return caught


_shown = [0.0]
_print_stats = mutmut_main.print_stats


def print_stats(
    source_file_mutation_data_by_path: dict[str, Any], force_output: bool = False
) -> None:
    now = time.monotonic()
    if force_output or now - _shown[0] >= 0.25:
        _shown[0] = now
        _print_stats(source_file_mutation_data_by_path, force_output=force_output)


_recorded = [False]
_run_tests = PytestRunner.run_tests


def run_tests(self: PytestRunner, *, mutant_name: str | None, tests: Iterable[str]) -> int:
    """mutmut's, but the clean run (no mutant, ``MUTANT_UNDER_TEST`` empty) is the recording
    run's result when this process made one: the same tests over the same code."""
    if mutant_name is None and not os.environ.get("MUTANT_UNDER_TEST") and _recorded[0]:
        return 0
    return _run_tests(self, mutant_name=mutant_name, tests=tests)


_run_stats_collection = mutmut_main.run_stats_collection


def run_stats_collection(runner: Any, tests: Iterable[str] | None = None) -> None:
    _run_stats_collection(runner, tests)
    _recorded[0] = True  # it exits the process when a test fails


def _timed(name: str, step: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return step(*args, **kwargs)
        finally:
            # mutmut's own output capture may hold sys.stdout (the type check runs inside it).
            out = sys.__stdout__ or sys.stdout
            print(f"    [{name}: {time.monotonic() - started:.0f} s]", file=out, flush=True)

    return timed


# mutmut's run looks these up in its module's namespace when it calls them.
vars(mutmut_main).update(
    filter_mutants_with_type_checker=_timed("type check", filter_mutants_with_type_checker),
    run_stats_collection=_timed("recording run", run_stats_collection),
    run_forced_fail_test=_timed("forced failure run", mutmut_main.run_forced_fail_test),
    print_stats=print_stats,
)
PytestRunner.run_tests = run_tests  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(mutmut_main.cli())
