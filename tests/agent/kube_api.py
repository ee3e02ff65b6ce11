"""A stand-in for the Kubernetes API server on 127.0.0.1, over TLS with a CA made here: it
answers the paths the official client calls with the statuses a test scripts, and records
every request (method, path, query, headers, body)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Tls:
    ca: Path
    cert: Path
    key: Path


def _certificate(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> Any:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        address = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        builder = builder.add_extension(x509.SubjectAlternativeName([address]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_tls(directory: Path) -> Tls:
    """A CA, and a certificate it signed for 127.0.0.1, as PEM files in ``directory``."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("test cluster CA", ca_key, "test cluster CA", ca_key, ca=True)
    cert = _certificate("kube-apiserver", key, "test cluster CA", ca_key, ca=False)
    tls = Tls(directory / "ca.crt", directory / "apiserver.crt", directory / "apiserver.key")
    tls.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return tls


def pod(name: str, namespace: str, uid: str = "uid-1") -> dict[str, Any]:
    """A pod as the API returns it (a delete with a grace period returns it terminating)."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
    }


def status(code: int, reason: str) -> dict[str, Any]:
    """The API's error body (kind Status)."""
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
            "code": code, "message": f"{reason.lower()} (test)"}  # fmt: skip


class KubeApi:
    """Scripted answers by (method, path); the last answer of a script repeats."""

    def __init__(self, tls: Tls) -> None:
        self.seen: list[Seen] = []
        self._scripts: dict[tuple[str, str], list[tuple[int, Any]]] = defaultdict(list)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls.cert, tls.key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def answer(self, method: str, path: str, *answers: tuple[int, Any]) -> None:
        self._scripts[(method, path)].extend(answers)

    def requests(self) -> list[tuple[str, str]]:
        return [(seen.method, seen.path) for seen in self.seen]

    def respond(self, seen: Seen) -> tuple[int, Any]:
        self.seen.append(seen)
        script = self._scripts.get((seen.method, seen.path))
        if not script:
            return 404, status(404, "NotFound")
        return script.pop(0) if len(script) > 1 else script[0]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(api: KubeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            seen = Seen(self.command, url.path, parse_qs(url.query),
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None)  # fmt: skip
            code, body = api.respond(seen)
            payload = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_DELETE = _serve

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler
