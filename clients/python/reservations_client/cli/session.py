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
from typer.core import TyperGroup, TyperOption

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


END_OF_OPTIONS = "--"  # what follows is arguments only


def _option(command: Any, token: str) -> TyperOption | None:
    """The option of ``command`` that ``token`` names (``--x``, ``--x=v``, ``-x``, ``-xv``)."""
    name = token.split("=", 1)[0] if token.startswith("--") else token[:2]
    for param in command.params:
        if isinstance(param, TyperOption) and name in param.opts + param.secondary_opts:
            return param
    return None


def _takes_value(option: TyperOption | None, token: str) -> bool:
    """Whether the argument after ``token`` is its option's value."""
    if option is None or option.is_flag or option.count:
        return False
    return "=" not in token and (token.startswith("--") or len(token) == 2)


def root_options_first(root: TyperGroup, args: list[str]) -> list[str]:
    """``args`` with the root's options that come after a command (``units node-a1 -o json``)
    moved before it, where click reads them; the rest in order. Each argument is read as
    click reads it: an option's value is never taken for an option, and nothing after
    ``--`` moves."""
    front: list[str] = []
    rest: list[str] = []
    command: Any = root
    index = 0
    while index < len(args):
        token = args[index]
        if token == END_OF_OPTIONS:
            rest += args[index:]
            break
        own = _option(command, token) if token.startswith("-") else None
        hoisted = command is not root and own is None and token.startswith("-")
        option = _option(root, token) if hoisted else own
        taken = args[index : index + 1 + _takes_value(option, token)]
        if hoisted and option is not None:
            front += taken
        else:
            rest += taken
            if not token.startswith("-") and isinstance(command, TyperGroup):
                command = command.commands.get(token, command)
        index += len(taken)
    return front + rest


class Commands(TyperGroup):
    """The root group: the root's options are read after a command too
    (:func:`root_options_first`); every command's API, settings and network errors are told
    here, in one place, without a traceback, and end the command with a non-zero status."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, root_options_first(self, args))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (ReservationsApiError, SettingsProblem, httpx.HTTPError) as error:
            raise typer.Exit(explain(error)) from error
