"""A webhook receiver for people: prints each delivery and whether its signature verifies.

    python -m devstack.webhook_receiver --port 8765 --secret whsec_...

Subscribe ``http://127.0.0.1:8765/`` (the local stack allows that URL form). It listens on
127.0.0.1 alone, as most local servers do: the local stack's sender runs on the host's
network, where 127.0.0.1 is this machine.
Signatures are checked with the standardwebhooks package, as any receiver would; give the
secret twice (``--secret old --secret new``) to accept either during a rotation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO

from standardwebhooks import Webhook, WebhookVerificationError

MAX_BODY = 1024 * 1024


def verdict(secrets: Sequence[str], body: str, headers: dict[str, str]) -> str:
    """``verified`` (naming which secret when there are several), or why not."""
    if not secrets:
        return "not checked (no --secret)"
    problems = []
    for number, secret in enumerate(secrets, start=1):
        try:
            Webhook(secret).verify(body, headers)
        except WebhookVerificationError as error:
            problems.append(str(error))
            continue
        return "verified" if len(secrets) == 1 else f"verified (secret {number})"
    return "NOT VERIFIED: " + "; ".join(sorted(set(problems)))


def describe(body: str, headers: dict[str, str], check: str) -> str:
    """One delivery, as printed: its id, event type and subject, and the verdict."""
    try:
        event = json.loads(body)
    except ValueError:
        event = {}
    kind = event.get("type", "?") if isinstance(event, dict) else "?"
    subject = event.get("subject", "") if isinstance(event, dict) else ""
    return (
        f"{headers.get('webhook-id', '(no webhook-id)')}  {kind}  {subject}\n"
        f"  signature: {check}\n  body: {body}"
    )


def handler_class(
    secrets: Sequence[str], status: int, out: IO[str]
) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
            body = self.rfile.read(length).decode(errors="replace")
            headers = {name.lower(): value for name, value in self.headers.items()}
            with lock:
                print(
                    describe(body, headers, verdict(secrets, body, headers)), file=out, flush=True
                )
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # the deliveries are printed above, not the access log

    return Handler


def serve(
    hosts: Sequence[str],
    port: int,
    secrets: Sequence[str],
    status: int = 200,
    out: IO[str] = sys.stdout,
) -> list[ThreadingHTTPServer]:
    """A server per host, each in its own thread; stop each with ``shutdown()``."""
    servers = []
    for host in hosts:
        server = ThreadingHTTPServer((host, port), handler_class(secrets, status, out))
        server.daemon_threads = True
        # A short poll: shutdown() waits for the loop's next one (half a second by default).
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
    return servers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--secret", action="append", default=[], help="whsec_... (repeatable)")
    parser.add_argument("--status", type=int, default=200, help="the status to answer with")
    args = parser.parse_args(argv)
    servers = serve(["127.0.0.1"], args.port, args.secret, args.status)
    print(f"receiving webhooks at http://127.0.0.1:{args.port}/ (answering {args.status});"
          " Ctrl-C stops", flush=True)  # fmt: skip
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    for server in servers:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
