"""``reservations``: the command line of the reservations API, on the typed client.

The root command reads ``--profile`` and ``--output`` (given before the command or after
it: :class:`~reservations_client.cli.session.Commands`); each group of commands lives in its
own module (capacity, reads, events, webhooks, usage) and is added here. ``--install-completion``
installs the shell's completion (Typer's).
"""

from __future__ import annotations

from typing import Annotated

import typer

from reservations_client.cli import capacity, events, lending, reads, scheduler, usage, webhooks
from reservations_client.cli.output import Output
from reservations_client.cli.session import Commands, Session, connect

app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Reservations API from the shell. Settings: RESERVATIONS_API_URL and "
    "RESERVATIONS_API_KEY, or --profile NAME of ~/.config/reservations/config.toml "
    "(RESERVATIONS_CONFIG_FILE). The key is never an argument. --profile and --output may "
    "also follow the command.",
)


@app.callback()
def root(
    ctx: typer.Context,
    profile: Annotated[
        str | None,
        typer.Option(help="A profile of the config file (else RESERVATIONS_PROFILE)."),
    ] = None,
    output: Annotated[
        Output,
        typer.Option(
            "--output",
            "-o",
            envvar="RESERVATIONS_OUTPUT",
            help="table (for people), wide (every field), json (the API's) or csv.",
        ),
    ] = Output.table,
) -> None:
    """Reservations API from the shell."""
    # A caller may hand over how to connect (tests: in process); otherwise over HTTP.
    given = ctx.obj if callable(ctx.obj) else connect
    ctx.obj = Session(profile=profile, output=output, connect=given)


capacity.register(app)
reads.register(app)
scheduler.register(reads.workloads)
app.add_typer(lending.app, name="lending")
app.add_typer(events.app, name="events")
app.add_typer(webhooks.app, name="webhooks")
usage.register(app)


def main() -> None:
    """The console script."""
    app(prog_name="reservations")
