"""What a command prints: a Rich table for people, JSON for scripts (``--output json``).
Records are the API's own JSON objects (camelCase), so both show the same fields."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table


def stdout() -> Console:
    """The terminal as it is now (its width, COLUMNS): made for each print, never cached."""
    return Console(soft_wrap=False)


def stderr() -> Console:
    return Console(stderr=True)


class Output(StrEnum):
    table = "table"
    json = "json"


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


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, default=str)


def show_records(
    output: Output, records: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> None:
    """A list: one row per record (table), or a JSON array."""
    if output is Output.json:
        print(as_json(list(records)))
        return
    table = Table(show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")  # a narrow terminal folds ids, never cuts them
    for record in records:
        table.add_row(*(cell(record.get(column)) for column in columns))
    stdout().print(table)


def show_record(output: Output, record: Mapping[str, Any]) -> None:
    """One object: field and value (table), or a JSON object."""
    if output is Output.json:
        print(as_json(dict(record)))
        return
    table = Table(show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in record.items():
        table.add_row(name, cell(value))
    stdout().print(table)


def show_line(output: Output, record: Mapping[str, Any], columns: Sequence[str]) -> None:
    """One record of a stream, as it lands: a line of its columns, or one JSON line."""
    if output is Output.json:
        print(json.dumps(dict(record), default=str), flush=True)
        return
    print("  ".join(cell(record.get(column)) for column in columns), flush=True)
