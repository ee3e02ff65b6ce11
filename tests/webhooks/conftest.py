"""Webhook deliveries over real sockets, to receivers on 127.0.0.1 only (each file that opens
one says so with ``pytest.mark.allow_hosts(["127.0.0.1"])``: a connection to any other
address fails the test), and every host name is resolved by a resolver
the test controls, so no traffic leaves the machine and no DNS query is made."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from reservations.webhooks.egress.client import SendLimits, WebhookClient
from reservations.webhooks.rules.urls import Address, address_problem
from tests.support.webhook_receiver import Certificates, Receiver, certificates

LOOPBACK = ipaddress.ip_address("127.0.0.1")


class FakeResolver:
    """Host name -> the answers it gives, one per call (the last one again once used up);
    IP literals resolve to themselves. Counts the look-ups of each name."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.calls: list[str] = []

    def set(self, name: str, *answers: Sequence[str]) -> None:
        self.answers[name] = [list(answer) for answer in answers]

    def __call__(self, host: str, port: int, seconds: float) -> list[Address]:
        self.calls.append(host)
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        if host not in self.answers:
            raise OSError(-2, "Name or service not known")
        queue = self.answers[host]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return [ipaddress.ip_address(a) for a in answer]


def loopback_disguised_as_public(address: Address) -> str | None:
    """The address rules, except that 127.0.0.1 passes for a public address: how a test
    calls a "public" endpoint without any traffic leaving the machine."""
    return None if address == LOOPBACK else address_problem(address)


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
def tls(tmp_path: Path) -> Certificates:
    return certificates(tmp_path)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown: receivers told to hang stop hanging."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def receivers(release: threading.Event) -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(**options: object) -> Receiver:
        receiver = Receiver(**options).start()  # type: ignore[arg-type]
        started.append(receiver)
        return receiver

    yield start
    release.set()
    for receiver in started:
        receiver.stop()


@pytest.fixture
def make_client(resolver: FakeResolver, tls: Certificates) -> Callable[..., WebhookClient]:
    def make(seconds: float = 2.0, **options: object) -> WebhookClient:
        fields: dict[str, object] = {
            "resolver": resolver,
            "limits": SendLimits(seconds=seconds),
            "tls": tls.client,
            **options,
        }
        return WebhookClient(**fields)  # type: ignore[arg-type]

    return make
