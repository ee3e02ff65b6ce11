"""Units and reservations: ``units``, ``reservations list|get|create|change|cancel``
(``list`` without ``--node``: across the fleet), ``release`` and ``reclaim`` (by units, by
``--count``, or a dry run's ``--plan``; ``--notice``)."""

from __future__ import annotations

from itertools import islice
from typing import Annotated

import typer

from reservations_api_client.models import (
    CancelRequest,
    CreateReservationRequest,
    UnitsRequest,
    UpdateReservationRequest,
)
from reservations_api_client.types import UNSET
from reservations_client.cli.options import (
    DryRun,
    IdempotencyKey,
    IfMatch,
    NodeId,
    Reason,
    ReservationId,
    Units,
    listed,
    moment,
    seconds,
)
from reservations_client.cli.output import show_record, show_records
from reservations_client.cli.session import session
from reservations_client.cli.views import RESERVATIONS, UNITS

group = typer.Typer(no_args_is_help=True, help="List, get, create, change and cancel reservations.")


def units(ctx: typer.Context, node: NodeId) -> None:
    """The allocatable GPU units of a node, and whether each can be reserved."""
    run = session(ctx)
    show_records(run.output, run.api.list_units(node), UNITS)


@group.command("list")
def list_reservations(
    ctx: typer.Context,
    node: Annotated[
        str | None, typer.Option(help="One node's reservations, sorted by id (else the fleet's).")
    ] = None,
    status: Annotated[
        list[str] | None, typer.Option(help="Effective statuses, e.g. active.")
    ] = None,
    role: Annotated[
        list[str] | None, typer.Option(help="Across the fleet: owner, managing, audience.")
    ] = None,
    node_id: Annotated[
        list[str] | None, typer.Option(help="Across the fleet: only these nodes (at most 50).")
    ] = None,
    gpu_model: Annotated[
        str | None, typer.Option(help="Across the fleet: holding a unit of this GPU model.")
    ] = None,
    ends_before: Annotated[
        str | None, typer.Option(help="Across the fleet: endsAt before this RFC 3339 time.")
    ] = None,
    ends_after: Annotated[
        str | None, typer.Option(help="Across the fleet: endsAt at or after this time.")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many.")] = None,
) -> None:
    """A node's reservations, or (no --node) every reservation the org may see on any node,
    soonest end first; every page of them."""
    run = session(ctx)
    if node is not None:
        found = run.api.iter_reservations(node, status=listed(status) or None)
    else:
        found = run.api.iter_fleet_reservations(
            role=listed(role) or None,
            status=listed(status) or None,
            node_ids=listed(node_id) or None,
            gpu_model_id=gpu_model,
            ends_before=moment(ends_before, "--ends-before"),
            ends_after=moment(ends_after, "--ends-after"),
            page_size=min(limit or 100, 100),
        )
    show_records(run.output, islice(found, limit), RESERVATIONS)


@group.command("get")
def get_reservation(ctx: typer.Context, node: NodeId, reservation: ReservationId) -> None:
    """One reservation."""
    run = session(ctx)
    show_record(run.output, run.api.get_reservation(node, reservation))


@group.command("create")
def create_reservation(
    ctx: typer.Context,
    node: NodeId,
    unit_ids: Units = None,
    allowed_orgs: Annotated[list[str] | None, typer.Option(help="The audience's org ids.")] = None,
    managing_orgs: Annotated[list[str] | None, typer.Option(help="Managers' org ids.")] = None,
    starts_at: Annotated[str | None, typer.Option(help="RFC 3339; default now.")] = None,
    ends_at: Annotated[str | None, typer.Option(help="RFC 3339; default open-ended.")] = None,
    contract_ref: Annotated[str | None, typer.Option(help="Your contract's reference.")] = None,
    reason: Reason = None,
    idempotency_key: IdempotencyKey = None,
) -> None:
    """Reserve units of a node for an audience of orgs."""
    request = CreateReservationRequest(
        unit_ids=listed(unit_ids), allowed_org_ids=listed(allowed_orgs),
        managing_org_ids=listed(managing_orgs) or UNSET,
        starts_at=moment(starts_at, "--starts-at") or UNSET,
        ends_at=moment(ends_at, "--ends-at") or UNSET,
        contract_ref=contract_ref or UNSET, reason=reason or UNSET,
    )  # fmt: skip
    run = session(ctx)
    made = run.api.create_reservation(node, request, idempotency_key=idempotency_key)
    show_record(run.output, made)


@group.command("change")
def change_reservation(
    ctx: typer.Context,
    node: NodeId,
    reservation: ReservationId,
    ends_at: Annotated[str | None, typer.Option(help="RFC 3339: the new end.")] = None,
    open_ended: Annotated[bool, typer.Option(help="No end (removes endsAt).")] = False,
    starts_at: Annotated[str | None, typer.Option(help="RFC 3339; only while pending.")] = None,
    allowed_orgs: Annotated[list[str] | None, typer.Option(help="The whole new audience.")] = None,
    managing_orgs: Annotated[
        list[str] | None, typer.Option(help="The whole new list of managers.")
    ] = None,
    no_managers: Annotated[bool, typer.Option(help="Remove every manager.")] = False,
    add_units: Annotated[list[str] | None, typer.Option(help="Units to add.")] = None,
    remove_units: Annotated[list[str] | None, typer.Option(help="Units to remove.")] = None,
    contract_ref: Annotated[str | None, typer.Option(help="Your contract's reference.")] = None,
    reason: Reason = None,
    idempotency_key: IdempotencyKey = None,
    if_match: IfMatch = None,
) -> None:
    """Change a pending or active reservation: only what is given changes."""
    if ends_at is not None and open_ended:
        raise typer.BadParameter("give --ends-at or --open-ended, not both", param_hint="--ends-at")
    if managing_orgs and no_managers:
        raise typer.BadParameter(
            "give --managing-orgs or --no-managers, not both", param_hint="--managing-orgs"
        )
    request = UpdateReservationRequest(
        ends_at=None if open_ended else moment(ends_at, "--ends-at") or UNSET,
        starts_at=moment(starts_at, "--starts-at") or UNSET,
        allowed_org_ids=listed(allowed_orgs) or UNSET,
        managing_org_ids=[] if no_managers else listed(managing_orgs) or UNSET,
        add_unit_ids=listed(add_units) or UNSET, remove_unit_ids=listed(remove_units) or UNSET,
        contract_ref=contract_ref or UNSET, reason=reason or UNSET,
    )  # fmt: skip
    if not request.to_dict():
        raise typer.BadParameter("give at least one change", param_hint="--ends-at")
    run = session(ctx)
    changed = run.api.update_reservation(
        node, reservation, request, idempotency_key=idempotency_key, if_match=if_match
    )
    show_record(run.output, changed)


@group.command("cancel")
def cancel_reservation(
    ctx: typer.Context, node: NodeId, reservation: ReservationId, reason: Reason = None,
    idempotency_key: IdempotencyKey = None, if_match: IfMatch = None,
) -> None:  # fmt: skip
    """End a reservation now; its units stop being governed."""
    run = session(ctx)
    body = CancelRequest(reason=reason) if reason else None
    cancelled = run.api.cancel(node, reservation, body, idempotency_key=idempotency_key,
                               if_match=if_match)  # fmt: skip
    show_record(run.output, cancelled)


def release(
    ctx: typer.Context, node: NodeId, reservation: ReservationId, unit_ids: Units = None,
    dry_run: DryRun = False, reason: Reason = None, idempotency_key: IdempotencyKey = None,
    if_match: IfMatch = None,
) -> None:  # fmt: skip
    """Lend some of a reservation's units to the spot market."""
    run = session(ctx)
    body = UnitsRequest(unit_ids=named(unit_ids), dry_run=dry_run, reason=reason or UNSET)
    released = run.api.release(node, reservation, body, idempotency_key=idempotency_key,
                               if_match=if_match)  # fmt: skip
    show_record(run.output, released)


def reclaim(
    ctx: typer.Context, node: NodeId, reservation: ReservationId, unit_ids: Units = None,
    count: Annotated[int | None, typer.Option(
        min=1, max=32, help="How many released units; the service chooses which.")] = None,
    plan: Annotated[str | None, typer.Option(
        help="A dry run's planId: do exactly that plan (5 minutes), its notice too, or "
        "nothing.")] = None,
    notice: Annotated[str | None, typer.Option(
        help="The spot workloads' notice, 0-3600 s: 90, 90s, 15m or 1h; they are stopped "
        "at the answer's terminateAt.")] = None,
    dry_run: DryRun = False, reason: Reason = None, idempotency_key: IdempotencyKey = None,
    if_match: IfMatch = None,
) -> None:  # fmt: skip
    """Take released units back; spot workloads on them are terminated (after --notice).
    Name the units (--units), say how many (--count), or apply a dry run's plan (--plan)."""
    ways = [name for given, name in ((unit_ids, "--units"), (count, "--count"), (plan, "--plan"))
            if given]  # fmt: skip
    if len(ways) > 1:
        raise typer.BadParameter("give one of --units, --count and --plan", param_hint=ways[1])
    if plan:
        # The plan is done as planned: its dry run's notice and version, nothing else.
        for given, name in ((dry_run, "--dry-run"), (notice, "--notice"), (if_match, "--if-match")):
            if given:
                raise typer.BadParameter(
                    f"a plan is applied as its dry run made it: no {name} beside --plan",
                    param_hint=name)  # fmt: skip
    notice_seconds = seconds(notice, "--notice")
    run = session(ctx)
    if count is not None:
        result = run.api.reclaim_count(node, reservation, count, dry_run=dry_run, reason=reason,
                                       notice_seconds=notice_seconds,
                                       idempotency_key=idempotency_key,
                                       if_match=if_match)  # fmt: skip
    elif plan:
        result = run.api.apply_plan(node, reservation, plan, reason=reason,
                                    idempotency_key=idempotency_key)  # fmt: skip
    else:
        body = UnitsRequest(unit_ids=named(unit_ids), dry_run=dry_run, reason=reason or UNSET)
        result = run.api.reclaim(node, reservation, body, idempotency_key=idempotency_key,
                                 if_match=if_match,
                                 notice_seconds=notice_seconds)  # fmt: skip
    show_record(run.output, result)


def named(unit_ids: list[str] | None) -> list[str]:
    """The units a release or reclaim names; at least one."""
    found = listed(unit_ids)
    if not found:
        raise typer.BadParameter("name at least one unit", param_hint="--units")
    return found


def register(app: typer.Typer) -> None:
    app.command()(units)
    app.add_typer(group, name="reservations")
    app.command()(release)
    app.command()(reclaim)
