"""A reservation's lending policy: ``lending set|show|clear``. Durations as ``--notice``
takes them (90, 90s, 15m, 1h)."""

from __future__ import annotations

from typing import Annotated

import typer

from reservations_api_client.models import LendingPolicyRequest
from reservations_api_client.types import UNSET, Unset
from reservations_client.cli.options import IfMatch, NodeId, ReservationId, seconds
from reservations_client.cli.output import Output, as_json, show_record, stdout
from reservations_client.cli.session import session
from reservations_client.wire import api_json

app = typer.Typer(
    no_args_is_help=True,
    help="A reservation's lending policy: idle units lent by themselves, and the promises "
    "made to the spot workloads placed on them.",
)


@app.command("set")
def set_policy(
    ctx: typer.Context,
    node: NodeId,
    reservation: ReservationId,
    auto: Annotated[bool, typer.Option(
        "--auto/--no-auto", help="Lend idle units, and keep them lent, by itself.")],
    idle: Annotated[str | None, typer.Option(
        help="How long a unit stays idle before it is lent (60 s-24 h; default 15m).")] = None,
    keep_unlent: Annotated[int | None, typer.Option(
        min=0, help="Never lend if fewer than this many units would stay unreleased.")] = None,
    notice: Annotated[str | None, typer.Option(
        help="The notice promised to spot workloads on its lent units (0-1h; default 0).")
    ] = None,
    min_run: Annotated[str | None, typer.Option(
        help="The minimum run promised to them (0-1h; default 0).")] = None,
    relend_after: Annotated[str | None, typer.Option(
        help="The wait before a unit taken back is lent again (0-1h; default 5m).")] = None,
    if_match: IfMatch = None,
) -> None:  # fmt: skip
    """Set the whole policy: what is not given takes its default. Safe to repeat."""
    policy = LendingPolicyRequest(
        auto=auto,
        idle_seconds=_given(seconds(idle, "--idle")),
        keep_unlent=_given(keep_unlent),
        notice_seconds=_given(seconds(notice, "--notice")),
        min_run_seconds=_given(seconds(min_run, "--min-run")),
        relend_after_seconds=_given(seconds(relend_after, "--relend-after")),
    )
    run = session(ctx)
    changed = run.api.set_lending(node, reservation, policy, if_match=if_match)
    show_record(run.output, changed.lending)


@app.command("show")
def show_policy(ctx: typer.Context, node: NodeId, reservation: ReservationId) -> None:
    """The reservation's policy, or that it has none."""
    run = session(ctx)
    policy = api_json(run.api.get_reservation(node, reservation)).get("lending")
    if policy is not None:
        show_record(run.output, policy)
    elif run.output is Output.json:
        print(as_json(None))
    else:
        stdout().print(f"{reservation} has no lending policy: nothing is lent by itself")


@app.command("clear")
def clear_policy(
    ctx: typer.Context, node: NodeId, reservation: ReservationId, if_match: IfMatch = None
) -> None:
    """Remove the policy: nothing is lent by itself any more (promises made stay)."""
    run = session(ctx)
    run.api.clear_lending(node, reservation, if_match=if_match)
    stdout().print(f"{reservation}: lending policy removed")


def _given(value: int | None) -> int | Unset:
    return UNSET if value is None else value
