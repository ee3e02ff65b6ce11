"""Sections 1-3: requests per call, fleet-size invariance, handler overhead.

Everything runs in this process: moto's server on threads (``devstack.emulator``, DynamoDB
requests serialized as under ``make run``), provisioned from template.yaml, and the real
handlers (``functions/<name>/app.py``) with their cached clients pointed at it. Requests
are counted with botocore event hooks on those clients. The environment must be set (see
``bench.run.ENV``) before this module is imported: the functions read it at import.
"""

from __future__ import annotations

import copy
import cProfile
import gc
import io
import json
import logging
import math
import pstats
import re
import socket
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import boto3
from botocore import xform_name

from devstack.emulator import local_client, moto_app, provision, serve
from reservations.dal import clients, items
from reservations.fleet.loader import (
    create_node_queues,
    local_dead_letter_arn,
    node_items,
    write_fleet,
)
from reservations.fleet.model import FleetNode, parse_fleet
from reservations.http.resolver import key_cache
from tests.support import fleets as f
from tests.support.lambdas import FakeContext, list_units_event, load_function, reclaim_event

TABLE = "ReservationsTable"
QUEUE_PREFIX = "reservations-node-"
BROKER = f"Bearer {f.KEYS['broker'][0]}"
RESERVATION = "res-1"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

Event = dict[str, Any]


# --- fleets ------------------------------------------------------------------------------


def unit_id(index: int) -> str:
    return f"0000:{index + 4:02x}:00.0"


def unit_ids(count: int) -> list[str]:
    return [unit_id(i) for i in range(count)]


def spot_node(node_id: str, units: int, workloads: int | None = None) -> dict[str, Any]:
    """``units`` units, all in reservation ``res-1`` and all released to the spot market; the
    first ``workloads`` of them (default: every one) each run one spot workload."""
    ids = unit_ids(units)
    count = units if workloads is None else workloads
    return f.node(
        node_id,
        [f.unit(u) for u in ids],
        [f.reservation(RESERVATION, ids, releasedUnitIds=ids)],
        [f.workload(f"vm-{i}", [ids[i]]) for i in range(count)],
    )


def _put(item: items.Item) -> dict[str, Any]:
    return {"PutRequest": {"Item": items.to_attributes(item)}}


def _delete(item: items.Item) -> dict[str, Any]:
    return {"DeleteRequest": {"Key": {"PK": {"S": item["PK"]}, "SK": {"S": item["SK"]}}}}


