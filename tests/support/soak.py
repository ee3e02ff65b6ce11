"""The soak in process: seeded actors interleaved over the real handlers on moto, with
faults injected through botocore's hooks (``faults.py``), and the record the auditor judges
(``reservations_tools.soak``).

The actors, each step one of them, picked by a seeded RNG:

- the **owner** creates reservations (now and then one that starts later), changes their
  end, cancels one;
- the **broker** releases units, reclaims them by id or by count with a notice, sets or
  removes a lending policy (notice, minimum run, lending by the clock);
- the **scheduler** places spot workloads on the units list units shows lent and free (now
  and then on any unit: a refusal), places the audience's work with ``reservationId`` and
  ``count`` (a take-back), and ends workloads;
- the **node agents** take their nodes' termination messages and report each stopped at
  its ``terminateAt`` (the earliest their messages name: a deadline may move earlier), some
  ``gone`` before it; the sweeper re-sends what they lose;
- the **relay** hands the table's stream to the event relay, the **backlog** relays what is
  still marked, the **clock** runs its pass (moments and lending), the **sweeper** its;
- the **followers** read the operator's feed and the bus.

The faults, each at a seeded moment: a DynamoDB request refused (``EndpointConnectionError``:
the API answers 503), an answer lost after its transaction committed (the same), a call
slowed past its deadline (503), a concurrent write landing between a write's read and its
transaction (the write's conflict and retry), a relay batch handed over twice, a relay or a
report whose DynamoDB request is refused (the stream's retry, the backlog, the queue's
redelivery), a report delivered twice, a termination message lost, a sweeper's send
refused, two clock passes overlapping (the second inside the first's write). A caller
tries a 503 or a 409 ``conflict`` again after ``Retry-After``, with the same
``Idempotency-Key``; every attempt is in the record.
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from devstack import fleet_documents as f
from devstack.api_events import (
    api_event,
    cancel_event,
    create_event,
    end_event,
    list_units_event,
    node_event,
    place_event,
    reclaim_event,
    release_event,
    update_event,
    usage_event,
)
from devstack.functions import FakeContext, HttpResult, invoke
from devstack.sqs_events import sqs_event
from reservations import endpoints
from reservations.kernel.aws import clients
from reservations_tools.soak.record import Record
from tests.support import invariants as inv
from tests.support import state
from tests.support.event_scenario import node_feed_event, org_feed_event
from tests.support.event_table import BusWatch, StreamRelay
from tests.support.faults import on_call

START = datetime(2031, 3, 3, 8, 30, tzinfo=UTC)  # the run crosses an hour: two rows a node
READ, CAPACITY, WRITE = "reservation.read", "reservation.capacity", "reservation.write"
KEYS: dict[str, tuple[str, str, list[str]]] = {
    "operator": ("vl_soak_operator", "org-platform",
                 [READ, CAPACITY, WRITE, "node.write", "workload.place", "events.read",
                  "usage.read"]),
    "owner": ("vl_soak_owner", "org-acme", [READ, CAPACITY, WRITE]),
    "broker": ("vl_soak_broker", "org-broker", [READ, CAPACITY]),
}  # fmt: skip
NODES = {"node-a": 6, "node-b": 4}
FUNCTIONS = (
    "put_node", "create_reservation", "update_reservation", "cancel", "release", "reclaim",
    "set_lending", "clear_lending", "place_workload", "end_workload", "list_units",
    "termination_reports", "sweeper", "clock", "event_relay", "event_backlog", "org_events",
    "node_events", "list_usage",
)  # fmt: skip
REPORTS_ARN = "arn:aws:sqs:us-east-1:123456789012:TerminationReportsQueue"
RETRIED_CONFLICTS = {"conflict", "idempotency_in_progress"}
TRIES = 6


def auth(role: str) -> str:
    return f"Bearer {KEYS[role][0]}"


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def soak_fleet() -> dict[str, Any]:
    """Keys only: the nodes are registered through the API, so every unit's life is in the
    node's feed from its ``node.registered`` on."""
    keys = [
        {"key": secret, "orgId": org, "permissions": permissions, "id": f"soak-{role}"}
        for role, (secret, org, permissions) in KEYS.items()
    ]
    return {"platformOrgId": "org-platform", "apiKeys": keys, "nodes": []}


