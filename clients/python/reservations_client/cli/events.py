"""``events list`` and ``events tail [--follow]``: the org's feed (or a node's)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice
from typing import Annotated

import typer

from reservations_api_client.models import Event
from reservations_client.api import POLL_SECONDS
from reservations_client.cli.options import listed, moment
from reservations_client.cli.output import show_line, show_records
from reservations_client.cli.session import session
from reservations_client.cli.views import EVENTS
from reservations_client.cli.waiting import Waiting, until_interrupted

EVENT_COLUMNS = ["time", "type", "subject", "id"]
Types = Annotated[list[str] | None, typer.Option(help="Event types, comma-separated or repeated.")]
After = Annotated[str | None, typer.Option(help="Start after this RFC 3339 time.")]

app = typer.Typer(no_args_is_help=True, help="Read and follow the event feeds.")


@app.command("list")
def list_events(
    ctx: typer.Context,
    node: Annotated[str | None, typer.Option(help="A node's feed instead of the org's.")] = None,
    types: Types = None,
    after: After = None,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 100,
) -> None:
    """Events in the order they were recorded, oldest first."""
    run = session(ctx)
    start, kinds = moment(after, "--after"), listed(types) or None
    found: Iterator[Event] = (
        run.api.iter_node_events(node, types=kinds, after=start) if node
        else run.api.iter_events(types=kinds, after=start)
    )  # fmt: skip
    show_records(run.output, islice(found, limit), EVENTS)


@app.command("tail")
def tail(
    ctx: typer.Context,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Wait for new events.")] = False,
    types: Types = None,
    after: Annotated[str | None, typer.Option(help="Start after this time (default: now).")] = None,
    poll: Annotated[float, typer.Option(min=0.5, help="Seconds between polls.")] = POLL_SECONDS,
) -> None:
    """The org's events from now (or --after) as they land, one line each; with --follow,
    waits for new ones until Ctrl-C."""
    run = session(ctx)
    start = moment(after, "--after") or datetime.now(UTC)
    kinds = listed(types) or None
    waiting = Waiting(poll)
    found = (
        run.api.follow_events(types=kinds, after=start, wait=waiting) if follow
        else run.api.iter_events(types=kinds, after=start)
    )  # fmt: skip
    with until_interrupted():
        for event in found:
            show_line(run.output, event.to_dict(), EVENT_COLUMNS)
            waiting.landed()
