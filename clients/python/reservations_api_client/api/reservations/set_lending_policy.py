from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.lending_policy_request import LendingPolicyRequest
from ...models.reservation import Reservation
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    node_id: str,
    reservation_id: str,
    *,
    body: LendingPolicyRequest,
    if_match: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_match, Unset):
        headers["if-match"] = if_match



    

    

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/nodes/{node_id}/reservations/{reservation_id}/lending".format(node_id=quote(str(node_id), safe=""),reservation_id=quote(str(reservation_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Reservation | TooManyRequests | None:
    if response.status_code == 200:
        response_200 = Reservation.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())



        return response_409

    if response.status_code == 412:
        response_412 = Error.from_dict(response.json())



        return response_412

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())



        return response_415

    if response.status_code == 429:
        response_429 = TooManyRequests.from_dict(response.json())



        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Reservation | TooManyRequests]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    node_id: str,
    reservation_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: LendingPolicyRequest,
    if_match: str | Unset = UNSET,

) -> Response[Error | Reservation | TooManyRequests]:
    """ Set a reservation's lending policy: idle units lent by themselves, and the promises made to the spot
    workloads placed on them

     The whole policy: an omitted field takes its default. Idempotent by nature (no Idempotency-Key); a
    policy equal to the stored one writes nothing and emits nothing. A change is a reservation.updated
    with data.changes.lending.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):
        body (LendingPolicyRequest): The body of ``PUT .../lending``: the whole policy (an omitted
            field takes its
            default).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Reservation | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
reservation_id=reservation_id,
body=body,
if_match=if_match,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    node_id: str,
    reservation_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: LendingPolicyRequest,
    if_match: str | Unset = UNSET,

) -> Error | Reservation | TooManyRequests | None:
    """ Set a reservation's lending policy: idle units lent by themselves, and the promises made to the spot
    workloads placed on them

     The whole policy: an omitted field takes its default. Idempotent by nature (no Idempotency-Key); a
    policy equal to the stored one writes nothing and emits nothing. A change is a reservation.updated
    with data.changes.lending.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):
        body (LendingPolicyRequest): The body of ``PUT .../lending``: the whole policy (an omitted
            field takes its
            default).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Reservation | TooManyRequests
     """


    return sync_detailed(
        node_id=node_id,
reservation_id=reservation_id,
client=client,
body=body,
if_match=if_match,

    ).parsed

async def asyncio_detailed(
    node_id: str,
    reservation_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: LendingPolicyRequest,
    if_match: str | Unset = UNSET,

) -> Response[Error | Reservation | TooManyRequests]:
    """ Set a reservation's lending policy: idle units lent by themselves, and the promises made to the spot
    workloads placed on them

     The whole policy: an omitted field takes its default. Idempotent by nature (no Idempotency-Key); a
    policy equal to the stored one writes nothing and emits nothing. A change is a reservation.updated
    with data.changes.lending.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):
        body (LendingPolicyRequest): The body of ``PUT .../lending``: the whole policy (an omitted
            field takes its
            default).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Reservation | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
reservation_id=reservation_id,
body=body,
if_match=if_match,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    node_id: str,
    reservation_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: LendingPolicyRequest,
    if_match: str | Unset = UNSET,

) -> Error | Reservation | TooManyRequests | None:
    """ Set a reservation's lending policy: idle units lent by themselves, and the promises made to the spot
    workloads placed on them

     The whole policy: an omitted field takes its default. Idempotent by nature (no Idempotency-Key); a
    policy equal to the stored one writes nothing and emits nothing. A change is a reservation.updated
    with data.changes.lending.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):
        body (LendingPolicyRequest): The body of ``PUT .../lending``: the whole policy (an omitted
            field takes its
            default).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Reservation | TooManyRequests
     """


    return (await asyncio_detailed(
        node_id=node_id,
reservation_id=reservation_id,
client=client,
body=body,
if_match=if_match,

    )).parsed
