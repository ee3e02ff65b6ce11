"""The ``reservations`` command line in process, against the real functions over moto (the
demo fleet) behind API Gateway's routing: every command's output (table and JSON), exit
status, and error lines; the key is never in any output. ``--help`` of every command.

The same commands against ``make run``: tests/local/test_cli_session.py."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import typer
from typer.testing import CliRunner

from devstack import openapi
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import load_function
from reservations.kernel.aws import clients
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations_api_client.models import (
    CreateReservationRequest,
    PlaceWorkloadRequest,
    UnitsRequest,
)
from reservations_api_client.types import Unset
from reservations_client import (
    InvalidWebhook,
    NotEnoughReleased,
    PlanStale,
    PreconditionFailed,
    Reservations,
    RetryPolicy,
    verify_webhook,
)
from reservations_client.cli import app
from reservations_client.cli.settings import Settings
from reservations_client.webhooks import new_secret
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.client.conftest import Answer
from tests.support.event_table import StreamRelay
from tests.support.fleet_index import FleetStream
from tests.support.ports import swap_ports
from tests.support.wsgi import LambdaApi

pytestmark = pytest.mark.moto

ROOT = Path(__file__).resolve().parents[2]
A1, RES = "node-a1", "res-a-active"
KEYS = {kind: f"vl_local_only_{kind}" for kind in ("operator", "owner", "broker", "spotbuyer")}
NO_WAIT = RetryPolicy(sleep=lambda _: None)

EVERY_COMMAND = {
    "units", "release", "reclaim", "reservations list", "reservations get",
    "reservations create", "reservations change", "reservations cancel", "nodes get",
    "workloads list",
    "workloads get", "workloads place", "workloads end", "events list", "events tail", "webhooks create", "webhooks list",
    "webhooks get", "webhooks delete", "webhooks rotate", "webhooks deliveries",
    "webhooks delivery", "webhooks retry", "webhooks listen", "lending set", "lending show",
    "lending clear", "usage",
}  # fmt: skip


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def transport(load_fleet: Any, aws: Any, monkeypatch: pytest.MonkeyPatch) -> httpx.BaseTransport:
    """The demo fleet's stack in process: every API function behind API Gateway's routing."""
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    load_fleet(json.loads((ROOT / "fleets" / "demo.json").read_text()))
    functions = {name: load_function(name) for name in openapi.API_FUNCTIONS}
    # Read as a settle window later: no sleeping (usage: counted up to now).
    for name in ("node_events", "org_events", "list_usage"):
        swap_ports(monkeypatch, functions[name], clock=lambda: datetime.now(UTC) + SETTLE_WINDOW)
    return Quiet(httpx.WSGITransport(app=LambdaApi(functions, openapi.render(openapi.generate()))))


class Quiet(httpx.BaseTransport):
    """The functions' own prints (Powertools' metrics) kept out of the command's stdout: in
    Lambda they go to its log, never to the caller."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with contextlib.redirect_stdout(io.StringIO()):
            response = self.inner.handle_request(request)
            response.read()
        return response


Cli = Callable[..., Ran]


