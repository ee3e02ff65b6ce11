"""``sam`` as ``make run`` starts it: SAM CLI itself, with three changes. Each request gets
its own ``requestContext.requestId``, as API Gateway gives it; ``--host-network`` puts the
containers on the host's network (the webhook sender's); ``--port-range`` gives the
containers' host ports a range of the process's own, never one twice (:func:`unique_ports`).

SAM CLI's ``RequestContextV2`` (the HTTP API event's context) takes ``request_id`` with the
default ``str(uuid.uuid4())``, a default Python evaluates once, when the module is
imported: every request one ``sam local start-api`` served carried the same id, so the
``X-Request-Id`` the functions answer with (the id an operator finds in the logs) could not
name one request. Here each context made without an id gets a new one.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

from docker.models.containers import ContainerCollection
from samcli.cli.main import cli  # type: ignore[import-untyped]
from samcli.local.docker import container  # type: ignore[import-untyped]
from samcli.local.docker.utils import (  # type: ignore[import-untyped]
    NoFreePortsError,
)
from samcli.local.docker.utils import find_free_port as _find_free_port
from samcli.local.events import api_event  # type: ignore[import-untyped]

from devstack.net import free_port

_made = api_event.RequestContextV2.__init__
_REQUEST_ID_POSITION = 3  # account_id, api_id, http, request_id, ...


def _with_own_id(self: Any, *args: Any, **kwargs: Any) -> None:
    if len(args) <= _REQUEST_ID_POSITION:
        kwargs.setdefault("request_id", str(uuid.uuid4()))
    _made(self, *args, **kwargs)


_create = ContainerCollection.create
HOST_NETWORK = "--host-network"


def on_host_network(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A Lambda container's options, moved to the host's network (see the module's doc)."""
    ports = kwargs.pop("ports", None) or {}
    (interface, port), *_ = ports.values()  # the runtime emulator's, 127.0.0.1:<free port>
    entrypoint = [
        *kwargs["entrypoint"],
        *("--runtime-interface-emulator-address", f"{interface}:{port}"),
        *("--runtime-api-address", f"127.0.0.1:{free_port()}"),
    ]
    kwargs.pop("extra_hosts", None)  # the host's own /etc/hosts holds
    return {**kwargs, "entrypoint": entrypoint, "network_mode": "host"}


def _create_on_host_network(self: Any, image: str, command: Any = None, **kwargs: Any) -> Any:
    return _create(self, image, command, **on_host_network(kwargs))


PORT_RANGE = "--port-range"


def unique_ports(start: int, end: int) -> Callable[..., int]:
    """SAM's ``find_free_port`` for one process, choosing in ``[start, end)`` only and never
    the same port twice. SAM picks a container's port when it makes the container and binds
    it when it starts it: containers made at once (``--warm-containers EAGER``, and make
    run's three ``sam local`` processes starting together) picked the same free port, and the
    second start failed ("port is already allocated"). Each process gets its own range."""
    chosen: set[int] = set()
    lock = threading.Lock()

    def find_free_port(network_interface: str, **_: Any) -> int:
        with lock:
            for _attempt in range(end - start):
                port = _find_free_port(network_interface, start=start, end=end)
                if port not in chosen:
                    chosen.add(port)
                    return port
        raise NoFreePortsError(f"no free port left from {start} to {end}")

    return find_free_port


def _take(option: str) -> str | None:
    """The value of ``option`` in sys.argv, taken out of it (it is ours, not SAM's)."""
    if option not in sys.argv:
        return None
    at = sys.argv.index(option)
    value = sys.argv[at + 1]
    del sys.argv[at : at + 2]
    return value


def main() -> None:
    api_event.RequestContextV2.__init__ = _with_own_id
    if HOST_NETWORK in sys.argv:
        sys.argv.remove(HOST_NETWORK)
        ContainerCollection.create = _create_on_host_network  # type: ignore[method-assign]
    if (ports := _take(PORT_RANGE)) is not None:
        start, end = (int(bound) for bound in ports.split("-"))
        container.find_free_port = unique_ports(start, end)
    sys.argv[0] = "sam"
    cli()


if __name__ == "__main__":
    main()
