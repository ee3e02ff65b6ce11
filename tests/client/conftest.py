"""The client library and the command line: a stand-in API on 127.0.0.1 only (pytest-socket
refuses a connection anywhere else), or the real functions in process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pytest_socket import enable_socket, socket_allow_hosts


@pytest.fixture(autouse=True)
def _loopback_only() -> Iterator[None]:
    socket_allow_hosts(["127.0.0.1"])
    yield
    enable_socket()


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class StandIn:
    """An API that answers from a script, in order (the last answer again once used up),
    and records every request."""

    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.seen: list[Seen] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                stand_in.seen.append(Seen(self.command, self.path, headers, body))
                answer = stand_in.script.pop(0) if len(stand_in.script) > 1 else stand_in.script[0]
                content = b"" if answer.body is None else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def answers(self, *script: Answer) -> None:
        self.script = list(script)


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    api = StandIn()
    yield api
    api.server.shutdown()
    api.server.server_close()
