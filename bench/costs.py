"""Handler overhead and the cost of a call: the real handlers in-process over moto, counted.

moto's in-memory AWS is provisioned from template.yaml and the handlers
(functions/<name>/app.py) are loaded once, as in a warm container. Hooks on the functions'
own botocore clients see every request they send; each DynamoDB request is priced from the
items it touched as stored before and after it (read back with a separate client, by the
rules in bench/prices.py), each SQS request from its payload. Before every run the table is
put back as loaded, so every run does the same work.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore import xform_name
from moto import mock_aws

from bench.environment import ENV
from devstack import fleet_documents as f
from devstack import moto_costs, template
from devstack.api_events import (
    cancel_event,
    create_event,
    end_event,
    get_event,
    list_event,
    list_units_event,
    node_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    reclaim_plan_event,
    release_event,
)
from devstack.fleets import load_fleet
from devstack.functions import FakeContext, load_function
from reservations.kernel.aws import clients

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}
OVERHEAD_GOAL = 1.25
WARMUP = 3
Item = dict[str, Any]


def value_bytes(value: dict[str, Any]) -> int:
    """A DynamoDB attribute value's size (developer guide, "Item sizes and formats")."""
    kind, data = next(iter(value.items()))
    if kind == "S":
        return len(data.encode())
    if kind == "N":  # ~1 byte per 2 significant digits, + 1
        digits = data.lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(value_bytes({kind[0]: element}) for element in data)
    if kind == "L":
        return 3 + sum(1 + value_bytes(element) for element in data)
    return 3 + sum(1 + item_bytes({name: element}) for name, element in data.items())  # M


def item_bytes(item: Item | None) -> int:
    return sum(len(name.encode()) + value_bytes(v) for name, v in (item or {}).items())


def units(size: int, step: int) -> int:
    return max(1, math.ceil(size / step))