def unit_ids(node: str) -> list[str]:
    return [f"0000:{4 + n:02x}:00.0" for n in range(NODES[node])]


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Held:
    """A termination a node agent holds: the earliest deadline its messages named."""

    message: dict[str, Any]
    due: datetime


@dataclass
class Soak:
    seed: int
    db: Any
    functions: dict[str, ModuleType]
    clock: Clock
    rng: random.Random = field(init=False)
    ops: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)  # wall time spent, by actor
    attempts: list[dict[str, Any]] = field(default_factory=list)
    held: dict[str, Held] = field(default_factory=dict)  # termination id -> what the agent holds
    unreported: list[dict[str, Any]] = field(default_factory=list)  # reports to send again
    feed: list[str] = field(default_factory=list)  # the operator's feed, as followed
    feed_cursor: str | None = None
    bus: list[str] = field(default_factory=list)
    counter: int = 0
    nested: bool = False  # a write running inside another's transaction: no fault of its own

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.sqs = boto3.client("sqs")
        self.relay = StreamRelay(self.db, self.functions["event_relay"])
        self.watch = BusWatch()

    # --- the clock and ids -------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.clock.now

    def advance(self, seconds: float | None = None) -> None:
        if seconds is None:
            roll = self.rng.random()
            seconds = (
                self.rng.uniform(0.001, 3) if roll < 0.6
                else self.rng.uniform(3, 40) if roll < 0.95
                else self.rng.uniform(60, 300)
            )  # fmt: skip
        self.clock.now += timedelta(milliseconds=max(1, int(seconds * 1000)))

    def reservation_id(self) -> str:
        """The create's ids, from the seed (the service's own are random)."""
        return "res-" + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                                for _ in range(20))  # fmt: skip

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # --- calls --------------------------------------------------------------------------------

    def call(
        self, actor: str, op: str, make: Callable[[str | None], dict[str, Any]], write: bool = True
    ) -> HttpResult:
        """One logical call: tried again after a 503 or a 409 ``conflict`` (after its
        ``Retry-After``, with the same key), a fault on its first try now and then. Every
        attempt is recorded."""
        key = self.new_id(f"soak-{self.seed}-") if write else None
        name = self.new_id("call-")
        self.ops[f"{actor} {op}"] += 1
        for attempt in range(TRIES):
            fault = self.api_fault() if write and attempt == 0 and not self.nested else None
            with fault or _nothing():
                result = invoke(self.functions[op], make(key))
            code = result.body.get("code") if 400 <= result.status < 500 else None
            self.attempts.append({"call": name, "op": op, "actor": actor,
                                  "status": result.status, "code": code and f" {code}",
                                  "retryAfter": result.headers.get("retry-after")})  # fmt: skip
            if not self.retried(result) or attempt == TRIES - 1:
                return result
            self.advance(float(result.headers.get("retry-after") or 1))
        raise AssertionError("unreachable")

    def answers(self) -> Counter[str]:
        """Each call's last answer, by operation and status (and code, for a 4xx)."""
        last: dict[str, dict[str, Any]] = {a["call"]: a for a in self.attempts}
        return Counter(f"{a['op']} {a['status']}{a.get('code') or ''}" for a in last.values())

    @staticmethod
    def retried(result: HttpResult) -> bool:
        if result.status == 503:
            return True
        return result.status == 409 and result.body.get("code") in RETRIED_CONFLICTS

    def api_fault(self) -> Any:
        if not self.chance(0.14):
            return None
        kind = self.rng.choice(["refused", "refused", "lost answer", "slowed", "interleaved"])
        self.faults[f"api: {kind}"] += 1
        if kind == "refused":
            operation = self.rng.choice(["Query", "TransactWriteItems", "BatchGetItem"])
            return once(clients.dynamodb(), operation, before=unreachable)
        if kind == "lost answer":
            return once(clients.dynamodb(), "TransactWriteItems", after=answer_lost)
        if kind == "slowed":
            return once(clients.dynamodb(), "TransactWriteItems", before=deadline_passed)
        return once(clients.dynamodb(), "TransactWriteItems", before=lambda _p: self.concurrent())

    def concurrent(self) -> None:
        """Another actor's write, committed between this write's read and its transaction."""
        self.nested = True
        try:
            self.rng.choice([release, reclaim_units, place_spot, end_workload])(self)
        finally:
            self.nested = False

    # --- reading the world (what each actor decides from) ------------------------------------

    def partition(self, node: str) -> inv.Partition:
        return inv.read_partition(self.db, node)

    def active(self, node: str) -> list[dict[str, Any]]:
        part = self.partition(node)
        return [
            r for r in part.reservations.values()
            if part.status(r, self.now) == "active" and inv.in_term(r, self.now)
        ]  # fmt: skip

    def node(self) -> str:
        return self.rng.choice(sorted(NODES))

    # --- one step ----------------------------------------------------------------------------

    def run(self, steps: int) -> None:
        actions = [action for action, _ in ACTIONS]
        weights = [weight for _, weight in ACTIONS]
        for _ in range(steps):
            self.advance()
            action = self.rng.choices(actions, weights)[0]
            started = time.monotonic()
            action(self)
            self.seconds[action.__name__] += time.monotonic() - started

    def register(self) -> None:
        for node in sorted(NODES):
            body = {"ownerOrgId": "org-acme", "topologyGen": 1,
                    "units": [f.unit(u, sellableGpus=1 + n % 2)
                              for n, u in enumerate(unit_ids(node))]}  # fmt: skip
            result = self.call("operator", "put_node", lambda _k, n=node, b=body: node_event(
                n, b, auth("operator")), write=False)  # fmt: skip
            assert result.status == 201, result.body_text
            self.advance(1)
        for node in sorted(NODES):
            for _ in range(2):
                create(self, node)

    # --- the end: everything settles, then the record -----------------------------------------

    def settle(self) -> None:
        """No more actors: the clock moves on a minute at a time, the agents report all
        they hold, the sweeper re-sends and the relay runs, until no workload is
        terminating; then, past the backlog's grace (a minute), the backlog relays what
        is still marked, and the followers read to the end."""
        for _ in range(40):
            self.advance(60)
            clock_pass(self, overlapping=False)
            self.functions["sweeper"].lambda_handler({}, FakeContext())
            agents(self, faults=False)
            self.relay.run()
            terminating = [
                w for node in NODES for w in self.partition(node).live_workloads()
                if w["state"] == "terminating"
            ]  # fmt: skip
            if not terminating and not self.held and not self.unreported:
                break
        self.advance(61)
        self.functions["event_backlog"].lambda_handler({}, FakeContext())
        self.relay.run()
        follow(self)

    def node_feed(self, node: str) -> list[dict[str, Any]]:
        events, cursor = [], None
        while True:
            query = {"limit": "100", **({"cursor": cursor} if cursor else {})}
            page = invoke(self.functions["node_events"],
                          node_feed_event(node, auth("operator"), query))  # fmt: skip
            assert page.status == 200, page.body_text
            events += page.body["items"]
            cursor = page.body["nextCursor"]
            if not page.body["hasMore"]:
                return events

    def usage(self) -> list[dict[str, Any]]:
        start = START.replace(minute=0)
        end = self.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        rows: list[dict[str, Any]] = []
        for group in ("node", "reservation"):
            cursor = None
            while True:
                query = {"from": iso(start)[:19] + "Z", "to": iso(end)[:19] + "Z",
                         "granularity": "hour", "groupBy": group, "nodeId": ",".join(NODES),
                         "limit": "100", **({"cursor": cursor} if cursor else {})}  # fmt: skip
                page = invoke(self.functions["list_usage"], usage_event(auth("operator"), query))
                assert page.status == 200, page.body_text
                rows += page.body["items"]
                if (cursor := page.body.get("nextCursor")) is None:
                    break
        return rows

    def record(self) -> Record:
        return Record.of(
            {node: self.node_feed(node) for node in sorted(NODES)},
            {"operator's feed": self.feed, "bus": self.bus},
            self.attempts,
            self.usage(),
            seed=self.seed,
            recorded_at=iso(self.now),
        )


