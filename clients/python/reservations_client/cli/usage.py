"""``usage``: the usage rows a key may see (``GET /v1/usage``), by node or by reservation,
hourly or daily, every page of them.

For people, one line a row: its key, its start, the GPU-hours used and in all, and the
utilization, used ÷ all in GPU-ms, where *used* is the three ``*_used`` states and
``reclaiming`` (a workload being stopped still runs on its unit); ``review``, the idle states
and any state this version does not know count in *all* only. ``-o csv`` and ``-o wide`` give
every state's GPU-ms and unit-ms, a column each; ``-o json`` the API's rows. ``--chart``
draws the GPU-hours of the rows shown by state per UTC day (:mod:`.chart`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, time, timedelta
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

from reservations_client.cli.chart import Bar, stacked_bars
from reservations_client.cli.options import listed, moment
from reservations_client.cli.output import (
    Column,
    Output,
    Record,
    View,
    as_csv,
    as_json,
    as_records,
    cell,
    emit,
    field_of,
    fitted_table,
    stdout,
    wide_table,
)
from reservations_client.cli.session import session
from reservations_client.cli.views import parsed, utc_minute

# The contract's states, in its order; a reservation's row has the first six.
STATES = ("review", "reclaiming", "lent_used", "lent_idle", "reserved_used", "reserved_idle",
          "open_used", "open_idle")  # fmt: skip
GOVERNED_STATES = STATES[:6]
# Used: a workload runs on the unit (a terminating one too). Every other state is not.
USED = frozenset({"reclaiming", "lent_used", "reserved_used", "open_used"})
FIGURES = ("gpuMs", "unitMs")  # each state's GPU-ms, then its unit-ms
HOUR_MS = 3_600_000
# A row's fields, in the order csv and wide give them (its figures and utilization after
# these; any field this version does not know last).
ROW_FIELDS = ("id", "nodeId", "reservationId", "start", "end", "asOf", "final", "revision")
UTILIZATION = "utilization"
# A row's fields as the API writes them.
API_FIELDS = ("id", "nodeId", "reservationId", "start", "end", "unitMs", "gpuMs", "asOf", "final",
              "revision")  # fmt: skip


class Granularity(StrEnum):
    hour = "hour"
    day = "day"


class GroupBy(StrEnum):
    node = "node"
    reservation = "reservation"


# --- figures ------------------------------------------------------------------------------


def figures(record: Record, name: str = "gpuMs") -> dict[str, int]:
    """A row's milliseconds by state (``gpuMs`` or ``unitMs``); a value that is not a whole
    number counts 0."""
    found = record.get(name)
    if not isinstance(found, Mapping):
        return {}
    return {state: value if _whole(value) else 0 for state, value in found.items()}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def used_ms(by_state: Mapping[str, int]) -> int:
    return sum(ms for state, ms in by_state.items() if state in USED)


def all_ms(by_state: Mapping[str, int]) -> int:
    return sum(by_state.values())


def _rounded(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` to the nearest whole number, halves up (both ≥ 0)."""
    return (2 * numerator + denominator) // (2 * denominator)


def share(part: int, whole: int) -> str:
    """``part / whole`` as a percentage to a tenth (``12.5%``), exactly rounded; blank when
    there is no whole."""
    if whole <= 0:
        return ""
    tenths = _rounded(1000 * part, whole)
    return f"{tenths // 10}.{tenths % 10}%"


def fraction(part: int, whole: int) -> str:
    """``part / whole`` to six decimals (``0.125000``), exactly rounded; blank when there is
    no whole."""
    if whole <= 0:
        return ""
    millionths = _rounded(1_000_000 * part, whole)
    return f"{millionths // 1_000_000}.{millionths % 1_000_000:06d}"


def hours(ms: int, places: int = 2) -> str:
    """Milliseconds as hours to ``places`` decimals, exactly rounded (``24.00``)."""
    scale = 10**places
    whole = _rounded(abs(ms) * scale, HOUR_MS)
    sign = "-" if ms < 0 else ""
    return f"{sign}{whole // scale}.{whole % scale:0{places}d}" if places else f"{sign}{whole}"


def utilization(record: Record) -> str:
    gpu = figures(record)
    return share(used_ms(gpu), all_ms(gpu))


