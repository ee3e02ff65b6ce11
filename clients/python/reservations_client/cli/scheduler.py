"""The platform scheduler's calls, for operators: ``workloads place|end``."""

from __future__ import annotations

from typing import Annotated

import typer

from reservations_client.cli.options import IdempotencyKey, NodeId, Units, listed
from reservations_client.cli.output import show_record, stdout
from reservations_client.cli.session import session

WorkloadId = Annotated[str, typer.Argument(help="The workload's id.", show_default=False)]


def place_workload(
    ctx: typer.Context,
    node: NodeId,
    workload: WorkloadId,
    org: Annotated[str, typer.Option(help="The org the workload runs for.")],
    tier: Annotated[str, typer.Option(help="spot, reserved or on-demand.")] = "spot",
    kind: Annotated[str, typer.Option(help="vm or pod.")] = "vm",
    units: Units = None,
    reservation: Annotated[str | None, typer.Option(
        help="The audience's work on this reservation (tier reserved): the units it has "
        "lent are taken back for it.")] = None,
    count: Annotated[int | None, typer.Option(
        min=1, max=16, help="With --reservation, instead of --units: how many of its units, "
        "the service choosing.")] = None,
    idempotency_key: IdempotencyKey = None,
) -> None:  # fmt: skip
    """Place a workload (workload.place). Running at once, or, when it took back units
    still running spot work, waiting for them: it starts when the node reports the last
    one stopped (workload.started)."""
    if (count is None) == (not units):
        raise typer.BadParameter("give --units or --count (with --reservation), not both")
    run = session(ctx)
    placed = run.api.place(
        node, workload, org_id=org, tier=tier, kind=kind, unit_ids=listed(units) or None,
        reservation_id=reservation, count=count, idempotency_key=idempotency_key,
    )  # fmt: skip
    show_record(run.output, placed)


def end_workload(
    ctx: typer.Context, node: NodeId, workload: WorkloadId, idempotency_key: IdempotencyKey = None
) -> None:
    """A workload that stopped on its own (or a waiting one given up): its units free."""
    run = session(ctx)
    run.api.end_workload(node, workload, idempotency_key)
    stdout().print(f"{workload} ended")


def register(workloads: typer.Typer) -> None:
    """The scheduler's commands beside the reads of ``workloads``."""
    workloads.command("place")(place_workload)
    workloads.command("end")(end_workload)
