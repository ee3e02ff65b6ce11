"""``webhooks create|list|get|delete|rotate|deliveries|delivery|retry`` and ``webhooks listen``."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice
from typing import Annotated

import typer

from reservations_client.api import POLL_SECONDS
from reservations_client.cli.events import Types
from reservations_client.cli.forward import NotLoopback, forward, loopback_target, sender
from reservations_client.cli.options import IdempotencyKey, listed
from reservations_client.cli.output import Output, show_line, show_record, show_records
from reservations_client.cli.session import session
from reservations_client.cli.views import DELIVERIES, SUBSCRIPTIONS
from reservations_client.cli.waiting import Waiting, until_interrupted
from reservations_client.webhooks import new_secret

Subscription = Annotated[str, typer.Argument(help="The subscription's id.", show_default=False)]

app = typer.Typer(no_args_is_help=True, help="Manage the org's webhooks; forward events locally.")


@app.command("create")
def create(
    ctx: typer.Context,
    url: Annotated[str, typer.Option(help="The https:// endpoint to deliver to.")],
    types: Types = None,
    description: Annotated[str | None, typer.Option(help="For people.")] = None,
    idempotency_key: IdempotencyKey = None,
) -> None:
    """Subscribe an endpoint; its signing secret is shown this once."""
    run = session(ctx)
    made = run.api.create_webhook(url, listed(types) or None, description, idempotency_key)
    show_record(run.output, made)


@app.command("list")
def list_webhooks(ctx: typer.Context) -> None:
    """The org's subscriptions (never their secrets)."""
    run = session(ctx)
    show_records(run.output, run.api.iter_webhooks(), SUBSCRIPTIONS)


@app.command("get")
def get(ctx: typer.Context, subscription: Subscription) -> None:
    """One subscription."""
    run = session(ctx)
    show_record(run.output, run.api.get_webhook(subscription))


@app.command("delete")
def delete(ctx: typer.Context, subscription: Subscription) -> None:
    """Delete a subscription: nothing more is sent to it."""
    session(ctx).api.delete_webhook(subscription)
    typer.echo(f"deleted {subscription}", err=True)


@app.command("rotate")
def rotate(ctx: typer.Context, subscription: Subscription) -> None:
    """A new signing secret; the old one also signs for 24 hours."""
    run = session(ctx)
    show_record(run.output, run.api.rotate_webhook_secret(subscription))


@app.command("deliveries")
def deliveries(
    ctx: typer.Context,
    subscription: Subscription,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 50,
) -> None:
    """A subscription's recent delivery attempts, newest first."""
    run = session(ctx)
    found = islice(run.api.iter_webhook_deliveries(subscription), limit)
    show_records(run.output, found, DELIVERIES)


@app.command("delivery")
def delivery(
    ctx: typer.Context,
    subscription: Subscription,
    event: Annotated[str, typer.Argument(help="The delivery's event id.")],
) -> None:
    """One delivery: where it stands, when it is next attempted, its attempts newest first."""
    run = session(ctx)
    found = run.api.webhook_delivery(subscription, event).to_dict()
    if run.output in (Output.json, Output.csv):
        show_record(run.output, found)
        return
    show_record(run.output, {k: v for k, v in found.items() if k != "attempts"})
    show_records(run.output, found["attempts"], DELIVERIES)


@app.command("retry")
def retry(
    ctx: typer.Context,
    subscription: Subscription,
    event: Annotated[str, typer.Argument(help="The failed delivery's event id.")],
) -> None:
    """Send a failed delivery again now."""
    run = session(ctx)
    show_record(run.output, run.api.retry_webhook_delivery(subscription, event))


@app.command("listen")
def listen(
    ctx: typer.Context,
    forward_to: Annotated[str, typer.Option(help="A local receiver: http://127.0.0.1:PORT/path.")],
    types: Types = None,
    poll: Annotated[float, typer.Option(min=0.5, help="Seconds between polls.")] = POLL_SECONDS,
) -> None:
    """Tail the org's feed from now and post each new event to a local receiver, signed
    with a secret printed at the start (verify with verify_webhook), until Ctrl-C."""
    try:
        target = loopback_target(forward_to)
    except NotLoopback as refused:
        raise typer.BadParameter(str(refused), param_hint="--forward-to") from None
    run, secret, waiting = session(ctx), new_secret(), Waiting(poll)
    # Plain print, one line: a script reads the secret from it (Rich would wrap it).
    print(f"forwarding to {target}; signing secret: {secret}", flush=True)
    followed = run.api.follow_events(listed(types) or None, datetime.now(UTC), waiting)
    with until_interrupted(), sender() as http:
        for event in followed:
            outcome = forward(http, target, secret, event)
            show_line(run.output, {**event.to_dict(), "forwarded": outcome},
                      ["time", "type", "id", "forwarded"])  # fmt: skip
            waiting.landed()
