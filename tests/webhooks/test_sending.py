"""One attempt over the network: refused addresses are never connected to, the connection
is pinned to the checked address, no redirect is followed, the answer is read up to a cap,
and one deadline covers the whole attempt."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading

import pytest

from reservations.webhooks.egress import client as webhook_client
from reservations.webhooks.rules.urls import address_problem
from tests.support.webhook_receiver import (
    TLS_NAME,
    drip,
    endless_body,
    garbage,
    hang,
    status,
)
from tests.webhooks.conftest import loopback_disguised_as_public
from tests.webhooks.test_urls import REFUSED_ADDRESSES

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

BODY = '{"id":"evt-1"}'
HEADERS = {"webhook-id": "evt-1"}


@pytest.fixture
def connections(monkeypatch):
    """Every address the client opens a TCP connection to."""
    opened: list[str] = []
    original = socket.create_connection

    def spy(address, *args, **kwargs):
        opened.append(address[0])
        return original(address, *args, **kwargs)

    monkeypatch.setattr(webhook_client.socket, "create_connection", spy)
    return opened


# --- never connected to --------------------------------------------------------------------


@pytest.mark.parametrize(("address", "problem"), REFUSED_ADDRESSES)
def test_a_host_resolving_to_a_refused_address_is_never_connected_to(
    make_client, resolver, connections, address, problem
):
    resolver.set("hooks.example.com", [address])
    result = make_client().post("https://hooks.example.com/in", HEADERS, BODY)
    assert result.refused
    assert not result.delivered
    assert result.status is None
    assert result.error == (
        f"not sent: hooks.example.com resolves to {ipaddress.ip_address(address)}, "
        f"{address_problem(ipaddress.ip_address(address))}"
    )
    assert problem in result.error
    assert connections == []


def test_one_refused_address_among_public_ones_refuses_the_attempt(
    make_client, resolver, connections
):
    resolver.set("hooks.example.com", ["93.184.216.34", "10.0.0.7", "2606:4700::1111"])
    result = make_client().post("https://hooks.example.com/in", HEADERS, BODY)
    assert result.refused
    assert "10.0.0.7, a private address" in (result.error or "")
    assert connections == []


def test_a_name_public_when_subscribed_and_private_when_sent_is_refused(
    make_client, resolver, receivers, connections
):
    receiver = receivers()
    resolver.set("rebind.example.com", ["93.184.216.34"], ["127.0.0.1"])
    # Subscribe time: the name is public (as a subscribe-time check would see it).
    assert resolver("rebind.example.com", 443, 1.0) == [ipaddress.ip_address("93.184.216.34")]
    result = make_client().post(f"https://rebind.example.com:{receiver.port}/in", HEADERS, BODY)
    assert result.refused
    assert "resolves to 127.0.0.1, a loopback address" in (result.error or "")
    assert connections == []
    assert receiver.received == []


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1/in", "https://2130706433/in", "https://0x7f.1/in",
     "http://hooks.example.com/in", "https://user@hooks.example.com/in"],
)  # fmt: skip
def test_a_stored_url_that_the_rules_refuse_is_not_sent_even_if_it_got_in(
    make_client, resolver, connections, url
):
    resolver.set("hooks.example.com", ["93.184.216.34"])
    result = make_client().post(url, HEADERS, BODY)
    assert result.refused
    assert (result.error or "").startswith("not sent: url must")
    assert connections == []
    assert resolver.calls == []


def test_a_name_without_an_address_is_a_failed_attempt_not_a_refusal(make_client, connections):
    result = make_client().post("https://nowhere.example.com/in", HEADERS, BODY)
    assert not result.refused
    assert (
        result.error
        == "not sent: could not resolve nowhere.example.com (Name or service not known)"
    )
    assert connections == []


# --- pinned -------------------------------------------------------------------------------


def test_the_connection_goes_to_the_checked_address_with_the_name_as_sni_and_host(
    make_client, resolver, receivers, tls, connections
):
    receiver = receivers(tls=tls.server)
    # Any later look-up would answer a private address: the client must not make one.
    resolver.set(TLS_NAME, ["127.0.0.1"], ["10.0.0.1"])
    client = make_client(address_check=loopback_disguised_as_public)
    result = client.post(f"https://{TLS_NAME}:{receiver.port}/in?x=1", HEADERS, BODY)
    assert result.status == 200
    assert result.delivered
    assert resolver.calls == [TLS_NAME]
    assert connections == ["127.0.0.1"]
    (request,) = receiver.received
    assert request.headers["host"] == f"{TLS_NAME}:{receiver.port}"
    assert request.path == "/in?x=1"
    assert request.body == BODY
    assert request.headers["webhook-id"] == "evt-1"


def test_a_certificate_for_another_name_fails_the_attempt(make_client, resolver, receivers, tls):
    receiver = receivers(tls=tls.server)
    resolver.set("other.test", ["127.0.0.1"])
    client = make_client(address_check=loopback_disguised_as_public)
    result = client.post(f"https://other.test:{receiver.port}/in", HEADERS, BODY)
    assert not result.delivered
    assert (result.error or "").startswith("TLS certificate not valid for other.test")
    assert receiver.received == []


# --- what an answer counts for ------------------------------------------------------------


def local(make_client, **options):
    return make_client(allow_local=True, **options)


def test_a_redirect_is_not_followed(make_client, receivers):
    receiver = receivers(
        answer=lambda r: status(302, "/elsewhere") if r.path == "/in" else status(200)
    )
    result = local(make_client).post(receiver.local_url("/in"), HEADERS, BODY)
    assert result.status == 302
    assert not result.delivered
    assert result.error == "redirects are not followed"
    assert [r.path for r in receiver.received] == ["/in"]


def test_the_answer_is_read_only_up_to_the_cap(make_client, receivers):
    receiver = receivers(answer=lambda _r: endless_body)
    result = local(make_client).post(receiver.local_url(), HEADERS, BODY)
    assert result.status == 200
    assert result.delivered
    # The receiver could write 1 GiB; the client hung up after 64 KiB (plus what the
    # sockets' buffers took in).
    assert receiver.body_bytes_written < 32 * 1024 * 1024


def test_one_deadline_covers_the_attempt_even_when_every_byte_comes_in_time(make_client, receivers):
    # A header dripped a byte every 50 ms for 3 s would pass any per-read timeout, and
    # then answer 200: only a deadline on the whole attempt makes it a failure.
    receiver = receivers(answer=lambda _r: drip(3.0))
    result = local(make_client, seconds=0.5).post(receiver.local_url(), HEADERS, BODY)
    assert not result.delivered
    assert result.status is None
    assert result.error == "no answer within 0.5 s"


@pytest.mark.parametrize(
    ("answer", "status_code", "error"),
    [
        (lambda release: status(500), 500, None),
        (lambda release: status(404), 404, None),
        (lambda release: garbage, None, "not an HTTP answer (BadStatusLine)"),
        (lambda release: hang(release), None, "no answer within 0.5 s"),
        (lambda release: status(204), 204, None),
        (lambda release: status(300), 300, "redirects are not followed"),
        (lambda release: status(399), 399, "redirects are not followed"),
        (lambda release: status(400), 400, None),
        (lambda release: status(299), 299, None),
    ],
)
def test_what_each_answer_makes_of_an_attempt(
    make_client, receivers, release, answer, status_code, error
):
    receiver = receivers(answer=lambda _r: answer(release))
    result = local(make_client, seconds=0.5).post(receiver.local_url(), HEADERS, BODY)
    assert (result.status, result.error) == (status_code, error)
    assert result.delivered == (status_code in (204, 299))


def broken_chunks(handler):
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.write(b"not a chunk size\r\n")
    handler.close_connection = True


def test_an_answer_whose_body_is_not_http_still_counts_by_its_status(make_client, receivers):
    receiver = receivers(answer=lambda _r: broken_chunks)
    result = local(make_client).post(receiver.local_url(), HEADERS, BODY)
    assert (result.status, result.error, result.delivered) == (200, None, True)


def test_an_answer_whose_body_breaks_tls_still_counts_by_its_status(
    make_client, resolver, receivers, tls
):
    def then_plain_bytes(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "100")
        handler.end_headers()
        handler.wfile.flush()
        os.write(handler.connection.fileno(), b"plain bytes, not a TLS record" * 4)
        handler.close_connection = True

    receiver = receivers(tls=tls.server, answer=lambda _r: then_plain_bytes)
    resolver.set(TLS_NAME, ["127.0.0.1"])
    client = make_client(address_check=loopback_disguised_as_public)
    result = client.post(f"https://{TLS_NAME}:{receiver.port}/in", HEADERS, BODY)
    assert (result.status, result.error, result.delivered) == (200, None, True)


def test_an_endpoint_that_never_takes_the_connection_fails_by_the_deadline(make_client):
    # A listener whose backlog is full: the kernel drops the SYN, the connect just waits.
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        queued = socket.create_connection(("127.0.0.1", port), 0.2)  # the one it takes
        results = []
        worker = threading.Thread(
            target=lambda: results.append(
                local(make_client, seconds=0.2).post(f"http://127.0.0.1:{port}/", HEADERS, BODY)
            ),
            daemon=True,
        )
        worker.start()
        worker.join(3.0)
        queued.close()
    assert [(r.status, r.error) for r in results] == [(None, "no answer within 0.2 s")]


def test_an_endpoint_that_is_down_fails_the_attempt(make_client):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the attempt: nothing listens
    result = local(make_client).post(f"http://127.0.0.1:{port}/hooks", HEADERS, BODY)
    assert not result.delivered
    assert result.error == "connection failed: Connection refused"


# --- the local allowance ------------------------------------------------------------------


def test_without_the_allowance_the_local_receiver_url_is_refused(make_client, receivers):
    receiver = receivers()
    result = make_client().post(receiver.local_url(), HEADERS, BODY)
    assert result.refused
    assert result.error == "not sent: url must start with https://"
    assert receiver.received == []


def test_the_allowance_reaches_the_machines_loopback_where_the_function_sees_it(
    make_client, resolver, receivers, connections
):
    # In a Lambda container the machine is host.docker.internal, a private address: the
    # allowance sends there, with the URL's Host, and for that URL form only.
    receiver = receivers()
    resolver.set("host.docker.internal", ["127.0.0.1"])
    client = local(make_client, local_receiver_host="host.docker.internal")
    result = client.post(receiver.local_url("/hooks"), HEADERS, BODY)
    assert result.delivered
    assert resolver.calls == ["host.docker.internal"]
    (request,) = receiver.received
    assert request.headers["host"] == f"127.0.0.1:{receiver.port}"
    # Any other URL still goes through the rules.
    resolver.set("hooks.example.com", ["172.17.0.1"])
    refused = client.post("https://hooks.example.com/in", HEADERS, BODY)
    assert refused.refused
    assert connections == ["127.0.0.1"]


def test_attempts_run_side_by_side_without_sharing_a_deadline(make_client, receivers):
    # Two attempts at once from two threads: the one whose endpoint hangs holds up nothing.
    answered = threading.Event()
    slow = receivers(answer=lambda _r: hang(answered))
    fast = receivers()
    client = local(make_client, seconds=5.0)
    results = {}
    worker = threading.Thread(
        target=lambda: results.update(slow=client.post(slow.local_url(), HEADERS, BODY))
    )
    worker.start()
    results["fast"] = client.post(fast.local_url(), HEADERS, BODY)
    assert results["fast"].delivered
    assert "slow" not in results  # still waiting for its endpoint
    answered.set()
    worker.join()
    assert results["slow"].delivered
