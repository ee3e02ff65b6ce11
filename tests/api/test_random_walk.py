"""A seeded random walk over every endpoint, checking the store after each call.

Four seeds of 250 calls each, through the real Lambda handlers in-process over moto's
in-memory AWS (one mock per seed): list units, reclaim (and its dry run), create, get,
list, release, change (PATCH), cancel, PUT node, re-affirm, place, end, the node agent's termination
reports, the sweeper and the history mover, by operators, owners of two orgs, a broker, an
audience, a stranger and a spot buyer, with now and then a request gone wrong or a keyed
one repeated.
The clock is the walk's own and moves on between calls (seconds to hours), so that
reservations start, end and expire along the way.

After each call the table itself is read and held to the contract's words (see
``tests/support/invariants.py``): no unit claimed twice, every claim a live workload's and
every live workload's units claimed by it, no two live reservations of overlapping terms
sharing a unit, versions that only grow, no call but a node update or a re-affirm leaving
a spot workload running where its governing reservation withholds the unit, every 2xx of a
write with its events (its record: the type, subject and caller; a reclaim's one
``workload.termination_requested`` per workload it sends to terminating) and no event for
anything else (a refusal, a dry run, a replay, an unchanged PUT), the service's own events
(a report's ``workload.terminated``, the sweeper's ``workload.termination_stuck``) with no
actor, and each answer in the contract's shape (never a 5xx).

``-s`` prints a tally per seed; ``WALK_SEEDS=5,6`` walks other seeds.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import json
import logging
import os
import random
import string
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack import fleets as loader
from devstack.api_events import (
    cancel_event,
    create_event,
    end_event,
    event_file,
    get_event,
    list_event,
    list_units_event,
    node_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    release_event,
    update_event,
)
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import FakeContext, HttpResult, invoke, load_function
from devstack.sqs_events import sqs_event
from reservations.kernel.aws import clients
from reservations.kernel.http import resolver
from reservations.kernel.times import parse_time
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import invariants as inv
from tests.support import state
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

SEEDS = [int(s) for s in os.environ.get("WALK_SEEDS", "1,2,3,4").split(",")]
CALLS = 250
START = datetime(2031, 3, 3, 8, 0, tzinfo=UTC)
FUNCTIONS = (
    "list_units",
    "reclaim",
    "release",
    "cancel",
    "update_reservation",
    "create_reservation",
    "get_reservation",
    "list_reservations",
    "put_node",
    "reaffirm",
    "place_workload",
    "end_workload",
    "termination_reports",
    "sweeper",
    "history_mover",
)
READ = "reservation.read"
CAPACITY = "reservation.capacity"
WRITE = "reservation.write"
OWNER = [READ, CAPACITY, WRITE]
# role -> (secret, org, permissions)
KEYS: dict[str, tuple[str, str, list[str]]] = {
    "operator": ("vl_walk_operator", "org-platform", [*OWNER, "node.write", "workload.place"]),
    "acme": ("vl_walk_acme", "org-acme", OWNER),
    "beta": ("vl_walk_beta", "org-beta", OWNER),
    "broker": ("vl_walk_broker", "org-broker", [READ, CAPACITY]),
    "lab": ("vl_walk_lab", "org-lab", [READ, CAPACITY]),
    "stranger": ("vl_walk_stranger", "org-stranger", OWNER),
    "spotbuyer": ("vl_walk_spotbuyer", "org-spotbuyer", [READ]),
}
OWNER_ROLE = {"org-acme": "acme", "org-beta": "beta"}
ERROR_CODES = {
    400: {"invalid_request"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {
        "reservation_not_active",
        "conflict",
        "idempotency_in_progress",
        "units_unavailable",
        "workload_exists",
        "stale_topology",
        "reservation_not_in_review",
        "reservation_not_changeable",
    },
    415: {"unsupported_media_type"},
    422: {
        "units_not_in_reservation",
        "units_not_reservable",
        "units_not_sellable",
        "idempotency_key_reused",
    },
}
NOT_KEPT = {"conflict", "idempotency_in_progress", "idempotency_key_reused"}
WRITES = {
    "reclaim",
    "release",
    "cancel",
    "update_reservation",
    "create_reservation",
    "put_node",
    "reaffirm",
    "place_workload",
    "end_workload",
}
# The event each write makes (a PUT: node.registered or node.updated, by its status).
EVENT_TYPE = {
    "reclaim": "reservation.reclaimed",
    "release": "reservation.released",
    "cancel": "reservation.cancelled",
    "update_reservation": "reservation.updated",
    "reaffirm": "reservation.reaffirmed",
    "create_reservation": "reservation.created",
    "place_workload": "workload.placed",
    "end_workload": "workload.ended",
}
# What the service makes on its own (no actor): a report's close, the sweeper's flag.
SERVICE_EVENTS = {
    "termination_reports": "workload.terminated",
    "sweeper": "workload.termination_stuck",
}
# The calls the contract lets leave a spot workload running on a unit that has become
# withheld: a node update sends reservations to review, a re-affirm empties releases; and
# the clock, which starts reservations over spot workloads placed before their term.
MAY_WITHHOLD = {"put_node", "reaffirm"}
H100, H200 = "nvidia-h100-sxm5-80gb", "nvidia-h200-141gb"


def auth(role: str) -> str:
    return f"Bearer {KEYS[role][0]}"


def iso(moment: datetime) -> str:
    return f.iso(moment)


def walk_fleet() -> dict[str, Any]:
    keys = [
        {"key": secret, "orgId": org, "permissions": permissions, "id": f"walk-{role}"}
        for role, (secret, org, permissions) in KEYS.items()
    ]
    host = f.unit("0000:0a:00.0", allocClass="host", sellable=False, notSellableReason="host")
    nodes = [
        f.node("node-a", [f.unit(f"0000:0{i}:00.0") for i in range(4, 9)] + [host]),
        f.node(
            "node-b",
            [f.unit(f"0000:0{i}:00.0") for i in range(4, 7)]
            + [f.unit("0000:07:00.0", allocClass="device-request")],
        ),
        f.node("node-c", [f.unit(f"0000:0{i}:00.0") for i in range(4, 8)], owner="org-beta"),
    ]
    return {"platformOrgId": "org-platform", "apiKeys": keys, "nodes": nodes}


@dataclass
class WalkClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Call:
    """One step: the function, its event (none for the sweeper), who calls, and what the
    checks need to know about it."""

    function: str
    event: dict[str, Any] | None
    role: str | None = None
    node: str | None = None
    reservation: str | None = None
    unit_ids: list[str] = field(default_factory=list)
    dry_run: bool = False
    keyed: bool = False
    replay_of: Kept | None = None
    workload: str | None = None


@dataclass
class Kept:
    """A keyed request's first answer, which a repeat must get again."""

    call: Call
    status: int
    body: str
    at: datetime


