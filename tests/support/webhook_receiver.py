"""A webhook receiver on 127.0.0.1 only, told per request how to answer: a status, a hang,
garbage, a redirect, an endless body, headers dripped byte by byte. Optionally over TLS with
a certificate for ``receiver.test`` from a throwaway CA made here."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TLS_NAME = "receiver.test"


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: str


# What the receiver does with a request: given the handler, it writes the answer.
Answer = Callable[[BaseHTTPRequestHandler], None]


def status(code: int, location: str | None = None) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(code)
        if location:
            handler.send_header("Location", location)
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.write(b"ok")

    return answer


def hang(release: threading.Event, longest: float = 5.0) -> Answer:
    """No answer until ``release`` is set (or ``longest`` seconds), then a 200."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        release.wait(longest)
        status(200)(handler)

    return answer


def garbage(handler: BaseHTTPRequestHandler) -> None:
    handler.wfile.write(b"this is not HTTP at all\r\n\r\n")
    handler.close_connection = True


def endless_body(handler: BaseHTTPRequestHandler) -> None:
    """200, then a body that does not end (until the client hangs up)."""
    handler.send_response(200)
    handler.end_headers()
    chunk = b"x" * 65536
    try:
        for _ in range(16 * 1024):  # 1 GiB at most: the client stops long before
            handler.wfile.write(chunk)
            handler.server.body_bytes_written += len(chunk)  # type: ignore[attr-defined]
    except OSError:
        pass
    handler.close_connection = True


def drip(seconds: float, every: float = 0.05) -> Answer:
    """A status line, then a header one byte at a time for ``seconds``: each byte comes well
    within any per-read timeout; only a deadline on the whole attempt ends it."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        try:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            handler.wfile.flush()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                handler.wfile.write(b"a")
                handler.wfile.flush()
                time.sleep(every)
            handler.wfile.write(b"\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass
        handler.close_connection = True

    return answer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.server.lock:
            self.server.received.append(received)
        self.server.answer_for(received)(self)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    received: list[Received]
    answer_for: Callable[[Received], Answer]
    body_bytes_written: int


@dataclass
class Receiver:
    """A running receiver; ``answer`` decides each request's answer (200 by default)."""

    answer: Callable[[Received], Answer] = lambda _r: status(200)
    tls: ssl.SSLContext | None = None
    server: _Server = field(init=False)

    def start(self) -> Receiver:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.lock = threading.Lock()
        server.received = []
        server.answer_for = lambda received: self.answer(received)
        server.body_bytes_written = 0
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        self.server = server
        # shutdown() waits for the loop's next poll: half a second per receiver by default.
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def received(self) -> list[Received]:
        with self.server.lock:
            return list(self.server.received)

    @property
    def body_bytes_written(self) -> int:
        return self.server.body_bytes_written

    def local_url(self, path: str = "/hooks") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@dataclass(frozen=True)
class Certificates:
    """A CA the client trusts, and a server context presenting ``receiver.test``."""

    client: ssl.SSLContext
    server: ssl.SSLContext


def certificates(folder: Path) -> Certificates:
    ca_key, ca_cert = _certificate("test webhook CA", None, None)
    leaf_key, leaf_cert = _certificate(TLS_NAME, ca_key, ca_cert)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (folder / "leaf.pem").write_bytes(leaf_cert.public_bytes(pem))
    (folder / "leaf.key").write_bytes(
        leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    client = ssl.create_default_context(cafile=str(folder / "ca.pem"))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(folder / "leaf.pem", folder / "leaf.key")
    return Certificates(client=client, server=server)


def _certificate(
    name: str, issuer_key: ec.EllipticCurvePrivateKey | None, issuer: x509.Certificate | None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False
        )
    return key, builder.sign(issuer_key or key, hashes.SHA256())