# --- faults --------------------------------------------------------------------------------


class Once:
    """A hook on one operation of one client that fires on its first call only."""

    def __init__(self, client: Any, operation: str, before: Any = None, after: Any = None):
        self.client, self.operation = client, operation
        self.before, self.after = before, after
        self.fired = False
        self._stack = ExitStack()

    def _once(self, hook: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        def fire(params: dict[str, Any]) -> None:
            if not self.fired:
                self.fired = True
                hook(params)

        return fire

    def __enter__(self) -> Once:
        before = self._once(self.before) if self.before else None
        after = self._once(self.after) if self.after else None
        self._stack.enter_context(on_call(self.client, self.operation, before, after))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def once(client: Any, operation: str, before: Any = None, after: Any = None) -> Once:
    return Once(client, operation, before, after)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def unreachable(_params: dict[str, Any]) -> None:
    raise EndpointConnectionError(endpoint_url="https://dynamodb.soak.test")


def answer_lost(_parsed: dict[str, Any]) -> None:
    raise ReadTimeoutError(endpoint_url="https://dynamodb.soak.test")


def deadline_passed(_params: dict[str, Any]) -> None:
    """The call was slowed until no time was left for its write (what the functions'
    client raises then, the clock being the host's)."""
    raise clients.DeadlineReached(service="dynamodb")


# --- the actors ----------------------------------------------------------------------------


def create(soak: Soak, node: str | None = None) -> None:
    """The owner reserves units of a node that no live reservation holds and no workload
    uses (if there are none, any: a refusal), for 20 minutes to 2 hours (a fifth start
    later)."""
    node = node or soak.node()
    part = soak.partition(node)
    taken = {u for r in part.reservations.values()
             if part.status(r, soak.now) in inv.LIVE_RESERVATION for u in r["reservedUnitIds"]}  # fmt: skip
    taken |= {u for w in part.live_workloads() for u in w["unitIds"]}  # (spot on open units)
    free = [u for u in unit_ids(node) if u not in taken] or unit_ids(node)
    units = sorted(soak.rng.sample(free, min(len(free), soak.rng.randint(2, 4))))
    starts = soak.now + (timedelta(minutes=soak.rng.randint(2, 15)) if soak.chance(0.2)
                         else timedelta(0))  # fmt: skip
    body: dict[str, Any] = {
        "unitIds": units, "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
        "endsAt": iso(starts + timedelta(minutes=soak.rng.randint(20, 120)))[:19] + "Z",
    }  # fmt: skip
    if starts > soak.now:
        body["startsAt"] = iso(starts)[:19] + "Z"
    soak.call("owner", "create_reservation",
              lambda key: create_event(node, body, auth("owner"), key))  # fmt: skip


def change_end(soak: Soak) -> None:
    node = soak.node()
    active = soak.active(node)
    if not active:
        return
    res = soak.rng.choice(active)["id"]
    body = {"endsAt": iso(soak.now + timedelta(minutes=soak.rng.randint(5, 90)))[:19] + "Z"}
    soak.call("owner", "update_reservation",
              lambda key: update_event(node, res, body, auth("owner"), key))  # fmt: skip


def cancel(soak: Soak) -> None:
    node = soak.node()
    active = soak.active(node)
    if len(active) < 2:
        return
    res = soak.rng.choice(active)["id"]
    soak.call("owner", "cancel", lambda key: cancel_event(node, res, None, auth("owner"), key))


def release(soak: Soak) -> None:
    node = soak.node()
    active = soak.active(node)
    if not active:
        return
    res = soak.rng.choice(active)
    pool = sorted(set(res["reservedUnitIds"]) - set(res["releasedUnitIds"])) or sorted(
        res["reservedUnitIds"]
    )
    units = sorted(soak.rng.sample(pool, soak.rng.randint(1, len(pool))))
    soak.call("broker", "release", lambda key: release_event(
        node, res["id"], {"unitIds": units}, auth("broker"), key))  # fmt: skip


def notice(soak: Soak) -> dict[str, int]:
    seconds = soak.rng.choice([0, 0, 15, 45, 120])
    return {"noticeSeconds": seconds} if seconds or soak.chance(0.5) else {}


def reclaim_units(soak: Soak) -> None:
    node = soak.node()
    active = [r for r in soak.active(node) if r["releasedUnitIds"]]
    if not active:
        return
    res = soak.rng.choice(active)
    units = sorted(soak.rng.sample(res["releasedUnitIds"],
                                   soak.rng.randint(1, len(res["releasedUnitIds"]))))  # fmt: skip
    body = {"unitIds": units, **notice(soak)}
    soak.call("broker", "reclaim",
              lambda key: reclaim_event(node, res["id"], body, auth("broker"), key))  # fmt: skip


def reclaim_count(soak: Soak) -> None:
    node = soak.node()
    active = [r for r in soak.active(node) if r["releasedUnitIds"]]
    if not active:
        return
    res = soak.rng.choice(active)
    body = {"count": soak.rng.randint(1, len(res["releasedUnitIds"])), **notice(soak)}
    soak.ops["broker reclaim by count"] += 1
    soak.call("broker", "reclaim",
              lambda key: reclaim_event(node, res["id"], body, auth("broker"), key))  # fmt: skip


def lending(soak: Soak) -> None:
    node = soak.node()
    active = soak.active(node)
    if not active:
        return
    res = soak.rng.choice(active)["id"]
    ids = {"nodeId": node, "reservationId": res}
    if soak.chance(0.2):
        soak.call("broker", "clear_lending", lambda _k: api_event(
            "clear_lending/cleared.json", endpoints.CLEAR_LENDING, ids, auth("broker")))  # fmt: skip
        return
    body = {"auto": soak.chance(0.5), "idleSeconds": soak.rng.choice([60, 120, 300]),
            "noticeSeconds": soak.rng.choice([0, 30, 90]),
            "minRunSeconds": soak.rng.choice([0, 0, 60, 180]),
            "relendAfterSeconds": soak.rng.choice([0, 60])}  # fmt: skip
    soak.call("broker", "set_lending", lambda _k: api_event(
        "set_lending/set.json", endpoints.SET_LENDING, ids, auth("broker"), body))  # fmt: skip


def place_spot(soak: Soak) -> None:
    """The spot scheduler: lent, free units as list units shows them (now and then any
    unit, which the service must refuse unless it is open to spot work)."""
    node = soak.node()
    listed = invoke(soak.functions["list_units"], list_units_event(node, auth("operator")))
    soak.ops["scheduler list_units"] += 1
    lent = [u["id"] for u in listed.body if u.get("released") and u["state"] == "free"
            and not u.get("heldFor")] if listed.status == 200 else []  # fmt: skip
    if not lent and not soak.chance(0.1):
        return
    pool = lent if lent and not soak.chance(0.1) else unit_ids(node)
    units = sorted(soak.rng.sample(pool, min(len(pool), soak.rng.choice([1, 1, 2]))))
    body = {"id": soak.new_id("vm-"), "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
            "unitIds": units}  # fmt: skip
    soak.call("scheduler", "place_workload",
              lambda key: place_event(node, body, auth("operator"), key))  # fmt: skip


def take_back(soak: Soak) -> None:
    """The audience's work on its reservation: one unit, the service choosing (taking a
    lent unit back, waiting for its spot workload to stop)."""
    node = soak.node()
    active = soak.active(node)
    if not active:
        return
    res = soak.rng.choice(active)["id"]
    body = {"id": soak.new_id("lab-"), "kind": "vm", "tier": "reserved", "orgId": "org-lab",
            "reservationId": res, "count": 1}  # fmt: skip
    soak.call("scheduler", "place_workload",
              lambda key: place_event(node, body, auth("operator"), key))  # fmt: skip


def end_workload(soak: Soak) -> None:
    node = soak.node()
    live = sorted(w["id"] for w in soak.partition(node).live_workloads())
    if not live:
        return
    workload = soak.rng.choice(live)
    soak.call("scheduler", "end_workload",
              lambda key: end_event(node, workload, auth("operator"), key))  # fmt: skip


def agents(soak: Soak, faults: bool = True) -> None:
    """The node agents: take every message; report each termination once its earliest
    deadline has come (a few ``gone`` earlier), some twice; lose a message now and then
    (the sweeper sends it again)."""
    soak.ops["agents"] += 1
    for node in sorted(NODES):
        for message in state.drain(soak.sqs, state.node_queue_url(soak.db, node)):
            if faults and soak.chance(0.08):
                soak.faults["agent: message lost"] += 1
                continue
            due = datetime.fromisoformat(
                (message.get("terminateAt") or message["requestedAt"]).replace("Z", "+00:00")
            )
            held = soak.held.get(message["terminationId"])
            if held is None or due < held.due:
                soak.held[message["terminationId"]] = Held(message, due)
    records = list(soak.unreported)
    soak.unreported = []
    # (in an order of the soak's own: termination ids are the service's random ones)
    for termination, held in sorted(soak.held.items(), key=lambda t: t[1].message["workloadId"]):
        gone = faults and soak.chance(0.03)
        if held.due <= soak.now or gone:
            del soak.held[termination]
            copies = 2 if faults and soak.chance(0.1) else 1
            soak.faults["agent: report delivered twice"] += copies - 1
            outcome = "gone" if gone else "terminated"
            records += [report(soak, held.message, outcome) for _ in range(copies)]
    if records:
        deliver_reports(soak, records, faults)


def report(soak: Soak, message: dict[str, Any], outcome: str) -> dict[str, Any]:
    body = {"version": 1, "type": "termination-report",
            "terminationId": message["terminationId"], "nodeId": message["nodeId"],
            "workloadId": message["workloadId"], "outcome": outcome,
            "reportedAt": iso(soak.now)}  # fmt: skip
    number = soak.new_id("m-")
    return {"MessageId": number, "ReceiptHandle": number, "Body": json.dumps(body)}


def deliver_reports(soak: Soak, records: list[dict[str, Any]], faults: bool) -> None:
    """One batch to the reports function; what it says failed comes back later (SQS)."""
    fault = None
    if faults and soak.chance(0.1):
        soak.faults["reports: DynamoDB refused"] += 1
        fault = once(clients.dynamodb(), "TransactWriteItems", before=unreachable)
    with fault or _nothing():
        answer = soak.functions["termination_reports"].lambda_handler(
            sqs_event(records, REPORTS_ARN), FakeContext()
        )
    failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
    soak.unreported += [copy.deepcopy(r) for r in records if r["MessageId"] in failed]


def relay(soak: Soak) -> None:
    """The stream to the relay; now and then its DynamoDB or the bus refused (the batch is
    retried, then left marked for the backlog), or the last batch handed over again."""
    soak.ops["relay"] += 1
    roll = soak.rng.random()
    if roll < 0.08 and soak.relay.invocations:
        soak.faults["relay: a batch handed over twice"] += 1
        soak.functions["event_relay"].lambda_handler(soak.relay.invocations[-1], FakeContext())
    fault = None
    if 0.08 <= roll < 0.16:
        soak.faults["relay: DynamoDB refused"] += 1
        fault = on_call(clients.dynamodb(), "TransactWriteItems", before=unreachable)
    elif 0.16 <= roll < 0.22:
        soak.faults["relay: the bus refused"] += 1
        fault = on_call(clients.events(), "PutEvents", before=unreachable)
    with fault or _nothing():
        soak.relay.run()


def backlog(soak: Soak) -> None:
    soak.ops["event backlog"] += 1
    soak.functions["event_backlog"].lambda_handler({}, FakeContext())


def clock_pass(soak: Soak, overlapping: bool = True) -> None:
    """The clock's pass (moments, then lending); now and then a second pass runs inside the
    first one's first write, as two overlapping invocations would."""
    soak.ops["clock"] += 1
    handler = soak.functions["clock"].lambda_handler
    fault = None
    if overlapping and soak.chance(0.25):
        soak.faults["clock: passes overlapping"] += 1
        fault = once(clients.dynamodb(), "TransactWriteItems",
                     before=lambda _p: handler({}, FakeContext()))  # fmt: skip
    with fault or _nothing():
        handler({}, FakeContext())


def sweep(soak: Soak) -> None:
    soak.ops["sweeper"] += 1
    fault = None
    if soak.chance(0.15):
        soak.faults["sweeper: a send refused"] += 1
        fault = once(clients.sqs(), "SendMessage", before=unreachable)
    with fault or _nothing():
        soak.functions["sweeper"].lambda_handler({}, FakeContext())


def follow(soak: Soak) -> None:
    """The operator's feed, from where its follower left it to its end; what reached the
    bus."""
    soak.ops["followers"] += 1
    while True:
        query = {"limit": "100", **({"cursor": soak.feed_cursor} if soak.feed_cursor else {})}
        page = invoke(soak.functions["org_events"], org_feed_event(auth("operator"), query))
        assert page.status == 200, page.body_text
        soak.feed += [e["id"] for e in page.body["items"]]
        soak.feed_cursor = page.body["nextCursor"]
        if not page.body["hasMore"]:
            break
    soak.bus += [e["id"] for e in soak.watch.events()]


ACTIONS: list[tuple[Callable[[Soak], None], int]] = [
    (create, 4),
    (change_end, 1),
    (cancel, 1),
    (release, 12),
    (reclaim_units, 6),
    (reclaim_count, 4),
    (lending, 3),
    (place_spot, 20),
    (take_back, 3),
    (end_workload, 6),
    (agents, 8),
    (relay, 4),
    (backlog, 1),
    (clock_pass, 2),
    (sweep, 2),
    (follow, 2),
]