@dataclass
class Outcome:
    """The answer's status (for the sweeper and the reports: what they did) and body."""

    label: str
    result: HttpResult | None = None


# --- the walk -------------------------------------------------------------------------------


class Walk:
    def __init__(self, seed: int, db: Any, functions: dict[str, ModuleType], clock: WalkClock):
        self.seed = seed
        self.rng = random.Random(seed)
        self.db = db
        self.sqs = boto3.client("sqs")
        self.functions = functions
        self.clock = clock
        self.tally: Counter[str] = Counter()
        self.problems: dict[str, tuple[str, int]] = {}  # problem -> (first seen where, times)
        self.kept: list[Kept] = []
        self.seen_events: set[str] = set()  # ids of the events an earlier check saw
        self.messages = 0  # spot-termination messages the node agents took
        self.versions: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
        self.nodes = ["node-a", "node-b", "node-c", "node-d"]  # node-d: registered on the way
        self.parts = self.read()
        inv.versions_only_grow(self.versions, self.parts.values())
        self.step = 0
        self.counter = 0
        self.cursor: tuple[str, str, dict[str, str]] | None = None  # the next page's call
        self.move_problems: list[str] = []  # what the last history mover's pass broke
        # node -> org -> until when a PATCH that stopped naming the org may keep it named
        # in the node's list access (the change's time plus the retention).
        self.unnamed: dict[str, dict[str, int]] = {}

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def reservation_id(self) -> str:
        alphabet = string.ascii_lowercase + string.digits
        return "res-" + "".join(self.rng.choice(alphabet) for _ in range(20))

    def read(self, nodes: list[str] | None = None) -> dict[str, inv.Partition]:
        return {node: inv.read_partition(self.db, node) for node in nodes or self.nodes}

    def touched(self, call: Call) -> list[str]:
        """The partitions a call may have changed: its node's; every node's for the
        sweeper, the reports, and every 20th call (a write that strayed would show)."""
        if call.event is None or self.step % 20 == 0:
            return self.nodes
        return [call.node] if call.node in self.nodes else []

    @property
    def now(self) -> datetime:
        return self.clock.now

    def advance(self) -> None:
        roll = self.rng.random()
        if roll < 0.7:
            seconds = self.rng.randint(0, 60)
        elif roll < 0.95:
            seconds = self.rng.randint(60, 1200)
        else:
            seconds = self.rng.randint(3600, 4 * 3600)
        self.clock.now += timedelta(seconds=seconds)

    def pick(self, options: list[Any]) -> Any:
        return self.rng.choice(options)

    def role_for(self, right: str, right_share: float = 0.8) -> str:
        return right if self.rng.random() < right_share else self.pick(list(KEYS))

    def owner_role(self, node: str) -> str:
        part = self.parts.get(node)
        owner = part.node["ownerOrgId"] if part and part.node else "org-acme"
        return OWNER_ROLE.get(str(owner), "acme")

    def idempotency_key(self) -> str | None:
        return f"walk-{self.seed}-{self.new_id('k')}" if self.rng.random() < 0.35 else None

    # --- one step ---------------------------------------------------------------------------

    def run(self, calls: int) -> None:
        actions = ACTIONS
        weights = [weight for _, weight in actions]
        for self.step in range(1, calls + 1):
            self.advance()
            [(make, _)] = self.rng.choices(actions, weights)
            call = make(self)
            self.perform(call)

    def note_unnamed(self, call: Call, result: Any, before: Any, after: Any) -> None:
        """The orgs a PATCH's change stopped naming: it may keep them named a retention
        from now (they saw its event), and no longer."""
        if call.function != "update_reservation" or result is None or result.status != 200:
            return
        node, res = call.node or "", call.reservation or ""
        was = before[node].reservations.get(res) if node in before else None
        now = after[node].reservations.get(res) if node in after else None
        if was is None or now is None:
            return
        names = lambda r: {*r["allowedOrgIds"], *r["managingOrgIds"]}  # noqa: E731
        until = int((self.now + inv.RETENTION).timestamp())
        for org in names(was) - names(now):
            self.unnamed.setdefault(node, {})[org] = until

    def perform(self, call: Call) -> None:
        before = self.parts
        outcome = self.invoke(call)
        fresh = self.read(self.touched(call)) if self.touched(call) else {}
        after = self.parts = {**before, **fresh}
        self.tally[f"{call.function} {outcome.label}"] += 1
        say = self.problems_of(call)
        new_events = self.new_events(self.touched(call))
        if outcome.result is None:
            say(check_service_events(call, new_events))
            say(self.move_problems)
            self.move_problems = []
        else:
            say(check_answer(call, outcome.result))
            say(self.check_read(call, outcome.result, after))
            if call.replay_of is not None:
                say(check_replay(call, outcome.result, before, after, new_events))
            else:
                say(self.check_write(call, outcome.result, before, after, new_events))
        self.note_unnamed(call, outcome.result, before, after)
        for node, part in fresh.items():
            say(inv.claims_are_whole(part))
            say(inv.named_orgs_hold(part, self.now, self.unnamed.get(node, {})))
            say(inv.no_unit_sold_twice(part, self.now))
        say(inv.versions_only_grow(self.versions, fresh.values()))
        if call.function not in MAY_WITHHOLD:
            for node, part in fresh.items():
                new = inv.spot_on_withheld(part, self.now) - inv.spot_on_withheld(
                    before.get(node, inv.Partition()), self.now
                )
                say([f"spot {w} left running on {u}, withheld by {r}" for w, u, r in sorted(new)])

    def problems_of(self, call: Call) -> Callable[[list[str]], None]:
        where = (
            f"seed {self.seed} step {self.step} at {iso(self.now)}: {call.function} "
            f"as {call.role} node={call.node} res={call.reservation} units={call.unit_ids}"
            f"{' dry' if call.dry_run else ''}{' replay' if call.replay_of else ''}"
        )

        def say(problems: list[str]) -> None:
            for problem in problems:
                first, seen = self.problems.get(problem, (where, 0))
                self.problems[problem] = (first, seen + 1)

        return say

    def invoke(self, call: Call) -> Outcome:
        if call.function == "history_mover":
            return self.move()
        if call.function == "sweeper":
            counts = self.functions["sweeper"].lambda_handler({}, FakeContext())
            return Outcome("+".join(sorted(counts)) or "idle")
        if call.function == "termination_reports":
            return self.report(call)
        assert call.event is not None
        result = invoke(self.functions[call.function], copy.deepcopy(call.event))
        self.keep(call, result)
        return Outcome(str(result.status), result)

    def move(self) -> Outcome:
        """The history mover's pass, with the walk's clock: each reservation past its end
        leaves its node's partition for its history, none is lost or moved twice, and GET
        and the list answer the same before and after (readers never wait for a move)."""
        before = self.read()
        views = {node: self.views(node, before[node]) for node in self.nodes}
        event = event_file("history_mover/scheduled.json")
        counts = self.functions["history_mover"].lambda_handler(event, FakeContext())
        after = self.read()
        problems = [
            *(f"{node}: {p}" for node in self.nodes for p in check_moves(
                before[node], after[node], self.now, counts
            )),
            *(f"{node}: after the move {p}" for node in self.nodes for p in changed_views(
                views[node], self.views(node, after[node])
            )),
        ]  # fmt: skip
        self.move_problems = problems
        return Outcome(f"moved{counts['moved']}" if counts["moved"] else "idle")

    def views(self, node: str, part: inv.Partition) -> dict[str, Any]:
        """What the operator reads of the node's reservations: GET of each, every page of
        the list."""
        if part.node is None:
            return {}
        operator = auth("operator")
        got = {
            res: invoke(self.functions["get_reservation"], get_event(node, res, operator)).body
            for res in sorted(part.reservations)
        }
        pages, cursor = [], None
        while True:
            query = {"limit": "100", **({"cursor": cursor} if cursor else {})}
            page = invoke(self.functions["list_reservations"], list_event(node, operator, query))
            pages += page.body.get("items", [page.status])
            if (cursor := page.body.get("nextCursor")) is None:
                return {"get": got, "list": pages}

    def keep(self, call: Call, result: HttpResult) -> None:
        if not call.keyed or call.dry_run or call.replay_of is not None:
            return
        if 200 <= result.status < 300 or result.status in (409, 422):
            code = result.body.get("code") if result.status >= 400 else None
            if code not in NOT_KEPT:
                self.kept.append(Kept(call, result.status, result.body_text, self.now))

    def report(self, call: Call) -> Outcome:
        """The node agents: each message on the nodes' queues is reported terminated,
        gone or failed, or lost (the sweeper sends it again); some reports twice."""
        records = []
        for node in self.nodes:
            url = self.parts[node].node["queueUrl"] if self.parts[node].node else None
            for message in state.drain(self.sqs, url) if url else []:
                self.messages += 1
                roll = self.rng.random()
                if roll < 0.2:
                    continue
                outcome = "terminated" if roll < 0.7 else "gone" if roll < 0.8 else "failed"
                records += [self.report_record(message, outcome)] * (
                    2 if self.rng.random() < 0.1 else 1
                )
        if not records:
            return Outcome("none")
        event = sqs_event(records, "arn:aws:sqs:us-east-1:123456789012:TerminationReportsQueue")
        response = self.functions["termination_reports"].lambda_handler(event, FakeContext())
        return Outcome("retried" if response["batchItemFailures"] else "applied")

    def report_record(self, message: dict[str, Any], outcome: str) -> dict[str, Any]:
        report = {
            "version": 1,
            "type": "termination-report",
            "terminationId": message["terminationId"],
            "nodeId": message["nodeId"],
            "workloadId": message["workloadId"],
            "outcome": outcome,
            "reportedAt": iso(self.now),
        }
        number = self.new_id("m-")
        return {"MessageId": number, "ReceiptHandle": number, "Body": json.dumps(report)}

    # --- checks that need the walk's state ---------------------------------------------------

    def new_events(self, nodes: list[str]) -> list[dict[str, Any]]:
        """The events of the nodes' feeds that no earlier call's check saw (read where the
        call may have written: every node's every 20th call, so a stray one shows), each
        once by its id, as every reader takes them: a write answered a settle window or more
        after its event's position writes the event again, newer, with the same id (on a
        loaded machine a write can take that long)."""
        events = [e for node in nodes for e in state.events(self.db, node)]
        new: list[dict[str, Any]] = []
        for event in events:
            if event["id"] not in self.seen_events:
                self.seen_events.add(event["id"])
                new.append(event)
        return new

    def check_read(self, call: Call, result: HttpResult, after: dict[str, Any]) -> list[str]:
        if result.status != 200 or call.node not in after:
            return []
        part = after[call.node]
        if call.function == "list_units":
            return units_as_stored(result.body, part, self.now)
        if call.function == "get_reservation":
            return statuses_as_stored([result.body], part, self.now)
        if call.function == "list_reservations":
            cursor = result.body.get("nextCursor")
            query = {**((call.event or {}).get("queryStringParameters") or {}), "cursor": cursor}
            self.cursor = (call.node, call.role or "", query) if cursor else None
            return statuses_as_stored(result.body["items"], part, self.now)
        return []

    def check_write(
        self,
        call: Call,
        result: HttpResult,
        before: dict[str, inv.Partition],
        after: dict[str, inv.Partition],
        new_events: list[dict[str, Any]],
    ) -> list[str]:
        if call.function not in WRITES or not 200 <= result.status < 300:
            return [f"{call.function} {result.status} wrote {new_events}"] if new_events else []
        if call.dry_run:
            problems = [] if before == after else ["a dry run changed the table"]
            return problems + ([f"a dry run wrote {new_events}"] if new_events else [])
        problems = check_events(call, result, before, after, new_events)
        node = call.node or ""
        decide = DECISIONS.get(call.function)
        if decide is not None and node in before:
            problems += decide(call, result, before[node], after[node], self.now)
        return problems


