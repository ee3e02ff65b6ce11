"""What runs in a race call's own process. The fork server imports this module once (with the
layer and the SDKs it pulls in), so each call's fork starts warm and single-threaded."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from botocore.config import Config

from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.http import resolver
from tests.support.forks import Call, ReadHook, child_main

# The emulator stands in for DynamoDB and SQS, slowly on a loaded machine. These tests are
# about concurrency, not timeouts (tests/capacity/test_reclaim_slow_queue.py is), so no try
# is cut short and none is retried by botocore: moto ignores ClientRequestToken, so a retried
# transaction that had in fact committed would fail where DynamoDB would answer it again, and
# the call would decide a second time on its own write.
PATIENT = Config(connect_timeout=10, read_timeout=60, retries={"total_max_attempts": 1})
PATIENT_TRY_SECONDS = 70.0
INVOCATION_MS = 600_000


def run_call(
    call: Call, hook: ReadHook, environment: dict[str, str], answers: Connection, stacks: str
) -> None:
    """The process's target: one call, its answer or its traceback sent back."""
    child_main(call, hook, environment, answers, stacks, _invoke)


def _invoke(call: Call, hook: ReadHook) -> Any:
    clients.reset()  # settings and clients from this call's environment
    clients.DYNAMODB_CONFIG = clients.SQS_CONFIG = PATIENT
    clients.ATTEMPT_SECONDS = PATIENT_TRY_SECONDS
    resolver.key_cache.clear()
    function, event = call
    module = load_function(function)
    ports = getattr(module, "function", module).ports
    # The first read of the write's partition: a node's, or an org's webhooks.
    if hasattr(ports, "store"):
        ports.store.load_node = hook.wrap(ports.store.load_node)
        if function in SCHEDULED:  # a pass's first read is one reservation's
            _wrap_reservation_read(ports.store, hook)
    if hasattr(ports, "webhooks"):
        ports.webhooks.load_hooks = hook.wrap(ports.webhooks.load_hooks)
    if function in SCHEDULED:  # its counts, not an HTTP answer
        return module.lambda_handler(event, FakeContext(timeout_ms=INVOCATION_MS))
    return invoke(module, event, FakeContext(timeout_ms=INVOCATION_MS))


# The scheduled passes a race test runs (the clock): read a reservation at a time.
SCHEDULED = frozenset({"clock"})


def _wrap_reservation_read(store: Any, hook: ReadHook) -> None:
    original = store.load_reservation
    read = hook.wrap(lambda key: original(*key.split("|", 1)))
    store.load_reservation = lambda node_id, reservation_id: read(f"{node_id}|{reservation_id}")