def batch_write(client: Any, requests: list[dict[str, Any]]) -> None:
    for start in range(0, len(requests), 25):
        pending: dict[str, Any] = {TABLE: requests[start : start + 25]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


class Emulator:
    """moto's server on a free loopback port, provisioned from template.yaml."""

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        self.servers = serve(moto_app(), ["127.0.0.1"], port)
        self.endpoint = f"http://127.0.0.1:{port}"
        provision(self.endpoint)
        self.dynamodb = local_client("dynamodb", self.endpoint)
        self.sqs = local_client("sqs", self.endpoint)
        self.dead_letter_arn = local_dead_letter_arn(self.sqs)
        self.loaded_at = datetime.now(UTC)
        self.nodes: dict[str, tuple[FleetNode, str | None]] = {}  # as loaded, for resets

    def load(self, documents: list[dict[str, Any]]) -> None:
        """Through the fleet loader, as tests/races/conftest.py does (queues included)."""
        fleet = parse_fleet(json.dumps(f.fleet(documents)))
        urls = create_node_queues(fleet, self.sqs, QUEUE_PREFIX, self.dead_letter_arn)
        write_fleet(fleet, self.dynamodb, TABLE, self.loaded_at, urls)
        for node in fleet.nodes:
            self.nodes[node.id] = (node, urls[node.id])

    def bulk_load(self, documents: list[dict[str, Any]]) -> None:
        """Nodes' items put with BatchWriteItem, encoded by the loader (no queues, no reads)."""
        fleet = parse_fleet(json.dumps(f.fleet(documents)))
        batch_write(
            self.dynamodb,
            [_put(item) for node in fleet.nodes for item in node_items(node, self.loaded_at)],
        )
        for node in fleet.nodes:
            self.nodes[node.id] = (node, None)

    def reset_node(self, node_id: str) -> None:
        """Put the node's partition back as loaded. A reclaim adds no item to the partition
        (its audit record lives in another), so re-putting the items undoes it."""
        node, url = self.nodes[node_id]
        batch_write(self.dynamodb, [_put(i) for i in node_items(node, self.loaded_at, url)])

    def remove(self, node_ids: list[str]) -> None:
        deletes = []
        for node_id in node_ids:
            node, url = self.nodes.pop(node_id)
            deletes += [_delete(i) for i in node_items(node, self.loaded_at, url)]
        batch_write(self.dynamodb, deletes)

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()


# --- counting and capturing requests ------------------------------------------------------


class Recorder:
    """Hooks on a client: requests by ``service.Operation``, items the Queries read, and
    (when capturing) each request's parameters and parsed response."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.items_count = 0
        self.items_scanned = 0
        self.capturing = False
        self.captured: list[tuple[str, str, dict[str, Any]]] = []  # service, op, params
        self.responses: list[tuple[str, str, dict[str, Any]]] = []  # service, op, parsed

    def _hooks(self, client: Any) -> list[tuple[str, Callable[..., None]]]:
        service = client.meta.service_model.service_id.hyphenize()
        return [
            (f"provide-client-params.{service}", self._params),
            (f"before-call.{service}", self._before),
            (f"after-call.{service}", self._after),
        ]

    def attach(self, *aws_clients: Any) -> None:
        for client in aws_clients:
            for event, hook in self._hooks(client):
                client.meta.events.register(event, hook)

    def detach(self, *aws_clients: Any) -> None:
        for client in aws_clients:
            for event, hook in self._hooks(client):
                client.meta.events.unregister(event, hook)

    def reset(self, capture: bool = False) -> None:
        self.calls.clear()
        self.items_count = self.items_scanned = 0
        self.capturing = capture
        self.captured, self.responses = [], []

    @staticmethod
    def _name(event_name: str) -> tuple[str, str]:
        _, service, operation = event_name.split(".", 2)
        return service, operation

    def _params(self, params: dict[str, Any], event_name: str, **_: Any) -> None:
        if self.capturing:
            self.captured.append((*self._name(event_name), copy.deepcopy(params)))

    def _before(self, event_name: str, **_: Any) -> None:
        self.calls[".".join(self._name(event_name))] += 1

    def _after(self, parsed: dict[str, Any], event_name: str, **_: Any) -> None:
        service, operation = self._name(event_name)
        if operation == "Query":
            self.items_count += int(parsed.get("Count", 0))
            self.items_scanned += int(parsed.get("ScannedCount", 0))
        if self.capturing:
            self.responses.append((service, operation, copy.deepcopy(parsed)))

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": dict(self.calls),
            "items_count": self.items_count,
            "items_scanned": self.items_scanned,
        }


def median_requests(runs: list[dict[str, int]]) -> dict[str, float]:
    names = sorted({name for run in runs for name in run})
    return {name: statistics.median(run.get(name, 0) for run in runs) for name in names}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def by_service(requests: dict[str, float], service: str) -> float:
    return sum(n for name, n in requests.items() if name.startswith(service + "."))


# --- invoking the handlers ----------------------------------------------------------------


class Functions:
    """The handler modules, loaded after the environment is set, and how to call them."""

    def __init__(self) -> None:
        self.list_units = load_function("list_units")
        self.reclaim = load_function("reclaim")
        self.context = FakeContext()
        self.sink = io.StringIO()  # Powertools' metrics (EMF) go to stdout: keep them here

    def call(self, module: ModuleType, event: Event) -> dict[str, Any]:
        with redirect_stdout(self.sink):
            response: dict[str, Any] = module.lambda_handler(event, self.context)
        self.sink.seek(0)
        self.sink.truncate()
        return response

    def ok(self, module: ModuleType, event: Event) -> Any:
        """Call, insist on a 200 (a benchmark of error answers would measure nothing), and
        return the decoded body."""
        response = self.call(module, copy.deepcopy(event))
        if response["statusCode"] != 200:
            raise RuntimeError(f"{module.__name__} answered {response['statusCode']}: {response}")
        return json.loads(response["body"])


def reclaim_body(count: int, dry_run: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"unitIds": unit_ids(count), "reason": "bench"}
    if dry_run:
        body["dryRun"] = True
    return body


# --- 1. requests per call ------------------------------------------------------------------

RECLAIM_SIZES = (1, 4, 8, 16)


@dataclass
class Case:
    name: str
    module: ModuleType
    event: Event
    budget_dynamodb: int
    budget_sqs: int = 0
    before: Callable[[], None] = lambda: None
    terminations: int | None = None  # a reclaim must answer with this many terminated


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def requests_per_call(
    emu: Emulator, fns: Functions, recorder: Recorder, runs: int = 5
) -> list[dict[str, Any]]:
    emu.load([spot_node(f"req-k{k}", k) for k in RECLAIM_SIZES])
    list_event = list_units_event("req-k16", BROKER)
    fns.ok(fns.list_units, list_event)  # the key is now cached
    cases = [
        Case("list units (key cached)", fns.list_units, list_event, 1),
        Case("list units (key not cached)", fns.list_units, list_event, 2, 0, key_cache.clear),
        Case(
            "reclaim dry run (4 units)",
            fns.reclaim,
            reclaim_event("req-k4", RESERVATION, reclaim_body(4, True), BROKER),
            1,
        ),
    ]
    for k in RECLAIM_SIZES:
        cases.append(
            Case(
                f"reclaim {_plural(k, 'unit')}, {_plural(k, 'spot workload')}",
                fns.reclaim,
                reclaim_event(f"req-k{k}", RESERVATION, reclaim_body(k), BROKER),
                2,
                math.ceil(k / 10),
                lambda k=k: emu.reset_node(f"req-k{k}"),  # type: ignore[misc]
                k,
            )
        )
    rows = []
    for case in cases:
        samples = []
        for _ in range(runs):
            case.before()
            recorder.reset()
            body = fns.ok(case.module, case.event)
            samples.append(recorder.snapshot()["requests"])
            if case.terminations is not None and len(body["terminated"]) != case.terminations:
                raise RuntimeError(f"{case.name}: terminated {body['terminated']}")
        requests = median_requests(samples)
        ddb, sqs = by_service(requests, "dynamodb"), by_service(requests, "sqs")
        over = max(0.0, ddb - case.budget_dynamodb) + max(0.0, sqs - case.budget_sqs)
        if over == 0:
            verdict = "ok"
        else:
            queued_mark = requests.get("dynamodb.TransactWriteItems", 0) == 2 and over == 1
            why = " (queued mark)" if queued_mark else ""
            verdict = f"MISSES: over budget by {_num(over)}{why}"
        rows.append(
            {
                "call": case.name,
                "runs": runs,
                "requests": requests,
                "dynamodb": ddb,
                "sqs": sqs,
                "budget": {"dynamodb": case.budget_dynamodb, "sqs": case.budget_sqs},
                "verdict": verdict,
            }
        )
    fns.ok(fns.list_units, list_event)  # leave the key cached
    emu.remove([f"req-k{k}" for k in RECLAIM_SIZES])
    return rows


# --- 2. fleet-size invariance --------------------------------------------------------------


def fleet_size(
    emu: Emulator,
    fns: Functions,
    recorder: Recorder,
    small: int = 10,
    large: int = 10_000,
    runs_small: int = 5,
    runs_large: tuple[int, int] = (3, 2),
) -> dict[str, Any]:
    """The same list and reclaim on a node of a ``small``-node fleet, then of a ``large`` one.

    The table must hold no other node (earlier sections remove theirs). Fleet nodes are
    small: 2 units, 1 reservation releasing both, 1 spot workload. ``runs_large`` is (list,
    reclaim): on moto a reclaim in a 50,000-item table takes ~20 s, because moto deep-copies
    the whole table for each action of a transaction (moto/dynamodb/models, a backup for
    rollback) and walks every item for a Query.
    """

    def node_id(i: int) -> str:
        return f"fleet-{i:05d}"

    listed, reclaimed = node_id(3), node_id(7)
    emu.load([spot_node(node_id(i), 2, 1) for i in range(small)])
    calls: list[tuple[str, Callable[[], None], ModuleType, Event]] = [
        (
            "list units (key cached)",
            lambda: None,
            fns.list_units,
            list_units_event(listed, BROKER),
        ),
        (
            "reclaim 2 units, 1 spot workload",
            lambda: emu.reset_node(reclaimed),
            fns.reclaim,
            reclaim_event(reclaimed, RESERVATION, reclaim_body(2), BROKER),
        ),
    ]
    fns.ok(fns.list_units, calls[0][3])  # key cached

    def measure(runs_per_call: tuple[int, int]) -> list[dict[str, Any]]:
        out = []
        for (name, before, module, event), runs in zip(calls, runs_per_call, strict=True):
            samples, times = [], []
            for _ in range(runs):
                before()
                recorder.reset()
                start = time.perf_counter()
                fns.ok(module, event)
                times.append(time.perf_counter() - start)
                samples.append(recorder.snapshot())
            out.append(
                {
                    "call": name,
                    "runs": runs,
                    "requests": median_requests([s["requests"] for s in samples]),
                    "items_count": statistics.median(s["items_count"] for s in samples),
                    "items_scanned": statistics.median(s["items_scanned"] for s in samples),
                    "all_runs_alike": all(s == samples[0] for s in samples),
                    "median_ms": statistics.median(times) * 1000,
                }
            )
        return out

    nodes_small = len(emu.nodes)
    at_small = measure((runs_small, runs_small))
    start = time.perf_counter()
    # The emulator's table becomes millions of Python objects: keep the collector from
    # walking them again and again (emulator speed only; nothing measured depends on it).
    gc.disable()
    try:
        emu.bulk_load([spot_node(node_id(i), 2, 1) for i in range(small, large)])
        gc.freeze()
    finally:
        gc.enable()
    load_seconds = time.perf_counter() - start
    nodes_large = len(emu.nodes)
    at_large = measure(runs_large)

    rows = []
    for a, b in zip(at_small, at_large, strict=True):
        figures = ("requests", "items_count", "items_scanned")
        alike = a["all_runs_alike"] and b["all_runs_alike"]
        identical = alike and all(a[k] == b[k] for k in figures)
        rows.append({"call": a["call"], "small": a, "large": b, "identical": identical})
    return {
        "fleet_nodes": {"small": nodes_small, "large": nodes_large},
        "bulk_load_seconds": load_seconds,
        "items_per_node": len(node_items(emu.nodes[listed][0], emu.loaded_at)),
        "calls": rows,
    }


# --- 3. handler overhead -------------------------------------------------------------------


class Stub:
    """Replaces the functions' clients' ``_make_api_call`` with recorded parsed responses:
    what is left of the handler's time is the time it spends outside AWS calls."""

    def __init__(self, responses: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.responses = responses
        self.index = 0

    def arm(self) -> None:
        self.index = 0

    def _call(self, operation_name: str, api_params: dict[str, Any]) -> dict[str, Any]:
        _, operation, parsed = self.responses[self.index]
        self.index += 1
        if operation != operation_name:
            raise RuntimeError(f"stub expected {operation}, got {operation_name}")
        return parsed

    @contextmanager
    def installed(self) -> Iterator[None]:
        targets = (clients.dynamodb(), clients.sqs())
        for client in targets:
            client._make_api_call = self._call
        try:
            yield
        finally:
            for client in targets:
                del client._make_api_call


def _fresh_ids(calls: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str, Any]]:
    """The recorded requests with every UUID (reclaim, termination ids) replaced by a new
    one, consistently, so a replay writes a new audit record and new terminations."""
    text = json.dumps(calls)
    fresh: dict[str, str] = {}
    text = _UUID.sub(lambda m: fresh.setdefault(m.group(0), str(uuid.uuid4())), text)
    return [tuple(call) for call in json.loads(text)]  # type: ignore[misc]


def _package(filename: str, function: str) -> str:
    """Where a profiled function lives: a distribution, the project, or the stdlib."""
    if filename == "~":  # a builtin: C code
        return "pydantic" if "pydantic_core" in function else "builtins (C)"
    if "site-packages/" in filename:
        top = filename.split("site-packages/", 1)[1].split("/", 1)[0]
        return top.removesuffix(".py")
    for marker, name in (
        ("/layers/common/reservations/", "reservations"),
        ("/functions/", "handler module"),
        ("/bench/", "bench stub"),
    ):
        if marker in filename:
            return name
    if "/lib/python3" in filename:
        rest = filename.split("/lib/python3", 1)[1].split("/", 1)[1]
        return "stdlib " + rest.split("/", 1)[0].removesuffix(".py")
    return "other"


def profile_outside_aws(
    fns: Functions, module: ModuleType, event: Event, stub: Stub, runs: int
) -> dict[str, Any]:
    """cProfile over stubbed invocations: share of the time outside AWS by package."""
    events = [copy.deepcopy(event) for _ in range(runs)]
    profiler = cProfile.Profile()
    with stub.installed():
        for e in events:
            stub.arm()
            profiler.enable()
            fns.call(module, e)
            profiler.disable()
    stats = pstats.Stats(profiler)
    by_package: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    raw_stats: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, function), (_, _, tottime, _, _) in raw_stats.items():
        by_package[_package(filename, function)] += tottime
        short = filename.split("site-packages/")[-1].split("/work/main/")[-1]
        by_function[f"{short}:{line}({function})"] += tottime
    total = sum(by_package.values()) or 1.0
    return {
        "share_by_package": {k: v / total for k, v in by_package.most_common()},
        "top_functions_share": {k: v / total for k, v in by_function.most_common(8)},
    }