def check_events(
    call: Call,
    result: HttpResult,
    before: dict[str, inv.Partition],
    after: dict[str, inv.Partition],
    new: list[dict[str, Any]],
) -> list[str]:
    """A 2xx write left its event, naming its subject and the caller's org and key (a PUT
    or a PATCH that changed nothing, none); a reclaim also one ``workload.termination_requested`` per
    workload it sent to terminating, and nothing else."""
    node = call.node or ""
    expected_type = EVENT_TYPE.get(call.function)
    if call.function == "put_node":
        if before.get(node) == after.get(node):
            return [f"an unchanged PUT wrote events: {new}"] if new else []
        expected_type = "node.registered" if result.status == 201 else "node.updated"
    if call.function == "update_reservation" and before.get(node) == after.get(node):
        return [f"a PATCH that changed nothing wrote events: {new}"] if new else []
    main = [e for e in new if e["type"] == expected_type]
    others = [e for e in new if e["type"] != expected_type]
    problems = [] if len(main) == 1 else [f"{len(main)} {expected_type} for one call: {new}"]
    requested = sorted(e["subject"] for e in others if e["type"] == TERMINATION_REQUESTED)
    if call.function == "reclaim" and requested != newly_terminating(before, after, node):
        problems.append(f"termination requests {requested}, expected the new terminations")
    if len(others) != (len(requested) if call.function == "reclaim" else 0):
        problems.append(f"events besides the write's: {others}")
    _, org, _ = KEYS[call.role or ""]
    for event in new:
        actor = event["data"].get("actor")
        if actor != {"orgId": org, "keyId": f"walk-{call.role}"}:
            problems.append(f"{event['type']} by {actor}, expected {org} walk-{call.role}")
        if event["source"] != f"/v1/nodes/{node}":
            problems.append(f"{event['type']} from {event['source']}, not {node}")
    if main and main[0]["subject"] != expected_subject(call, result):
        problems.append(f"{expected_type} of {main[0]['subject']}")
    return problems


