"""Each write use case called as its function calls it: through the write pipeline, with its
route's method, path and ids (``reservations.http.routes``), a raw body and the header."""

from __future__ import annotations

from reservations.http import routes
from reservations.logic.cancel import CANCEL
from reservations.logic.create_reservation import CREATE
from reservations.logic.nodes import PUT_NODE
from reservations.logic.pipeline import run_write
from reservations.logic.ports import Ports
from reservations.logic.reaffirm import REAFFIRM
from reservations.logic.reclaim import RECLAIM
from reservations.logic.release import RELEASE
from reservations.logic.workloads import END, PLACE
from reservations.models.domain import Caller
from reservations.models.idempotency import Outcome
from reservations.models.requests import RawBody

Key = str | None


def reclaim(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = routes.RECLAIM.at(nodeId=node, reservationId=res)
    return run_write(RECLAIM, route, caller, body, key, ports)


def release(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = routes.RELEASE.at(nodeId=node, reservationId=res)
    return run_write(RELEASE, route, caller, body, key, ports)


def cancel(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = routes.CANCEL.at(nodeId=node, reservationId=res)
    return run_write(CANCEL, route, caller, body, key, ports)


def reaffirm(caller: Caller, node: str, res: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = routes.REAFFIRM.at(nodeId=node, reservationId=res)
    return run_write(REAFFIRM, route, caller, body, key, ports)


def create_reservation(caller: Caller, node: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    route = routes.CREATE_RESERVATION.at(nodeId=node)
    return run_write(CREATE, route, caller, body, key, ports)


def place_workload(caller: Caller, node: str, body: RawBody, key: Key, ports: Ports) -> Outcome:
    return run_write(PLACE, routes.PLACE_WORKLOAD.at(nodeId=node), caller, body, key, ports)


def end_workload(caller: Caller, node: str, workload: str, key: Key, ports: Ports) -> Outcome:
    route = routes.END_WORKLOAD.at(nodeId=node, workloadId=workload)
    return run_write(END, route, caller, RawBody(None), key, ports)


def put_node(caller: Caller, node: str, body: RawBody, ports: Ports) -> Outcome:
    return run_write(PUT_NODE, routes.PUT_NODE.at(nodeId=node), caller, body, None, ports)
