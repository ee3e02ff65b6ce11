"""One webhook attempt over the network, with no way to forge a request.

Every attempt checks the URL again, resolves its host itself and refuses it when any
address the name has now is not a global unicast one (``webhooks.rules.urls``), then
connects to a checked address itself: the connection is pinned, TLS's SNI and certificate
check and the ``Host`` header use the name, so a second resolution (DNS rebinding) has no
way in. No redirect is followed (``http.client`` follows none), at most the cap of the
answer is read, and one deadline covers it all: a watchdog shuts the socket when it passes,
whatever phase a slow or dripping endpoint holds the attempt in.

Why ``http.client`` rather than urllib3's pool: the deadline needs the socket from before
the TLS handshake on, and ``connect`` is where this class makes it; urllib3 builds the
socket inside its pool. Both are in the Lambda runtime; this needs no other package.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reservations.webhooks.egress.dns import Resolver, system_resolver
from reservations.webhooks.models.domain import AttemptResult
from reservations.webhooks.rules.attempts import ATTEMPT_TIMEOUT, RESPONSE_CAP_BYTES
from reservations.webhooks.rules.urls import (
    Address,
    SendTarget,
    address_problem,
    send_target,
)

# An address -> why it may not be called, or None.
AddressCheck = Callable[[Address], str | None]


class Refused(Exception):
    """The attempt is not made: an address of the URL's host is refused."""


class Unresolved(Exception):
    """The attempt is not made: the host has no address now."""


@dataclass(frozen=True, slots=True)
class SendLimits:
    """The whole attempt's time, and how much of the answer is read."""

    seconds: float = ATTEMPT_TIMEOUT.total_seconds()
    response_cap: int = RESPONSE_CAP_BYTES


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return max(self._at - time.monotonic(), 0.0)


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) to ``address`` for the name ``target.host``: the name is the ``Host``
    header, TLS's server name and what the certificate must be valid for."""

    def __init__(
        self, target: SendTarget, address: Address, tls: ssl.SSLContext | None, seconds: float
    ) -> None:
        super().__init__(target.host, target.port, timeout=seconds)
        self._address = address
        self._tls = tls
        self._aborted = threading.Event()

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self._address), self.port), self.timeout)
        self._unless_aborted()
        if self._tls is not None:
            self.sock = self._tls.wrap_socket(
                self.sock, server_hostname=self.host, do_handshake_on_connect=False
            )
            self._unless_aborted()
            self.sock.do_handshake()

    def _unless_aborted(self) -> None:
        if self.aborted:
            raise TimeoutError("deadline passed")

    @property
    def aborted(self) -> bool:
        return self._aborted.is_set()

    def abort(self) -> None:
        """The deadline passed: unblock whatever read or write the attempt is in."""
        self._aborted.set()
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # not connected yet, or already closed
                sock.shutdown(socket.SHUT_RDWR)


@dataclass
class WebhookClient:
    """Sends one attempt. ``allow_local``: the local stack's ``http://127.0.0.1:<port>``
    allowance, which connects to ``local_receiver_host`` (where the machine's loopback is
    reached from a Lambda container, e.g. ``host.docker.internal``) without the address
    rules: they are what the allowance lifts, for that one URL form only."""

    resolver: Resolver = system_resolver
    address_check: AddressCheck = address_problem
    limits: SendLimits = field(default_factory=SendLimits)
    allow_local: bool = False
    local_receiver_host: str = "127.0.0.1"
    tls: ssl.SSLContext | None = None

    def post(self, url: str, headers: Mapping[str, str], body: str) -> AttemptResult:
        """The attempt's outcome; never raises for anything the endpoint or its DNS does."""
        deadline = _Deadline(self.limits.seconds)
        try:
            target = send_target(url, self.allow_local)
        except ValueError as problem:
            return AttemptResult(error=f"not sent: url {problem}", refused=True)
        try:
            addresses = self._addresses(target, deadline)
        except Refused as refused:
            return AttemptResult(error=f"not sent: {refused}", refused=True)
        except Unresolved as unresolved:
            return AttemptResult(error=f"not sent: {unresolved}")
        return self._exchange(target, addresses, headers, body.encode(), deadline)

    def _addresses(self, target: SendTarget, deadline: _Deadline) -> Sequence[Address]:
        name = self.local_receiver_host if target.local else target.host
        try:
            addresses = self.resolver(name, target.port, deadline.left())
        except OSError as error:
            raise Unresolved(f"could not resolve {name} ({_reason(error)})") from None
        if not addresses:
            raise Unresolved(f"{name} has no address")
        if target.local:
            return addresses
        for address in addresses:
            problem = self.address_check(address)
            if problem is not None:
                raise Refused(f"{name} resolves to {address}, {problem}")
        return addresses

    def _exchange(
        self,
        target: SendTarget,
        addresses: Sequence[Address],
        headers: Mapping[str, str],
        payload: bytes,
        deadline: _Deadline,
    ) -> AttemptResult:
        """Connect to the first address that takes the connection (in the resolver's
        order), send, and read the status and at most the cap of the answer."""
        error = f"no answer within {deadline.seconds:g} s"
        for address in addresses:
            if deadline.left() <= 0:
                break
            connection = _PinnedConnection(target, address, self._context(target), deadline.left())
            watchdog = threading.Timer(deadline.left(), connection.abort)
            watchdog.start()
            try:
                try:
                    connection.connect()
                except OSError as failure:  # ssl.SSLError among them
                    error = self._failure(failure, connection, deadline)
                    continue
                return self._request(connection, target, headers, payload, deadline)
            finally:
                watchdog.cancel()
                connection.close()
        return AttemptResult(error=error)

    def _request(
        self,
        connection: _PinnedConnection,
        target: SendTarget,
        headers: Mapping[str, str],
        payload: bytes,
        deadline: _Deadline,
    ) -> AttemptResult:
        try:
            connection.request(
                "POST", target.path, body=payload, headers={**headers, "Host": target.host_header}
            )
            response = connection.getresponse()
            if connection.aborted:  # the headers were cut short by the deadline
                raise TimeoutError("deadline passed")
        except (OSError, http.client.HTTPException) as failure:
            return AttemptResult(error=self._failure(failure, connection, deadline))
        _read_some(response, self.limits.response_cap)
        return AttemptResult(status=response.status, error=_status_error(response))

    def _context(self, target: SendTarget) -> ssl.SSLContext | None:
        if not target.tls:
            return None
        if self.tls is None:
            self.tls = ssl.create_default_context()
        return self.tls

    def _failure(
        self,
        failure: OSError | http.client.HTTPException,
        connection: _PinnedConnection,
        deadline: _Deadline,
    ) -> str:
        if connection.aborted or isinstance(failure, TimeoutError):
            return f"no answer within {deadline.seconds:g} s"
        if isinstance(failure, ssl.SSLCertVerificationError):
            return f"TLS certificate not valid for {connection.host}: {failure.verify_message}"
        if isinstance(failure, ssl.SSLError):
            return f"TLS failed: {failure.reason or 'handshake'}"
        if isinstance(failure, http.client.HTTPException):
            return f"not an HTTP answer ({type(failure).__name__})"
        return f"connection failed: {_reason(failure)}"


def _read_some(response: http.client.HTTPResponse, cap: int) -> None:
    """Read at most ``cap`` bytes of the answer (its status is what counts, not its body,
    which may be cut short or never end)."""
    with contextlib.suppress(OSError, http.client.HTTPException):
        response.read(cap)


def _status_error(response: http.client.HTTPResponse) -> str | None:
    if 300 <= response.status < 400:
        return "redirects are not followed"
    return None


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__
