"""Faults and spies through botocore's own event system (no attribute patching): a hook on
one operation of one client, for the length of a ``with`` block.

- ``before`` runs with the operation's parameters before the request is built: it may
  record or change them, or raise to fail the call as the service or the network would.
- ``after`` runs with the parsed response of a request that was made: it may change it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Hook = Callable[[dict[str, Any]], None]


@contextmanager
def on_call(
    client: Any, operation: str, before: Hook | None = None, after: Hook | None = None
) -> Iterator[None]:
    """Run ``before(params)`` / ``after(parsed)`` around every ``operation`` of ``client``."""
    service = client.meta.service_model.service_id.hyphenize()
    hooks: list[tuple[str, Callable[..., None]]] = []
    if before is not None:
        hooks.append((f"before-parameter-build.{service}.{operation}", _params(before)))
    if after is not None:
        hooks.append((f"after-call.{service}.{operation}", _parsed(after)))
    for event, hook in hooks:
        client.meta.events.register(event, hook)
    try:
        yield
    finally:
        for event, hook in hooks:
            client.meta.events.unregister(event, hook)


def _params(before: Hook) -> Callable[..., None]:
    def hook(params: dict[str, Any], **_kwargs: Any) -> None:
        before(params)

    return hook


def _parsed(after: Hook) -> Callable[..., None]:
    def hook(parsed: dict[str, Any], **_kwargs: Any) -> None:
        after(parsed)

    return hook