OVERHEAD_GOAL = 1.25
WARMUP = 3


def handler_overhead(
    emu: Emulator, fns: Functions, recorder: Recorder, runs_read: int = 30, runs_write: int = 15
) -> list[dict[str, Any]]:
    """Handler wall time against the same requests sent directly with boto3, alternating."""
    node = "overhead-node"
    emu.load([spot_node(node, 8)])
    fns.ok(fns.list_units, list_units_event(node, BROKER))  # key cached, connections open
    overhead = Overhead(emu, fns, recorder)
    rows = [
        overhead.measure(
            "list units (key cached)",
            fns.list_units,
            list_units_event(node, BROKER),
            runs=runs_read,
        ),
        overhead.measure(
            "reclaim dry run (4 units)",
            fns.reclaim,
            reclaim_event(node, RESERVATION, reclaim_body(4, True), BROKER),
            runs=runs_read,
        ),
        overhead.measure(
            "reclaim 4 units, 4 spot workloads",
            fns.reclaim,
            reclaim_event(node, RESERVATION, reclaim_body(4), BROKER),
            runs=runs_write,
            reset_node=node,
        ),
    ]
    emu.remove([node])
    return rows


class Overhead:
    def __init__(self, emu: Emulator, fns: Functions, recorder: Recorder) -> None:
        self.emu, self.fns, self.recorder = emu, fns, recorder
        # Plain boto3 clients, configured as the functions' are.
        self.raw = {
            service: boto3.client(service, endpoint_url=emu.endpoint, config=clients._CONFIG)
            for service in ("dynamodb", "sqs")
        }

    def measure(
        self,
        name: str,
        module: ModuleType,
        event: Event,
        runs: int = 40,
        reset_node: str | None = None,
    ) -> dict[str, Any]:
        def reset() -> None:
            if reset_node is not None:
                self.emu.reset_node(reset_node)

        # What the handler sends, and what it gets back.
        fn_clients = (clients.dynamodb(), clients.sqs())
        reset()
        self.recorder.attach(*fn_clients)
        self.recorder.reset(capture=True)
        self.fns.ok(module, event)
        self.recorder.detach(*fn_clients)
        captured, responses = list(self.recorder.captured), list(self.recorder.responses)

        handler_times, raw_times = [], []
        for i in range(WARMUP + runs):
            reset()
            h = self.handler(name, module, copy.deepcopy(event))
            reset()
            r = self.replay(name, _fresh_ids(captured))
            if i >= WARMUP:
                handler_times.append(h)
                raw_times.append(r)

        stub = Stub(responses)
        stubbed_times = []
        with stub.installed():
            for _ in range(WARMUP + runs):
                stub.arm()
                stubbed_times.append(self.handler(name, module, copy.deepcopy(event)))

        h_ms = statistics.median(handler_times) * 1000
        r_ms = statistics.median(raw_times) * 1000
        # Each handler run is paired with the raw run right after it: the median of the
        # pairs' ratios is less at the mercy of whatever else the machine was doing.
        ratio = statistics.median(h / r for h, r in zip(handler_times, raw_times, strict=True))
        quartiles = statistics.quantiles(raw_times, n=4)
        row: dict[str, Any] = {
            "call": name,
            "runs": runs,
            "requests": [f"{service}.{operation}" for service, operation, _ in captured],
            "handler_ms": h_ms,
            "raw_boto3_ms": r_ms,
            "overhead_ms": h_ms - r_ms,
            "outside_aws_stubbed_ms": statistics.median(stubbed_times[WARMUP:]) * 1000,
            "raw_boto3_iqr_ms": (quartiles[2] - quartiles[0]) * 1000,
            "ratio": ratio,
            "goal": OVERHEAD_GOAL,
            "verdict": "ok" if ratio <= OVERHEAD_GOAL else "MISSES",
        }
        if ratio > OVERHEAD_GOAL:
            row["profile"] = profile_outside_aws(self.fns, module, event, stub, runs)
        return row

    def handler(self, name: str, module: ModuleType, event: Event) -> float:
        start = time.perf_counter()
        response = self.fns.call(module, event)
        elapsed = time.perf_counter() - start
        if response["statusCode"] != 200:
            raise RuntimeError(f"{name}: {response['statusCode']} {response.get('body')}")
        return elapsed

    def replay(self, name: str, calls: list[tuple[str, str, Any]]) -> float:
        """The handler's requests, sent directly with boto3 in the same order."""
        bound = [(getattr(self.raw[s], xform_name(op)), params) for s, op, params in calls]
        start = time.perf_counter()
        for method, params in bound:
            response = method(**params)
            if response.get("Failed"):
                raise RuntimeError(f"raw {name}: {response['Failed']}")
        return time.perf_counter() - start
