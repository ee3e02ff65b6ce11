"""``reservations usage`` against a stand-in API answering ``GET /v1/usage`` with rows as
the real one writes them (tests/usage/test_usage_handler.py), a page at a time: each row's
GPU-hours and utilization to the tenth of a percent, every state's figures in csv, the API's
rows in json (a state this version does not know kept in both), a chart of GPU-hours by
state per day within 80 columns, and a bad period refused before any call or as the API
refused it. The same command against the real functions: tests/client/test_cli.py; the
client's ``iter_usage``: tests/client/test_paging.py."""

from __future__ import annotations

import copy
import csv
import io
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from reservations_client import NO_RETRIES, Reservations
from reservations_client.cli import app
from reservations_client.cli.chart import cells
from reservations_client.cli.settings import Settings
from reservations_client.cli.usage import chart_lines, fraction, hours, share

H = 3_600_000  # an hour, in ms
NODE, RES = "node-u", "res-01jdx8m2k4q7r9t3v5w7y9"
STATES = ("review", "reclaiming", "lent_used", "lent_idle", "reserved_used", "reserved_idle",
          "open_used", "open_idle")  # fmt: skip


def node_row(day: int, unit_h: dict[str, float], gpu_h: dict[str, float], *,
             final: bool = True, **fields: Any) -> dict[str, Any]:  # fmt: skip
    """A node's row of 2026-12-<day>, each state in hours (ms on the wire)."""
    start, end = f"2026-12-{day:02d}T00:00:00Z", f"2026-12-{day + 1:02d}T00:00:00Z"
    return {"id": f"{NODE}/day/{start}", "nodeId": NODE, "start": start, "end": end,
            "unitMs": {s: int(unit_h.get(s, 0) * H) for s in STATES},
            "gpuMs": {s: int(gpu_h.get(s, 0) * H) for s in STATES},
            "asOf": "2026-12-03T11:59:55.000Z", "final": final, "revision": 1} | fields  # fmt: skip


# node-u: three units, one of 2 GPUs (96 GPU-hours a day). Its first day as the handler test
# counts it; its second busier; its third counted up to noon (not final).
DAY_1 = node_row(
    1,
    {"lent_used": 1, "lent_idle": 21, "reserved_idle": 24, "open_idle": 26},
    {"lent_used": 1, "lent_idle": 21, "reserved_idle": 24, "open_idle": 50},
)
DAY_2 = node_row(
    2,
    {"reclaiming": 1, "lent_used": 5, "lent_idle": 18, "reserved_used": 12, "reserved_idle": 12,
     "open_used": 18, "open_idle": 6},
    {"reclaiming": 1, "lent_used": 5, "lent_idle": 18, "reserved_used": 12, "reserved_idle": 12,
     "open_used": 36, "open_idle": 12},
)  # fmt: skip
DAY_3 = node_row(
    3,
    {"review": 12, "open_idle": 24},
    {"review": 12, "open_idle": 36},
    final=False,
)
# A reservation's row has six states; this one a seventh, from a newer API, and a new field.
HELD = {
    "id": f"{NODE}/{RES}/day/2026-12-02T00:00:00Z", "nodeId": NODE, "reservationId": RES,
    "start": "2026-12-02T00:00:00Z", "end": "2026-12-03T00:00:00Z",
    "unitMs": {"review": 0, "reclaiming": H, "lent_used": 5 * H, "lent_idle": 18 * H,
               "reserved_used": 12 * H, "reserved_idle": 10 * H, "lent_draining": 2 * H},
    "gpuMs": {"review": 0, "reclaiming": H, "lent_used": 5 * H, "lent_idle": 18 * H,
              "reserved_used": 12 * H, "reserved_idle": 10 * H, "lent_draining": 2 * H},
    "asOf": "2026-12-07T09:30:05.120Z", "final": True, "revision": 2, "billingRef": "b-7",
}  # fmt: skip


def hour_row(hour: int) -> dict[str, Any]:
    """An hour of 2026-12-01 on a node of two units (one of 2 GPUs): 1 of 4 GPU-hours used."""
    start = f"2026-12-01T{hour:02d}:00:00Z"
    end = f"2026-12-01T{hour + 1:02d}:00:00Z"
    row = node_row(1, {"lent_used": 1, "open_idle": 1}, {"lent_used": 1, "open_idle": 3})
    return row | {"id": f"{NODE}/hour/{start}", "start": start, "end": end}


