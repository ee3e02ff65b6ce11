"""A small TCP proxy in front of the AWS emulator that can be told to slow or refuse it, for
``make soak``: the functions (their ``AWS_ENDPOINT_URL``) and the pump reach the emulator
through it, so a fault it makes is one the service meets as it would meet a slow or failing
AWS endpoint. Two faults, each for a given number of seconds:

- ``slow DELAY SECONDS``: every request's bytes (what a client sends) are held ``DELAY``
  seconds before they are passed on; the answers flow as they come;
- ``refuse SECONDS reset|503``: the connections open now are cut (a TCP reset), and each new
  one is reset at once (``reset``: the endpoint is down), or has its request read and
  answered ``503 Service Unavailable`` in AWS's JSON error shape, then closed (``503``:
  the endpoint is up but failing).

It listens on 127.0.0.1 and, when Docker's bridge exists, on the bridge address (where the
Lambda containers reach the host as host.docker.internal), as the emulator does, and
forwards to the emulator on loopback. The standard library only (asyncio, on a thread of its
own). As a process, it takes its commands on stdin, a line each:

    python -m devstack.fault_proxy --port 5001 --to 5000 [--no-bridge]
    slow 1.5 20
    refuse 10 reset
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from devstack.net import docker_bridge_address

REFUSALS = ("reset", "503")
CHUNK = 65536
# The answer of a refusing endpoint (``503``): AWS's JSON protocol error shape, which boto
# reads as the error ``ServiceUnavailable`` (retried, as any 503, by its retry modes).
UNAVAILABLE_BODY = json.dumps(
    {"__type": "ServiceUnavailable", "message": "the local fault proxy refuses for a while"}
).encode()
UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/x-amz-json-1.0\r\n"
    b"Content-Length: " + str(len(UNAVAILABLE_BODY)).encode() + b"\r\n"
    b"Connection: close\r\n\r\n" + UNAVAILABLE_BODY
)
HEAD_LIMIT = 64 * 1024  # a request head longer than this is reset, not read on
READ_SECONDS = 10.0  # a refused request not sent whole within this is reset


@dataclass
class State:
    """The faults in force: until when (monotonic seconds) and how."""

    slow_until: float = 0.0
    delay: float = 0.0
    refuse_until: float = 0.0
    refusal: str = "reset"

    def slowed(self, now: float) -> float:
        return self.delay if now < self.slow_until else 0.0

    def refusing(self, now: float) -> str | None:
        return self.refusal if now < self.refuse_until else None


class FaultProxy:
    """Forwards each connection to ``hosts``:``port`` to 127.0.0.1:``upstream``, slowed or
    refused as told (``slow``, ``refuse``, ``clear``: safe from any thread). Counts what it
    did in ``counts``."""

    def __init__(self, upstream: int, port: int, hosts: list[str]) -> None:
        self.upstream, self.port, self.hosts = upstream, port, hosts
        self.state = State()
        self.counts = {"connections": 0, "slowed": 0, "reset": 0, "answered 503": 0, "cut": 0}
        self._open: set[asyncio.StreamWriter] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[asyncio.Server] = []
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the commands -------------------------------------------------------------------

    def slow(self, delay: float, seconds: float) -> None:
        """Each request held ``delay`` seconds, for ``seconds``."""
        self._call(lambda: self._slow(delay, seconds))

    def refuse(self, seconds: float, how: str = "reset") -> None:
        """Every open connection cut; new ones refused ``how`` for ``seconds``."""
        if how not in REFUSALS:
            raise ValueError(f"refuse how? {how!r} (one of {', '.join(REFUSALS)})")
        self._call(lambda: self._refuse(seconds, how))

    def clear(self) -> None:
        """No fault from now on."""
        self._call(lambda: setattr(self, "state", State()))

    def command(self, line: str) -> str:
        """One command as the process reads it (``slow 1.5 20``, ``refuse 10 503``,
        ``clear``); what was done, or why not."""
        words = line.split()
        try:
            if words[:1] == ["slow"] and len(words) == 3:
                self.slow(float(words[1]), float(words[2]))
            elif words[:1] == ["refuse"] and len(words) in (2, 3):
                self.refuse(float(words[1]), words[2] if len(words) == 3 else "reset")
            elif words == ["clear"]:
                self.clear()
            else:
                return f"not a command: {line.strip()!r}"
        except ValueError as error:
            return f"not a command: {line.strip()!r} ({error})"
        counts = ", ".join(f"{name} {count}" for name, count in self.counts.items())
        return f"done: {line.strip()} (so far: {counts})"

    def _call(self, change: Callable[[], None]) -> None:
        if self._loop is None:
            raise RuntimeError("the proxy is not running")
        done = threading.Event()

        def apply() -> None:
            change()
            done.set()

        self._loop.call_soon_threadsafe(apply)
        done.wait(5)

    def _slow(self, delay: float, seconds: float) -> None:
        self.state.delay, self.state.slow_until = delay, time.monotonic() + seconds

    def _refuse(self, seconds: float, how: str) -> None:
        self.state.refusal, self.state.refuse_until = how, time.monotonic() + seconds
        for writer in list(self._open):
            self.counts["cut"] += 1
            _reset(writer)

    # -- running ------------------------------------------------------------------------

    def start(self) -> FaultProxy:
        """On a daemon thread of its own, listening once this returns."""
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fault proxy did not start listening")
        if not self._servers:
            raise RuntimeError(f"the fault proxy could not listen on port {self.port}")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(5)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            for host in self.hosts:
                server = loop.run_until_complete(asyncio.start_server(self._serve, host, self.port))
                self._servers.append(server)
        except OSError:
            for server in self._servers:
                server.close()
            self._servers.clear()
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        for server in self._servers:
            server.close()
        for writer in list(self._open):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.counts["connections"] += 1
        how = self.state.refusing(time.monotonic())
        if how is not None:
            await self._refused(how, reader, writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            _reset(writer)  # the emulator itself is not there: as it would be, refused
            return
        self._open.update((writer, up_writer))
        turn = _Turn()
        try:
            ends = [
                asyncio.ensure_future(self._pipe(reader, up_writer, turn, requests=True)),
                asyncio.ensure_future(self._pipe(up_reader, writer, turn, requests=False)),
            ]
            _, pending = await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
            for end in pending:
                end.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await end
        finally:
            self._open.difference_update((writer, up_writer))
            for one in (writer, up_writer):
                one.close()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        turn: _Turn,
        *,
        requests: bool,
    ) -> None:
        """Bytes from ``reader`` to ``writer`` until either end closes. While the proxy is
        slowed, a request (``requests``: the client's bytes after an answer, or the first)
        is held before it is passed on."""
        try:
            while chunk := await reader.read(CHUNK):
                if requests and turn.new_request:
                    turn.new_request = False
                    if delay := self.state.slowed(time.monotonic()):
                        self.counts["slowed"] += 1
                        await asyncio.sleep(delay)
                elif not requests:
                    turn.new_request = True
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    async def _refused(
        self, how: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if how == "reset":
            self.counts["reset"] += 1
            _reset(writer)
            return
        try:
            await asyncio.wait_for(_read_request(reader), READ_SECONDS)
            writer.write(UNAVAILABLE)
            await writer.drain()
            self.counts["answered 503"] += 1
        except (TimeoutError, ValueError, ConnectionError, OSError, asyncio.IncompleteReadError):
            _reset(writer)
            return
        writer.close()


@dataclass
class _Turn:
    """Whose turn it is on one connection: the client's next bytes begin a new request
    once the emulator has answered (HTTP/1.1: one request, then its answer)."""

    new_request: bool = True


async def _read_request(reader: asyncio.StreamReader) -> None:
    """One HTTP/1.1 request, its head and its body (by its Content-Length)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as error:
        raise ValueError("request head too long") from error
    if len(head) > HEAD_LIMIT:
        raise ValueError("request head too long")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Closed with a TCP reset (linger 0), not a clean close: the peer sees its connection
    reset, as when an endpoint goes away."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--port", type=int, required=True, help="where it listens")
    parser.add_argument("--to", type=int, required=True, help="the emulator's port")
    parser.add_argument("--no-bridge", action="store_true", help="listen on loopback only")
    args = parser.parse_args(argv)
    bridge = None if args.no_bridge else docker_bridge_address()
    hosts = ["127.0.0.1", *([bridge] if bridge else [])]
    proxy = FaultProxy(args.to, args.port, hosts).start()
    print(f"fault proxy on {', '.join(hosts)} port {args.port} -> {args.to}", flush=True)
    for line in sys.stdin:  # until its stdin ends (the process that started it is gone)
        if line.strip():
            print(f"{time.strftime('%H:%M:%S')} {proxy.command(line)}", flush=True)
    proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
