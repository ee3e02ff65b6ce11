"""What a command prints (``--output``): a table for people, every field (``wide``), JSON or
CSV for scripts.

Records are the API's own JSON objects (camelCase, times with ``Z``:
:func:`reservations_client.wire.api_json`), fields and values this version does not know
included, as they came. ``table`` shows each kind of record's few columns a person reads
first (a :class:`View`), one line per row, fitted to the terminal's width; ``wide`` shows
every field; ``json`` the API's JSON; ``csv`` every field, one row per record.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from reservations_client.wire import api_json

Record = Mapping[str, Any]
GAP = 2  # spaces between two columns; 1 where 2 would not fit
SQUEEZED_LEAST = 8  # a column cut to fit keeps at least this many cells (or its heading)


def stdout() -> Console:
    """The terminal as it is now (its width, COLUMNS): made for each print, never cached."""
    return Console(soft_wrap=False)


def stderr() -> Console:
    return Console(stderr=True)


class Output(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    csv = "csv"


def cell(value: Any) -> str:
    """One value as a table shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def csv_cell(value: Any) -> str:
    """One value as CSV gives it: the API's scalars as JSON writes them (``true``), a list's
    items space-separated, an object as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(not isinstance(item, dict | list) for item in value):
        return " ".join(csv_cell(item) for item in value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@dataclass(frozen=True)
class Column:
    """One column of a table for people: its heading and how a record reads in it.
    ``cut``: 0, never cut (ids); else the column may be cut (with …) to fit the terminal,
    those of ``cut`` 1 first, then 2, ..."""

    heading: str
    show: Callable[[Record], str]
    cut: int = 0
    justify: Literal["left", "right"] = "left"


def field_of(name: str) -> Callable[[Record], str]:
    """A column showing one field as it came."""
    return lambda record: cell(record.get(name))


@dataclass(frozen=True)
class View:
    """How one kind of record is shown: ``columns`` for people (``table``); ``fields``, the
    API's fields in the order ``wide`` and ``csv`` give them (any other field follows, in
    the order it came)."""

    columns: Sequence[Column]
    fields: Sequence[str] = field(default_factory=tuple)


def as_records(items: Iterable[Any]) -> list[dict[str, Any]]:
    """Models (or their dicts) as the API's JSON objects."""
    return [api_json(item) for item in items]


def every_field(records: Sequence[Record], known: Sequence[str]) -> list[str]:
    """The fields to show: ``known`` ones any record has, in that order, then the others."""
    seen = {name for record in records for name in record}
    others = dict.fromkeys(name for record in records for name in record if name not in known)
    return [name for name in known if name in seen] + list(others)


def show_records(output: Output, items: Iterable[Any], view: View) -> None:
    """A list: a table (one line per record), every field (wide), a JSON array, or CSV."""
    records = as_records(items)
    if output is Output.json:
        print(as_json(records))
        return
    if output is Output.csv:
        print(as_csv(records, every_field(records, view.fields)), end="")
        return
    if output is Output.wide:
        names = every_field(records, view.fields)
        wide = View([Column(name, field_of(name)) for name in names], view.fields)
        table, width = wide_table(records, wide)
        emit(Console(soft_wrap=False, width=max(width, stdout().width)), table)
        return
    console = stdout()
    emit(console, fitted_table(records, view, console.width))


def emit(console: Console, table: Table) -> None:
    """Print a table without the spaces that pad its lines' ends."""
    with console.capture() as captured:
        console.print(table)
    text = captured.get()
    console.file.write("".join(line.rstrip(" \n") + "\n" for line in text.splitlines(True)))
    console.file.flush()


def _rows(records: Sequence[Record], columns: Sequence[Column]) -> list[list[str]]:
    return [[column.show(record) for column in columns] for record in records]


def _widths(rows: Sequence[Sequence[str]], columns: Sequence[Column]) -> list[int]:
    """Each column's width: its widest cell, or its heading."""
    return [
        max([cell_len(column.heading), *(cell_len(row[i]) for row in rows)])
        for i, column in enumerate(columns)
    ]


def _table(columns: Sequence[Column], widths: Sequence[int], gap: int) -> Table:
    """A table without borders, one line per row, ``gap`` spaces between columns."""
    table = Table(box=None, pad_edge=False, padding=(0, gap, 0, 0), show_edge=False)
    for column, size in zip(columns, widths, strict=True):
        table.add_column(
            column.heading, width=size, no_wrap=True, overflow="ellipsis", justify=column.justify
        )
    return table


def fitted_table(records: Sequence[Record], view: View, width: int) -> Table:
    """The view's columns, one line per record, within ``width`` cells when it can be done:
    two spaces between columns, else one, then the columns that may be cut are cut, in
    their ``cut`` order (the widest of an order first), each down to ``SQUEEZED_LEAST``
    cells or its heading."""
    columns = list(view.columns)
    rows = _rows(records, columns)
    widths = _widths(rows, columns)
    floors = [
        min(widths[i], max(SQUEEZED_LEAST, cell_len(column.heading))) if column.cut else widths[i]
        for i, column in enumerate(columns)
    ]
    gap = GAP

    def total() -> int:
        return sum(widths) + gap * (len(columns) - 1)

    if total() > width:
        gap = 1
    for order in sorted({column.cut for column in columns if column.cut}):
        while total() > width:
            cuttable = [
                i for i, c in enumerate(columns) if c.cut == order and widths[i] > floors[i]
            ]
            if not cuttable:
                break
            widest = max(cuttable, key=lambda i: widths[i])
            widths[widest] -= 1
    # Too narrow even so: Rich cuts every column alike.
    table = _table(columns, widths, gap)
    for row in rows:
        table.add_row(*row)
    return table


def wide_table(records: Sequence[Record], view: View) -> tuple[Table, int]:
    """Every column whole, one line per record, however wide that makes it (for a wide
    terminal, or ``less -S``); the table and its width."""
    columns = list(view.columns)
    rows = _rows(records, columns)
    widths = _widths(rows, columns)
    table = _table(columns, widths, GAP)
    for row in rows:
        table.add_row(*row)
    return table, sum(widths) + GAP * (len(columns) - 1)


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, default=str)


def as_csv(records: Sequence[Record], names: Sequence[str]) -> str:
    """A header of the field names, then one row per record."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(names)
    for record in records:
        writer.writerow([csv_cell(record.get(name)) for name in names])
    return text.getvalue()


def show_record(output: Output, item: Any) -> None:
    """One object: field and value (table, wide), a JSON object, or a CSV header and row."""
    record = api_json(item)
    if output is Output.json:
        print(as_json(record))
        return
    if output is Output.csv:
        print(as_csv([record], list(record)), end="")
        return
    table = Table(show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in record.items():
        table.add_row(name, cell(value))
    stdout().print(table)


def show_line(output: Output, item: Any, columns: Sequence[str]) -> None:
    """One record of a stream, as it lands: a line of its columns, one JSON line, or one CSV
    row of the columns."""
    record = api_json(item)
    if output is Output.json:
        print(json.dumps(record, default=str), flush=True)
        return
    if output is Output.csv:
        print(as_csv([record], columns).split("\n", 1)[1], end="", flush=True)
        return
    print("  ".join(cell(record.get(column)) for column in columns), flush=True)