def ordered_states(records: Iterable[Record], group_by: GroupBy | None) -> list[str]:
    """The states to show: the grouping's known ones (a node's eight, a reservation's six)
    and any other a row has, known ones in the contract's order, then the others sorted."""
    given = set(STATES if group_by is GroupBy.node else GOVERNED_STATES if group_by else ())
    given |= {state for record in records for name in FIGURES for state in figures(record, name)}
    return [s for s in STATES if s in given] + sorted(given - set(STATES))


def in_order(record: Record) -> dict[str, Any]:
    """A row in the order the API writes it (the generated model's is alphabetical): its
    fields, then any it does not declare; each figure's states in the contract's order, then
    any other (sorted)."""
    states = ordered_states([record], None)
    names = [n for n in API_FIELDS if n in record] + [n for n in record if n not in API_FIELDS]
    return {
        name: {state: record[name][state] for state in states if state in record[name]}
        if name in FIGURES and isinstance(record[name], Mapping) else record[name]
        for name in names
    }  # fmt: skip


# --- table, csv and wide ------------------------------------------------------------------


def period_start(record: Record) -> str:
    """A row's start: its date for a whole UTC day (``2026-12-01``), else to the minute."""
    start, end = parsed(record.get("start")), parsed(record.get("end"))
    if start is None:
        return cell(record.get("start"))
    start = start.astimezone(UTC)
    if end is not None and end - start == timedelta(days=1) and start.time() == time(0):
        return start.strftime("%Y-%m-%d")
    return utc_minute(start)


def used_hours(record: Record) -> str:
    return hours(used_ms(figures(record)))


def all_hours(record: Record) -> str:
    return hours(all_ms(figures(record)))


def table_view(group_by: GroupBy) -> View:
    """One line a row: its key (the node, or the reservation), start, GPU-hours used and in
    all, utilization, final."""
    key = (
        Column("reservation", field_of("reservationId")) if group_by is GroupBy.reservation
        else Column("node", field_of("nodeId"))
    )  # fmt: skip
    return View(
        columns=[
            key,
            Column("start", period_start),
            Column("used GPU-h", used_hours, justify="right"),
            Column("all GPU-h", all_hours, justify="right"),
            Column("util", utilization, justify="right"),
            Column("final", field_of("final")),
        ],
        fields=ROW_FIELDS,
    )


def flat_names(records: Sequence[Record], group_by: GroupBy) -> list[str]:
    """csv's and wide's columns: the row's fields (``reservationId`` by reservation, or when
    a row has it), each state's GPU-ms then each state's unit-ms, the utilization, and
    every field this version does not know."""
    keys = [name for name in ROW_FIELDS if name != "reservationId"
            or group_by is GroupBy.reservation or any(name in r for r in records)]  # fmt: skip
    states = ordered_states(records, group_by)
    known = {*ROW_FIELDS, *FIGURES}
    others = dict.fromkeys(name for r in records for name in r if name not in known)
    return [*keys, *(f"{name}.{state}" for name in FIGURES for state in states), UTILIZATION,
            *others]  # fmt: skip


def flat(record: Record) -> dict[str, Any]:
    """A row with one field per figure (``gpuMs.lent_used``) and its utilization as a
    fraction (``0.125000``)."""
    gpu = figures(record)
    found: dict[str, Any] = {n: v for n, v in record.items() if n not in FIGURES}
    for name in FIGURES:
        given = record.get(name)
        if isinstance(given, Mapping):
            found.update((f"{name}.{state}", value) for state, value in given.items())
    found[UTILIZATION] = fraction(used_ms(gpu), all_ms(gpu))
    return found


# --- the chart ----------------------------------------------------------------------------


def day_of(record: Record) -> str:
    start = parsed(record.get("start"))
    return start.astimezone(UTC).strftime("%Y-%m-%d") if start else cell(record.get("start"))


def day_bars(records: Sequence[Record]) -> list[Bar]:
    """The rows' GPU-ms summed by state per UTC day of their start, a bar a day (``*``: a
    row of it is not final yet), its utilization after its total."""
    days: dict[str, dict[str, int]] = {}
    final: dict[str, bool] = {}
    for record in records:
        day = day_of(record)
        parts = days.setdefault(day, {})
        for state, ms in figures(record).items():
            parts[state] = parts.get(state, 0) + ms
        final[day] = final.get(day, True) and record.get("final") is True
    return [
        Bar(day, parts, note="" if final[day] else "*",
            tail=f" {share(used_ms(parts), all_ms(parts)) or '-':>6}")
        for day, parts in sorted(days.items())
    ]  # fmt: skip


