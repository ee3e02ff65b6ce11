"""The soak in process: seeded actors (the owner, the broker, the scheduler, the node
agents, the relay, the clock, the sweeper, the followers) interleaved over the real
handlers on moto, with faults at seeded moments (``tests/support/soak.py`` says which),
then the auditor (``reservations_tools.soak``) over the node feeds, the followers' ids,
every call's attempts and the usage rows: no violation.

``-s`` prints the audit and the tallies; ``SOAK_SEED=7`` runs another seed (default: 1),
``SOAK_STEPS`` another length (default 200)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import ModuleType

import boto3
import pytest

from devstack import fleets as loader
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import load_function
from reservations.kernel.aws import clients
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.http import resolver
from reservations_tools.fleet.loader import local_dead_letter_arn
from reservations_tools.soak.audit import audit, render
from tests.support import invariants as inv
from tests.support import soak as s
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

SEED = int(os.environ.get("SOAK_SEED", "1"))
STEPS = int(os.environ.get("SOAK_STEPS", "200"))


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in s.FUNCTIONS}


@pytest.fixture
def soak_clock(functions, monkeypatch) -> Iterator[s.Clock]:
    """Every function reads the soak's clock and backs off without sleeping; the log lines
    of a few thousand calls are left out (the auditor judges what was written). The feeds
    are read by the clock their positions are written by (the host's, ``record_clock``), a
    settle window ahead, so that a follower's cursor never passes an event still to come."""
    clock = s.Clock(s.START)
    for module in functions.values():
        if hasattr(module, "function") or hasattr(module, "ports"):
            swap_ports(monkeypatch, module, clock=clock, sleep=lambda _s: None)
    monkeypatch.setattr(resolver, "utc_now", clock)
    monkeypatch.setattr(functions["event_backlog"], "utc_now", clock)
    for feed in ("org_events", "node_events"):  # a follower's cursors are the feed's own
        swap_ports(monkeypatch, functions[feed], clock=lambda: datetime.now(UTC) + SETTLE_WINDOW)
    loggers = [logging.getLogger(name) for name in ("reservations", "aws_lambda_powertools")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    yield clock
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


def test_seeded_actors_with_faults_leave_a_record_the_auditor_finds_clean(
    aws, soak_clock, functions, monkeypatch
):
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    loader.load_fleet(s.soak_fleet(), aws, boto3.client("sqs"), at=s.START)
    soak = s.Soak(SEED, aws, functions, soak_clock)
    swap_ports(monkeypatch, functions["create_reservation"], new_id=soak.reservation_id)
    started = time.monotonic()
    fleet_as_read = lambda: [inv.read_partition(aws, n) for n in s.NODES]  # noqa: E731
    with inv.plain_dynamodb_answers(fleet_as_read), contextlib.redirect_stdout(io.StringIO()):
        soak.register()
        soak.run(STEPS)
        soak.settle()
        record = soak.record()
    report = audit(record)
    print(f"\nsoak seed {SEED}: {STEPS} steps in {time.monotonic() - started:.1f} s, "
          f"clock +{soak.now - s.START}")  # fmt: skip
    print("operations: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.ops.items())))
    print("faults: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.faults.items()) if v))
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in soak.seconds.most_common()))
    print("answers: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.answers().items())))
    print(render(report))
    assert report.violations == 0, f"SOAK_SEED={SEED}\n{render(report)}"
    cases = {outcome.name: outcome.cases for outcome in report.outcomes}
    assert all(cases.values()), cases  # every invariant judged something
    assert sum(soak.faults.values()) > 0