HOURS = [hour_row(hour) for hour in range(23)]


class UsageApi:
    """``GET /v1/usage`` answering from a list of rows, ``limit`` at a time (the cursor is the
    next row's index), and recording every query."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.queries: list[dict[str, list[str]]] = []
        self.refusal: dict[str, Any] | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/usage"
        query = parse_qs(request.url.query.decode())
        self.queries.append(query)
        if self.refusal is not None:
            return httpx.Response(400, json=self.refusal)
        first = int(query.get("cursor", ["0"])[0])
        limit = int(query.get("limit", ["50"])[0])
        page: dict[str, Any] = {"items": copy.deepcopy(self.rows[first : first + limit])}
        if first + limit < len(self.rows):
            page["nextCursor"] = str(first + limit)
        return httpx.Response(200, json=page)

    def client(self) -> Reservations:
        return Reservations("http://api.test", "vl_test", transport=httpx.MockTransport(self),
                            retry=NO_RETRIES)  # fmt: skip


Run = Callable[..., Any]


@pytest.fixture
def api() -> UsageApi:
    return UsageApi([DAY_1, DAY_2, DAY_3])


@pytest.fixture
def cli(api: UsageApi, tmp_path: Any) -> Run:
    def connect(settings: Settings) -> Reservations:
        return api.client()

    def run(*args: str, columns: int = 80) -> Any:
        env = {"RESERVATIONS_API_URL": "http://api.test", "RESERVATIONS_API_KEY": "vl_test",
               "RESERVATIONS_CONFIG_FILE": str(tmp_path / "absent.toml"),
               "COLUMNS": str(columns), "RESERVATIONS_OUTPUT": None}  # fmt: skip
        result = CliRunner().invoke(app, list(args), obj=connect, env=env)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return run


PERIOD = ("--from", "2026-12-01T00:00:00Z", "--to", "2026-12-04T00:00:00Z")


def test_the_table_shows_each_rows_gpu_hours_and_utilization_exactly(cli):
    ran = cli("usage", *PERIOD)
    assert ran.exit_code == 0, ran.output
    lines = ran.stdout.splitlines()
    assert lines[0].split() == ["node", "start", "used", "GPU-h", "all", "GPU-h", "util", "final"]
    # Day 1: 1 of 96 GPU-hours used (lent_used). Day 2: reclaiming 1 + lent_used 5 +
    # reserved_used 12 + open_used 36 = 54 of 96: 56.25%, shown half up. Day 3: none used,
    # 48 GPU-hours counted so far.
    assert [line.split() for line in lines[1:]] == [
        [NODE, "2026-12-01", "1.00", "96.00", "1.0%", "yes"],
        [NODE, "2026-12-02", "54.00", "96.00", "56.3%", "yes"],
        [NODE, "2026-12-03", "0.00", "48.00", "0.0%", "no"],
    ]
    assert max(len(line) for line in lines) <= 80


def test_the_table_by_reservation_and_by_the_hour(cli, api):
    api.rows = [HELD]
    held = cli("usage", *PERIOD, "--group-by", "reservation", "--reservation", RES).stdout
    assert [line.split() for line in held.splitlines()] == [
        ["reservation", "start", "used", "GPU-h", "all", "GPU-h", "util", "final"],
        [RES, "2026-12-02", "18.00", "48.00", "37.5%", "yes"],  # lent_draining: in all only
    ]
    assert (api.queries[-1]["groupBy"], api.queries[-1]["reservationId"]) == (["reservation"],
                                                                              [RES])  # fmt: skip
    api.rows = HOURS[:2]
    hourly = cli("usage", "--from", "2026-12-01", "--to", "2026-12-02", "--granularity", "hour")
    assert [line.split()[1:] for line in hourly.stdout.splitlines()[1:]] == [
        ["2026-12-01", "00:00Z", "1.00", "4.00", "25.0%", "yes"],
        ["2026-12-01", "01:00Z", "1.00", "4.00", "25.0%", "yes"],
    ]
    assert api.queries[-1]["from"] == ["2026-12-01T00:00:00+00:00"]  # a date: its 00:00Z


def test_csv_has_every_states_gpu_ms_and_unit_ms_and_the_utilization(cli, api):
    rows = list(csv.DictReader(io.StringIO(cli("-o", "csv", "usage", *PERIOD).stdout)))
    header = list(rows[0])
    assert header == [
        "id", "nodeId", "start", "end", "asOf", "final", "revision",
        *(f"gpuMs.{s}" for s in STATES), *(f"unitMs.{s}" for s in STATES), "utilization",
    ]  # fmt: skip
    second = rows[1]
    assert second["gpuMs.open_used"] == str(36 * H)
    assert second["unitMs.open_used"] == str(18 * H)
    assert (second["utilization"], rows[0]["utilization"]) == ("0.562500", "0.010417")
    assert (second["final"], rows[2]["final"]) == ("true", "false")
    assert second["start"] == "2026-12-02T00:00:00Z"
    assert second["asOf"] == "2026-12-03T11:59:55.000Z"  # the API's text
    assert [sum(int(r[f"unitMs.{s}"]) for s in STATES) for r in rows] == [72 * H, 72 * H, 36 * H]


def test_csv_and_json_keep_a_state_and_a_field_this_version_does_not_know(cli, api):
    api.rows = [HELD]
    args = ("usage", *PERIOD, "--group-by", "reservation")
    text = cli("-o", "csv", *args).stdout
    (row,) = csv.DictReader(io.StringIO(text))
    assert list(row) == [
        "id", "nodeId", "reservationId", "start", "end", "asOf", "final", "revision",
        *(f"gpuMs.{s}" for s in STATES[:6]), "gpuMs.lent_draining",
        *(f"unitMs.{s}" for s in STATES[:6]), "unitMs.lent_draining", "utilization", "billingRef",
    ]  # fmt: skip
    assert (row["gpuMs.lent_draining"], row["unitMs.lent_draining"]) == (str(2 * H), str(2 * H))
    assert (row["utilization"], row["billingRef"], row["revision"]) == ("0.375000", "b-7", "2")
    shown = cli("-o", "json", *args).stdout
    assert json.loads(shown) == [HELD]
    assert list(json.loads(shown)[0])[-1] == "billingRef"  # after the fields it knows
    assert '"lent_draining": 7200000' in shown
    assert '"asOf": "2026-12-07T09:30:05.120Z"' in shown


def test_json_is_the_apis_rows_as_it_wrote_them(cli, api):
    shown = cli("usage", *PERIOD, "-o", "json").stdout
    assert json.loads(shown) == [DAY_1, DAY_2, DAY_3]
    # Its times as the API writes them (asOf to the millisecond), its states in its order.
    assert '"asOf": "2026-12-03T11:59:55.000Z"' in shown
    assert "+00:00" not in shown
    first = json.loads(shown)[0]
    assert list(first) == ["id", "nodeId", "start", "end", "unitMs", "gpuMs", "asOf", "final",
                           "revision"]  # fmt: skip
    assert list(first["gpuMs"]) == list(STATES)


def test_wide_shows_every_figure_one_line_a_row(cli):
    lines = cli("-o", "wide", "usage", *PERIOD).stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].split()[:3] == ["id", "nodeId", "start"]
    assert "gpuMs.reserved_idle" in lines[0]
    assert lines[0].split()[-1] == "utilization"


def test_the_chart_draws_gpu_hours_by_state_per_day_within_80_columns(cli, api):
    api.rows = [DAY_1, DAY_2, DAY_3, *HOURS]  # hourly rows add to their day
    ran = cli("usage", *PERIOD, "--chart")
    assert ran.exit_code == 0, ran.output
    lines = ran.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert lines[0].startswith("GPU-hours by state per UTC day")
    bars = [line for line in lines if line[:8] == "2026-12-"]
    assert [bar[:11] for bar in bars] == ["2026-12-01 ", "2026-12-02 ", "2026-12-03*"]
    # Day 1: 96 GPU-hours and 23 hourly rows of 4 each: 188, 24 used (12.8%); the longest.
    assert bars[0].endswith("188.0  12.8%")
    assert bars[1].endswith(" 96.0  56.3%")
    assert bars[2].endswith(" 48.0   0.0%")
    drawn = [len(bar[12:].split(" ")[0]) for bar in bars]
    room = 80 - len("2026-12-01* ") - len(" 188.0  12.8%")  # the longest bar fills it
    assert drawn == [room, round(room * 96 / 188), round(room * 48 / 188)]  # on one scale
    legend = " ".join(lines[len(bars) + 2 : -1])
    for state, total in [("lent_used", "29.0"), ("open_used", "36.0"), ("review", "12.0"),
                         ("open_idle", "167.0")]:  # fmt: skip
        assert f"{state} {total}" in legend
    assert "reserved_used 12.0" in legend
    assert lines[-1] == "* not final: counted up to 2026-12-03 11:59Z"


def test_the_chart_in_colour_fits_too_and_gives_each_state_its_colour():
    records = [DAY_1, DAY_2, DAY_3, HELD]
    for width in (80, 60):
        lines = chart_lines(records, width)
        console = Console(width=width, file=io.StringIO(), color_system="truecolor",
                          force_terminal=True, soft_wrap=False)  # fmt: skip
        for line in lines:
            console.print(line)
            assert (line.cell_len if isinstance(line, Text) else len(line)) <= width
        text = console.file.getvalue()  # type: ignore[attr-defined]
        assert "\x1b[" in text  # coloured
        assert all(len(Text.from_ansi(line).plain) <= width for line in text.splitlines())
    bar = next(line for line in chart_lines(records, 80) if isinstance(line, Text)
               and line.plain.startswith("2026-12-02"))  # fmt: skip
    colours = {str(span.style.color.name) for span in bar.spans}  # type: ignore[union-attr]
    # Each known state's colour, and the first spare one (cyan) for lent_draining.
    expected = "red blue bright_blue green bright_green yellow bright_black cyan"
    assert set(expected.split()) <= colours


def test_the_chart_refuses_scripted_outputs_and_says_when_nothing_is_shown(cli, api):
    refused = cli("-o", "json", "usage", *PERIOD, "--chart")
    assert (refused.exit_code, "--chart" in refused.stderr) == (2, True)
    assert api.queries == []  # before any call
    api.rows = []
    assert cli("usage", *PERIOD, "--chart").stdout.strip() == "no usage rows in that period"


def test_a_bad_period_is_refused_before_any_call_or_shown_as_the_api_refused_it(cli, api):
    for bad in ("yesterday", "2026-12-01T00:00:00", "2026-13-01"):
        ran = cli("usage", "--from", bad, "--to", "2026-12-02")
        assert (ran.exit_code, "--from" in ran.stderr) == (2, True), bad
    assert cli("usage", "--to", "2026-12-02").exit_code == 2  # --from is required
    assert cli("usage", *PERIOD, "--granularity", "week").exit_code == 2
    assert api.queries == []
    api.refusal = {"error": "from must be a whole UTC day (granularity day)",
                   "code": "invalid_request", "requestId": "r-9",
                   "details": [{"field": "from", "problem": "must be a whole UTC day"}]}  # fmt: skip
    ran = cli("usage", "--from", "2026-12-01T12:00:00Z", "--to", "2026-12-02")
    assert (ran.exit_code, ran.stdout) == (1, "")
    assert ran.stderr.splitlines() == [
        "error: from must be a whole UTC day (granularity day)",
        "code: invalid_request  status: 400  request id: r-9",
        "  from: must be a whole UTC day",
    ]


def test_figures_are_rounded_exactly_half_up():
    assert (share(1, 96), share(54, 96), share(1, 8), share(0, 0)) == ("1.0%", "56.3%", "12.5%",
                                                                       "")  # fmt: skip
    assert (fraction(1, 96), fraction(2, 3), fraction(1, 1), fraction(1, 0)) == (
        "0.010417", "0.666667", "1.000000", "")  # fmt: skip
    assert (hours(H // 2, 1), hours(H * 3 // 200), hours(H * 3 // 2 + 1)) == ("0.5", "0.02",
                                                                             "1.50")  # fmt: skip
    # A bar's cells: running sums rounded, so they add up to the whole bar's length.
    assert cells({"a": 1, "b": 1, "c": 1}, ["a", "b", "c"], 3, 10) == [3, 4, 3]
    assert sum(cells({"a": 5, "b": 7}, ["a", "b"], 24, 50)) == 25
