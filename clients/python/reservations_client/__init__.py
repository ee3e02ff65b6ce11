"""The typed Python client of the reservations API, as a caller would like it: one method per
operation, the answer's model back (times as datetimes), and every error raised as a
:class:`ReservationsApiError` subclass named after its code, never a union to inspect.

Hand-written over the generated ``reservations_api_client`` (``make client``), which it
never edits::

    from reservations_client import NotFound, Reservations
    from reservations_api_client.models import CreateReservationRequest

    api = Reservations("http://127.0.0.1:3000", "vl_local_only_owner")
    units = api.list_units("node-a1")
    made = api.create_reservation("node-a1", CreateReservationRequest(
        unit_ids=["0000:0c:00.0"], allowed_org_ids=["org-lab"]), idempotency_key="lab-1")
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from http import HTTPStatus
from typing import Any, TypeVar

from reservations_api_client import AuthenticatedClient
from reservations_api_client.api.events import list_events, list_node_events
from reservations_api_client.api.nodes import get_node, put_node
from reservations_api_client.api.reservations import (
    cancel_reservation,
    create_reservation,
    get_reservation,
    list_reservations,
    list_units,
    reaffirm_reservation,
    reclaim_units,
    release_units,
)
from reservations_api_client.api.workloads import (
    end_workload,
    get_workload,
    list_workloads,
    place_workload,
)
from reservations_api_client.models import (
    CancelRequest,
    CreateReservationRequest,
    EventPage,
    Node,
    NodeRequest,
    PlaceWorkloadRequest,
    ReaffirmRequest,
    ReclaimResult,
    Reservation,
    ReservationPage,
    Unit,
    UnitsRequest,
    Workload,
    WorkloadPage,
)
from reservations_api_client.types import UNSET, Response, Unset

T = TypeVar("T")


class ReservationsApiError(Exception):
    """An answer of 400 or more: its status, the contract's ``code``, the message, the
    ``details`` (field and problem), the request's id (quote it to an operator) and, where
    the API says when to try again, ``retry_after`` in seconds."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status = status
        self.code = str(body.get("code", ""))
        self.message = str(body.get("error", body.get("message", "")))
        self.details: list[dict[str, str]] = list(body.get("details", []))
        self.request_id = body.get("requestId") or headers.get("x-request-id")
        after = headers.get("retry-after")
        self.retry_after = int(after) if after and after.isdigit() else None
        super().__init__(f"{status} {self.code}: {self.message}")


class InvalidRequest(ReservationsApiError): ...  # 400 invalid_request


class Unauthorized(ReservationsApiError): ...  # 401


class NotFound(ReservationsApiError): ...  # 404: unknown, not visible or not permitted


class UnsupportedMediaType(ReservationsApiError): ...  # 415


class ReservationNotActive(ReservationsApiError): ...  # 409


class StorageLimit(ReservationsApiError): ...  # 409: a stored record would pass 400 KB


class Conflict(ReservationsApiError): ...  # 409: retry after retry_after


class IdempotencyInProgress(ReservationsApiError): ...  # 409: retry after retry_after


class UnitsUnavailable(ReservationsApiError): ...  # 409


class WorkloadExists(ReservationsApiError): ...  # 409


class StaleTopology(ReservationsApiError): ...  # 409


class ReservationNotInReview(ReservationsApiError): ...  # 409


class SubscriptionLimit(ReservationsApiError): ...  # 409


class DeliveryNotFailed(ReservationsApiError): ...  # 409: a retry never succeeds; do not retry


class SubscriptionDisabled(ReservationsApiError): ...  # 409: delete and subscribe again


class UnitsNotInReservation(ReservationsApiError): ...  # 422


class UnitsNotReservable(ReservationsApiError): ...  # 422


class UnitsNotSellable(ReservationsApiError): ...  # 422


class IdempotencyKeyReused(ReservationsApiError): ...  # 422


class TooManyRequests(ReservationsApiError): ...  # 429: API Gateway's throttling


class ServerError(ReservationsApiError): ...  # 5xx internal: retry (503: after retry_after)


_BY_CODE: dict[str, type[ReservationsApiError]] = {
    "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "not_found": NotFound,
    "unsupported_media_type": UnsupportedMediaType,
    "reservation_not_active": ReservationNotActive,
    "storage_limit": StorageLimit,
    "conflict": Conflict,
    "idempotency_in_progress": IdempotencyInProgress,
    "units_unavailable": UnitsUnavailable,
    "workload_exists": WorkloadExists,
    "stale_topology": StaleTopology,
    "reservation_not_in_review": ReservationNotInReview,
    "subscription_limit": SubscriptionLimit,
    "delivery_not_failed": DeliveryNotFailed,
    "subscription_disabled": SubscriptionDisabled,
    "units_not_in_reservation": UnitsNotInReservation,
    "units_not_reservable": UnitsNotReservable,
    "units_not_sellable": UnitsNotSellable,
    "idempotency_key_reused": IdempotencyKeyReused,
    "internal": ServerError,
}


def error_for(response: Response[Any]) -> ReservationsApiError:
    """The exception an error answer is: by its code, else by its status."""
    import json

    try:
        body = json.loads(response.content)
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    headers = {name.lower(): value for name, value in response.headers.items()}
    status = int(response.status_code)
    kind = _BY_CODE.get(str(body.get("code")))
    if kind is None:
        kind = TooManyRequests if status == HTTPStatus.TOO_MANY_REQUESTS else ServerError
        kind = kind if status >= 429 else ReservationsApiError
    return kind(status, body, headers)


def _expect(kind: type[T], response: Response[Any]) -> T:
    """The answer's model; its error raised."""
    if int(response.status_code) >= 400:
        raise error_for(response)
    if not isinstance(response.parsed, kind):
        raise ReservationsApiError(int(response.status_code), {}, {})
    return response.parsed


