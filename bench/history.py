"""The node's present does not pay for its past: list units and a reclaim on nodes alike in
everything but their number of ended reservations (0, 1,000, 10,000, loaded into their
history by the fleet loader), in-process over moto: the bytes DynamoDB sent back (each
response's body, every request of the call) and the handler's wall time (median).

The bytes are the measure that transfers to DynamoDB (read units follow them); the time is
moto's on this machine.
"""

from __future__ import annotations

import copy
import io
import os
import statistics
import time
from contextlib import redirect_stdout
from typing import Any

import boto3
from moto import mock_aws

from bench.environment import ENV
from devstack import fleet_documents as f
from devstack import moto_costs, template
from devstack.api_events import list_units_event, reclaim_event
from devstack.fleets import load_fleet
from devstack.functions import FakeContext, load_function
from reservations.kernel.aws import clients

PASTS = (0, 1_000, 10_000)
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]
BROKER = f"Bearer {f.KEYS['broker'][0]}"


def node_id(past: int) -> str:
    """Ids of one length, so that no byte differs but the past's."""
    return f"node-h{past:05d}"


def _node(past: int) -> dict[str, Any]:
    """8 units, res-1 holding them all with 4 released, a spot VM on each released one."""
    document = f.node(
        node_id(past),
        [f.unit(u) for u in UNITS],
        [f.reservation("res-1", UNITS, releasedUnitIds=UNITS[:4])],
        [f.workload(f"vm-{i}", [u]) for i, u in enumerate(UNITS[:4])],
    )
    return document | {"generatedPastReservations": past}


def _calls(past: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Each repeatable: a reclaim of a unit not released writes only its audit record."""
    node = node_id(past)
    dry = {"unitIds": UNITS[:1], "dryRun": True}
    return [
        ("list units", "list_units", list_units_event(node, BROKER)),
        ("reclaim, dry run", "reclaim", reclaim_event(node, "res-1", dry, BROKER)),
        ("reclaim", "reclaim", reclaim_event(node, "res-1", {"unitIds": UNITS[5:6]}, BROKER)),
    ]


class _Bytes:
    """The body sizes of every DynamoDB response the functions' client received."""

    def __init__(self) -> None:
        self.read = 0
        clients.dynamodb().meta.events.register("after-call.dynamodb", self._count)

    def _count(self, http_response: Any, **_: Any) -> None:
        self.read += len(http_response.content)


def _measure(function: Any, event: dict[str, Any], meter: _Bytes, runs: int) -> dict[str, Any]:
    context, times, sizes = FakeContext(), [], []
    for _ in range(runs):
        meter.read = 0
        with redirect_stdout(io.StringIO()):  # Powertools' metrics (EMF)
            start = time.perf_counter()
            response = function.lambda_handler(copy.deepcopy(event), context)
            times.append(time.perf_counter() - start)
        if response["statusCode"] != 200:
            raise RuntimeError(f"{response['statusCode']} {response.get('body')}")
        sizes.append(meter.read)
    return {"bytes": statistics.median(sizes), "ms": statistics.median(times) * 1000}


def run(runs: int = 9) -> list[dict[str, Any]]:
    """One row per call and past."""
    os.environ.update(ENV)
    moto_costs.install()
    with mock_aws():
        clients.reset()
        dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
        template.create_tables(dynamodb)
        template.create_queues(sqs)
        template.create_event_buses(boto3.client("events"))
        load_fleet(f.fleet([_node(past) for past in PASTS]), dynamodb, sqs)
        functions = {name: load_function(name) for name in ("list_units", "reclaim")}
        meter = _Bytes()
        rows = []
        for past in PASTS:
            for call, name, event in _calls(past):
                rows.append(
                    {"call": call, "past": past} | _measure(functions[name], event, meter, runs)
                )
        clients.reset()
        return rows