@pytest.fixture
def cli(transport: httpx.BaseTransport, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    """``cli(*args, key=kind)`` runs one command as that key's holder, settings from the
    environment, and checks that the key shows nowhere."""
    monkeypatch.setenv("RESERVATIONS_CONFIG_FILE", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("COLUMNS", "250")  # tables unwrapped, as on a wide terminal

    def connect(settings: Settings) -> Reservations:
        return Reservations(settings.api_url, settings.api_key, transport=transport, retry=NO_WAIT)

    def run(*args: str, key: str | None = "broker", env: dict[str, str] | None = None) -> Ran:
        settings = {"RESERVATIONS_API_URL": "http://api.test",
                    "RESERVATIONS_API_KEY": KEYS[key] if key else None}  # fmt: skip
        result = CliRunner().invoke(app, list(args), obj=connect, env=settings | (env or {}))
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        ran = Ran(result.exit_code, result.stdout, result.stderr)
        for secret in KEYS.values():
            assert secret not in ran.out + ran.err
        return ran

    return run


def command_paths(group: Any, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if hasattr(command, "commands"):
            found |= command_paths(command, path + " ")
        else:
            found[path] = command
    return found


def test_every_command_has_help():
    commands = command_paths(typer.main.get_command(app))
    assert set(commands) == EVERY_COMMAND
    for path in [*commands, "", "reservations", "events", "webhooks", "nodes", "workloads",
                 "lending"]:  # fmt: skip
        result = CliRunner().invoke(app, [*path.split(), "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: " in result.output
        assert "--help" in result.output


def test_a_brokers_session_units_dry_run_reclaim_and_its_replay(cli):
    units = cli("--output", "json", "units", A1).json()
    released = [u["id"] for u in units if u.get("released")]
    assert released == [
        "0000:04:00.0",
        "0000:05:00.0",
        "0000:06:00.0",
        "0000:08:00.0",
        "0000:09:00.0",
    ]
    table = cli("units", A1)
    assert table.code == 0
    assert "0000:04:00.0" in table.out
    assert "vm:vm-17" in table.out

    args = [
        "reclaim",
        A1,
        RES,
        "--units",
        "0000:04:00.0,0000:08:00.0",
        "--reason",
        "lab needs them",
    ]
    dry = cli("-o", "json", *args, "--dry-run").json()
    assert (dry["wouldTerminate"], dry["wouldSkip"]) == (["vm-17"], ["vm-21"])
    assert "0000:04:00.0" in dry["releasedUnitIds"]  # nothing changed
    done = cli("-o", "json", *args, "--idempotency-key", "cli-1").json()
    assert (done["terminated"], done["skipped"]) == (["vm-17"], ["vm-21"])
    assert "0000:04:00.0" not in done["releasedUnitIds"]
    assert cli("-o", "json", *args, "--idempotency-key", "cli-1").json() == done
    shown = cli(*args)
    assert shown.code == 0
    assert "terminated" in shown.out


def test_a_lending_policy_set_shown_and_cleared(cli):
    assert cli("-o", "json", "lending", "show", A1, RES).json() is None
    assert "no lending policy" in cli("lending", "show", A1, RES).out
    policy = cli("-o", "json", "lending", "set", A1, RES, "--auto", "--idle", "10m",
                 "--notice", "2m", "--min-run", "1h").json()  # fmt: skip
    assert policy == {"auto": True, "idleSeconds": 600, "keepUnlent": 0, "noticeSeconds": 120,
                      "minRunSeconds": 3600, "relendAfterSeconds": 300}  # fmt: skip
    assert cli("-o", "json", "lending", "show", A1, RES).json() == policy
    table = cli("lending", "show", A1, RES).out
    assert "noticeSeconds" in table
    assert "120" in table
    assert cli("-o", "json", "lending", "set", A1, RES, "--no-auto").json()["auto"] is False
    refused = cli("lending", "set", A1, RES, "--auto", "--idle", "30s")
    assert refused.code != 0
    assert "idleSeconds" in refused.err
    stale = cli("lending", "clear", A1, RES, "--if-match", "0123456789abcdef0123")
    assert stale.code != 0
    assert "precondition_failed" in stale.err
    assert cli("lending", "clear", A1, RES).code == 0
    assert cli("-o", "json", "lending", "show", A1, RES).json() is None
    assert cli("lending", "set", A1, RES, "--auto", key="spotbuyer").code != 0  # a stranger: 404


def test_reservations_release_nodes_and_workloads(cli):
    made = cli("-o", "json", "reservations", "create", "node-d9", "--units", "0000:41:00.0",
               "--units", "0000:42:00.0", "--allowed-orgs", "org-lab", "--managing-orgs",
               "org-broker", "--reason", "lab", key="owner").json()  # fmt: skip
    assert (made["status"], made["reservedUnitIds"]) == ("active", ["0000:41:00.0", "0000:42:00.0"])
    got = cli("-o", "json", "reservations", "get", "node-d9", made["id"], key="owner").json()
    assert got == made
    released = cli("-o", "json", "release", "node-d9", made["id"], "--units", "0000:41:00.0").json()
    assert released["releasedUnitIds"] == ["0000:41:00.0"]
    listed = cli("-o", "json", "reservations", "list", "--node", A1, "--status", "active,pending")
    assert [r["id"] for r in listed.json()] == ["res-a-active", "res-a-pending"]
    assert [r["id"] for r in cli("-o", "json", "reservations", "list", "--node", A1,
                                 "--limit", "1").json()] == ["res-a-active"]  # fmt: skip
    changed = cli("-o", "json", "reservations", "change", "node-d9", made["id"],
                  "--remove-units", "0000:42:00.0", "--open-ended", "--no-managers",
                  "--reason", "smaller", key="owner").json()  # fmt: skip
    assert (changed["reservedUnitIds"], changed["managingOrgIds"]) == (["0000:41:00.0"], [])
    assert ("endsAt" not in changed, changed["reason"]) == (True, "smaller")
    refused = cli("reservations", "change", "node-d9", made["id"], "--add-units",
                  "0000:41:00.0", key="owner")  # fmt: skip
    assert refused.code != 0
    assert "reservation_not_changeable" in refused.err
    nothing = cli("reservations", "change", "node-d9", made["id"], key="owner")
    assert nothing.code == 2  # no change given: refused before any call
    cancelled = cli("-o", "json", "reservations", "cancel", "node-d9", made["id"], "--reason",
                    "done", key="owner").json()  # fmt: skip
    assert cancelled["status"] == "cancelled"
    node = cli("-o", "json", "nodes", "get", A1, key="owner").json()
    assert node["ownerOrgId"] == "org-acme"
    workloads = cli("-o", "json", "workloads", "list", A1, key="owner").json()
    assert [w["id"] for w in workloads] == ["vm-17", "vm-18", "vm-20", "vm-21"]
    one = cli("-o", "json", "workloads", "get", A1, "vm-17", key="spotbuyer").json()
    assert (one["tier"], one["state"]) == ("spot", "running")
    assert "vm-18" in cli("workloads", "list", A1, "--state", "running", key="owner").out


class Relay:
    """The table's stream to the event relay, as Lambda's mapping hands it over, from the
    moment it is made (the demo fleet's loading, thousands of records, is behind it)."""

    def __init__(self, dynamodb: Any) -> None:
        self.stream = StreamRelay(dynamodb, load_function("event_relay"))
        pump = self.stream.pump
        shards = pump.streams.describe_stream(StreamArn=pump.stream_arn)["StreamDescription"]
        for shard in shards["Shards"]:
            pump.iterators[shard["ShardId"]] = pump.streams.get_shard_iterator(
                StreamArn=pump.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
            )["ShardIterator"]

    def run(self) -> None:
        assert self.stream.run(), "no new event in the stream"


@pytest.fixture
def relay(transport: httpx.BaseTransport, aws: Any) -> Relay:
    return Relay(aws)


def test_the_audiences_placement_takes_units_back_and_waits_then_is_ended(cli):
    """``workloads place --reservation --count``: the lab's VM on two of res-a-active's
    units: 09 (released, free) at once, and a unit under a spot VM, which is terminated, so
    the VM waits for it; the operator then gives it up with ``workloads end``, after which
    its GET shows it ended, having used nothing (it never started)."""
    placed = cli("-o", "json", "workloads", "place", A1, "vm-lab-1", "--org", "org-lab",
                 "--tier", "reserved", "--reservation", RES, "--count", "2",
                 key="operator").json()  # fmt: skip
    assert placed["state"] == "waiting", placed
    assert "0000:09:00.0" in placed["unitIds"]
    (waiting,) = placed["waitingFor"]
    assert waiting["workloadId"] in {"vm-17", "vm-18"}
    spot = cli("-o", "json", "workloads", "get", A1, waiting["workloadId"], key="operator")
    assert spot.json()["state"] == "terminating"
    reservation = cli("-o", "json", "reservations", "get", A1, RES).json()
    assert not set(placed["unitIds"]) & set(reservation["releasedUnitIds"])  # taken back
    both = cli("workloads", "place", A1, "vm-lab-2", "--org", "org-lab", "--units",
               "0000:09:00.0", "--count", "1", key="operator")  # fmt: skip
    assert both.code == 2  # refused before any call
    assert "--units or --count" in both.err
    ended = cli("workloads", "end", A1, "vm-lab-1", key="operator")
    assert ended.out.strip() == "vm-lab-1 ended"
    gone = cli("-o", "json", "workloads", "get", A1, "vm-lab-1", key="operator").json()
    assert (gone["state"], gone["gpuMs"], gone["usedFrom"]) == ("ended", 0, gone["usedTo"])


def test_a_reclaim_by_count_planned_first_then_applied(cli):
    """The broker plans three units by count with 2 minutes of notice, applies the plan (its
    notice with it), and a second apply is stale; a count's real run gets its key from the
    command (one made for the call)."""
    plan = cli("-o", "json", "reclaim", A1, RES, "--count", "3", "--notice", "2m", "--dry-run")
    plan = plan.json()
    assert len(plan["reclaimedUnitIds"]) == 3
    assert plan["planExpiresAt"]
    done = cli("-o", "json", "reclaim", A1, RES, "--plan", plan["planId"]).json()
    assert done["reclaimedUnitIds"] == plan["reclaimedUnitIds"]
    assert done["terminated"] == plan["wouldTerminate"] == ["vm-18"]
    # The plan's notice: vm-18 is due two minutes after the apply, as its answer says.
    workload = cli("-o", "json", "workloads", "get", A1, "vm-18", key="spotbuyer").json()
    requested = datetime.fromisoformat(workload["termination"]["requestedAt"])
    assert workload["termination"]["terminateAt"] == done["terminateAt"]
    assert datetime.fromisoformat(done["terminateAt"]) - requested == timedelta(minutes=2)
    again = cli("reclaim", A1, RES, "--plan", plan["planId"])
    assert again.code == 1
    assert "code: plan_stale" in again.err
    more = cli("-o", "json", "reclaim", A1, RES, "--count", "1", "--notice", "90").json()
    assert len(more["reclaimedUnitIds"]) == 1
    assert more["terminateAt"]
    assert not set(more["reclaimedUnitIds"]) & set(done["reclaimedUnitIds"])


def test_the_count_and_plan_session_runs_through_the_typed_client(transport):
    """docs/sessions.md's "A broker takes units back by count, with the plan first", call
    by call, with its bodies and keys."""
    as_ = {kind: Reservations("http://api.test", KEYS[kind], transport=transport, retry=NO_WAIT)
           for kind in ("owner", "broker", "operator")}  # fmt: skip
    c3 = "node-c3"
    res = as_["owner"].create_reservation(c3, CreateReservationRequest(
        unit_ids=["0000:22:00.0", "0000:23:00.0"], allowed_org_ids=["org-lab"],
        managing_org_ids=["org-broker"])).id  # fmt: skip
    broker = as_["broker"]
    broker.release(c3, res, UnitsRequest(unit_ids=["0000:22:00.0", "0000:23:00.0"]))
    as_["operator"].place_workload(c3, PlaceWorkloadRequest(
        id="vm-c3-spot", kind="vm", tier="spot", org_id="org-spotbuyer",
        unit_ids=["0000:23:00.0"]))  # fmt: skip
    plan = broker.reclaim_count(c3, res, 2, notice_seconds=120, dry_run=True)
    assert (plan.reclaimed_unit_ids, plan.would_terminate) == (
        ["0000:22:00.0", "0000:23:00.0"], ["vm-c3-spot"])  # fmt: skip
    assert isinstance(plan.plan_id, str)
    assert isinstance(plan.terminate_at, Unset)  # a dry run has no deadline yet
    done = broker.apply_plan(c3, res, plan.plan_id, reason="the lab needs both",
                             idempotency_key="c3-plan-1")  # fmt: skip
    assert (done.released_unit_ids, done.terminated, done.skipped) == ([], ["vm-c3-spot"], [])
    assert done.reclaimed_unit_ids == ["0000:22:00.0", "0000:23:00.0"]
    # The plan's notice: the VM is due 120 s after the apply's commit, as the answer says.
    termination = as_["operator"].get_workload(c3, "vm-c3-spot").termination
    assert not isinstance(termination, Unset)
    due, asked = termination.terminate_at, termination.requested_at
    assert isinstance(due, datetime)
    assert isinstance(asked, datetime)
    assert (due, due - asked) == (done.terminate_at, timedelta(seconds=120))
    again = broker.apply_plan(c3, res, plan.plan_id, reason="the lab needs both",
                              idempotency_key="c3-plan-1")  # fmt: skip
    assert again.to_dict() == done.to_dict()  # the same key: the first answer
    with pytest.raises(PlanStale, match=r"reservation res-\S+ changed since the plan"):
        broker.apply_plan(c3, res, plan.plan_id)
    # The typed client makes a key for every write; the session's curl sends none.
    with httpx.Client(transport=transport, base_url="http://api.test") as raw:
        keyless = raw.post(f"/v1/nodes/{c3}/reservations/{res}/reclaim", json={"count": 1},
                           headers={"Authorization": f"Bearer {KEYS['broker']}"})  # fmt: skip
    assert (keyless.status_code, keyless.json()["code"]) == (400, "invalid_request")
    assert "send an Idempotency-Key" in keyless.json()["error"]
    with pytest.raises(NotEnoughReleased, match="has 0 released units"):
        broker.reclaim_count(c3, res, 1, idempotency_key="c3-count-1")
    assert as_["owner"].cancel(c3, res, None).status == "cancelled"


def test_reclaim_with_notice_answers_the_deadline_the_workload_shows(cli):
    args = ["reclaim", A1, RES, "--units", "0000:04:00.0", "--notice", "2m"]
    answer = cli("-o", "json", *args).json()
    assert answer["terminated"] == ["vm-17"]
    assert "0000:04:00.0" not in answer["releasedUnitIds"]  # taken back at once
    workload = cli("-o", "json", "workloads", "get", A1, "vm-17", key="spotbuyer").json()
    termination = workload["termination"]
    assert termination["terminateAt"] == answer["terminateAt"]
    requested = datetime.fromisoformat(termination["requestedAt"])
    assert datetime.fromisoformat(answer["terminateAt"]) - requested == timedelta(minutes=2)
    for bad in ("soon", "1d", "-5", "1.5m"):
        ran = cli(*args[:-1], bad)
        assert (ran.code, "--notice" in ran.err) == (2, True), bad
    too_long = cli("reclaim", A1, RES, "--units", "0000:05:00.0", "--notice", "2h")
    assert too_long.code != 0
    assert "noticeSeconds" in too_long.err  # the API's 400 names the field


def test_events_list_and_tail_after_a_reclaim(cli, relay):
    cli("reclaim", A1, RES, "--units", "0000:04:00.0", "--reason", "lab needs them")
    relay.run()
    node_feed = cli("-o", "json", "events", "list", "--node", A1).json()
    assert {e["type"] for e in node_feed[-2:]} == {"reservation.reclaimed",
                                                   "workload.termination_requested"}  # fmt: skip
    org_feed = cli("-o", "json", "events", "list", "--types", "reservation.reclaimed").json()
    assert [e["subject"] for e in org_feed] == [f"reservations/{RES}"]
    assert org_feed[0]["data"]["reason"] == "lab needs them"
    tail = cli("events", "tail", "--after", "2020-01-01T00:00:00Z", key="spotbuyer")
    assert tail.code == 0
    assert "workload.termination_requested" in tail.out
    assert "workloads/vm-17" in tail.out
    lines = cli("-o", "json", "events", "tail", "--after", "2020-01-01T00:00:00Z",
                key="spotbuyer").out.splitlines()  # fmt: skip
    assert [json.loads(line)["type"] for line in lines] == ["workload.termination_requested"]
    assert cli("-o", "json", "events", "tail").out == ""  # from now: nothing new yet


def test_webhooks_create_list_get_rotate_deliveries_delete(cli):
    made = cli("-o", "json", "webhooks", "create", "--url", "https://hooks.example.com/r",
               "--types", "reservation.reclaimed", "--description", "ours").json()  # fmt: skip
    assert made["secret"].startswith("whsec_")
    assert made["types"] == ["reservation.reclaimed"]
    listed = cli("-o", "json", "webhooks", "list").json()
    assert [s["id"] for s in listed] == [made["id"]]
    assert "secret" not in listed[0]
    got = cli("-o", "json", "webhooks", "get", made["id"]).json()
    assert (got["url"], got["description"]) == ("https://hooks.example.com/r", "ours")
    rotated = cli("-o", "json", "webhooks", "rotate", made["id"]).json()
    assert rotated["secret"].startswith("whsec_")
    assert rotated["secret"] != made["secret"]
    assert cli("-o", "json", "webhooks", "deliveries", made["id"]).json() == []
    missing = cli("webhooks", "retry", made["id"], "evt-nothing")
    assert missing.code == 1
    assert "code: not_found" in missing.err
    unknown = cli("webhooks", "delivery", made["id"], "evt-nothing")
    assert (unknown.code, unknown.out) == (1, "")
    assert "code: not_found  status: 404" in unknown.err
    deleted = cli("webhooks", "delete", made["id"])
    assert (deleted.code, deleted.err.strip()) == (0, f"deleted {made['id']}")
    gone = cli("webhooks", "get", made["id"])
    assert gone.code == 1
    assert "code: not_found  status: 404  request id: " in gone.err


def test_an_api_error_exits_1_with_its_code_and_request_id(cli):
    hidden = cli("units", "node-nowhere")
    assert (hidden.code, hidden.out) == (1, "")
    assert hidden.err.startswith("error: ")
    request_id = hidden.err.split("request id: ")[1].split()[0]
    assert request_id not in ("", "-")
    refused = cli("reclaim", A1, RES, "--units", "0000:0c:00.0")
    assert refused.code == 1
    assert "code: units_not_in_reservation  status: 422" in refused.err
    bad = cli("reservations", "create", A1, "--units", "nonsense", "--allowed-orgs", "org-lab",
              key="owner")  # fmt: skip
    assert bad.code == 1
    assert "code: invalid_request" in bad.err
    assert "unitIds[0]:" in bad.err  # the details, field by field
    nobody = cli("units", A1, env={"RESERVATIONS_API_KEY": "vl_local_only_nobody"})
    assert "code: unauthorized  status: 401" in nobody.err
    assert "vl_local_only_nobody" not in nobody.out + nobody.err


def test_a_usage_error_is_refused_before_any_call(cli):
    for args, named in [
        (["reclaim", A1, RES, "--count", "2", "--units", "0000:04:00.0"], "--count"),
        (["reclaim", A1, RES, "--count", "0"], "--count"),
        (["reclaim", A1, RES, "--plan", "p", "--dry-run"], "--dry-run"),
        (["reclaim", A1, RES, "--plan", "p", "--notice", "2m"], "--notice"),  # the plan's own
        (["reclaim", A1, RES, "--plan", "p", "--if-match", "*"], "--if-match"),
        (["reclaim", A1, RES, "--units", "0000:04:00.0", "--notice", "soon"], "--notice"),
        (["reservations", "list", "--ends-after", "soon"], "--ends-after"),
        (["reclaim", A1, RES], "--units"),
        (["events", "list", "--after", "yesterday"], "--after"),
        (["events", "tail", "--after", "2026-12-01T00:00:00"], "--after"),  # no offset
    ]:
        ran = cli(*args)
        assert ran.code == 2, args
        assert named in ran.err, args
    units = cli("-o", "json", "units", A1).json()
    assert [u["id"] for u in units if u.get("released")][:1] == ["0000:04:00.0"]  # untouched


def test_settings_from_a_profile_and_their_absence(cli, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[broker]\napi_url = "http://api.test"\napi_key = "vl_local_only_broker"\n'
                      '[default]\napi_url = "http://api.test"\napi_key = "vl_nobody"\n')  # fmt: skip
    as_file = {"RESERVATIONS_CONFIG_FILE": str(config)}
    ran = cli("-o", "json", "--profile", "broker", "units", A1, key=None, env=as_file)
    assert ran.code == 0
    assert len(ran.json()) == 9
    by_default = cli("units", A1, key=None, env={**as_file, "RESERVATIONS_API_URL": ""})
    assert "code: unauthorized" in by_default.err  # [default] is used, with its bad key
    chosen = cli("units", A1, key=None, env={**as_file, "RESERVATIONS_PROFILE": "broker"})
    assert chosen.code == 0
    unknown = cli("--profile", "nobody", "units", A1, key=None, env=as_file)
    assert (unknown.code, unknown.err.strip()) == (2, f"error: no profile [nobody] in {config}")
    none = cli("units", A1, key=None)
    assert none.code == 2
    assert "RESERVATIONS_API_URL and RESERVATIONS_API_KEY" in none.err


def test_listen_refuses_any_target_but_loopback(cli, monkeypatch):
    def interrupted(seconds: float) -> None:  # a listen that started would end at its first wait
        raise KeyboardInterrupt

    monkeypatch.setattr("time.sleep", interrupted)
    for target in ["http://10.0.0.7:8000/hook", "http://hooks.example.com/x",
                   "http://127.0.0.1.example.com/x", "ftp://127.0.0.1/x", "http://2130706433/",
                   "127.0.0.1:8000"]:  # fmt: skip
        ran = cli("webhooks", "listen", "--forward-to", target)
        assert ran.code == 2, target
        assert "--forward-to" in ran.err, target
        assert "signing secret" not in ran.out  # refused before anything started


def test_listen_forwards_each_new_event_signed_with_the_secret_it_prints(
    cli, relay, transport, stand_in, monkeypatch
):
    """While listen waits at the feed's end, a reclaim lands; its events reach the receiver on
    127.0.0.1 signed with the printed secret; Ctrl-C at the next wait ends it with status 0."""
    stand_in.answers(Answer(204))
    polls: list[float] = []

    def a_poll_goes_by(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 1:
            broker = Reservations("http://api.test", KEYS["broker"], transport=transport)
            broker.reclaim(A1, RES, UnitsRequest(unit_ids=["0000:04:00.0"], reason="lab"))
            relay.run()
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr("time.sleep", a_poll_goes_by)
    ran = cli("webhooks", "listen", "--forward-to", f"{stand_in.url}/hooks", "--poll", "1")
    assert ran.code == 0
    assert "waiting for new events" in ran.err
    assert ran.err.strip().endswith("stopped")
    secret = ran.out.splitlines()[0].split("signing secret: ")[1]
    assert [s.path for s in stand_in.seen] == ["/hooks", "/hooks"]
    events = [verify_webhook(s.body, s.headers, secret) for s in stand_in.seen]
    assert {e.type_ for e in events} == {"reservation.reclaimed", "workload.termination_requested"}
    for event in events:
        assert f"{event.id}  204" in ran.out.replace(f"{event.type_}  ", "")
    with pytest.raises(InvalidWebhook):
        verify_webhook(stand_in.seen[0].body, stand_in.seen[0].headers, new_secret())


def test_release_and_cancel_act_only_on_the_version_given(cli):
    got = cli("-o", "json", "reservations", "get", A1, RES).json()
    args = ["release", A1, RES, "--units", "0000:07:00.0"]  # the one unit not lent
    stale = cli(*args, "--if-match", "0" * 20)
    assert stale.code != 0
    assert "precondition_failed" in stale.err
    # Lending a unit already lent changes nothing, and so keeps the version.
    again = ["release", A1, RES, "--units", "0000:05:00.0", "--if-match", got["etag"]]
    assert cli("-o", "json", *again).json()["etag"] == got["etag"]
    released = cli("-o", "json", *args, "--if-match", got["etag"]).json()
    assert "0000:07:00.0" in released["releasedUnitIds"]
    assert released["etag"] != got["etag"]
    refused = cli("reservations", "cancel", A1, RES, "--if-match", got["etag"], key="owner")
    assert (refused.code != 0, "precondition_failed" in refused.err) == (True, True)
    cancelled = cli("-o", "json", "reservations", "cancel", A1, RES, "--if-match",
                    released["etag"], key="owner").json()  # fmt: skip
    assert cancelled["status"] == "cancelled"


def test_the_typed_client_polls_by_version_and_names_the_current_one_on_a_412(transport):
    broker = Reservations("http://api.test", KEYS["broker"], transport=transport, retry=NO_WAIT)
    got = broker.get_reservation(A1, RES)
    assert broker.get_reservation_if_changed(A1, RES, got.etag) is None  # 304
    lend = UnitsRequest(unit_ids=["0000:07:00.0"])
    with pytest.raises(PreconditionFailed) as refused:
        broker.release(A1, RES, lend, if_match="0" * 20)
    assert (refused.value.status, refused.value.etag) == (412, got.etag)
    done = broker.release(A1, RES, lend, if_match=got.etag)
    changed = broker.get_reservation_if_changed(A1, RES, got.etag)
    assert changed is not None
    assert changed.etag == done.etag != got.etag


def test_reservations_list_without_a_node_lists_the_fleet_soonest_end_first(cli, aws):
    FleetStream(aws).run()  # the stream's indexer, as the stack runs it after the load
    mine = cli("-o", "json", "reservations", "list", key="broker").json()
    assert mine  # the broker manages reservations on several nodes
    assert len({r["nodeId"] for r in mine}) > 1
    ends = [r.get("endsAt", "~") for r in mine]
    assert ends == sorted(ends)
    assert {r["status"] for r in mine} <= {"pending", "active", "needs-review"}
    assert all("org-broker" in r["managingOrgIds"] + r["allowedOrgIds"] for r in mine)
    one = cli("-o", "json", "reservations", "list", "--node-id", mine[0]["nodeId"],
              "--role", "managing", "--limit", "1", key="broker").json()  # fmt: skip
    assert [r["id"] for r in one] == [mine[0]["id"]]
    bad = cli("reservations", "list", "--ends-before", "tomorrow", key="broker")
    assert bad.code == 2


def test_tables_for_people_fit_80_columns_and_json_keeps_the_apis_times(cli, relay, aws):
    """Every list of the demo fleet, as a person sees it in an 80-column terminal: a heading,
    then one line per record, none longer than 80; -o json is the API's JSON (times with Z)."""
    cli("reclaim", A1, RES, "--units", "0000:04:00.0", "--reason", "lab needs them")
    relay.run()
    FleetStream(aws).run()
    narrow = {"COLUMNS": "80"}
    for args, key in [
        (["units", A1], "broker"),
        (["reservations", "list", "--node", A1], "broker"),
        (["reservations", "list"], "broker"),
        (["events", "list", "--node", A1], "broker"),
        (["events", "list"], "spotbuyer"),
        (["workloads", "list", A1], "owner"),
    ]:
        listed = cli("-o", "json", *args, key=key).json()
        assert listed, args
        lines = cli(*args, key=key, env=narrow).out.splitlines()
        assert max(len(line) for line in lines) <= 80, (args, lines)
        assert len(lines) == 1 + len(listed), (args, lines)  # one line a row
        assert "+00:00" not in json.dumps(listed), args
    units = cli("units", A1, env=narrow).out.splitlines()
    assert units[0].split() == ["id", "model", "GPUs", "state", "claimed", "by", "reservation",
                                "lent"]  # fmt: skip
    assert units[2].split() == ["0000:05:00.0", "nvidia-h100-sxm5-80gb", "1", "claimed",
                                "vm:vm-18", RES, "yes"]  # fmt: skip
    got = cli("-o", "json", "reservations", "get", A1, RES).json()
    assert got["updatedAt"].endswith("Z")
    assert got == cli("reservations", "get", A1, RES, "-o", "json").json()  # -o after it too
    feed = cli("-o", "json", "events", "list", "--node", A1).json()
    assert all(e["time"].endswith("Z") and len(e["time"]) == 24 for e in feed)  # .mmmZ
    rows = list(csv.DictReader(io.StringIO(cli("-o", "csv", "units", A1).out)))
    assert [row["id"] for row in rows] == [u["id"] for u in cli("-o", "json", "units", A1).json()]


def test_usage_of_the_demo_fleet_and_the_apis_400_for_a_period_off_whole_days(cli):
    """The owner's nodes counted since the fleet's load: a row a node, its utilization in
    the table as its GPU-ms in the JSON give it; by reservation, the broker's; a chart within
    80 columns; and a period that does not start on a whole UTC day refused by the API."""
    today = datetime.now(UTC).date()
    period = ["--from", str(today - timedelta(days=1)), "--to", str(today + timedelta(days=1)),
              "--node", "node-a1,node-c3", "--node", "node-d9"]  # fmt: skip
    rows = cli("-o", "json", "usage", *period, key="owner").json()
    assert [r["nodeId"] for r in rows] == ["node-a1", "node-c3", "node-d9"]  # org-acme's
    assert all(r["start"] == f"{today}T00:00:00Z" and r["final"] is False for r in rows)
    used = ("reclaiming", "lent_used", "reserved_used", "open_used")
    table = cli("usage", *period, key="owner", env={"COLUMNS": "80"}).out.splitlines()
    assert len(table) == 1 + len(rows)
    assert max(len(line) for line in table) <= 80
    for line, row in zip(table[1:], rows, strict=True):
        gpu = row["gpuMs"]
        assert sum(gpu.values()) > 0
        share = (Decimal(sum(gpu[s] for s in used) * 100) / sum(gpu.values())).quantize(
            Decimal("0.1"), rounding=ROUND_HALF_UP)  # fmt: skip
        assert line.split() == [row["nodeId"], str(today), *line.split()[2:4], f"{share}%", "no"]
    held = cli("-o", "json", "usage", *period, "--group-by", "reservation").json()
    assert {r["reservationId"] for r in held} >= {RES}  # the broker manages it
    governed = {"review", "reclaiming", "lent_used", "lent_idle", "reserved_used", "reserved_idle"}
    assert all(set(r["unitMs"]) == set(r["gpuMs"]) == governed for r in held)
    chart = cli("usage", *period, "--chart", key="owner", env={"COLUMNS": "80"}).out.splitlines()
    assert max(len(line) for line in chart) <= 80
    assert chart[1].startswith(f"{today}*")
    bad = cli("usage", "--from", f"{today}T12:00:00Z", "--to", str(today + timedelta(days=1)),
              key="owner")  # fmt: skip
    assert (bad.code, bad.out) == (1, "")
    assert bad.err.startswith("error: from must be a whole UTC day (granularity day)\n")
    assert "code: invalid_request  status: 400" in bad.err
    assert "  from: must be a whole UTC day (granularity day)" in bad.err