@dataclass
class Meter:
    """Hooks on the functions' clients: requests by operation, read and write request units,
    SQS requests (64 KB chunks), and every request's parameters (to replay them)."""

    raw: Any  # a DynamoDB client of our own, not hooked
    requests: Counter[str] = field(default_factory=Counter)
    read_units: float = 0
    write_units: float = 0
    sqs_requests: int = 0
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _before: dict[tuple[str, str], int] = field(default_factory=dict)
    _schemas: dict[str, list[str]] = field(default_factory=dict)

    def hooks(self, client: Any) -> list[tuple[str, Callable[..., None]]]:
        service = client.meta.service_model.service_id.hyphenize()
        return [
            (f"before-parameter-build.{service}", self._request),
            (f"after-call.{service}", self._response),
        ]

    @contextmanager
    def attached(self, *clients: Any) -> Iterator[None]:
        hooks = [(c.meta.events, event, hook) for c in clients for event, hook in self.hooks(c)]
        for events, event, hook in hooks:
            events.register(event, hook)
        try:
            yield
        finally:
            for events, event, hook in hooks:
                events.unregister(event, hook)

    def _key(self, table: str, item: Item) -> dict[str, Any]:
        if table not in self._schemas:
            schema = self.raw.describe_table(TableName=table)["Table"]["KeySchema"]
            self._schemas[table] = [k["AttributeName"] for k in schema]
        return {name: item[name] for name in self._schemas[table]}

    def _stored(self, table: str, item: Item) -> int:
        key = self._key(table, item)
        return item_bytes(
            self.raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        )

    def _written(self, operation: str, params: dict[str, Any]) -> list[tuple[str, Item, int]]:
        """(table, key or item, unit multiplier) of every item a write request touches."""
        if operation == "TransactWriteItems":
            actions = [next(iter(a.values())) for a in params["TransactItems"]]
            return [(a["TableName"], a.get("Key") or a["Item"], 2) for a in actions]
        return [(params["TableName"], params.get("Key") or params["Item"], 1)]

    def _request(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        service = model.service_model.service_id.hyphenize()
        self.requests[f"{service}.{model.name}"] += 1
        self.calls.append((service, model.name, copy.deepcopy(params)))
        if model.name in WRITES:
            self._before = {
                (t, json.dumps(self._key(t, i), sort_keys=True)): self._stored(t, i)
                for t, i, _ in self._written(model.name, params)
            }

    def _response(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        service, operation = model.service_model.service_id.hyphenize(), model.name
        params = self.calls[-1][2]
        if service == "sqs":
            entries = params.get("Entries") or [params]
            if any("MessageAttributes" in e for e in entries):
                raise RuntimeError("the bench does not size SQS message attributes")
            self.sqs_requests += units(sum(len(e["MessageBody"].encode()) for e in entries), 65536)
        elif operation in ("Query", "GetItem"):
            if "FilterExpression" in params or "ProjectionExpression" in params:
                raise RuntimeError(f"the bench cannot size a filtered or projected {operation}")
            found = parsed.get("Items") or [parsed.get("Item")]
            reads = units(sum(item_bytes(i) for i in found), 4096)
            self.read_units += reads if params.get("ConsistentRead") else reads / 2
        elif operation == "BatchGetItem":  # each item is rounded up on its own
            for table, found in parsed.get("Responses", {}).items():
                asked = params["RequestItems"][table]
                if "ProjectionExpression" in asked:
                    raise RuntimeError("the bench cannot size a projected BatchGetItem")
                for item in found:
                    reads = units(item_bytes(item), 4096)
                    self.read_units += reads if asked.get("ConsistentRead") else reads / 2
        elif operation in WRITES:
            for table, item, factor in self._written(operation, params):
                key = (table, json.dumps(self._key(table, item), sort_keys=True))
                size = max(self._before.get(key, 0), self._stored(table, item))
                self.write_units += factor * units(size, 1024)
        else:
            raise RuntimeError(f"the bench has no capacity rule for {service} {operation}")


@dataclass
class Case:
    name: str
    function: str
    event: dict[str, Any]
    before: Callable[[], None] = lambda: None
    terminations: int | None = None  # a reclaim must answer with this many terminated
    status: int = 200  # what it must answer (errors would measure nothing)


class Bench:
    """moto with the fleet loaded, the handlers, and the table as loaded (to restore)."""

    def __init__(self, fleet: dict[str, Any]) -> None:
        self.clients = clients
        clients.reset()
        # Configured as the functions' own clients are (timeouts, retries).
        made = {"dynamodb": clients.dynamodb(), "sqs": clients.sqs()}
        self.raw = {s: boto3.client(s, config=c.meta.config) for s, c in made.items()}
        template.create_tables(self.raw["dynamodb"])
        template.create_queues(self.raw["sqs"])
        load_fleet(fleet, self.raw["dynamodb"], self.raw["sqs"])
        self.loaded = self._scan()
        self.handlers = {name: load_function(name) for name in BENCHED}

    def _scan(self) -> dict[str, Item]:
        items = self.raw["dynamodb"].scan(TableName="ReservationsTable")["Items"]
        return {json.dumps([i["PK"], i["SK"]]): i for i in items}

    def restore(self) -> None:
        """Put the table back as loaded: what a call added is deleted (audit records, a new
        reservation), what it changed or deleted (an ended workload) is put back."""
        dynamodb = self.raw["dynamodb"]
        now = self._scan()
        for key, item in now.items():
            if key not in self.loaded:
                dynamodb.delete_item(
                    TableName="ReservationsTable", Key={"PK": item["PK"], "SK": item["SK"]}
                )
        for key, item in self.loaded.items():
            if now.get(key) != item:
                dynamodb.put_item(TableName="ReservationsTable", Item=item)

    def call(self, case: Case) -> float:
        """One invocation, its wall time; insists on the case's status."""
        self.restore()
        case.before()
        event = copy.deepcopy(case.event)
        with redirect_stdout(io.StringIO()):  # Powertools' metrics (EMF)
            start = time.perf_counter()
            # Each invocation its own context, its time running down from its own start (one
            # shared context ran out after 60 s of benchmarking on a slow machine: a 503).
            response = self.handlers[case.function].lambda_handler(event, FakeContext())
            elapsed = time.perf_counter() - start
        if response["statusCode"] != case.status:
            raise RuntimeError(f"{case.name}: {response['statusCode']} {response.get('body')}")
        if case.terminations is not None:
            body = json.loads(response["body"])
        if case.terminations is not None and len(body["terminated"]) != case.terminations:
            raise RuntimeError(f"{case.name}: terminated {body['terminated']}")
        return elapsed

    def replay(self, calls: list[tuple[str, str, dict[str, Any]]]) -> float:
        """The handler's requests sent directly with boto3, in the same order."""
        self.restore()
        bound = [(getattr(self.raw[s], xform_name(op)), copy.deepcopy(p)) for s, op, p in calls]
        start = time.perf_counter()
        for method, params in bound:
            method(**params)
        return time.perf_counter() - start

    def measure(self, case: Case, runs: int) -> dict[str, Any]:
        meter = Meter(self.raw["dynamodb"])
        with meter.attached(self.clients.dynamodb(), self.clients.sqs()):
            self.call(case)
        handler, raw = [], []
        for i in range(WARMUP + runs):
            h, r = self.call(case), self.replay(meter.calls)
            if i >= WARMUP:
                handler.append(h)
                raw.append(r)
        return {
            "call": case.name,
            "runs": runs,
            "requests": dict(meter.requests),
            "read_units": meter.read_units,
            "write_units": meter.write_units,
            "sqs_requests": meter.sqs_requests,
            "handler_ms": statistics.median(handler) * 1000,
            "raw_ms": statistics.median(raw) * 1000,
            # Each handler run paired with the replay right after it: less at the mercy of
            # whatever else the machine was doing than a ratio of medians.
            "ratio": statistics.median(h / r for h, r in zip(handler, raw, strict=True)),
        }


def spot_node(node_id: str, units_: int) -> dict[str, Any]:
    """``units_`` units in reservation res-1, all released, each running one spot workload."""
    ids = [f"0000:{i + 4:02x}:00.0" for i in range(units_)]
    workloads = [f.workload(f"vm-{i}", [u]) for i, u in enumerate(ids)]
    return f.node(
        node_id,
        [f.unit(u) for u in ids],
        [f.reservation("res-1", ids, releasedUnitIds=ids)],
        workloads,
    )


LIFE = [f"0000:{i + 4:02x}:00.0" for i in range(8)]
# The scheduler and the platform's operator, with every permission (local to the bench).
OPERATOR = {
    "key": "vl_local_only_bench_operator",
    "orgId": "org-platform",
    "permissions": ["reservation.read", "reservation.capacity", "reservation.write",
                    "node.write", "workload.place"],
}  # fmt: skip


def life_node(node_id: str) -> dict[str, Any]:
    """An 8-GPU node mid-life: res-1 holds 04-07 (nothing lent yet), res-r is under review
    on 07, vm-x runs on 0b; 08-0a are free."""
    return f.node(
        node_id,
        [f.unit(u) for u in LIFE],
        [f.reservation("res-1", LIFE[:4]),
         f.reservation("res-r", LIFE[3:4], status="needs-review", endsAt=f.days(30))],
        [f.workload("vm-x", LIFE[7:], tier="on-demand", orgId="org-walkin")],
    )  # fmt: skip


def lifecycle_cases() -> list[Case]:
    """One call of every other endpoint, on the mid-life node, by the operator."""
    auth = f"Bearer {OPERATOR['key']}"
    node = "node-life"
    create = {"unitIds": LIFE[4:6], "allowedOrgIds": ["org-lab"], "endsAt": f.days(60)}
    place = {"id": "vm-new", "kind": "vm", "tier": "on-demand", "orgId": "org-walkin",
             "unitIds": LIFE[6:7]}  # fmt: skip
    changed = [f.unit(u) for u in LIFE[:7]] + [f.unit(LIFE[7], gpuModelId="nvidia-a100")]
    update = {"ownerOrgId": "org-acme", "topologyGen": 2, "units": changed}
    lend = {"unitIds": LIFE[:2]}
    return [
        Case("get a reservation", "get_reservation", get_event(node, "res-1", auth)),
        Case("list reservations (1 page)", "list_reservations", list_event(node, auth)),
        Case("create, 2 units", "create_reservation", create_event(node, create, auth), status=201),
        Case("release 2 units", "release", release_event(node, "res-1", lend, auth)),
        Case("cancel", "cancel", cancel_event(node, "res-1", None, auth)),
        Case("place a workload", "place_workload", place_event(node, place, auth), status=201),
        Case("end a workload", "end_workload", end_event(node, "vm-x", auth), status=204),
        Case("update a node (1 unit changed)", "put_node", node_event(node, update, auth)),
        Case("reaffirm", "reaffirm", reaffirm_event(node, "res-r", None, auth)),
    ]  # fmt: skip


BENCHED = (
    *("list_units", "reclaim", "get_reservation", "list_reservations", "create_reservation"),
    *("release", "cancel", "place_workload", "end_workload", "put_node", "reaffirm"),
)


def plan_case(bench: Bench, broker: str) -> Case:
    """A plan's apply on the 16-GPU node: its dry run by count 16 made now, unmeasured."""
    bench.restore()
    dry = reclaim_event("node-16", "res-1", {"count": 16, "dryRun": True}, broker)
    with redirect_stdout(io.StringIO()):
        planned = bench.handlers["reclaim"].lambda_handler(dry, FakeContext())
    plan_id = json.loads(planned["body"])["planId"]
    apply = reclaim_plan_event("node-16", "res-1", plan_id, broker)
    return Case(
        "reclaim as a plan's apply, 16 units (16-GPU node)", "reclaim", apply, terminations=16
    )


def run(runs: int = 15) -> list[dict[str, Any]]:
    """List on an 8-GPU node (key cached or not), reclaims of 1 and of 16 units (by id, by
    count with a key, as a plan's apply), and one call of every other endpoint on a node
    mid-life."""
    os.environ.update(ENV)
    moto_costs.install()  # a transaction costs what it touches, not a copy of the table
    with mock_aws():
        from reservations.kernel.http.resolver import key_cache  # reads the environment

        nodes = [spot_node("node-8", 8), spot_node("node-16", 16), life_node("node-life")]
        bench = Bench(f.fleet(nodes, [OPERATOR]))
        broker = f"Bearer {f.KEYS['broker'][0]}"

        def reclaim(node: str, k: int) -> dict[str, Any]:
            ids = [f"0000:{i + 4:02x}:00.0" for i in range(k)]
            return reclaim_event(node, "res-1", {"unitIds": ids, "reason": "bench"}, broker)

        listing = list_units_event("node-8", broker)
        count = {"count": 16, "reason": "bench"}
        by_count = reclaim_event("node-16", "res-1", count, broker, "bench-count")
        cases = [
            Case("list units, 8-GPU node, key cached", "list_units", listing),
            Case("list units, key not cached", "list_units", listing, key_cache.clear),
            Case("reclaim k=1 (8-GPU node)", "reclaim", reclaim("node-8", 1), terminations=1),
            Case("reclaim k=16 (16-GPU node)", "reclaim", reclaim("node-16", 16), terminations=16),
            Case("reclaim by count=16 (keyed)", "reclaim", by_count, terminations=16),
            *lifecycle_cases(),
        ]
        bench.call(cases[0])  # the key is cached from now on
        bench.call(cases[5])  # and the operator's
        rows = [bench.measure(case, runs) for case in cases[:5]]
        # A plan's apply: the plan made now (it lives 5 minutes), the table put back as it was
        # planned on before each run, so the same plan applies every time.
        rows.append(bench.measure(plan_case(bench, broker), runs))
        rows += [bench.measure(case, runs) for case in cases[5:]]
        bench.clients.reset()
        key_cache.clear()
        return rows
