"""Long waits that say so, and Ctrl-C that ends a command cleanly."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from reservations_client.cli.output import stderr


class Waiting:
    """Called at a followed feed's end: says once that it waits, then sleeps a poll."""

    def __init__(self, seconds: float, sleep: Callable[[float], None] | None = None) -> None:
        self.seconds = seconds
        self.sleep = sleep
        self.said = False

    def __call__(self) -> None:
        if not self.said:
            stderr().print("waiting for new events... (Ctrl-C to stop)", style="dim")
            self.said = True
        (self.sleep or time.sleep)(self.seconds)  # looked up now: a test may stand in

    def landed(self) -> None:
        """An event was shown: the next wait is said again."""
        self.said = False


@contextmanager
def until_interrupted() -> Iterator[None]:
    """Ctrl-C ends the command with status 0 and a word, not a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        stderr().print("stopped", style="dim")
        raise typer.Exit(0) from None
