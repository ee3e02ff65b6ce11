"""The sessions of docs/sessions.md over HTTP through `make run` with the demo fleet (node-d9's made-up
past included, as `make run` loads it): the lifecycle, create a reservation on node-c3
(starting a few seconds ahead, over the spot VM vm-31), release two units, see them
released, reclaim one, watch the node's agent free it, cancel; then a node with a long
past, its commands as docs/sessions.md has them (last: its history page keeps the emulator busy
for seconds)."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from devstack import fleet_documents as f
from reservations.kernel.times import parse_time
from tests.support.e2e import ROOT, TIMINGS, run_session, tail
from tests.support.stack import REQUEST_TIMEOUT, Stack, patient, run_stack

pytestmark = pytest.mark.e2e
OWNER = "Bearer vl_local_only_owner"
BROKER = "Bearer vl_local_only_broker"
NODE = "node-c3"
LENT = ["0000:21:00.0", "0000:22:00.0"]
FREE_WITHIN = 30  # seconds; the test's patience, not a promise


@pytest.fixture(scope="module")
def demo_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = f.demo_fleet(with_past=True)
    yield from run_stack(tmp_path_factory.mktemp("lifecycle"), fleet, consumers=True)


def call(stack: Stack, key: str, path: str, body: Any = None, method: str = "POST") -> Any:
    """A request of the lifecycle's, a POST under a key of its own: sent again once after a
    503 (and replayed if its first try had committed)."""
    keyed = {"Idempotency-Key": f"e2e-{uuid.uuid4()}"} if method == "POST" else {}
    return patient.request(
        method,
        f"{stack.api}/v1/nodes/{NODE}/reservations{path}",
        headers={"Authorization": key, **keyed},
        data=None if body is None else json.dumps(body),
    )


def units(stack: Stack, key: str = OWNER) -> dict[str, dict[str, Any]]:
    response = call(stack, key, "/units", method="GET")
    assert response.status_code == 200, response.text
    return {unit["id"]: unit for unit in response.json()}


def test_create_release_reclaim_cancel_through_the_local_api(demo_stack: Stack) -> None:
    # The stack starts each function on its first request: a body-less create (a 400 that
    # changes nothing) starts create's now, so its cold start does not eat the 5 s below.
    assert call(demo_stack, OWNER, "", {}).status_code == 400
    starts = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
    created = call(
        demo_stack,
        OWNER,
        "",
        {"unitIds": LENT, "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
         "startsAt": starts.strftime("%Y-%m-%dT%H:%M:%SZ")},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    reservation = created.json()["id"]
    assert created.json()["status"] == "pending"
    time.sleep(max(0.0, (starts - datetime.now(UTC)).total_seconds()) + 1)

    released = call(demo_stack, BROKER, f"/{reservation}/release", {"unitIds": LENT})
    assert released.status_code == 200, released.text
    assert (released.json()["status"], released.json()["releasedUnitIds"]) == ("active", LENT)
    listed = units(demo_stack, BROKER)
    for unit_id in LENT:
        assert (listed[unit_id]["reservationId"], listed[unit_id]["released"]) == (
            reservation,
            True,
        )
    assert listed[LENT[0]]["claimedBy"] == "vm:vm-31"

    reclaimed = call(demo_stack, BROKER, f"/{reservation}/reclaim", {"unitIds": [LENT[0]]})
    assert reclaimed.status_code == 200, reclaimed.text
    assert (reclaimed.json()["terminated"], reclaimed.json()["releasedUnitIds"]) == (
        ["vm-31"],
        [LENT[1]],
    )
    started = time.monotonic()
    while units(demo_stack)[LENT[0]]["state"] != "free":
        assert time.monotonic() - started < FREE_WITHIN
        time.sleep(0.5)
    TIMINGS["lifecycle: reclaim to unit free (make run)"] = time.monotonic() - started

    cancelled = call(demo_stack, OWNER, f"/{reservation}/cancel")  # no body at all
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["status"], cancelled.json()["releasedUnitIds"]) == ("cancelled", [])
    after = units(demo_stack)
    assert all("reservationId" not in after[unit_id] for unit_id in LENT)
    again = call(demo_stack, OWNER, f"/{reservation}/cancel", {})
    assert (again.status_code, again.json()["code"]) == (409, "reservation_not_active")
    # The manager of nothing live on node-c3 no longer sees it.
    assert call(demo_stack, BROKER, "/units", method="GET").status_code == 404


def session_commands(heading: str) -> str:
    """The first bash block under docs/sessions.md's ``## heading``."""
    section = (ROOT / "docs" / "sessions.md").read_text().split(f"## {heading}\n", 1)[1]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def test_a_node_with_a_long_past_answers_as_its_session_says(demo_stack: Stack) -> None:
    """The session's commands, run as written against this stack: node-d9 (3,000 ended
    reservations) and node-c3 (none) answer list units alike, a page of node-d9's history
    answers its first three, alternately expired and cancelled, with a cursor, and make run's load line says how long the load
    took."""
    commands = session_commands("A node with a long past")
    ran = run_session(
        commands.replace("http://127.0.0.1:3000", demo_stack.api), 180,
        env={**os.environ, "OWNER": f"Authorization: {OWNER}"}, strict=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    sized = dict(re.findall(r"^(node-\w+): (\d+) bytes in [\d.]+ s$", ran.stdout, re.M))
    assert set(sized) == {"node-c3", "node-d9"}, ran.stdout
    # About the same bytes: node-c3's spot VM claims a unit, node-d9's past adds nothing.
    assert abs(int(sized["node-d9"]) - int(sized["node-c3"])) < int(sized["node-c3"]) // 5
    page = json.loads(ran.stdout.splitlines()[-1])
    assert [(item["id"], item["status"]) for item in page["items"]] == [
        ("past-000001", "expired"), ("past-000002", "cancelled"), ("past-000003", "expired")
    ], ran.stdout  # fmt: skip
    assert page["nextCursor"]
    for node in ("node-c3", "node-d9"):
        answer = units_of(demo_stack, node)
        assert answer.status_code == 200, f"{answer.text}\n{demo_stack.diagnostics()}"
        assert [unit["state"] for unit in answer.json()].count("free") >= 2
    load = re.search(
        r"make run: loaded .*: \d+ nodes, \d+ items into \S+ in (\d+\.\d) s \(.*3000 generated",
        tail(demo_stack.stdout, 100_000),
    )
    assert load is not None, tail(demo_stack.stdout, 4000)
    TIMINGS["demo fleet load (make run's load line)"] = float(load.group(1))


def units_of(stack: Stack, node: str) -> requests.Response:
    return patient.get(
        f"{stack.api}/v1/nodes/{node}/reservations/units",
        headers={"Authorization": OWNER},
        timeout=REQUEST_TIMEOUT,
    )


def test_the_versions_session_runs_as_written(demo_stack: Stack) -> None:
    """docs/sessions.md's versions session with the README's API and BROKER: the tag read,
    a 304 for it, a release conditioned on it that acts (and moves it), then a reclaim
    with the same, now stale, tag: 412 and nothing done."""
    commands = session_commands("Versions: act only on what you read")
    ran = run_session(
        commands, 120, strict=False,
        env={**os.environ, "API": f"{demo_stack.api}/v1/nodes/node-a1",
             "BROKER": f"Authorization: {BROKER}"},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.split("\n", 2)
    tag, polled, rest = lines[0], lines[1], lines[2]
    assert re.fullmatch(r"[0-9a-f]{20}", tag), ran.stdout
    assert polled == "304", ran.stdout
    decoder = json.JSONDecoder()
    released, at = decoder.raw_decode(rest)
    refused, _ = decoder.raw_decode(rest[at:].lstrip())
    assert "0000:07:00.0" in released["releasedUnitIds"], ran.stdout
    assert released["etag"] != tag
    assert refused["code"] == "precondition_failed", ran.stdout
    after = patient.get(f"{demo_stack.api}/v1/nodes/node-a1/reservations/res-a-active",
                         headers={"Authorization": BROKER}, timeout=REQUEST_TIMEOUT)  # fmt: skip
    assert after.headers["ETag"] == f'"{released["etag"]}"'
    assert "0000:07:00.0" in after.json()["releasedUnitIds"]  # the reclaim did nothing


def test_the_lending_policy_session_runs_as_written(demo_stack: Stack) -> None:
    """docs/sessions.md's lending policy session with the README's API and BROKER: the
    policy set and shown, set again with nothing written (the same etag), its event,
    refused on an expired reservation, removed (204) and shown as null."""
    commands = session_commands("A lending policy")
    ran = run_session(
        commands.replace("http://127.0.0.1:3000", demo_stack.api), 120, strict=False,
        env={**os.environ, "API": f"{demo_stack.api}/v1/nodes/node-a1",
             "BROKER": f"Authorization: {BROKER}"},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    decoder, rest, answers = json.JSONDecoder(), ran.stdout, []
    for _ in range(4):
        answer, at = decoder.raw_decode(rest.lstrip())
        answers.append(answer)
        rest = rest.lstrip()[at:]
    first, again, feed, refused = answers
    removed, after = rest.lstrip().split("\n", 1)
    policy = {"auto": True, "idleSeconds": 600, "keepUnlent": 1, "noticeSeconds": 120,
              "minRunSeconds": 600, "relendAfterSeconds": 300}  # fmt: skip
    assert first["lending"] == policy, ran.stdout
    assert again == first  # nothing written: the same object, the same etag
    changes = [e["data"]["changes"] for e in feed["items"] if e["subject"].endswith("res-a-active")]
    assert {"lending": {"from": None, "to": policy}} in changes, ran.stdout
    assert (refused["code"], refused["details"]) == (
        "reservation_not_changeable", [{"field": "status", "problem": "is expired"}]
    ), ran.stdout  # fmt: skip
    assert removed == "204", ran.stdout
    shown = json.loads(after)
    assert shown["lending"] is None, ran.stdout
    assert shown["etag"] != first["etag"], ran.stdout


def test_the_lending_by_the_clock_session_runs_as_written(demo_stack: Stack) -> None:
    """docs/sessions.md's lending by the clock session: a new node reserved, lending turned
    on, and a minute later, within one local clock period (10 s, and the pass's own
    invocation), the service lends 04 by itself and keeps 05; a spot VM on 04 is promised
    the policy's notice; the lab's placement by count takes 04 back (202, waiting on the
    spot VM, terminated with that notice) and the lab's VM starts when the node reports the
    spot VM stopped, never before its terminateAt."""
    commands = session_commands("Lending by the clock")
    ran = run_session(commands.replace("http://127.0.0.1:3000", demo_stack.api), 300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    registered, rest = ran.stdout.split("\n", 1)
    assert registered == "201", ran.stdout
    decoder, answers = json.JSONDecoder(), []
    for _ in range(6):
        answer, at = decoder.raw_decode(rest.lstrip())
        answers.append(answer)
        rest = rest.lstrip()[at:]
    policy, feed, units, spot, lab, started = answers
    assert policy["lending"]["idleSeconds"] == 60, ran.stdout
    lent = [e for e in feed["items"] if e["subject"] == f"reservations/{policy['id']}"]
    assert [(e["data"]["actor"], e["data"]["unitIds"]) for e in lent] == [
        ({"system": "lending"}, ["0000:04:00.0"])
    ], ran.stdout
    waited = parse_time(lent[0]["time"]) - parse_time(policy["updatedAt"])
    print(f"\nlent {waited.total_seconds():.1f} s after the policy (idleSeconds 60)")
    # never before the minute (the policy's time is kept to the second); within the period
    # and the local pass's own invocation after it
    assert timedelta(seconds=59) <= waited <= timedelta(seconds=60 + 10 + 10), ran.stdout
    by_id = {u["id"]: u for u in units}
    assert by_id["0000:04:00.0"]["released"] is True
    assert by_id["0000:04:00.0"]["promisedNoticeSeconds"] == 30
    assert by_id["0000:05:00.0"]["released"] is False  # keepUnlent: 1
    assert (spot["state"], spot["promisedNoticeSeconds"]) == ("running", 30), ran.stdout
    assert lab["state"] == "waiting", ran.stdout
    (waiting,) = lab["waitingFor"]
    assert waiting["workloadId"] == "vm-spot"
    deadline = parse_time(waiting["terminateAt"]) - parse_time(lab["createdAt"])
    assert timedelta(seconds=29) <= deadline <= timedelta(seconds=31), ran.stdout
    (event,) = [e for e in started["items"] if e["subject"] == "workloads/vm-lab"]
    after = parse_time(event["time"]) - parse_time(waiting["terminateAt"])
    print(f"the lab's VM started {after.total_seconds():.1f} s after the spot VM's terminateAt")
    assert timedelta(0) <= after <= timedelta(seconds=30), ran.stdout


def test_the_usage_session_runs_as_written(demo_stack: Stack) -> None:
    """docs/sessions.md's usage session: the spot VM's own use once it stopped, the
    reservation's and the node's rows, each state in integer milliseconds exactly its
    events' times apart (the node feed's own events, read after the rows), the 2-GPU unit
    twice in GPU-ms, and the node's row the reservation's plus its open units."""
    commands = session_commands("Usage: a broker's lending, to the millisecond")
    ran = run_session(commands.replace("http://127.0.0.1:3000", demo_stack.api), 180)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.split("\n", 4)
    assert lines[:4] == ["201", "200", "201", "200"], ran.stdout
    decoder, rest, answers = json.JSONDecoder(), lines[4], []
    for _ in range(4):
        answer, at = decoder.raw_decode(rest.lstrip())
        answers.append(answer)
        rest = rest.lstrip()[at:]
    vm, held, node, feed = answers

    def at(kind: str) -> int:
        # once by id: a feed may hold an event twice (a write answered late is recorded again)
        (event,) = {e["id"]: e for e in feed["items"] if e["type"] == kind}.values()
        return ms(event["time"])

    registered, governs = at("node.registered"), at("reservation.created")
    # It governs its units from its creation, to the millisecond: its startsAt (kept to the
    # second) is at or before it, and so is its createdAt, which is not the event's time.
    [made] = {e["id"]: e for e in feed["items"] if e["type"] == "reservation.created"}.values()
    assert ms(made["data"]["startsAt"]) <= governs, feed
    released, placed = at("reservation.released"), at("workload.placed")
    reclaimed, terminated = at("reservation.reclaimed"), at("workload.terminated")

    def total(rows: dict[str, Any], figures: str) -> dict[str, int]:
        summed: dict[str, int] = {}
        for row in rows["items"]:
            for state, value in row[figures].items():
                summed[state] = summed.get(state, 0) + value
        return summed

    def reservation_ms(as_of: int) -> dict[str, int]:
        """04 (1 GPU): reserved, lent, used by the spot VM, reclaiming, reserved again; 05
        (2 GPUs) reserved all along: counted up to ``as_of``."""
        assert as_of > terminated
        return {
            "review": 0,
            "reclaiming": terminated - reclaimed,
            "lent_used": reclaimed - placed,
            "lent_idle": placed - released,
            "reserved_used": 0,
            "reserved_idle": (released - governs) + (as_of - terminated) + (as_of - governs),
        }

    held_as_of, node_as_of = (ms(rows["items"][-1]["asOf"]) for rows in (held, node))
    unit_ms = total(held, "unitMs")
    assert unit_ms == reservation_ms(held_as_of), (ran.stdout, feed)
    assert total(held, "gpuMs") == {**unit_ms, "reserved_idle": unit_ms["reserved_idle"]
                                    + (held_as_of - governs)}  # fmt: skip
    assert 2_000 <= unit_ms["reclaiming"] <= 15_000  # the notice, then the agent's report
    # The node's row, read a moment later: the reservation's then, plus its open units.
    node_ms = total(node, "unitMs")
    opened = {"open_used": 0, "open_idle": 2 * (governs - registered)}
    assert node_ms == {**reservation_ms(node_as_of), **opened}
    assert sum(node_ms.values()) == 2 * (node_as_of - registered)
    # The spot VM's own use: from its placement to the report, its one GPU.
    assert (ms(vm["usedFrom"]), ms(vm["usedTo"])) == (placed, terminated), vm
    assert (vm["state"], vm["gpuMs"]) == ("ended", terminated - placed), vm
    print(f"\nusage: lent_used {unit_ms['lent_used']} ms, reclaiming {unit_ms['reclaiming']} ms")


def ms(text: str) -> int:
    """An event's or a row's time in integer milliseconds since the epoch."""
    return (parse_time(text) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
