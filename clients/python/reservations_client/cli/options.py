"""Options several commands share, and turning their text into what the API takes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

import typer

NodeId = Annotated[str, typer.Argument(help="The node's id, e.g. node-a1.", show_default=False)]
ReservationId = Annotated[str, typer.Argument(help="The reservation's id.", show_default=False)]
Reason = Annotated[str | None, typer.Option(help="Why; recorded in the audit trail.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Change nothing; say what would happen.")]
IfMatch = Annotated[
    str | None,
    typer.Option(
        help="Act only while the reservation is at this version (its etag, or *); another "
        "version is an error and nothing is done. A dry run ignores it."
    ),
]
IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        help="Repeat-safe key: the same key and request answer the first outcome again "
        "(default: one made for this call, used by its retries)."
    ),
]
Units = Annotated[
    list[str] | None,
    typer.Option("--units", help="Unit ids (PCI addresses), comma-separated or repeated."),
]


def listed(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated values as one list, in order, empty parts dropped."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


# A duration's units, in seconds: 90, 90s, 15m, 1h.
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
_DURATION = re.compile(r"(?P<number>[0-9]{1,9})(?P<unit>[smh]?)")


def seconds(text: str | None, name: str) -> int | None:
    """A duration in whole seconds (``90``, ``90s``, ``15m``, ``1h``); a usage error
    otherwise. Its range is the API's to judge."""
    if text is None:
        return None
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise typer.BadParameter(
            f"{text!r} is not a duration: seconds, or with s, m or h (90, 15m, 1h)",
            param_hint=name,
        )
    return int(found["number"]) * _DURATION_UNITS[found["unit"]]


def moment(text: str | None, name: str) -> datetime | None:
    """An RFC 3339 time with its offset; a clear usage error otherwise."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an RFC 3339 time", param_hint=name) from None
    if value.tzinfo is None:
        raise typer.BadParameter("give a time zone offset (e.g. Z)", param_hint=name)
    return value
