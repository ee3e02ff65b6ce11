"""An attempt's edges: a name with no address, a resolver's error without words, every
address tried in turn, no time left before any connection, and TLS refused by an endpoint
that does not speak it, each as the attempt's error says it; and the deadline's abort,
which shuts the socket whatever the attempt is blocked on."""

from __future__ import annotations

import socket

import pytest

from reservations.webhooks.egress import client as webhook_client
from reservations.webhooks.rules.urls import SendTarget
from tests.webhooks.conftest import LOOPBACK, loopback_disguised_as_public

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

BODY = '{"id":"evt-1"}'
HEADERS = {"webhook-id": "evt-1"}


@pytest.fixture
def connections(monkeypatch):
    opened: list[str] = []
    original = socket.create_connection

    def spy(address, *args, **kwargs):
        opened.append(address[0])
        return original(address, *args, **kwargs)

    monkeypatch.setattr(webhook_client.socket, "create_connection", spy)
    return opened


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_name_with_no_address_now_is_a_failed_attempt_not_a_refusal(
    make_client, resolver, connections
):
    resolver.set("hooks.example.com", [])
    result = make_client().post("https://hooks.example.com/in", HEADERS, BODY)
    assert (result.status, result.refused) == (None, False)
    assert result.error == "not sent: hooks.example.com has no address"
    assert connections == []


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(), "OSError"),
        (TimeoutError("resolving it took too long"), "resolving it took too long"),
    ],
)
def test_a_resolver_error_is_named_by_its_words_or_else_its_kind(make_client, error, said):
    def resolver(host: str, port: int, seconds: float) -> list[object]:
        raise error

    result = make_client(resolver=resolver).post("https://hooks.example.com/in", HEADERS, BODY)
    assert result.error == f"not sent: could not resolve hooks.example.com ({said})"
    assert not result.refused


def test_each_address_is_tried_in_turn_and_the_last_failure_said(
    make_client, resolver, connections
):
    resolver.set("hooks.example.com", ["127.0.0.1", "127.0.0.1"])
    client = make_client(address_check=loopback_disguised_as_public)
    result = client.post(f"https://hooks.example.com:{closed_port()}/in", HEADERS, BODY)
    assert result.error == "connection failed: Connection refused"
    assert connections == ["127.0.0.1", "127.0.0.1"]


def test_no_time_left_connects_to_nothing(make_client, resolver, connections):
    resolver.set("hooks.example.com", ["127.0.0.1"])
    client = make_client(seconds=0.0, address_check=loopback_disguised_as_public)
    result = client.post("https://hooks.example.com:8443/in", HEADERS, BODY)
    assert (result.status, result.error) == (None, "no answer within 0 s")
    assert connections == []


def test_an_endpoint_that_does_not_speak_tls_fails_the_handshake(make_client, resolver, receivers):
    receiver = receivers()  # plain HTTP
    resolver.set("hooks.example.com", ["127.0.0.1"])
    client = make_client(address_check=loopback_disguised_as_public)
    result = client.post(f"https://hooks.example.com:{receiver.port}/in", HEADERS, BODY)
    assert result.status is None
    assert (result.error or "").startswith("TLS failed: ")
    assert result.error != "TLS failed: handshake"
    assert receiver.received == []


def test_the_deadline_shuts_the_connection_so_a_blocked_read_returns_at_once():
    ours, endpoint = socket.socketpair()
    with ours, endpoint:
        target = SendTarget("hooks.example.com", 443, "/in")
        connection = webhook_client._PinnedConnection(target, LOOPBACK, None, 5.0)
        connection.sock = ours
        connection.abort()
        assert connection.aborted
        ours.settimeout(5.0)
        assert ours.recv(1) == b""  # what the attempt was blocked on ends now
        endpoint.settimeout(5.0)
        assert endpoint.recv(1) == b""  # and the endpoint sees the attempt hang up
    webhook_client._PinnedConnection(target, LOOPBACK, None, 5.0).abort()  # not connected yet
