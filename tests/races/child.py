"""What runs in a race call's own process. The fork server imports this module once (with the
layer and the SDKs it pulls in), so each call's fork starts warm and single-threaded."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from reservations.dal import clients, store
from reservations.http import resolver
from tests.races.forks import Call, ReadHook, child_main
from tests.support.lambdas import invoke, load_function


def run_call(
    call: Call, hook: ReadHook, environment: dict[str, str], answers: Connection, stacks: str
) -> None:
    """The process's target: one call, its answer or its traceback sent back."""
    child_main(call, hook, environment, answers, stacks, _invoke)


def _invoke(call: Call, hook: ReadHook) -> Any:
    clients.reset()  # settings and clients from this call's environment
    resolver.key_cache.clear()
    store.load_node = hook.wrap(store.load_node)  # type: ignore[method-assign]
    function, event = call
    return invoke(load_function(function), event)
