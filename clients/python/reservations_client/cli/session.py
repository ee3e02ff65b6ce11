"""What every command shares: the settings, the output format and the API client, made only
when a command first needs it (so ``--help`` needs no settings); and how an error ends a
command: its message, code and request id on stderr, and a non-zero exit."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import typer
from typer.core import TyperGroup

from reservations_client.api import Reservations
from reservations_client.cli.output import Output, stderr
from reservations_client.cli.settings import Settings, SettingsProblem, load_settings
from reservations_client.errors import ReservationsApiError

Connect = Callable[[Settings], Reservations]
USAGE_EXIT = 2  # as click answers a bad option


def connect(settings: Settings) -> Reservations:
    return Reservations(settings.api_url, settings.api_key, timeout=30.0)


@dataclass
class Session:
    profile: str | None
    output: Output
    connect: Connect = connect
    _api: Reservations | None = field(default=None, repr=False)

    @property
    def api(self) -> Reservations:
        if self._api is None:
            self._api = self.connect(load_settings(self.profile, os.environ))
        return self._api


def session(ctx: typer.Context) -> Session:
    found = ctx.find_object(Session)
    assert found is not None, "the root command makes the session"
    return found


def explain(error: ReservationsApiError | SettingsProblem | httpx.HTTPError) -> int:
    """Print what went wrong on stderr; the exit status it ends with."""
    if isinstance(error, SettingsProblem):
        say(str(error))
        return USAGE_EXIT
    if isinstance(error, httpx.HTTPError):
        say(f"the API could not be reached: {error}")
        return 1
    say(error.message or f"HTTP {error.status}")
    say(f"code: {error.code or '-'}  status: {error.status}  "
        f"request id: {error.request_id or '-'}", prefix="")  # fmt: skip
    for detail in error.details:
        say(f"  {detail.get('field', '')}: {detail.get('problem', '')}", prefix="")
    return 1


def say(message: str, prefix: str = "error: ") -> None:
    stderr().print(prefix + message, markup=False, highlight=False, soft_wrap=True)


class Commands(TyperGroup):
    """The root group: every command's API, settings and network errors are told here, in
    one place, without a traceback, and end the command with a non-zero status."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (ReservationsApiError, SettingsProblem, httpx.HTTPError) as error:
            raise typer.Exit(explain(error)) from error