def _key(idempotency_key: str | None) -> str | Unset:
    return UNSET if idempotency_key is None else idempotency_key


def _given(value: T | None) -> T | Unset:
    """A query parameter: absent when None."""
    return UNSET if value is None else value


def _listed(values: str | Sequence[str] | None) -> Any:
    """A list filter (statuses, states, event types): a list, or its comma-separated text;
    absent when None (the generated call checks nothing more: the API names a bad one).
    Sent as the document declares it (form, not exploded): one parameter, its values
    comma-separated. The generated call repeats the name for each item of a list, which
    the API refuses (400), so the list goes to it as one item of comma-separated text."""
    if values is None:
        return UNSET
    return [values if isinstance(values, str) else ",".join(values)]


def _moment(value: datetime | str | None) -> Any:
    """``after``: an aware datetime, or RFC 3339 text as the API takes it."""
    if value is None:
        return UNSET
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


class Reservations:
    """One API key's calls. ``base_url``: where the API answers (``http://127.0.0.1:3000``)."""

    def __init__(
        self, base_url: str, api_key: str, timeout: float = 10.0, transport: Any = None
    ) -> None:
        import httpx

        self.client = AuthenticatedClient(
            base_url=base_url,
            token=api_key,
            timeout=httpx.Timeout(timeout),
            httpx_args={"transport": transport} if transport is not None else {},
        )

    # --- reservations ---------------------------------------------------------------------

    def list_units(self, node_id: str) -> list[Unit]:
        answer = list_units.sync_detailed(node_id, client=self.client)
        if int(answer.status_code) >= 400:
            raise error_for(answer)
        return list(answer.parsed or [])  # type: ignore[arg-type]

    def create_reservation(
        self, node_id: str, body: CreateReservationRequest, idempotency_key: str | None = None
    ) -> Reservation:
        return _expect(Reservation, create_reservation.sync_detailed(
            node_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def get_reservation(self, node_id: str, reservation_id: str) -> Reservation:
        return _expect(Reservation, get_reservation.sync_detailed(
            node_id, reservation_id, client=self.client))  # fmt: skip

    def list_reservations(
        self, node_id: str, limit: int | None = None, cursor: str | None = None,
        status: str | Sequence[str] | None = None,
    ) -> ReservationPage:  # fmt: skip
        return _expect(ReservationPage, list_reservations.sync_detailed(
            node_id, client=self.client, limit=_given(limit), cursor=_given(cursor),
            status=_listed(status)))  # fmt: skip

    def release(
        self, node_id: str, reservation_id: str, body: UnitsRequest,
        idempotency_key: str | None = None,
    ) -> Reservation:  # fmt: skip
        return _expect(Reservation, release_units.sync_detailed(
            node_id, reservation_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def reclaim(
        self, node_id: str, reservation_id: str, body: UnitsRequest,
        idempotency_key: str | None = None,
    ) -> ReclaimResult:  # fmt: skip
        return _expect(ReclaimResult, reclaim_units.sync_detailed(
            node_id, reservation_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def cancel(
        self, node_id: str, reservation_id: str, body: CancelRequest | None = None,
        idempotency_key: str | None = None,
    ) -> Reservation:  # fmt: skip
        return _expect(Reservation, cancel_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, body=body or UNSET,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def reaffirm(
        self, node_id: str, reservation_id: str, body: ReaffirmRequest | None = None,
        idempotency_key: str | None = None,
    ) -> Reservation:  # fmt: skip
        return _expect(Reservation, reaffirm_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, body=body or UNSET,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    # --- nodes and workloads --------------------------------------------------------------

    def put_node(self, node_id: str, body: NodeRequest) -> Node:
        return _expect(Node, put_node.sync_detailed(node_id, client=self.client, body=body))

    def get_node(self, node_id: str) -> Node:
        return _expect(Node, get_node.sync_detailed(node_id, client=self.client))

    def place_workload(
        self, node_id: str, body: PlaceWorkloadRequest, idempotency_key: str | None = None
    ) -> Workload:
        return _expect(Workload, place_workload.sync_detailed(
            node_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def end_workload(
        self, node_id: str, workload_id: str, idempotency_key: str | None = None
    ) -> None:
        answer = end_workload.sync_detailed(
            node_id, workload_id, client=self.client, idempotency_key=_key(idempotency_key)
        )
        if int(answer.status_code) >= 400:
            raise error_for(answer)

    def get_workload(self, node_id: str, workload_id: str) -> Workload:
        return _expect(Workload, get_workload.sync_detailed(
            node_id, workload_id, client=self.client))  # fmt: skip

    def list_workloads(
        self, node_id: str, limit: int | None = None, cursor: str | None = None,
        state: str | Sequence[str] | None = None,
    ) -> WorkloadPage:  # fmt: skip
        return _expect(WorkloadPage, list_workloads.sync_detailed(
            node_id, client=self.client, limit=_given(limit), cursor=_given(cursor),
            state=_listed(state)))  # fmt: skip

    # --- events ---------------------------------------------------------------------------

    def node_events(
        self, node_id: str, types: str | Sequence[str] | None = None,
        after: datetime | str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> EventPage:  # fmt: skip
        return _expect(EventPage, list_node_events.sync_detailed(
            node_id, client=self.client, types=_listed(types), after=_moment(after),
            limit=_given(limit), cursor=_given(cursor)))  # fmt: skip

    def events(
        self, types: str | Sequence[str] | None = None, after: datetime | str | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> EventPage:  # fmt: skip
        return _expect(EventPage, list_events.sync_detailed(
            client=self.client, types=_listed(types), after=_moment(after), limit=_given(limit),
            cursor=_given(cursor)))  # fmt: skip
