"""`make mutate`'s mutmut: mutmut 3.7's own command line, with two of its steps made cheap
for a run of twelve thousand mutants (local/mutate.sh runs this instead of `mutmut`).

- The type check: mutmut runs mypy over its copy, then finds the mutant function around
  each error with libcst's position metadata, a pass over every mutated file (every mutant
  of every function written out) that took two minutes of the run. The standard library's
  ``ast`` gives the same lines (a mutant function's first and last) in seconds.
- The progress line: mutmut sums every mutant's verdict again before each mutant it
  starts; here at most a few times a second (and always when forced, at the end).

Both replace a function mutmut looks up by name at call time; mutmut is pinned (3.7.0),
and a newer one is checked against this file before the pin moves.
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path
from typing import Any

from mutmut import __main__ as mutmut_main
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


# mutmut's run looks both up in its module's namespace when it calls them.
vars(mutmut_main).update(
    filter_mutants_with_type_checker=filter_mutants_with_type_checker, print_stats=print_stats
)

if __name__ == "__main__":
    sys.exit(mutmut_main.cli())
