"""``make soak``'s fault proxy in front of the emulator, over real sockets on 127.0.0.1 with a
small HTTP backend standing for the emulator: it passes requests and answers as they are,
holds each request while slowed, cuts and resets connections while refusing, or answers
503 in AWS's error shape; each fault ends by itself. boto3 reads what it does as it would
read a failing AWS endpoint (the errors the API answers 503 for)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from devstack.fault_proxy import FaultProxy
from devstack.net import free_port, wait_for_port

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


class Backend(ThreadingHTTPServer):
    """An HTTP/1.1 server (keep-alive) answering each POST with its body's length."""

    daemon_threads = True

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                answer = json.dumps({"got": len(body)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    backend = Backend()
    running = FaultProxy(backend.port, free_port(), ["127.0.0.1"]).start()
    yield running
    running.stop()
    backend.shutdown()
    backend.server_close()


def post(connection: http.client.HTTPConnection, body: bytes = b"x" * 100) -> tuple[int, bytes]:
    connection.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def connect(proxy: FaultProxy) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)


def test_requests_and_answers_pass_as_they_are(proxy):
    connection = connect(proxy)
    assert post(connection, b"y" * 200_000) == (200, b'{"got": 200000}')  # several chunks
    assert post(connection) == (200, b'{"got": 100}')  # the same connection, kept alive
    connection.close()
    assert proxy.counts["connections"] == 1
    assert proxy.counts["slowed"] == 0


def test_slowed_each_request_is_held_then_it_passes_and_the_slowing_ends(proxy):
    connection = connect(proxy)
    post(connection)  # connected before the fault: an open connection is slowed too
    proxy.slow(0.4, 1.5)
    took = []
    for _ in range(2):
        started = time.monotonic()
        assert post(connection) == (200, b'{"got": 100}')
        took.append(time.monotonic() - started)
    assert all(0.4 <= seconds < 1.2 for seconds in took)  # once per request, not per chunk
    time.sleep(1.0)
    started = time.monotonic()
    assert post(connection)[0] == 200
    assert time.monotonic() - started < 0.3
    connection.close()
    assert proxy.counts["slowed"] == 2


def test_refusing_cuts_the_open_connections_and_resets_new_ones_until_it_ends(proxy):
    kept = connect(proxy)
    assert post(kept)[0] == 200
    proxy.refuse(1.0, "reset")
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        post(kept)  # cut: the next request on it fails
    kept.close()
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        post(connect(proxy))
    time.sleep(1.2)
    assert post(connect(proxy)) == (200, b'{"got": 100}')
    assert proxy.counts["cut"] >= 1
    assert proxy.counts["reset"] >= 1


def test_refusing_with_503_answers_each_request_in_awss_error_shape(proxy):
    proxy.refuse(1.0, "503")
    connection = connect(proxy)
    connection.request("POST", "/", body=b"{}")
    response = connection.getresponse()
    assert response.status == 503
    assert response.getheader("Connection") == "close"
    assert json.loads(response.read())["__type"] == "ServiceUnavailable"
    connection.close()
    time.sleep(1.2)
    assert post(connect(proxy))[0] == 200


def dynamodb(port: int) -> Any:
    config = Config(connect_timeout=1, read_timeout=0.5, retries={"total_max_attempts": 1})
    return boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=config,
    )


def test_boto_reads_each_fault_as_a_failing_aws_endpoint(proxy):
    """Reset or held past the read timeout: the errors the API answers 503 for
    (``kernel.http.resolver``); answered 503: a ``ServiceUnavailable`` client error."""
    client = dynamodb(proxy.port)
    assert client.list_tables() == {"ResponseMetadata": client.list_tables()["ResponseMetadata"]}
    proxy.refuse(2, "reset")
    with pytest.raises((ConnectionError, HTTPClientError)):
        client.list_tables()
    proxy.clear()
    proxy.slow(1.0, 3)
    with pytest.raises(HTTPClientError):  # ReadTimeoutError
        client.list_tables()
    proxy.clear()
    proxy.refuse(2, "503")
    with pytest.raises(ClientError) as refused:
        client.list_tables()
    assert refused.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_the_process_takes_its_commands_on_stdin_and_stops_with_it():
    backend = Backend()
    port = free_port()
    command = [sys.executable, "-m", "devstack.fault_proxy", "--no-bridge"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--to", str(backend.port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for_port(port, 30, alive=lambda: process.poll() is None)
        assert process.stdout is not None
        assert process.stdin is not None
        assert "fault proxy on 127.0.0.1" in process.stdout.readline()
        process.stdin.write("refuse 30 503\nslow now\n")
        process.stdin.flush()
        assert "done: refuse 30 503" in process.stdout.readline()
        assert "not a command: 'slow now'" in process.stdout.readline()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        assert post(connection)[0] == 503
        process.stdin.close()
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        backend.shutdown()
        backend.server_close()
