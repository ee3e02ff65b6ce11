"""``sam`` as ``make run`` starts it: SAM CLI itself, with four changes. Each request gets
its own ``requestContext.requestId``, as API Gateway gives it; ``--host-network`` puts the
containers on the host's network (the webhook sender's); ``--port-range`` gives the
containers' host ports a range of the process's own, never one twice (:func:`unique_ports`);
and on SIGTERM every container the process made is removed at once (:func:`remove_at_once`),
each labelled with the stack's id (``devstack.containers``) for ``make run`` to find.

SAM CLI's ``RequestContextV2`` (the HTTP API event's context) takes ``request_id`` with the
default ``str(uuid.uuid4())``, a default Python evaluates once, when the module is
imported: every request one ``sam local start-api`` served carried the same id, so the
``X-Request-Id`` the functions answer with (the id an operator finds in the logs) could not
name one request. Here each context made without an id gets a new one.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import docker.errors
from docker.models.containers import ContainerCollection
from samcli.cli.main import cli  # type: ignore[import-untyped]
from samcli.local.docker import container  # type: ignore[import-untyped]
from samcli.local.docker.utils import (  # type: ignore[import-untyped]
    NoFreePortsError,
)
from samcli.local.docker.utils import find_free_port as _find_free_port
from samcli.local.events import api_event  # type: ignore[import-untyped]
from samcli.local.lambdafn.runtime import WarmLambdaRuntime  # type: ignore[import-untyped]

from devstack.containers import (
    LOCAL_PROCESS_ENV,
    LOCAL_PROCESS_LABEL,
    LOCAL_STACK_ENV,
    LOCAL_STACK_LABEL,
)
from devstack.net import free_port
from devstack.stopping import exit_now

_made = api_event.RequestContextV2.__init__
_REQUEST_ID_POSITION = 3  # account_id, api_id, http, request_id, ...


def _with_own_id(self: Any, *args: Any, **kwargs: Any) -> None:
    if len(args) <= _REQUEST_ID_POSITION:
        kwargs.setdefault("request_id", str(uuid.uuid4()))
    _made(self, *args, **kwargs)


_create = ContainerCollection.create
HOST_NETWORK = "--host-network"
log = logging.getLogger("devstack.sam_cli")


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


def labelled(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A Lambda container's options, with the stack's label when ``make run`` gave an id,
    and the process's when its supervisor gave one (``devstack.containers``)."""
    labels = {
        label: value
        for label, value in (
            (LOCAL_STACK_LABEL, os.environ.get(LOCAL_STACK_ENV)),
            (LOCAL_PROCESS_LABEL, os.environ.get(LOCAL_PROCESS_ENV)),
        )
        if value
    }
    if not labels:
        return kwargs
    return {**kwargs, "labels": {**(kwargs.get("labels") or {}), **labels}}


class Made:
    """The containers this process made (SAM 1.170 loses track of some of those it makes
    at once, with ``--warm-containers EAGER``): their collection and ids."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.containers: dict[str, ContainerCollection] = {}

    def add(self, collection: ContainerCollection, container_id: str) -> None:
        with self.lock:
            self.containers[container_id] = collection

    def take(self) -> dict[str, ContainerCollection]:
        with self.lock:
            taken, self.containers = self.containers, {}
        return taken


MADE = Made()


def creating(host_network: bool) -> Callable[..., Any]:
    """SAM's ``ContainerCollection.create``: labelled, on the host's network if asked, and
    each container made noted in :data:`MADE`."""

    def create(self: ContainerCollection, image: str, command: Any = None, **kwargs: Any) -> Any:
        options = labelled(on_host_network(kwargs) if host_network else kwargs)
        container = _create(self, image, command, **options)
        MADE.add(self, container.id)
        return container

    return create


def remove_at_once(containers: dict[str, ContainerCollection], workers: int = 8) -> None:
    """Remove the containers (killed first: ``force``), 8 at a time (the Docker client
    keeps 10 connections). SAM removes its warm containers one after another when it
    stops, and not those it lost track of: ``start-api`` took 6.4 s to stop with its 27
    containers on a 2-core machine (27 containers: 6.2 s one after another, 2.2 s 8 at a
    time), and ``make run`` found 6 left behind. One gone already is fine."""

    def remove(item: tuple[str, ContainerCollection]) -> None:
        container_id, collection = item
        try:
            collection.client.api.remove_container(container_id, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as error:  # "removal ... already in progress"
            log.debug("removing container %s: %s", container_id[:12], error)

    if containers:
        with ThreadPoolExecutor(min(workers, len(containers))) as pool:
            list(pool.map(remove, containers.items()))


_clean = WarmLambdaRuntime.clean_running_containers_and_related_resources


def _clean_at_once(self: Any) -> None:
    """SAM's cleanup when it stops (SIGTERM, Ctrl-C), after every container this process
    made is removed at once: SAM's own pass then finds each gone."""
    remove_at_once(MADE.take())
    _clean(self)


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
    host_network = HOST_NETWORK in sys.argv
    if host_network:
        sys.argv.remove(HOST_NETWORK)
    ContainerCollection.create = creating(host_network)  # type: ignore[method-assign]
    WarmLambdaRuntime.clean_running_containers_and_related_resources = _clean_at_once
    if (ports := _take(PORT_RANGE)) is not None:
        start, end = (int(bound) for bound in ports.split("-"))
        container.find_free_port = unique_ports(start, end)
    sys.argv[0] = "sam"
    try:
        cli()
    except SystemExit as done:  # click's way out, after SAM removed its containers
        code = done.code
        if isinstance(code, str):
            print(code, file=sys.stderr)
        exit_now(code if isinstance(code, int) else int(code is not None))
    exit_now(0)


if __name__ == "__main__":
    main()
