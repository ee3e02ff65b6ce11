"""``sam`` as ``make run`` starts its API: SAM CLI itself, with one change, so that each
request gets its own ``requestContext.requestId``, as API Gateway gives it.

SAM CLI's ``RequestContextV2`` (the HTTP API event's context) takes ``request_id`` with the
default ``str(uuid.uuid4())``, a default Python evaluates once, when the module is
imported: every request one ``sam local start-api`` served carried the same id, so the
``X-Request-Id`` the functions answer with (the id an operator finds in the logs) could not
name one request. Here each context made without an id gets a new one.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

from docker.models.containers import ContainerCollection
from samcli.cli.main import cli  # type: ignore[import-untyped]
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


def main() -> None:
    api_event.RequestContextV2.__init__ = _with_own_id
    if HOST_NETWORK in sys.argv:
        sys.argv.remove(HOST_NETWORK)
        ContainerCollection.create = _create_on_host_network  # type: ignore[method-assign]
    sys.argv[0] = "sam"
    cli()


if __name__ == "__main__":
    main()
