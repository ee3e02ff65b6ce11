"""The soak's figures: operations and answers by kind, faults by kind (and those that failed:
a clock pass the killed sam local could not take), the invariants with
their cases and violations, each call's p50 and p99, the seed; printed, and written to
docs/reliability.md between its two markers (the section ``make soak`` owns)."""

from __future__ import annotations

import os
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from devstack.run import ROOT
from reservations_tools.soak.audit import Report, latencies
from reservations_tools.soak.record import Record

DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- make soak writes what follows, to the end marker -->"
END = "<!-- make soak wrote the above -->"


def by_kind(counts: Counter[str]) -> str:
    """``broker-2 release`` and ``broker-1 release`` are one kind."""
    kinds: Counter[str] = Counter()
    for key, count in counts.items():
        actor, _, op = key.partition(" ")
        kinds[f"{actor.split('-')[0]} {op}"] += count
    return ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))


def timing(attempts: list[dict[str, Any]]) -> list[str]:
    timed = latencies(Record.of({}, calls=attempts).calls)
    return [
        f"  {op:<22} {n:>6} {p50:>9.0f} {p99:>9.0f}" for op, (n, p50, p99) in sorted(timed.items())
    ]


def figures(soak: Any, result: Report, started: datetime) -> str:
    """The run's figures, as the section of docs/reliability.md shows them."""
    calls = soak.calls
    invariants = [
        f"  {'holds ' if o.holds else 'BROKEN'} {o.name:<12} {o.cases:>6} cases "
        f"{len(o.violations):>4} violations"
        for o in result.outcomes
    ]
    lines = [
        f"seed {soak.seed}, {soak.minutes:g} minute(s) from {started:%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores; {result.events} events on {result.nodes} nodes",
        f"operations by kind: {by_kind(calls.ops)}",
        "answers: " + ", ".join(f"{k} {v}" for k, v in sorted(calls.answers().items())),
        "faults by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.faults_done.items())),
        "faults that failed: "
        + (", ".join(f"{k} {v}" for k, v in sorted(soak.faults_failed.items())) or "none"),
        "processes that ended by themselves (started again): "
        + (", ".join(f"{k} {v}" for k, v in sorted(soak.processes.exits.items())) or "none"),
        "errors without an answer: "
        + (", ".join(f"{k} {v}" for k, v in sorted(calls.transport_errors.items())) or "none"),
        f"webhook deliveries received whose signature did not verify: {soak.receiver.unverified}",
        f"invariants ({result.violations} violations):",
        *invariants,
        f"  {'call':<22} {'tries':>6} {'p50 ms':>9} {'p99 ms':>9}",
        *timing(calls.attempts),
    ]
    return "\n".join(lines)


def write(text: str) -> None:
    """Between the markers of docs/reliability.md (the rest of the page stays)."""
    page = DOC.read_text()
    section = (
        f"{BEGIN}\n\n```\n{text}\n```\n\nWritten {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.\n\n{END}"
    )
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    DOC.write_text(
        pattern.sub(lambda _m: section, page)
        if pattern.search(page)
        else f"{page.rstrip()}\n\n{section}\n"
    )
