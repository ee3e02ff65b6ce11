"""What the soak's followers received, by event id: the operator's feed (``GET /v1/events``,
followed with its cursor), the bus (a rule to a queue on the emulator, as ``devstack.events``
makes it) and a webhook receiver on 127.0.0.1, which the soak takes down for a while and
which keeps only the deliveries whose signature verifies with the subscription's secret
(answering 400 to the others, so the sender tries them again)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from devstack.events import received, watch
from devstack.soak.calls import Calls
from devstack.webhook_receiver import verdict


class FeedFollower:
    """The operator's feed, from its start, page after page, then from the last cursor."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.ids: list[str] = []
        self.cursor: str | None = None

    def read(self) -> None:
        while True:
            params = {"limit": "100", **({"cursor": self.cursor} if self.cursor else {})}
            page = self.calls.call(
                "follower", "operator", "GET", "/v1/events", params=params, op="follow the feed"
            )
            if page.status != 200:
                return
            self.ids += [event["id"] for event in page.items]
            self.cursor = page.body.get("nextCursor") or self.cursor
            if not page.body.get("hasMore"):
                return


class BusFollower:
    """Every event put on the stack's bus (a rule to a queue of the soak's own)."""

    def __init__(self, events: Any, sqs: Any) -> None:
        self.sqs = sqs
        self.url = watch(events, sqs, queue="SoakBusWatch")
        self.ids: list[str] = []

    def read(self) -> None:
        while batch := received(self.sqs, self.url, wait=0):
            self.ids += [event["id"] for event in batch]


class WebhookReceiver:
    """A receiver on 127.0.0.1:``port`` that keeps each verified delivery's ``webhook-id``
    and answers 204 (400 to one whose signature does not verify, counted in ``unverified``);
    ``down()`` closes its socket (the sender's attempts fail) until ``up()``. ``secret`` is
    given once the subscription is made."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.secret = ""
        self.ids: list[str] = []
        self.unverified = 0
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.up()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode(errors="replace")
                headers = {name.lower(): value for name, value in self.headers.items()}
                verified = verdict([receiver.secret], body, headers) == "verified"
                with receiver.lock:
                    if verified:
                        receiver.ids.append(headers.get("webhook-id", ""))
                    else:
                        receiver.unverified += 1
                self.send_response(204 if verified else 400)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        return Handler

    def up(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        threading.Thread(target=self.server.serve_forever, name="webhook", daemon=True).start()

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def received(self) -> list[str]:
        with self.lock:
            return list(self.ids)
