"""What the end-to-end runs of the API's outside tools share (the typed client's session and
schemathesis): one `make run` of the demo fleet, its API functions started at once, the
demo fleet's keys by permission kind."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import requests

from tests.support.e2e import REPORTS, ROOT, TIMINGS
from tests.support.stack import REQUEST_TIMEOUT, Stack, run_stack

DOCUMENT = ROOT / "docs" / "openapi.json"
# Containers started at once: sam local trips over two dozen (a runtime waits forever for its
# first invocation), and two cores start four about as fast as more.
STARTING_AT_ONCE = 4
# Tries of each start: a container sam local cannot reach answers 502 with the function
# never run (more often with another stack starting beside it), and is replaced.
STARTS = 3
# One key of each permission kind the demo fleet has (fleets/demo.json, docs/fleet.md).
KEYS = {
    "operator": "vl_local_only_operator",  # every permission: nodes, the scheduler's calls
    "owner": "vl_local_only_owner",  # org-acme, which owns node-a1 and node-c3: reserves
    "broker": "vl_local_only_broker",  # org-broker, which manages reservations: capacity
    "read-only": "vl_local_only_owner_ro",  # org-acme, reservation.read alone
    "spot buyer": "vl_local_only_spotbuyer",  # org-spotbuyer: its workloads, events.read
}


def demo_stack(directory: Path) -> Iterator[Stack]:
    """`make run` with the demo fleet and its node agents, every API function started."""
    fleet = json.loads((ROOT / "fleets" / "demo.json").read_text())
    running = cast(Generator[Stack], run_stack(directory, fleet, consumers=True))
    stack = next(running)
    try:
        started = time.monotonic()
        start_every_function(stack)
        TIMINGS["API functions started (one request each, at once)"] = time.monotonic() - started
        yield stack
    finally:
        running.close()


def start_every_function(stack: Stack) -> None:
    """One request per route of the document, all at once: each function's container starts
    here rather than inside a test's deadline (an unauthenticated request runs it too)."""
    paths = json.loads(DOCUMENT.read_text())["paths"]
    calls = [(method.upper(), path.replace("{", "x").replace("}", ""))
             for path, operations in paths.items() for method in operations
             if method in {"get", "put", "post", "delete"}]  # fmt: skip

    def call(method_path: tuple[str, str]) -> int:
        method, path = method_path
        for _ in range(STARTS):
            answer = requests.request(method, stack.api + path, timeout=REQUEST_TIMEOUT * 3)
            if answer.status_code != 502:
                break
            # sam local's own answer when it could not reach the container it just started
            # ("No response from invoke container"): the function never ran, start it again.
            with lock:
                restarted.append(f"{method} {path}")
        return answer.status_code

    lock, restarted = threading.Lock(), list[str]()
    with ThreadPoolExecutor(max_workers=STARTING_AT_ONCE) as pool:
        statuses = list(pool.map(call, calls))
    if restarted:
        REPORTS.append(f"API functions sam local could not reach, started again: {restarted}")
    assert set(statuses) == {401}, dict(zip(calls, statuses, strict=True))


# --- schemathesis against the stack -------------------------------------------------------

REFUSALS_FILE = Path(__file__).with_name("schemathesis_refusals.json")
# Webhook URLs the fuzzer sends are rewritten to this: loopback, where nothing listens (the
# discard port), so a subscription's deliveries never leave the machine.
LOOPBACK_HOOK = "http://127.0.0.1:9/hooks"


def refusals() -> list[dict[str, Any]]:
    """The business refusals a schema-valid request may get (operation, status, code), each
    with its reason: what the schema cannot say (the fleet's state, an earlier request)."""
    listed: list[dict[str, Any]] = json.loads(REFUSALS_FILE.read_text())["refusals"]
    for refusal in listed:
        assert refusal["reason"].strip(), refusal
        assert set(refusal) - {"field"} == {"operations", "status", "code", "reason"}, refusal
    return listed


def refusal_for(case: Any, response: Any, listed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The listed refusal this answer is, if any."""
    try:
        body = response.json()
        code, fields = body.get("code"), {d.get("field") for d in body.get("details", [])}
    except (ValueError, AttributeError):
        return None
    operation = case.operation.definition.raw.get("operationId")
    for refusal in listed:
        if (refusal["status"], refusal["code"]) != (response.status_code, code):
            continue
        if refusal["operations"] != "*" and operation not in refusal["operations"]:
            continue
        if "field" in refusal and refusal["field"] not in fields:
            continue
        return refusal
    return None


@dataclass
class Tally:
    """What the fuzzer sent and what each check made of it, printed at the end."""

    requests: Counter[str] = field(default_factory=Counter)  # by key kind
    statuses: Counter[str] = field(default_factory=Counter)  # "METHOD path status"
    checks: Counter[str] = field(default_factory=Counter)  # check -> responses it passed
    refused: Counter[str] = field(default_factory=Counter)  # listed refusal -> how often
    links: Counter[str] = field(default_factory=Counter)  # stateful: link followed -> how often
    started: float = field(default_factory=time.monotonic)

    def report(self) -> str:
        lines = [
            f"schemathesis against the local stack: {sum(self.requests.values())} requests "
            f"in {time.monotonic() - self.started:.0f} s; by key: {dict(self.requests)}",
            f"  checks passed (responses): {dict(sorted(self.checks.items()))}",
            f"  business refusals (listed): {dict(sorted(self.refused.items()))}",
            f"  links followed (stateful): {sum(self.links.values())} steps over "
            f"{len(self.links)} links: {dict(sorted(self.links.items()))}",
            f"  by status: {dict(sorted(self.statuses.items()))}",
        ]
        return "\n".join(lines)


def counted_checks(tally: Tally, listed: list[dict[str, Any]]) -> list[Any]:
    """The five checks, each counting the responses it passed; a valid request's refusal is
    a failure unless it is a listed business refusal."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.openapi.checks import RejectedPositiveData
    from schemathesis.specs.openapi import checks as openapi

    def positive_data_acceptance(ctx: Any, response: Any, case: Any) -> bool | None:
        try:
            return openapi.positive_data_acceptance(ctx, response, case)
        except RejectedPositiveData:
            refusal = refusal_for(case, response, listed)
            if refusal is None:
                raise
            named = f" ({refusal['field']})" if "field" in refusal else ""
            tally.refused[f"{response.status_code} {refusal['code']}{named}"] += 1
            return None

    def counting(check: Any) -> Any:
        def run(ctx: Any, response: Any, case: Any) -> bool | None:
            result = check(ctx, response, case)
            tally.checks[check.__name__] += 1
            return result  # type: ignore[no-any-return]

        run.__name__ = check.__name__
        return run

    return [counting(check) for check in (
        not_a_server_error, openapi.status_code_conformance, openapi.content_type_conformance,
        openapi.response_schema_conformance, positive_data_acceptance,
    )]  # fmt: skip
