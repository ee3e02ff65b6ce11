"""The local AWS emulator: moto's server, one DynamoDB request at a time, provisioned from
template.yaml.

moto's server is not safe under concurrent requests (nothing locks a conditional write or a
transaction's copy-and-restore). Holding one lock around every DynamoDB request makes each
one atomic, as it is in DynamoDB, so race tests mean something; SQS requests stay concurrent
so a 20 s long poll never blocks the API.

    python -m devstack.emulator --port 5000 [--fleet fleets/demo.json]

It listens on loopback and, when Docker's bridge exists, on the bridge address (where the
Lambda containers reach it as host.docker.internal) and on nothing else.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import boto3
from werkzeug.serving import BaseWSGIServer, make_server

from devstack import template
from devstack.net import docker_bridge_address
from devstack.stopping import exit_now

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]

REGION = "us-east-1"
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}


TRANSACT_WRITE = "DynamoDB_20120810.TransactWriteItems"
TOKEN_SECONDS = 600  # how long DynamoDB keeps a ClientRequestToken


class SerializedDynamoDB:
    """WSGI middleware: one lock around each DynamoDB request, body included; and a
    ``TransactWriteItems`` sent again with its ``ClientRequestToken`` (the SDK's own retry
    of a request whose answer was lost) answered as the first was, as DynamoDB does for
    10 minutes, where moto would run it again and fail its conditions."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        # token -> (when, the request's body, status, headers, the answer's body)
        self._answered: dict[str, tuple[float, bytes, str, list[Any], bytes]] = {}

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self._app(environ, start_response)
        with self._lock:
            if target == TRANSACT_WRITE:
                return self._transact(environ, start_response)
            return self._whole(self._app(environ, start_response))

    def _transact(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        request = environ["wsgi.input"].read(size)
        environ["wsgi.input"] = io.BytesIO(request)
        token = json.loads(request or b"{}").get("ClientRequestToken")
        now = time.monotonic()
        self._answered = {t: a for t, a in self._answered.items() if now - a[0] < TOKEN_SECONDS}
        if token in self._answered:
            _, first, status, headers, answer = self._answered[token]
            if first == request:
                start_response(status, headers)
                return [answer]
        seen: list[Any] = []

        def remember(status: str, headers: list[Any], *rest: Any) -> Any:
            seen[:] = [status, headers]
            return start_response(status, headers, *rest)

        answer = b"".join(self._whole(self._app(environ, remember)))
        if token is not None and seen and seen[0].startswith("200"):
            self._answered[token] = (now, request, seen[0], list(seen[1]), answer)
        return [answer]

    @staticmethod
    def _whole(body: Iterable[bytes]) -> list[bytes]:
        try:
            return [b"".join(body)]
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()


def moto_app() -> WsgiApp:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from devstack import moto_costs

    moto_costs.install()  # a write costs what it touches, not the table's size
    moto_costs.plain_answers()  # and a read of 1 MB takes a moment, not seconds
    return SerializedDynamoDB(DomainDispatcherApplication(create_backend_app))


def serve(app: WsgiApp, hosts: list[str], port: int) -> list[BaseWSGIServer]:
    """One threaded server per address, each on its own daemon thread."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    servers = []
    for host in hosts:
        server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def local_client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def provision(endpoint: str) -> dict[str, str]:
    """Create template.yaml's tables (with their streams), queues and event buses in the
    emulator, and a rule sending the bus's events to a local queue that
    ``python -m devstack.events tail`` reads; logical id -> queue URL."""
    from devstack.events import watch  # it imports this module

    template.create_tables(local_client("dynamodb", endpoint))
    urls = template.create_queues(local_client("sqs", endpoint))
    template.create_event_buses(local_client("events", endpoint))
    watch(local_client("events", endpoint), local_client("sqs", endpoint))
    return urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("AWS_EMULATOR_PORT", 5000)))
    parser.add_argument("--fleet", type=Path, help="fleet file to load once provisioned")
    parser.add_argument("--no-bridge", action="store_true", help="listen on loopback only")
    args = parser.parse_args(argv)

    os.environ.setdefault("MOTO_PORT", str(args.port))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    hosts = ["127.0.0.1"]
    bridge = None if args.no_bridge else docker_bridge_address()
    if bridge:
        hosts.append(bridge)
    serve(moto_app(), hosts, args.port)
    endpoint = f"http://127.0.0.1:{args.port}"
    provision(endpoint)
    if args.fleet:
        from reservations_tools.fleet.loader import main as load_fleet

        os.environ.update({**LOCAL_CREDENTIALS, "AWS_DEFAULT_REGION": REGION})
        if load_fleet(["load", str(args.fleet), "--endpoint-url", endpoint]) != 0:
            return 1
    print(f"AWS emulator ready on {', '.join(hosts)} port {args.port}", flush=True)

    stop = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    stop.wait()  # the servers, on daemon threads, end with the process
    return 0


if __name__ == "__main__":
    exit_now(main())
