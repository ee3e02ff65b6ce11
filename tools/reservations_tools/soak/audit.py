"""Audit a run's record: every invariant with the cases it judged and its violations.

    python -m reservations_tools.soak.audit RECORD.json [--grace SECONDS]

Exits 1 when an invariant is broken; each violation is printed with the run's seed and the
events around it (record.py says what a record holds; replay.py and checks.py what each
invariant means, in the contract's words, and how the auditor reads them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reservations_tools.soak import checks
from reservations_tools.soak.outcomes import Outcome, line
from reservations_tools.soak.record import Call, Record, load_record
from reservations_tools.soak.replay import NodeReplay

# A termination due less than this before the record was taken may still be in flight.
GRACE_MS = 60_000


@dataclass
class Report:
    """The outcome of each invariant, and what the record held."""

    seed: int | str | None
    outcomes: list[Outcome]
    events: int
    nodes: int

    @property
    def violations(self) -> int:
        return sum(len(o.violations) for o in self.outcomes)


def audit(record: Record, grace_ms: int = GRACE_MS) -> Report:
    """Replay each node's feed and judge every invariant over the record."""
    claims = Outcome("claims", "no unit claimed by two workloads at once")
    lent = Outcome("lent", "no spot workload placed on a unit its reservation withheld")
    replays = {
        node: NodeReplay(events, claims, lent).run()
        for node, events in sorted(record.nodes.items())
    }
    every = list(replays.values())
    outcomes = [
        claims,
        lent,
        checks.terminations(every, record.recorded_at, grace_ms),
        checks.notices(every),
        checks.followers(record, every, grace_ms),
        checks.usage(record.usage, replays),
        checks.calls(record.calls),
    ]
    return Report(record.seed, outcomes, sum(len(r.events) for r in every), len(replays))


def render(report: Report) -> str:
    """Each invariant on a line (holds or BROKEN, cases, violations, notes), then each
    violation with the seed and its events."""
    seed = f"seed {report.seed}" if report.seed is not None else "no seed"
    lines = [f"audit ({seed}): {report.events} events on {report.nodes} node(s)"]
    for outcome in report.outcomes:
        verdict = "holds " if outcome.holds else "BROKEN"
        notes = ", ".join(f"{k} {v}" for k, v in sorted(outcome.notes.items()) if v)
        lines.append(
            f"  {verdict} {outcome.name:<12} {outcome.says}: {outcome.cases} cases, "
            f"{len(outcome.violations)} violations" + (f" ({notes})" if notes else "")
        )
    for outcome in report.outcomes:
        for violation in outcome.violations:
            lines.append(f"VIOLATION [{outcome.name}] ({seed}): {violation.text}")
            lines += [f"    {line(event)}" for event in violation.events]
    lines.append(f"{report.violations} violation(s) ({seed})")
    return "\n".join(lines)


def latencies(attempts: Sequence[Call]) -> dict[str, tuple[int, float, float]]:
    """Per operation: attempts, and their p50 and p99 in milliseconds (those timed)."""
    timed: dict[str, list[float]] = defaultdict(list)
    for attempt in attempts:
        if attempt.ms is not None:
            timed[attempt.op].append(attempt.ms)
    return {op: (len(ms), percentile(ms, 50), percentile(ms, 99)) for op, ms in timed.items()}


def percentile(values: Sequence[float], pct: int) -> float:
    """The ``pct``-th percentile, interpolated between the values (the only value for one)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("record", type=Path, help="the run's record (JSON)")
    parser.add_argument(
        "--grace",
        type=float,
        default=GRACE_MS / 1000,
        help="seconds before the record's end a termination may still be in flight",
    )
    args = parser.parse_args(argv)
    report = audit(load_record(args.record), int(args.grace * 1000))
    print(render(report))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
