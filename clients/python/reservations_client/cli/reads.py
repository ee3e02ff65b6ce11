"""Nodes and workloads, read: ``nodes get``, ``workloads list|get``."""

from __future__ import annotations

from itertools import islice
from typing import Annotated

import typer

from reservations_client.cli.options import NodeId, listed
from reservations_client.cli.output import show_record, show_records
from reservations_client.cli.session import session
from reservations_client.cli.views import WORKLOADS

nodes = typer.Typer(no_args_is_help=True, help="Read nodes.")
workloads = typer.Typer(
    no_args_is_help=True, help="A node's workloads: read them; the scheduler places and ends them."
)


@nodes.command("get")
def get_node(ctx: typer.Context, node: NodeId) -> None:
    """A node: its owner, topology generation and unit ids."""
    run = session(ctx)
    show_record(run.output, run.api.get_node(node))


@workloads.command("list")
def list_workloads(
    ctx: typer.Context,
    node: NodeId,
    state: Annotated[
        list[str] | None, typer.Option(help="States, e.g. running or terminating.")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many.")] = None,
) -> None:
    """A node's workloads, every page of them."""
    run = session(ctx)
    found = run.api.iter_workloads(node, state=listed(state) or None)
    show_records(run.output, islice(found, limit), WORKLOADS)


@workloads.command("get")
def get_workload(
    ctx: typer.Context,
    node: NodeId,
    workload: Annotated[str, typer.Argument(help="The workload's id.", show_default=False)],
) -> None:
    """One workload, with its termination while it is being terminated."""
    run = session(ctx)
    show_record(run.output, run.api.get_workload(node, workload))


def register(app: typer.Typer) -> None:
    app.add_typer(nodes, name="nodes")
    app.add_typer(workloads, name="workloads")
