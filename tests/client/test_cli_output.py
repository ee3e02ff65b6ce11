"""What the command line prints, apart from any API: each kind of record's table fitted to an
80-column terminal, one line per row (the longest values the API gives, long ids never cut);
``wide`` with every field; CSV; JSON with the API's ``Z`` times; the root's options after a
command as before it; shell completion installed by ``--install-completion``."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from reservations_api_client.models import Event, Reservation
from reservations_client import NO_RETRIES, Reservations
from reservations_client.cli import app, views
from reservations_client.cli.output import Output, View, fitted_table, show_records
from reservations_client.cli.session import root_options_first
from reservations_client.cli.settings import Settings
from reservations_client.wire import api_json, zulu

NOW = datetime(2031, 10, 29, 0, 0, tzinfo=UTC)
RES_ID = "res-" + "k" * 20  # as the API makes them
EVENT_ID = "evt-01jdx8m2k4q7r9t3v5w7y9a1c3"


def unit(number: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"0000:{number:02x}:00.0", "allocClass": "vfio-group",
            "gpuModelId": "nvidia-h100-sxm5-80gb", "sellableGpus": 1, "state": "free",
            "reservable": True} | fields  # fmt: skip


def reservation(**fields: Any) -> dict[str, Any]:
    return {"id": RES_ID, "nodeId": "node-a1", "status": "active",
            "startsAt": "2026-11-01T00:00:00Z", "endsAt": "2031-11-01T00:00:00Z",
            "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
            "reservedUnitIds": [f"0000:{n:02x}:00.0" for n in range(4, 9)],
            "releasedUnitIds": ["0000:04:00.0", "0000:05:00.0"],
            "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-02T00:00:00Z",
            "etag": "0" * 20} | fields  # fmt: skip


def event(kind: str, subject: str, actor: dict[str, str]) -> dict[str, Any]:
    return {"specversion": "1.0", "id": EVENT_ID, "type": kind, "source": "/v1/nodes/node-a1",
            "subject": subject, "time": "2031-10-28T05:08:47.123Z",
            "datacontenttype": "application/json", "data": {"actor": actor}}  # fmt: skip


# The widest of each: the longest model, states, statuses, times, ids and event types.
UNITS = [
    unit(4, state="claimed", claimedBy="vm:vm-17", reservationId="res-a-active", released=True),
    unit(5, gpuModelId="nvidia-h100-sxm5-80gb-with-a-much-longer-model-name", state="claimed",
         claimedBy="pod:training-job-7f9c2d1b-worker-0003", reservationId=RES_ID, released=True),
    unit(6, reservationId=RES_ID, released=False),
    unit(7, sellableGpus=8, state="a-state-not-known-yet", reservable=False),
]  # fmt: skip
RESERVATIONS = [
    reservation(),
    reservation(status="needs-review", endsAt="2030-11-02T00:00:00Z",
                nodeId="node-gpu-rack-17-slot-3"),
    reservation(status="pending", endsAt="2031-10-29T03:00:00Z"),
    reservation(status="expired", endsAt="2031-10-28T23:59:30Z"),
    {k: v for k, v in reservation(status="active").items() if k != "endsAt"},
]  # fmt: skip
EVENTS = [
    event("reservation.needs_review", f"reservations/{RES_ID}", {"orgId": "org-broker"}),
    event("workload.termination_requested", "workloads/vm-17", {"orgId": "org-broker"}),
    event("workload.termination_stuck", "workloads/training-job-7f9c2d1b-worker-0003",
          {"system": "sweeper"}),
    event("reservation.expiring", f"reservations/{RES_ID}", {"system": "clock"}),
    event("node.updated", "nodes/node-gpu-rack-17-slot-3",
          {"orgId": "org-platform-operations-team"}),
    event("workload.started", "nodes/node-a1", {}),
]  # fmt: skip
WORKLOADS = [
    {"id": "training-job-7f9c2d1b-worker-0003", "nodeId": "node-a1", "kind": "pod",
     "tier": "on-demand", "orgId": "org-spotbuyer-with-a-long-name", "unitIds": ["0000:04:00.0"],
     "state": "terminating", "createdAt": "2031-10-28T05:08:12Z"},
]  # fmt: skip
HOOKS = [
    {"id": "whsub-" + "a" * 20, "url": "https://hooks.example.com/reservations/" + "x" * 60,
     "status": "disabled", "types": ["workload.termination_requested", "reservation.reclaimed"],
     "createdAt": "2031-10-28T00:00:00Z"},
    {"id": "whsub-" + "b" * 20, "url": "https://a.example/in", "status": "active",
     "createdAt": "2031-10-28T00:00:00Z"},
]  # fmt: skip
DELIVERIES = [
    {"eventId": EVENT_ID, "type": "workload.termination_requested", "attempt": 12,
     "at": "2031-10-28T05:08:48Z", "state": "delivered", "status": 204},
    {"eventId": EVENT_ID, "type": "workload.termination_requested", "attempt": 11,
     "at": "2031-10-28T05:08:40Z", "state": "failed", "status": 503,
     "error": "the endpoint answered 503 Service Unavailable after 10 s",
     "nextAttemptAt": "2031-10-28T06:08:40Z"},
]  # fmt: skip
TABLES = [
    (views.UNITS, UNITS), (views.RESERVATIONS, RESERVATIONS), (views.EVENTS, EVENTS),
    (views.WORKLOADS, WORKLOADS), (views.SUBSCRIPTIONS, HOOKS), (views.DELIVERIES, DELIVERIES),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "clock", lambda: NOW)


def rendered(view: View, records: list[dict[str, Any]], width: int = 80) -> list[str]:
    console = Console(width=width, file=io.StringIO(), soft_wrap=False, color_system=None)
    console.print(fitted_table(records, view, width))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return [line.rstrip() for line in text.splitlines()]


@pytest.mark.parametrize(("view", "records"), TABLES, ids=lambda x: "")
def test_each_table_fits_80_columns_one_line_a_row_its_ids_whole(view, records):
    lines = rendered(view, records)
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert len(lines) == 1 + len(records), "\n".join(lines)  # a heading, then a line a row
    assert lines[0].split()[0] == view.columns[0].heading
    for line, record in zip(lines[1:], records, strict=True):
        first = record.get("id") or record.get("eventId")
        if view is not views.EVENTS:
            assert first in line, line  # the id a person copies is never cut


def test_the_tables_for_people_read_as_a_person_reads():
    units = rendered(views.UNITS, UNITS[:1])
    assert units[0].split() == ["id", "model", "GPUs", "state", "claimed", "by", "reservation",
                                "lent"]  # fmt: skip
    assert units[1].split() == ["0000:04:00.0", "nvidia-h100-sxm5-80gb", "1", "claimed",
                                "vm:vm-17", "res-a-active", "yes"]  # fmt: skip
    usual = [RESERVATIONS[0], *RESERVATIONS[2:]]  # not the widest together
    reservations = rendered(views.RESERVATIONS, usual)
    assert reservations[0].split() == ["id", "node", "status", "ends", "units/lent"]
    assert "in 3d (2031-11-01 00:00Z)" in reservations[1]
    assert reservations[1].endswith("5/2")
    assert "in 3h (2031-10-29 03:00Z)" in reservations[2]
    assert "30s ago (2031-10-28 23:59Z)" in reservations[3]
    assert reservations[4].split()[2:] == ["active", "5/2"]  # no end: nothing in "ends"
    events = rendered(views.EVENTS, [EVENTS[0], EVENTS[1], EVENTS[3], EVENTS[5]])
    assert events[0].split() == ["time", "type", "subject", "actor"]
    assert events[1].split() == ["18h", "ago", "reservation.needs_review", RES_ID, "org-broker"]
    assert events[2].split()[2:] == ["workload.termination_requested", "vm-17", "org-broker"]
    assert events[3].split()[2:] == ["reservation.expiring", RES_ID, "clock"]
    assert events[4].split()[2:] == ["workload.started", "nodes/node-a1"]  # not its kind


def test_a_value_too_long_is_cut_with_an_ellipsis_never_wrapped():
    lines = rendered(views.SUBSCRIPTIONS, HOOKS)
    assert "https://hooks.example.com/reservat" in lines[1]
    assert "…" in lines[1]
    assert "x" * 60 not in lines[1]


def show(output: Output, view: View, records: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        show_records(output, records, view)
    return buffer.getvalue()


def test_wide_shows_every_field_one_line_a_row_csv_every_field_as_the_api_gave_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    wide = show(Output.wide, views.RESERVATIONS, RESERVATIONS).splitlines()
    assert len(wide) == 1 + len(RESERVATIONS)
    for name in RESERVATIONS[0]:
        assert name in wide[0]
    assert wide[0].split()[:5] == ["id", "nodeId", "status", "startsAt", "endsAt"]
    rows = list(csv.DictReader(io.StringIO(show(Output.csv, views.UNITS, UNITS))))
    assert [row["id"] for row in rows] == [u["id"] for u in UNITS]
    assert (rows[0]["released"], rows[0]["reservable"], rows[3]["released"]) == (
        "true", "true", "")  # fmt: skip
    listed = list(csv.DictReader(io.StringIO(show(Output.csv, views.RESERVATIONS, RESERVATIONS))))
    assert listed[0]["reservedUnitIds"].split() == RESERVATIONS[0]["reservedUnitIds"]
    assert listed[0]["endsAt"] == "2031-11-01T00:00:00Z"
    assert json.loads(show(Output.json, views.EVENTS, EVENTS)) == EVENTS


def test_json_times_are_the_apis_own_text():
    for text in ["2026-12-01T00:00:00Z", "2026-12-01T05:08:47.123Z", "2026-12-01T05:08:42.345Z"]:
        parsed = datetime.fromisoformat(text)
        assert zulu(parsed.isoformat()) == text
    assert zulu(datetime(2026, 12, 1, 5, 8, 47, tzinfo=UTC).isoformat(), milliseconds=True) == (
        "2026-12-01T05:08:47.000Z")  # fmt: skip
    assert zulu("2026-12-01T05:08:47.123456+00:00") == "2026-12-01T05:08:47.123456Z"
    for text in ["lab needs them", "2026-12-01T05:08:47+02:00", "2026-12-01"]:
        assert zulu(text) == text  # not a UTC time as isoformat writes it: as it is
    for raw in [*EVENTS[:2], {**EVENTS[0], "time": "2031-10-28T05:08:47.000Z"}]:
        assert api_json(Event.from_dict(raw)) == raw
    for raw in RESERVATIONS:
        assert api_json(Reservation.from_dict(raw)) == raw
        assert "+00:00" not in json.dumps(api_json(Reservation.from_dict(raw)))


ROOT = typer.main.get_command(app)


@pytest.mark.parametrize(("given", "read"), [
    (["units", "node-a1", "-o", "json"], ["-o", "json", "units", "node-a1"]),
    (["units", "node-a1", "--output=csv"], ["--output=csv", "units", "node-a1"]),
    (["units", "node-a1", "-ojson", "--profile", "p"], ["-ojson", "--profile", "p", "units",
                                                         "node-a1"]),
    (["-o", "json", "units", "node-a1"], ["-o", "json", "units", "node-a1"]),
    (["reservations", "list", "--status", "active", "-o", "wide"],
     ["-o", "wide", "reservations", "list", "--status", "active"]),
    (["events", "tail", "--follow", "--profile", "b"], ["--profile", "b", "events", "tail",
                                                        "--follow"]),
    # An option's value is its own, whatever it looks like; nothing moves after "--".
    (["release", "n", "r", "--reason", "-o", "--units", "u"],
     ["release", "n", "r", "--reason", "-o", "--units", "u"]),
    (["units", "--", "-o", "json"], ["units", "--", "-o", "json"]),
])  # fmt: skip
def test_the_roots_options_are_read_after_a_command_as_before_it(given, read):
    assert root_options_first(ROOT, given) == read


def test_no_command_has_an_option_of_the_roots_name():
    roots = {name for param in ROOT.params for name in getattr(param, "opts", [])} - {"--help"}
    assert {"--profile", "--output", "-o"} <= roots
    stack: list[Any] = list(ROOT.commands.values())
    while stack:
        command = stack.pop()
        stack += list(getattr(command, "commands", {}).values())
        for param in command.params:
            assert not set(getattr(param, "opts", [])) & roots, (command.name, param.opts)


def units_api(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=UNITS)


def test_after_the_command_the_roots_options_work_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    config = tmp_path / "config.toml"
    config.write_text('[b]\napi_url = "http://api.test"\napi_key = "vl_from_profile"\n')
    keys: list[str] = []

    def connect(settings: Settings) -> Reservations:
        keys.append(settings.api_key)
        return Reservations(settings.api_url, settings.api_key, retry=NO_RETRIES,
                            transport=httpx.MockTransport(units_api))  # fmt: skip

    def run(*args: str) -> str:
        env = {"RESERVATIONS_CONFIG_FILE": str(config), "RESERVATIONS_API_URL": None,
               "RESERVATIONS_API_KEY": None}  # fmt: skip
        result = CliRunner().invoke(app, list(args), obj=connect, env=env)
        assert result.exit_code == 0, result.output
        return result.stdout

    after = run("units", "node-a1", "-o", "json", "--profile", "b")
    assert after == run("-o", "json", "--profile", "b", "units", "node-a1")
    assert json.loads(after) == UNITS
    assert keys == ["vl_from_profile", "vl_from_profile"]
    table = run("units", "node-a1", "--profile", "b").splitlines()
    assert max(len(line) for line in table) <= 80
    assert len(table) == 1 + len(UNITS)


def test_completion_is_installed_and_completes(tmp_path: Path):
    env = {"HOME": str(tmp_path), "SHELL": "/bin/bash"}
    installed = CliRunner().invoke(app, ["--install-completion"], env=env,
                                   prog_name="reservations")  # fmt: skip
    assert installed.exit_code == 0, installed.output
    script = tmp_path / ".bash_completions" / "reservations.sh"
    assert "_RESERVATIONS_COMPLETE=complete_bash" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()
    completing = {"_RESERVATIONS_COMPLETE": "complete_bash", "COMP_WORDS": "reservations webh",
                  "COMP_CWORD": "1"}  # fmt: skip
    completed = CliRunner().invoke(app, [], env=completing, prog_name="reservations")
    assert completed.stdout.split() == ["webhooks"]


def test_an_end_is_relative_and_in_utc():
    cases = {
        NOW + timedelta(days=3): "in 3d (2031-11-01 00:00Z)",
        NOW + timedelta(hours=5, minutes=59): "in 5h (2031-10-29 05:59Z)",
        NOW - timedelta(days=400): "1y ago (2030-09-24 00:00Z)",
        NOW: "in 0s (2031-10-29 00:00Z)",
    }
    for moment, shown in cases.items():
        record = {"endsAt": moment.isoformat().replace("+00:00", "Z")}
        assert views.relative("endsAt")(record) == shown
    assert views.relative("endsAt")({"endsAt": "someday"}) == "someday"  # as it came
