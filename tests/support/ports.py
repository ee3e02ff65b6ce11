"""A loaded function's ports, swapped for a test."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest


def swap_ports(monkeypatch: pytest.MonkeyPatch, module: ModuleType, **changes: Any) -> None:
    """Replace some of a loaded function's ports for the test: its API function's, or the
    module's own (the sweeper's, the reports')."""
    holder = getattr(module, "function", module)
    monkeypatch.setattr(holder, "ports", dataclasses.replace(holder.ports, **changes))
