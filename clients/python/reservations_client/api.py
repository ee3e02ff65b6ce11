"""One API key's calls: a method per operation, iterators that page by themselves, and the
retry policy under every call (:mod:`reservations_client.retries`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from reservations_api_client import AuthenticatedClient
from reservations_api_client.api.events import list_events, list_node_events
from reservations_api_client.api.nodes import get_node, put_node
from reservations_api_client.api.reservations import (
    cancel_reservation,
    clear_lending_policy,
    create_reservation,
    get_reservation,
    list_fleet_reservations,
    list_reservations,
    list_units,
    reaffirm_reservation,
    reclaim_units,
    release_units,
    set_lending_policy,
    update_reservation,
)
from reservations_api_client.api.usage import list_usage
from reservations_api_client.api.webhooks import (
    create_webhook,
    delete_webhook,
    get_webhook,
    get_webhook_delivery,
    list_webhook_deliveries,
    list_webhooks,
    retry_webhook_delivery,
    rotate_webhook_secret,
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
    DeliveryDetail,
    DeliveryPage,
    DeliveryView,
    Event,
    EventPage,
    FleetReservationPage,
    LendingPolicyRequest,
    Node,
    NodeRequest,
    PlaceWorkloadRequest,
    ReaffirmRequest,
    ReclaimResult,
    Reservation,
    ReservationPage,
    RetryQueued,
    SubscribeRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
    Unit,
    UnitsRequest,
    UpdateReservationRequest,
    UsagePage,
    UsageRow,
    Workload,
    WorkloadPage,
)
from reservations_api_client.types import UNSET, Response, Unset
from reservations_client.errors import ReservationsApiError, error_for
from reservations_client.paging import feed_items, follow, list_items
from reservations_client.retries import RetryingTransport, RetryPolicy

T = TypeVar("T")


def _with_notice(body: dict[str, Any], notice_seconds: int | None) -> dict[str, Any]:
    """A reclaim's body, with the notice if given."""
    if notice_seconds is None:
        return body
    return {**body, "noticeSeconds": notice_seconds}


POLL_SECONDS = 2.0  # a followed feed's pause at its end: events settle for up to 5 s


def _raise_error(response: httpx.Response) -> None:
    """An answer of 400 or more raised as its error before the generated client reads its
    body: one not in the contract's shape (API Gateway's own ``{"message": ...}`` for a
    crashed or timed-out function, a proxy's HTML page) made its model's parsing raise
    ``KeyError`` instead."""
    if response.status_code >= 400:
        response.read()
        raise error_for(response.status_code, response.content, dict(response.headers))


def _checked(response: Response[Any]) -> Response[Any]:
    """The answer; its error raised."""
    if int(response.status_code) >= 400:
        raise error_for(int(response.status_code), response.content, dict(response.headers))
    return response


def _expect(kind: type[T], response: Response[Any]) -> T:
    """The answer's model; its error raised."""
    parsed = _checked(response).parsed
    if not isinstance(parsed, kind):
        raise ReservationsApiError(int(response.status_code), {}, {})
    return parsed


def _key(idempotency_key: str | None) -> str | Unset:
    return UNSET if idempotency_key is None else idempotency_key


def _tags(etag: str | None) -> str | Unset:
    """If-Match / If-None-Match from a reservation's ``etag`` (quoted here), ``*``, or a
    header value as the API gives one (``"…"``, a list): absent when None."""
    if etag is None:
        return UNSET
    if etag == "*" or etag.startswith(('"', "W/")):
        return etag
    return f'"{etag}"'


def _given(value: T | None) -> T | Unset:
    """A query parameter: absent when None."""
    return UNSET if value is None else value


def _listed(values: str | Sequence[str] | None) -> Any:
    """A list filter (statuses, states, event types): a list, or its comma-separated text;
    absent when None (the API names a bad one). Sent as the document declares it (form, not
    exploded): one parameter, its values comma-separated. The generated call repeats the
    name for each item of a list, which the API refuses, so it gets one comma-separated item."""
    if values is None:
        return UNSET
    return [values if isinstance(values, str) else ",".join(values)]


