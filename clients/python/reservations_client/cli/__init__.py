"""The ``reservations`` command line (``reservations --help``)."""

from __future__ import annotations

from reservations_client.cli.app import app, main

__all__ = ["app", "main"]