def chart_lines(records: Sequence[Record], width: int) -> list[Any]:
    """The chart: a title, a bar a day (its total GPU-hours and utilization at its end), the
    legend (each state's GPU-hours over them all), and what ``*`` means."""
    bars = day_bars(records)
    if not bars:
        return ["no usage rows in that period"]
    states = [s for s in ordered_states(records, None) if any(b.parts.get(s) for b in bars)]
    title = f"GPU-hours by state per UTC day, {len(records)} rows (total, utilization)"
    drawn = stacked_bars(bars, states, lambda ms: hours(ms, 1), width)
    lines: list[Any] = [title[:width], *drawn]
    if any(bar.note for bar in bars):
        as_of = max(str(r.get("asOf")) for r in records if r.get("final") is not True)
        counted = parsed(as_of)
        lines.append(f"* not final: counted up to {utc_minute(counted) if counted else as_of}")
    return lines


# --- the command --------------------------------------------------------------------------

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def boundary(text: str, name: str) -> datetime:
    """A period's boundary: RFC 3339 with its offset, or a date (its 00:00 UTC); whether it
    is a whole hour or day is the API's to judge."""
    if _DATE.fullmatch(text.strip()):
        try:
            return datetime.fromisoformat(text.strip()).replace(tzinfo=UTC)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a date", param_hint=name) from None
    found = moment(text, name)
    assert found is not None
    return found


def usage(
    ctx: typer.Context,
    from_: Annotated[str, typer.Option(
        "--from", show_default=False,
        help="The first period's start: RFC 3339 on a whole UTC day (a whole hour with "
        "--granularity hour), or a date (2026-12-01: its 00:00Z).")],
    to: Annotated[str, typer.Option(
        "--to", show_default=False, help="The last period's end (not included), as --from.")],
    granularity: Annotated[
        Granularity, typer.Option(help="A row per UTC hour or day.")] = Granularity.day,
    group_by: Annotated[
        GroupBy, typer.Option(help="A row per node, or per reservation.")] = GroupBy.node,
    node: Annotated[list[str] | None, typer.Option(
        help="Only these nodes, comma-separated or repeated (at most 50).")] = None,
    reservation: Annotated[list[str] | None, typer.Option(
        help="With --group-by reservation: only these reservations (at most 50).")] = None,
    chart: Annotated[bool, typer.Option(
        "--chart", help="Draw GPU-hours by state per UTC day instead of the table.")] = False,
) -> None:  # fmt: skip
    """GPU usage: each node's (or reservation's) rows, hourly or daily: GPU-hours used and
    in all, utilization (used ÷ all; used: the *_used states and reclaiming). -o csv: every
    state's GPU-ms and unit-ms."""
    run = session(ctx)
    if chart and run.output is not Output.table:
        raise typer.BadParameter(
            f"the chart is for people: not with -o {run.output}", param_hint="--chart"
        )
    start, end = boundary(from_, "--from"), boundary(to, "--to")
    rows = run.api.iter_usage(
        from_=start, to=end, granularity=granularity.value, group_by=group_by.value,
        node_ids=listed(node) or None, reservation_ids=listed(reservation) or None,
    )  # fmt: skip
    records = [in_order(record) for record in as_records(rows)]
    if chart:
        console = stdout()
        for line in chart_lines(records, console.width):
            console.print(line, markup=False, highlight=False)
    elif run.output is Output.json:
        print(as_json(records))
    elif run.output is Output.csv:
        print(as_csv([flat(r) for r in records], flat_names(records, group_by)), end="")
    elif run.output is Output.wide:
        names = flat_names(records, group_by)
        table, width = wide_table([flat(r) for r in records],
                                  View([Column(n, field_of(n)) for n in names]))  # fmt: skip
        emit(Console(soft_wrap=False, width=max(width, stdout().width)), table)
    else:
        console = stdout()
        emit(console, fitted_table(records, table_view(group_by), console.width))


def register(app: typer.Typer) -> None:
    app.command()(usage)