def _moment(value: datetime | str | None) -> Any:
    """``after``: an aware datetime, or RFC 3339 text as the API takes it."""
    if value is None:
        return UNSET
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _boundary(value: datetime | str) -> datetime:
    """A usage period's ``from`` or ``to``: a datetime, or RFC 3339 text (the API judges
    whether it is a whole UTC hour or day, and names the field when it is not)."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


class Reservations:
    """One API key's calls. ``base_url``: where the API answers (``http://127.0.0.1:3000``);
    ``retry``: how failed calls are tried again (``NO_RETRIES`` to turn it off);
    ``transport``: an httpx transport to send through (tests: one in process)."""

    def __init__(
        self, base_url: str, api_key: str, timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None, retry: RetryPolicy | None = None,
    ) -> None:  # fmt: skip
        inner = transport if transport is not None else httpx.HTTPTransport()
        self.client = AuthenticatedClient(
            base_url=base_url,
            token=api_key,
            timeout=httpx.Timeout(timeout),
            httpx_args={
                "transport": RetryingTransport(inner, retry or RetryPolicy()),
                "event_hooks": {"response": [_raise_error]},
            },
        )

    def __repr__(self) -> str:  # never the key
        return f"Reservations({self.client._base_url!r})"

    # --- reservations ---------------------------------------------------------------------

    def list_units(self, node_id: str) -> list[Unit]:
        parsed = _checked(list_units.sync_detailed(node_id, client=self.client)).parsed
        return [unit for unit in (parsed or []) if isinstance(unit, Unit)]

    def create_reservation(
        self, node_id: str, body: CreateReservationRequest, idempotency_key: str | None = None
    ) -> Reservation:
        return _expect(Reservation, create_reservation.sync_detailed(
            node_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def get_reservation(self, node_id: str, reservation_id: str) -> Reservation:
        return _expect(Reservation, get_reservation.sync_detailed(
            node_id, reservation_id, client=self.client))  # fmt: skip

    def get_reservation_if_changed(
        self, node_id: str, reservation_id: str, etag: str
    ) -> Reservation | None:
        """The reservation, or None while it is still at ``etag`` (its ``etag`` as last
        read: the API answers 304 and no body)."""
        response = _checked(get_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, if_none_match=_tags(etag)))  # fmt: skip
        if int(response.status_code) == 304:
            return None
        return _expect(Reservation, response)

    def list_reservations(
        self, node_id: str, limit: int | None = None, cursor: str | None = None,
        status: str | Sequence[str] | None = None,
    ) -> ReservationPage:  # fmt: skip
        """One page of a node's reservations; :meth:`iter_reservations` reads them all."""
        return _expect(ReservationPage, list_reservations.sync_detailed(
            node_id, client=self.client, limit=_given(limit), cursor=_given(cursor),
            status=_listed(status)))  # fmt: skip

    def iter_reservations(
        self, node_id: str, status: str | Sequence[str] | None = None, page_size: int = 100
    ) -> Iterator[Reservation]:
        return list_items(lambda cursor: self.list_reservations(
            node_id, limit=page_size, cursor=cursor, status=status))  # fmt: skip

    def list_fleet_reservations(
        self, role: str | Sequence[str] | None = None, status: str | Sequence[str] | None = None,
        node_ids: str | Sequence[str] | None = None, gpu_model_id: str | None = None,
        ends_before: datetime | str | None = None, ends_after: datetime | str | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> FleetReservationPage:  # fmt: skip
        """One page of the reservations the org may see on any node, soonest end first;
        :meth:`iter_fleet_reservations` reads them all."""
        return _expect(FleetReservationPage, list_fleet_reservations.sync_detailed(
            client=self.client, role=_listed(role), status=_listed(status),
            node_id=_listed(node_ids), gpu_model_id=_given(gpu_model_id),
            ends_before=_moment(ends_before), ends_after=_moment(ends_after),
            limit=_given(limit), cursor=_given(cursor)))  # fmt: skip

    def iter_fleet_reservations(
        self, role: str | Sequence[str] | None = None, status: str | Sequence[str] | None = None,
        node_ids: str | Sequence[str] | None = None, gpu_model_id: str | None = None,
        ends_before: datetime | str | None = None, ends_after: datetime | str | None = None,
        page_size: int = 100,
    ) -> Iterator[Reservation]:  # fmt: skip
        return list_items(lambda cursor: self.list_fleet_reservations(
            role=role, status=status, node_ids=node_ids, gpu_model_id=gpu_model_id,
            ends_before=ends_before, ends_after=ends_after, limit=page_size,
            cursor=cursor))  # fmt: skip

    def release(
        self, node_id: str, reservation_id: str, body: UnitsRequest,
        idempotency_key: str | None = None, if_match: str | None = None,
    ) -> Reservation:  # fmt: skip
        """``if_match``: act only while the reservation is at this ``etag`` (or ``*``),
        else :class:`PreconditionFailed` and nothing done; a dry run ignores it."""
        return _expect(Reservation, release_units.sync_detailed(
            node_id, reservation_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key), if_match=_tags(if_match)))  # fmt: skip

    def reclaim(
        self, node_id: str, reservation_id: str, body: UnitsRequest,
        idempotency_key: str | None = None, notice_seconds: int | None = None,
        if_match: str | None = None,
    ) -> ReclaimResult:  # fmt: skip
        """Reclaim the named units (a dry run also answers a ``plan_id``); ``notice_seconds``
        (0-3600) is the spot workloads' notice: the answer's ``terminate_at`` is their
        deadline (a real run's). ``if_match``: as :meth:`release`."""
        fields = _with_notice(body.to_dict(), notice_seconds)
        return self._reclaim(node_id, reservation_id, fields, idempotency_key, if_match)

    def reclaim_count(
        self, node_id: str, reservation_id: str, count: int, *, dry_run: bool = False,
        notice_seconds: int | None = None, reason: str | None = None,
        idempotency_key: str | None = None, if_match: str | None = None,
    ) -> ReclaimResult:  # fmt: skip
        """Reclaim ``count`` of the released units, the service choosing which (the answer's
        ``reclaimed_unit_ids``), with ``notice_seconds`` as :meth:`reclaim`. A real run needs
        ``idempotency_key`` or ``if_match`` (the reservation's etag): each call takes
        ``count`` more. A dry run answers a ``plan_id`` for :meth:`apply_plan`, bound to its
        notice."""
        body: dict[str, Any] = {"count": count}
        if dry_run:
            body["dryRun"] = True
        if reason is not None:
            body["reason"] = reason
        return self._reclaim(
            node_id, reservation_id, _with_notice(body, notice_seconds), idempotency_key, if_match
        )

    def apply_plan(
        self, node_id: str, reservation_id: str, plan_id: str, *, reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> ReclaimResult:  # fmt: skip
        """Do exactly what a dry run planned (its ``plan_id``, for 5 minutes; its notice
        too), or nothing: 409 ``plan_stale`` when anything it is bound to changed, or it
        expired."""
        body: dict[str, Any] = {"planId": plan_id}
        if reason is not None:
            body["reason"] = reason
        return self._reclaim(node_id, reservation_id, body, idempotency_key, None)

    def _reclaim(
        self, node_id: str, reservation_id: str, body: dict[str, Any],
        idempotency_key: str | None, if_match: str | None,
    ) -> ReclaimResult:  # fmt: skip
        return _expect(ReclaimResult, reclaim_units.sync_detailed(
            node_id, reservation_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key), if_match=_tags(if_match)))  # fmt: skip

    def update_reservation(
        self, node_id: str, reservation_id: str, body: UpdateReservationRequest,
        idempotency_key: str | None = None, if_match: str | None = None,
    ) -> Reservation:  # fmt: skip
        """Change a pending or active reservation (PATCH): only the fields ``body`` sets
        (``None`` where allowed removes the value: ``ends_at``, ``contract_ref``, ``reason``).
        ``if_match``: act only while the reservation is at this ``etag`` (or ``*``)."""
        return _expect(Reservation, update_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, body=body,
            idempotency_key=_key(idempotency_key), if_match=_tags(if_match)))  # fmt: skip

    def cancel(
        self, node_id: str, reservation_id: str, body: CancelRequest | None = None,
        idempotency_key: str | None = None, if_match: str | None = None,
    ) -> Reservation:  # fmt: skip
        """``if_match``: act only while the reservation is at this ``etag`` (or ``*``)."""
        return _expect(Reservation, cancel_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, body=body or UNSET,
            idempotency_key=_key(idempotency_key), if_match=_tags(if_match)))  # fmt: skip

    def reaffirm(
        self, node_id: str, reservation_id: str, body: ReaffirmRequest | None = None,
        idempotency_key: str | None = None, if_match: str | None = None,
    ) -> Reservation:  # fmt: skip
        """``if_match``: act only while the reservation is at this ``etag`` (or ``*``)."""
        return _expect(Reservation, reaffirm_reservation.sync_detailed(
            node_id, reservation_id, client=self.client, body=body or UNSET,
            idempotency_key=_key(idempotency_key), if_match=_tags(if_match)))  # fmt: skip

    def set_lending(
        self, node_id: str, reservation_id: str, policy: LendingPolicyRequest,
        if_match: str | None = None,
    ) -> Reservation:  # fmt: skip
        """Set the reservation's lending policy, whole (a field left unset takes its default);
        the reservation carrying it. Safe to repeat: the same policy changes nothing.
        ``if_match``: act only while the reservation is at this ``etag`` (or ``*``)."""
        return _expect(Reservation, set_lending_policy.sync_detailed(
            node_id, reservation_id, client=self.client, body=policy,
            if_match=_tags(if_match)))  # fmt: skip

    def clear_lending(self, node_id: str, reservation_id: str, if_match: str | None = None) -> None:
        """Remove the reservation's lending policy (nothing happens when it has none)."""
        _checked(clear_lending_policy.sync_detailed(
            node_id, reservation_id, client=self.client, if_match=_tags(if_match)))  # fmt: skip

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

    def place(
        self, node_id: str, workload_id: str, *, org_id: str, tier: str = "spot",
        kind: str = "vm", unit_ids: Sequence[str] | None = None,
        reservation_id: str | None = None, count: int | None = None,
        idempotency_key: str | None = None,
    ) -> Workload:  # fmt: skip
        """Place a workload on ``unit_ids``; or, the audience's work on ``reservation_id``
        (tier ``reserved``), on ``unit_ids`` or ``count`` of its units, taking back what it
        has lent. The workload as placed: ``state`` ``running``, or ``waiting`` with
        ``waiting_for`` (the spot workloads it waits on, each with its ``terminate_at``):
        it becomes ``running`` with ``workload.started`` when the last one stops."""
        body = PlaceWorkloadRequest(
            id=workload_id, kind=kind, tier=tier, org_id=org_id,
            unit_ids=UNSET if unit_ids is None else list(unit_ids),
            reservation_id=UNSET if reservation_id is None else reservation_id,
            count=UNSET if count is None else count,
        )  # fmt: skip
        return self.place_workload(node_id, body, idempotency_key)

    def end_workload(
        self, node_id: str, workload_id: str, idempotency_key: str | None = None
    ) -> None:
        _checked(end_workload.sync_detailed(
            node_id, workload_id, client=self.client,
            idempotency_key=_key(idempotency_key)))  # fmt: skip

    def get_workload(self, node_id: str, workload_id: str) -> Workload:
        return _expect(Workload, get_workload.sync_detailed(
            node_id, workload_id, client=self.client))  # fmt: skip

    def list_workloads(
        self, node_id: str, limit: int | None = None, cursor: str | None = None,
        state: str | Sequence[str] | None = None,
    ) -> WorkloadPage:  # fmt: skip
        """One page of a node's workloads; :meth:`iter_workloads` reads them all."""
        return _expect(WorkloadPage, list_workloads.sync_detailed(
            node_id, client=self.client, limit=_given(limit), cursor=_given(cursor),
            state=_listed(state)))  # fmt: skip

    def iter_workloads(
        self, node_id: str, state: str | Sequence[str] | None = None, page_size: int = 100
    ) -> Iterator[Workload]:
        return list_items(lambda cursor: self.list_workloads(
            node_id, limit=page_size, cursor=cursor, state=state))  # fmt: skip

    # --- events ---------------------------------------------------------------------------

    def node_events(
        self, node_id: str, types: str | Sequence[str] | None = None,
        after: datetime | str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> EventPage:  # fmt: skip
        """One page of a node's feed; :meth:`iter_node_events` reads to its end."""
        return _expect(EventPage, list_node_events.sync_detailed(
            node_id, client=self.client, types=_listed(types), after=_moment(after),
            limit=_given(limit), cursor=_given(cursor)))  # fmt: skip

    def events(
        self, types: str | Sequence[str] | None = None, after: datetime | str | None = None,
        limit: int | None = None, cursor: str | None = None,
    ) -> EventPage:  # fmt: skip
        """One page of the org's feed; :meth:`iter_events` reads to its end."""
        return _expect(EventPage, list_events.sync_detailed(
            client=self.client, types=_listed(types), after=_moment(after), limit=_given(limit),
            cursor=_given(cursor)))  # fmt: skip

    def iter_node_events(
        self, node_id: str, types: str | Sequence[str] | None = None,
        after: datetime | str | None = None, page_size: int = 100,
    ) -> Iterator[Event]:  # fmt: skip
        return feed_items(lambda cursor: self.node_events(
            node_id, types=types, after=after, limit=page_size, cursor=cursor))  # fmt: skip

    def iter_events(
        self, types: str | Sequence[str] | None = None, after: datetime | str | None = None,
        page_size: int = 100,
    ) -> Iterator[Event]:  # fmt: skip
        return feed_items(lambda cursor: self.events(
            types=types, after=after, limit=page_size, cursor=cursor))  # fmt: skip

    def follow_events(
        self, types: str | Sequence[str] | None = None, after: datetime | str | None = None,
        wait: Callable[[], None] | None = None,
    ) -> Iterator[Event]:  # fmt: skip
        """The org's feed from ``after``, then each new event as it lands, each once, without
        end; ``wait`` is called at the feed's end (default: sleep ``POLL_SECONDS``)."""
        pause = wait or (lambda: time.sleep(POLL_SECONDS))
        return follow(
            lambda cursor: self.events(types=types, after=after, limit=100, cursor=cursor),
            lambda event: event.id, pause)  # fmt: skip

    # --- usage ----------------------------------------------------------------------------

    def list_usage(
        self, *, from_: datetime | str, to: datetime | str, granularity: str | None = None,
        group_by: str | None = None, node_ids: str | Sequence[str] | None = None,
        reservation_ids: str | Sequence[str] | None = None, limit: int | None = None,
        cursor: str | None = None,
    ) -> UsagePage:  # fmt: skip
        """One page of the usage rows the key may see over ``[from_, to)``; :meth:`iter_usage`
        reads them all."""
        return _expect(UsagePage, list_usage.sync_detailed(
            client=self.client, from_=_boundary(from_), to=_boundary(to),
            granularity=_given(granularity), group_by=_given(group_by),
            node_id=_listed(node_ids), reservation_id=_listed(reservation_ids),
            limit=_given(limit), cursor=_given(cursor)))  # fmt: skip

    def iter_usage(
        self, *, from_: datetime | str, to: datetime | str, granularity: str | None = None,
        group_by: str | None = None, node_ids: str | Sequence[str] | None = None,
        reservation_ids: str | Sequence[str] | None = None, page_size: int = 100,
    ) -> Iterator[UsageRow]:  # fmt: skip
        """Every usage row the key may see over ``[from_, to)`` (on whole UTC hours for
        ``granularity="hour"``, whole UTC days for ``"day"``, the default), by node (the
        default) or ``group_by="reservation"``: by key, then start. Each row's ``unit_ms`` and
        ``gpu_ms`` hold a figure per state, those a newer API adds in their
        ``additional_properties``."""
        return list_items(lambda cursor: self.list_usage(
            from_=from_, to=to, granularity=granularity, group_by=group_by, node_ids=node_ids,
            reservation_ids=reservation_ids, limit=page_size, cursor=cursor))  # fmt: skip

    # --- webhooks -------------------------------------------------------------------------

    def create_webhook(
        self, url: str, types: Sequence[str] | None = None, description: str | None = None,
        idempotency_key: str | None = None,
    ) -> SubscriptionWithSecret:  # fmt: skip
        """Subscribe ``url`` to the org's feed; the answer's ``secret`` is shown this once."""
        body = SubscribeRequest(url=url, types=_given(list(types) if types else None),
                                description=_given(description))  # fmt: skip
        return _expect(SubscriptionWithSecret, create_webhook.sync_detailed(
            client=self.client, body=body, idempotency_key=_key(idempotency_key)))  # fmt: skip

    def list_webhooks(
        self, limit: int | None = None, cursor: str | None = None
    ) -> SubscriptionPage:
        return _expect(SubscriptionPage, list_webhooks.sync_detailed(
            client=self.client, limit=_given(limit), cursor=_given(cursor)))  # fmt: skip

    def iter_webhooks(self, page_size: int = 100) -> Iterator[SubscriptionView]:
        return list_items(lambda cursor: self.list_webhooks(limit=page_size, cursor=cursor))

    def get_webhook(self, subscription_id: str) -> SubscriptionView:
        return _expect(SubscriptionView, get_webhook.sync_detailed(
            subscription_id, client=self.client))  # fmt: skip

    def delete_webhook(self, subscription_id: str) -> None:
        _checked(delete_webhook.sync_detailed(subscription_id, client=self.client))

    def rotate_webhook_secret(self, subscription_id: str) -> SubscriptionWithSecret:
        """A new secret; the old one still signs every delivery for 24 hours."""
        return _expect(SubscriptionWithSecret, rotate_webhook_secret.sync_detailed(
            subscription_id, client=self.client))  # fmt: skip

    def webhook_deliveries(
        self, subscription_id: str, limit: int | None = None, cursor: str | None = None
    ) -> DeliveryPage:
        return _expect(DeliveryPage, list_webhook_deliveries.sync_detailed(
            subscription_id, client=self.client, limit=_given(limit),
            cursor=_given(cursor)))  # fmt: skip

    def iter_webhook_deliveries(
        self, subscription_id: str, page_size: int = 100
    ) -> Iterator[DeliveryView]:
        return list_items(lambda cursor: self.webhook_deliveries(
            subscription_id, limit=page_size, cursor=cursor))  # fmt: skip

    def webhook_delivery(self, subscription_id: str, event_id: str) -> DeliveryDetail:
        """One delivery: its state, when its next attempt is due, its attempts newest first."""
        return _expect(DeliveryDetail, get_webhook_delivery.sync_detailed(
            subscription_id, event_id, client=self.client))  # fmt: skip

    def retry_webhook_delivery(self, subscription_id: str, event_id: str) -> RetryQueued:
        return _expect(RetryQueued, retry_webhook_delivery.sync_detailed(
            subscription_id, event_id, client=self.client))  # fmt: skip