TERMINATION_REQUESTED = "workload.termination_requested"


def newly_terminating(
    before: dict[str, inv.Partition], after: dict[str, inv.Partition], node: str
) -> list[str]:
    """The subjects of the workloads the call moved from running to terminating, or whose
    termination's deadline it moved earlier (a reclaim with a shorter notice)."""
    if node not in before or node not in after:
        return []
    was = before[node].workloads
    return sorted(
        f"workloads/{w['id']}"
        for w in after[node].workloads.values()
        if w["state"] == "terminating"
        and w["id"] in was
        and (was[w["id"]]["state"] == "running" or deadline(w) < deadline(was[w["id"]]))
    )


def deadline(workload: dict[str, Any]) -> datetime:
    """A terminating workload's deadline (its request, on an item from before notices)."""
    text = workload.get("terminateAt") or workload.get("terminationRequestedAt")
    return datetime.fromisoformat(text) if text else datetime.max.replace(tzinfo=UTC)


def expected_subject(call: Call, result: HttpResult) -> str:
    if call.function == "put_node":
        return f"nodes/{call.node}"
    if call.function == "create_reservation":
        return f"reservations/{result.body['id']}"
    if call.function == "place_workload":
        return f"workloads/{json.loads((call.event or {}).get('body') or '{}').get('id')}"
    if call.function == "end_workload":
        return f"workloads/{call.workload}"
    return f"reservations/{call.reservation}"


def check_moves(
    before: inv.Partition, after: inv.Partition, now: datetime, counts: dict[str, int]
) -> list[str]:
    """The node's reservations are the same ones, each once, at the same version and with
    the same content, wherever they are; none past its end is left in the partition (the
    pass had time for all), and each one moved is past its end."""
    problems = []
    if sorted(before.reservations) != sorted(after.reservations):
        problems.append(
            f"reservations {sorted(before.reservations)} -> {sorted(after.reservations)}"
        )
    history = f"NODEHIST#{before.pk.removeprefix('NODE#')}"
    for res in sorted(after.reservations):
        live, kept = (
            after.items.get((after.pk, f"RES#{res}")),
            after.items.get((history, f"RES#{res}")),
        )
        if live is not None and kept is not None:
            problems.append(f"{res} both in the partition and in the history")
        was = before.reservations.get(res)
        now_item = after.reservations[res]
        if was is not None and _content(was) != _content(now_item):
            problems.append(f"{res} changed in the move: {_content(was)} -> {_content(now_item)}")
        ends = now_item.get("endsAt")
        past = ends is not None and now >= parse_time(ends)
        if live is not None and past and not counts["deferred"]:
            problems.append(f"{res} past its end left in the partition")
        if kept is not None and (before.pk, f"RES#{res}") in before.items and not past:
            problems.append(f"{res} moved before its end")
    return problems


def _content(item: dict[str, Any]) -> dict[str, Any]:
    """A reservation item's own attributes, wherever it is (a history item's key and
    retention aside, the mover's index attribute, which only live ones carry, and the
    clock's record: its index place, and the moments the move wrote as fired)."""
    return {k: v for k, v in item.items() if k not in MOVED_APART}


MOVED_APART = {"PK", "SK", "expiresAtEpoch", "liveEnds", "clockAt", "clockShard", "clockFired"}


