"""Each write use case called as its function calls it: through the write pipeline, with its
route's method, path and ids (``reservations.kernel.http.routes``), a raw body and the header."""

from __future__ import annotations

from reservations import endpoints
from reservations.capacity.reclaim import RECLAIM
from reservations.capacity.release import RELEASE
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.pipeline import run_write
from reservations.lifecycle.cancel import CANCEL
from reservations.lifecycle.create import CREATE
from reservations.lifecycle.reaffirm import REAFFIRM
from reservations.lifecycle.update import UPDATE
from reservations.nodes.register import PUT_NODE
from reservations.workloads.scheduler import END, PLACE
from tests.support.ports import AllPorts as Ports

Key = str | None


def reclaim(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = endpoints.RECLAIM.at(nodeId=node, reservationId=res)
    return run_write(RECLAIM, route, caller, body, key, ports)


def release(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = endpoints.RELEASE.at(nodeId=node, reservationId=res)
    return run_write(RELEASE, route, caller, body, key, ports)


def cancel(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = endpoints.CANCEL.at(nodeId=node, reservationId=res)
    return run_write(CANCEL, route, caller, body, key, ports)


def update_reservation(
    caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports
) -> Outcome:
    route = endpoints.UPDATE_RESERVATION.at(nodeId=node, reservationId=res)
    return run_write(UPDATE, route, caller, body, key, ports)


def reaffirm(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = endpoints.REAFFIRM.at(nodeId=node, reservationId=res)
    return run_write(REAFFIRM, route, caller, body, key, ports)


def create_reservation(caller: Caller, node: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = endpoints.CREATE_RESERVATION.at(nodeId=node)
    return run_write(CREATE, route, caller, body, key, ports)


def place_workload(caller: Caller, node: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    return run_write(PLACE, endpoints.PLACE_WORKLOAD.at(nodeId=node), caller, body, key, ports)


def end_workload(caller: Caller, node: str, workload: str, key: Key, ports: Ports) -> Outcome:
    route = endpoints.END_WORKLOAD.at(nodeId=node, workloadId=workload)
    return run_write(END, route, caller, RawBody(None), key, ports)


def put_node(caller: Caller, node: str, body: RawBody, ports: Ports) -> Outcome:
    return run_write(PUT_NODE, endpoints.PUT_NODE.at(nodeId=node), caller, body, None, ports)