def changed_views(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    problems = []
    for res, got in before.get("get", {}).items():
        if after["get"].get(res) != got:
            problems.append(f"GET {res} answers {after['get'].get(res)}, before {got}")
    if before.get("list") != after.get("list"):
        problems.append(f"the list answers {after.get('list')}, before {before.get('list')}")
    return problems


CLOCK_TYPES = ("reservation.activated", "reservation.expiring", "reservation.expired")


def check_service_events(call: Call, new: list[dict[str, Any]]) -> list[str]:
    """The reports close terminations (``workload.terminated``, terminated or gone), the
    sweeper flags them (``workload.termination_stuck``): no actor, nothing else; the history
    mover writes only what the clock owed the reservations it moves (``.activated``,
    ``.expiring``, ``.expired``), each by the clock, naming its moment."""
    if call.function == "history_mover":
        owed = [e for e in new if e["type"] in CLOCK_TYPES]
        problems = [f"history_mover wrote {e['type']}" for e in new if e not in owed]
        problems += [
            f"{e['type']} not by the clock, or naming no moment"
            for e in owed
            if e["data"].get("actor") != {"system": "clock"}
            or e["data"].get("moment") not in ("startsAt", "endsAt")
        ]
        return problems
    expected = SERVICE_EVENTS.get(call.function)
    problems = [f"{call.function} wrote {e['type']}" for e in new if e["type"] != expected]
    problems += [f"{e['type']} with an actor" for e in new if "actor" in e["data"]]
    outcomes = {e["data"].get("outcome") for e in new if e["type"] == "workload.terminated"}
    if not outcomes <= {"terminated", "gone"}:
        problems.append(f"terminated with outcomes {outcomes}")
    return problems


# --- the answers ----------------------------------------------------------------------------


def check_answer(call: Call, result: HttpResult) -> list[str]:
    """Never a 5xx; every error in the contract's shape, its code the status's."""
    if result.status >= 500:
        return [f"{result.status}: {result.body_text[:300]}"]
    if result.status < 400:
        if result.status == 204 and result.body_text:
            return ["a 204 with a body"]
        return []
    try:
        body = result.body
    except ValueError:
        return [f"{result.status} with a body that is not JSON: {result.body_text[:200]}"]
    problems = []
    if not isinstance(body, dict) or not set(body) <= {"error", "code", "details", "requestId"}:
        return [f"error body not in the contract's shape: {result.body_text[:200]}"]
    if not isinstance(body.get("error"), str) or not body["error"]:
        problems.append(f"error without a message: {body}")
    if body.get("code") not in ERROR_CODES.get(result.status, set()):
        problems.append(f"{result.status} with code {body.get('code')!r}")
    for detail in body.get("details", []):
        if set(detail) != {"field", "problem"} or not all(
            isinstance(v, str) for v in detail.values()
        ):
            problems.append(f"detail not in the contract's shape: {detail}")
    if result.status == 401 and result.headers.get("www-authenticate") != "Bearer":
        problems.append("401 without WWW-Authenticate: Bearer")
    if result.headers.get("content-type") != "application/json":
        problems.append(f"error with content-type {result.headers.get('content-type')!r}")
    return problems


def units_as_stored(listed: list[dict[str, Any]], part: inv.Partition, now: datetime) -> list[str]:
    """List units says what the table holds: claims, and the governing reservation."""
    problems = []
    if sorted(u["id"] for u in listed) != sorted(part.units):
        problems.append(f"listed {[u['id'] for u in listed]}, stored {sorted(part.units)}")
    for unit in listed:
        stored = part.units.get(unit["id"])
        if stored is None:
            continue
        claimed = stored.get("claimedBy")
        if (unit["state"], unit.get("claimedBy")) != ("claimed" if claimed else "free", claimed):
            problems.append(f"{unit['id']} listed {unit['state']}, stored claim {claimed!r}")
        governing = inv.governing(part, unit["id"], now)
        expected: tuple[Any, Any] = (None, None)
        if governing:
            reservation = governing[0]
            lent = part.status(reservation, now) == "active" and (
                unit["id"] in reservation["releasedUnitIds"]
            )
            expected = (reservation["id"], lent)
        if (unit.get("reservationId"), unit.get("released")) != expected:
            problems.append(
                f"{unit['id']} listed governed by {unit.get('reservationId')} "
                f"(released {unit.get('released')}), the table says {expected}"
            )
    return problems


def statuses_as_stored(
    items: list[dict[str, Any]], part: inv.Partition, now: datetime
) -> list[str]:
    problems = []
    for item in items:
        stored = part.reservations.get(item["id"])
        if stored is None:
            problems.append(f"{item['id']} answered but not stored on the node")
        elif item["status"] != part.status(stored, now):
            expected = part.status(stored, now)
            problems.append(f"{item['id']} answered {item['status']}, effectively {expected}")
    return problems


def check_replay(
    call: Call,
    result: HttpResult,
    before: dict[str, inv.Partition],
    after: dict[str, inv.Partition],
    new_events: list[dict[str, Any]],
) -> list[str]:
    """A repeat with the same key gets the first answer byte for byte and does nothing
    (or the 404, if the key has since lost the permission or the visibility): no event."""
    problems = [] if before == after else ["a replay changed the table"]
    kept = call.replay_of
    assert kept is not None
    if result.status != 404 and (result.status, result.body_text) != (kept.status, kept.body):
        problems.append(f"replayed {result.status} {result.body_text[:120]}, first {kept.status}")
    if new_events:
        problems.append(f"a replay wrote events again: {new_events}")
    return problems


# --- what each 2xx write must have decided, by the contract ---------------------------------


def decided_capacity(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    """Release and reclaim: only while active inside the term; the named units are lent
    (release) or taken back with no spot workload left running on them (reclaim)."""
    reservation = before.reservations[call.reservation]
    problems = []
    if before.status(reservation, now) != "active" or not inv.in_term(reservation, now):
        problems.append(f"{call.function} of a {before.status(reservation, now)} reservation")
    released = set(after.reservations[call.reservation]["releasedUnitIds"])
    named = set(call.unit_ids)
    if call.function == "release" and not named <= released:
        problems.append(f"release left {sorted(named - released)} not released")
    if call.function == "reclaim":
        if named & released:
            problems.append(f"reclaim left {sorted(named & released)} released")
        running = [
            w["id"]
            for w in after.workloads.values()
            if w["tier"] == "spot" and w["state"] == "running" and named & set(w["unitIds"])
        ]
        problems += [f"reclaim left spot {w} running on a named unit" for w in running]
    return problems


def decided_cancel(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    status = before.status(before.reservations[call.reservation], now)
    return [] if status in inv.LIVE_RESERVATION else [f"cancel of a {status} reservation"]


def decided_update(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    """Only a pending or active reservation changes, and a change terminates nothing."""
    status = before.status(before.reservations[call.reservation], now)
    problems = [] if status in ("pending", "active") else [f"PATCH of a {status} reservation"]
    if before.workloads != after.workloads:
        problems.append("a PATCH changed workloads")
    return problems


def decided_reaffirm(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    status = before.status(before.reservations[call.reservation], now)
    return [] if status == "needs-review" else [f"re-affirm of a {status} reservation"]


def decided_create(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    """A term that includes now takes no unit a workload of another org holds."""
    created = after.reservations.get(result.body["id"])
    if created is None:
        return [f"201 for {result.body['id']}, which is not stored"]
    if not inv.in_term(created, now):
        return []
    holders = {u: w for w in before.live_workloads() for u in w["unitIds"]}
    return [
        f"created over {u}, held by {holders[u]['id']} of {holders[u]['orgId']}"
        for u in created["reservedUnitIds"]
        if u in holders and holders[u]["orgId"] not in created["allowedOrgIds"]
    ]


def decided_place(
    call: Call, result: HttpResult, before: Any, after: Any, now: datetime
) -> list[str]:
    """Each unit was free and open to the org at the tier (the placement table)."""
    body = result.body
    problems = []
    for unit_id in body["unitIds"]:
        unit = before.units.get(unit_id)
        if unit is None or unit.get("claimedBy"):
            problems.append(f"placed on {unit_id}, which was {unit and unit.get('claimedBy')}")
            continue
        governing = inv.governing(before, unit_id, now)
        for reservation in governing:
            status = before.status(reservation, now)
            audience = body["orgId"] in reservation["allowedOrgIds"]
            lent = unit_id in reservation["releasedUnitIds"] and body["tier"] == "spot"
            if status == "needs-review" or not (audience or lent):
                problems.append(
                    f"placed {body['tier']} on {unit_id}, governed by {reservation['id']}"
                )
        if body["tier"] == "reserved" and not any(
            body["orgId"] in r["allowedOrgIds"] and before.status(r, now) == "active"
            for r in governing
        ):
            problems.append(
                f"placed reserved on {unit_id} without an active reservation of its org"
            )
        if not governing and body["tier"] != "spot":
            problems += [
                f"placed {body['tier']} on {unit_id}, which {r['id']} holds later"
                for r in before.reservations.values()
                if unit_id in r["reservedUnitIds"]
                and before.status(r, now) in ("pending", "active")
                and not inv.in_term(r, now)
                and body["orgId"] not in r["allowedOrgIds"]
            ]
    return problems


DECISIONS: dict[str, Callable[..., list[str]]] = {
    "release": decided_capacity,
    "reclaim": decided_capacity,
    "cancel": decided_cancel,
    "update_reservation": decided_update,
    "reaffirm": decided_reaffirm,
    "create_reservation": decided_create,
    "place_workload": decided_place,
}


# --- the calls ------------------------------------------------------------------------------


def some_node(walk: Walk) -> str:
    """A registered node, now and then one that is not (yet)."""
    registered = [node for node in walk.nodes if walk.parts[node].node is not None]
    return walk.pick(registered) if walk.rng.random() < 0.97 else walk.pick(["node-d", "node-x"])


def some_reservation(walk: Walk, node: str, status: str | None = None) -> str:
    """Mostly one of the node's reservations in ``status`` (effective), else any."""
    part = walk.parts.get(node)
    known = sorted(part.reservations) if part else []
    if status is not None and part and walk.rng.random() < 0.8:
        statuses = {r: part.status(part.reservations[r], walk.now) for r in known}
        known = [r for r in known if statuses[r] == status] or known
    if not known or walk.rng.random() < 0.05:
        other = walk.pick(walk.nodes)
        known = sorted(walk.parts[other].reservations) or ["res-unknown"]
    return str(walk.pick(known))


def node_units(walk: Walk, node: str) -> list[str]:
    part = walk.parts.get(node)
    return sorted(part.units) if part and part.units else ["0000:04:00.0"]


def some_units(walk: Walk, pool: list[str], most: int = 3) -> list[str]:
    return walk.rng.sample(pool, walk.rng.randint(1, min(most, len(pool))))


def reader(walk: Walk, node: str, audience: bool = False) -> str:
    """Mostly a role that may read on the node; now and then anyone."""
    usual = [walk.owner_role(node), "operator", "broker", *(["lab"] if audience else [])]
    return walk.role_for(walk.pick(usual), 0.8)


def list_units(walk: Walk) -> Call:
    node = some_node(walk)
    role = reader(walk, node)
    return Call("list_units", list_units_event(node, auth(role)), role, node)


def get_reservation(walk: Walk) -> Call:
    node = some_node(walk)
    role, res = reader(walk, node, audience=True), some_reservation(walk, node)
    return Call("get_reservation", get_event(node, res, auth(role)), role, node, res)


def list_reservations(walk: Walk) -> Call:
    if walk.cursor and walk.rng.random() < 0.5:
        node, role, query = walk.cursor  # the same list, its next page
    else:
        node = some_node(walk)
        role = reader(walk, node, audience=True)
        query = {"limit": str(walk.rng.randint(1, 4))} if walk.rng.random() < 0.6 else {}
        if walk.rng.random() < 0.3:
            query["status"] = ",".join(walk.rng.sample(sorted(inv.LIVE_RESERVATION), 2))
    return Call("list_reservations", list_event(node, auth(role), query), role, node)


def capacity(walk: Walk, function: str) -> Call:
    node = some_node(walk)
    res = some_reservation(walk, node, status="active")
    part = walk.parts.get(node)
    stored = part.reservations.get(res) if part else None
    pool = list(stored["reservedUnitIds"]) if stored else node_units(walk, node)
    if walk.rng.random() < 0.1:
        pool = node_units(walk, node)
    if function == "reclaim" and part and walk.rng.random() < 0.7:  # where spot runs
        spot = {u for w in part.live_workloads() if w["tier"] == "spot" for u in w["unitIds"]}
        pool = sorted(spot & set(pool)) or pool
    unit_ids = sorted(some_units(walk, pool))
    role = walk.role_for(walk.pick(["broker", "broker", walk.owner_role(node), "operator"]))
    dry = walk.rng.random() < 0.2
    key = None if dry else walk.idempotency_key()
    body: dict[str, Any] = {"unitIds": unit_ids, **({"dryRun": True} if dry else {})}
    if walk.rng.random() < 0.3:
        body["reason"] = "walk"
    if function == "reclaim" and walk.rng.random() < 0.3:  # a notice: new, or moving one
        body["noticeSeconds"] = walk.pick([0, 30, 600, 3600])
    make = reclaim_event if function == "reclaim" else release_event
    event = make(node, res, body, auth(role), key)
    return Call(function, event, role, node, res, unit_ids, dry, key is not None)


def reclaim(walk: Walk) -> Call:
    return capacity(walk, "reclaim")


def release(walk: Walk) -> Call:
    return capacity(walk, "release")


def cancel(walk: Walk) -> Call:
    node = some_node(walk)
    res = some_reservation(walk, node, status=walk.pick(["pending", "active", "needs-review"]))
    role = walk.role_for(walk.owner_role(node))
    key = walk.idempotency_key()
    body = {"reason": "walk"} if walk.rng.random() < 0.5 else None
    return Call(
        "cancel",
        cancel_event(node, res, body, auth(role), key),
        role,
        node,
        res,
        keyed=key is not None,
    )


def update(walk: Walk) -> Call:
    """A PATCH, mostly by the node's owner: an end moved (now and then into the past, or
    away: open-ended), units added or removed, a new audience, a contract reference."""
    node = some_node(walk)
    status = walk.pick(["pending", "active", "active", "needs-review"])
    res = some_reservation(walk, node, status=status)
    role = walk.role_for(walk.pick([walk.owner_role(node), walk.owner_role(node), "operator"]))
    key = walk.idempotency_key()
    body: dict[str, Any] = {}
    roll = walk.rng.random()
    if roll < 0.35:
        body["endsAt"] = iso(walk.now + timedelta(minutes=walk.rng.randint(-10, 2880)))
    elif roll < 0.45:
        body["endsAt"] = None
    elif roll < 0.65:
        body["addUnitIds"] = sorted(some_units(walk, node_units(walk, node), 2))
    elif roll < 0.8:
        body["removeUnitIds"] = sorted(some_units(walk, node_units(walk, node), 1))
    elif roll < 0.9:
        body["allowedOrgIds"] = walk.pick([["org-lab"], ["org-lab", "org-spotbuyer"]])
    else:
        body["contractRef"] = walk.pick(["C-1", None])
    if walk.rng.random() < 0.2:
        body["reason"] = "walk"
    event = update_event(node, res, body, auth(role), key)
    return Call("update_reservation", event, role, node, res, keyed=key is not None)


def create(walk: Walk) -> Call:
    node = some_node(walk)
    unit_ids = sorted(some_units(walk, node_units(walk, node)))
    body: dict[str, Any] = {
        "unitIds": unit_ids,
        "allowedOrgIds": walk.pick([["org-lab"], ["org-lab"], ["org-lab", "org-spotbuyer"]]),
    }
    if walk.rng.random() < 0.8:
        body["managingOrgIds"] = ["org-broker"]
    roll = walk.rng.random()
    starts = walk.now
    if roll < 0.25:
        starts = walk.now + timedelta(minutes=walk.rng.randint(1, 6 * 60))
        body["startsAt"] = iso(starts)
    elif roll < 0.3:
        starts = walk.now - timedelta(minutes=walk.rng.choice([3, 10]))  # 10: too far back
        body["startsAt"] = iso(starts)
    if walk.rng.random() < 0.85:  # else open-ended; now and then ending before it starts
        minutes = (
            walk.rng.randint(-20, 60) if walk.rng.random() < 0.2 else walk.rng.randint(60, 1440)
        )
        body["endsAt"] = iso(starts + timedelta(minutes=minutes))
    role = walk.role_for(walk.pick([walk.owner_role(node), walk.owner_role(node), "operator"]))
    key = walk.idempotency_key()
    event = create_event(node, body, auth(role), key)
    return Call("create_reservation", event, role, node, None, unit_ids, keyed=key is not None)


def reaffirm(walk: Walk) -> Call:
    node = some_node(walk)
    res = some_reservation(walk, node, status="needs-review")
    role = walk.role_for("operator", 0.9)
    key = walk.idempotency_key()
    event = reaffirm_event(node, res, None, auth(role), key)
    return Call("reaffirm", event, role, node, res, keyed=key is not None)


def place(walk: Walk) -> Call:
    node = some_node(walk)
    part = walk.parts.get(node)
    units = node_units(walk, node)
    free = [u for u in units if part and not part.units.get(u, {}).get("claimedBy")]
    lent = (
        sorted({u for r in part.reservations.values() for u in r["releasedUnitIds"]} & set(free))
        if part
        else []
    )
    pool = free if free and walk.rng.random() < 0.75 else units
    pool = lent if lent and walk.rng.random() < 0.6 else pool
    unit_ids = sorted(some_units(walk, pool, 2))
    tier = walk.pick(["spot", "spot", "spot", "reserved", "on-demand"])
    org = {
        "spot": walk.pick(["org-spotbuyer"] * 4 + ["org-lab"]),
        "reserved": "org-lab",
        "on-demand": walk.pick(["org-walkin", "org-lab"]),
    }[tier]
    kind = walk.pick(["vm", "pod"])
    existing = sorted(part.workloads) if part else []
    workload = (
        walk.pick(existing) if existing and walk.rng.random() < 0.05 else walk.new_id(kind + "-")
    )
    body = {"id": workload, "kind": kind, "tier": tier, "orgId": org, "unitIds": unit_ids}
    role = walk.role_for("operator", 0.9)
    key = walk.idempotency_key()
    event = place_event(node, body, auth(role), key)
    return Call(
        "place_workload",
        event,
        role,
        node,
        None,
        unit_ids,
        keyed=key is not None,
        workload=workload,
    )


def end(walk: Walk) -> Call:
    node = some_node(walk)
    part = walk.parts.get(node)
    existing = sorted(part.workloads) if part else []
    workload = walk.pick(existing) if existing and walk.rng.random() < 0.9 else "vm-unknown"
    role = walk.role_for("operator", 0.9)
    key = walk.idempotency_key()
    event = end_event(node, workload, auth(role), key)
    return Call("end_workload", event, role, node, keyed=key is not None, workload=workload)


def unit_spec(unit: dict[str, Any]) -> dict[str, Any]:
    fields = (
        "id",
        "allocClass",
        "gpuModelId",
        "gpuModelName",
        "sellableGpus",
        "sellable",
        "notSellableReason",
    )
    spec = {name: unit[name] for name in fields if unit.get(name) is not None}
    return {**spec, "sellableGpus": int(unit["sellableGpus"])}


def put_node(walk: Walk) -> Call:
    node = some_node(walk)
    node = node if node in walk.nodes else "node-d"  # a node the walk reads
    part = walk.parts.get(node)
    if part is None or part.node is None:
        body = {"ownerOrgId": "org-beta", "topologyGen": 1, "units": [f.unit("0000:04:00.0")]}
    else:
        body = changed_topology(walk, part)
    role = walk.role_for("operator", 0.9)
    return Call("put_node", node_event(node, body, auth(role)), role, node)


def changed_topology(walk: Walk, part: inv.Partition) -> dict[str, Any]:
    """The stored topology, changed one way: a model, sellability, a unit more or less, the
    owner, or nothing; now and then at a stale generation."""
    assert part.node is not None
    units = [unit_spec(u) for _, u in sorted(part.units.items())]
    owner, gen = str(part.node["ownerOrgId"]), int(part.node["topologyGen"])
    change = walk.pick(["same", "model", "model", "sellable", "add", "remove", "owner", "stale"])
    target = walk.pick(units)
    if change == "model":
        target["gpuModelId"] = H200 if target["gpuModelId"] == H100 else H100
        target.pop("gpuModelName", None)
    elif change == "sellable":
        target["sellable"] = not target["sellable"]
        target.pop("notSellableReason", None)
        if not target["sellable"]:
            target["notSellableReason"] = "the walk took it"
    elif change == "add" and len(units) < 8:
        units.append(f.unit(f"0000:{0x10 + walk.counter % 0x60:02x}:00.0"))
        walk.counter += 1
    elif change == "remove" and len(units) > 2:
        units.remove(target)
    elif change == "owner":
        owner = "org-beta" if owner == "org-acme" else "org-acme"
    bump = 0 if change in ("same", "owner") else (-1 if change == "stale" else 1)
    return {"ownerOrgId": owner, "topologyGen": max(1, gen + bump), "units": units}


def reports(walk: Walk) -> Call:
    return Call("termination_reports", None)


def sweep(walk: Walk) -> Call:
    return Call("sweeper", None)


def move(walk: Walk) -> Call:
    return Call("history_mover", None)


def gone_wrong(walk: Walk) -> Call:
    """A request a careless client sends: no key, a bad body, a typo, a malformed id."""
    node = walk.pick(walk.nodes)
    res = some_reservation(walk, node)
    role = walk.pick(list(KEYS))
    roll = walk.rng.random()
    if roll < 0.25:
        return Call(
            "reclaim",
            reclaim_event(node, res, {"unitIds": ["0000:04:00.0"]}, None),
            None,
            node,
            res,
        )
    if roll < 0.5:
        event = create_event(node, '{"unitIds": [', auth(role))
        return Call("create_reservation", event, role, node)
    if roll < 0.75:
        body = {"unitIds": ["0000:04:00.0"], "dryrun": True}
        return Call("reclaim", reclaim_event(node, res, body, auth(role)), role, node, res)
    return Call("get_reservation", get_event("bad id!", res, auth(role)), role, "bad id!", res)


def replay(walk: Walk) -> Call:
    """A keyed request sent again (within the key's 24 hours)."""
    fresh = [k for k in walk.kept if walk.now - k.at < timedelta(hours=23)]
    if not fresh:
        return list_units(walk)
    kept = walk.pick(fresh)
    return dataclasses.replace(kept.call, replay_of=kept)


ACTIONS: list[tuple[Callable[[Walk], Call], int]] = [
    (list_units, 7),
    (get_reservation, 4),
    (list_reservations, 5),
    (create, 14),
    (release, 14),
    (reclaim, 12),
    (cancel, 3),
    (update, 8),
    (put_node, 5),
    (reaffirm, 3),
    (place, 14),
    (end, 5),
    (reports, 5),
    (sweep, 3),
    (move, 4),
    (gone_wrong, 3),
    (replay, 5),
]


# --- the test -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in FUNCTIONS}


@pytest.fixture
def walk_clock(
    functions: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> Iterator[WalkClock]:
    """Every function reads the walk's clock, and backs off without sleeping."""
    clock = WalkClock(START)
    for module in functions.values():
        if hasattr(module, "function") or hasattr(module, "ports"):
            swap_ports(monkeypatch, module, clock=clock, sleep=lambda _s: None)
    monkeypatch.setattr(resolver, "utc_now", clock)
    # A thousand calls' log lines (and the tracer's line for every 4xx) would drown the
    # tally and the problems; the walk judges answers and the table, not logs.
    loggers = [logging.getLogger(name) for name in ("reservations", "aws_lambda_powertools")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    yield clock
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_walk_keeps_every_invariant(aws, walk_clock, functions, monkeypatch, seed):
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    loader.load_fleet(walk_fleet(), aws, boto3.client("sqs"), at=START)
    walk = Walk(seed, aws, functions, walk_clock)
    create = functions["create_reservation"]
    swap_ports(monkeypatch, create, new_id=walk.reservation_id)
    started = time.monotonic()
    fleet_as_read = lambda: [inv.read_partition(aws, n) for n in walk.nodes]  # noqa: E731
    with inv.plain_dynamodb_answers(fleet_as_read), contextlib.redirect_stdout(io.StringIO()):
        walk.run(CALLS)  # (the output redirected: the metrics each call flushes)
    print(summary(walk, time.monotonic() - started))
    assert not walk.problems, "\n".join(
        f"{where}: {problem}" + (f" (and {times - 1} more times)" if times > 1 else "")
        for problem, (where, times) in list(walk.problems.items())[:40]
    )


def summary(walk: Walk, seconds: float) -> str:
    by_function: dict[str, Counter[str]] = {}
    for key, count in walk.tally.items():
        function, status = key.split(" ")
        by_function.setdefault(function, Counter())[status] += count
    parts = [
        f"{name} " + " ".join(f"{s}x{n}" for s, n in sorted(statuses.items()))
        for name, statuses in sorted(by_function.items())
    ]
    return (
        f"\nwalk seed {walk.seed}: {sum(walk.tally.values())} calls in {seconds:.1f} s, "
        f"{len(walk.problems)} problems, clock +{walk.now - START}, "
        f"{walk.messages} termination messages | " + "; ".join(parts)
    )
