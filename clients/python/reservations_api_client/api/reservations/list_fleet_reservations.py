from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.fleet_reservation_page import FleetReservationPage
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast
import datetime



def _get_kwargs(
    *,
    role: list[str] | Unset = UNSET,
    status: list[str] | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    gpu_model_id: str | Unset = UNSET,
    ends_before: datetime.datetime | Unset = UNSET,
    ends_after: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_role: list[str] | Unset = UNSET
    if not isinstance(role, Unset):
        json_role = role


    params["role"] = json_role

    json_status: list[str] | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status


    params["status"] = json_status

    json_node_id: list[str] | Unset = UNSET
    if not isinstance(node_id, Unset):
        json_node_id = node_id


    params["nodeId"] = json_node_id

    params["gpuModelId"] = gpu_model_id

    json_ends_before: str | Unset = UNSET
    if not isinstance(ends_before, Unset):
        json_ends_before = ends_before.isoformat()
    params["endsBefore"] = json_ends_before

    json_ends_after: str | Unset = UNSET
    if not isinstance(ends_after, Unset):
        json_ends_after = ends_after.isoformat()
    params["endsAfter"] = json_ends_after

    params["limit"] = limit

    params["cursor"] = cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/reservations",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | FleetReservationPage | TooManyRequests | None:
    if response.status_code == 200:
        response_200 = FleetReservationPage.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | FleetReservationPage | TooManyRequests]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    role: list[str] | Unset = UNSET,
    status: list[str] | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    gpu_model_id: str | Unset = UNSET,
    ends_before: datetime.datetime | Unset = UNSET,
    ends_after: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Response[Error | FleetReservationPage | TooManyRequests]:
    """ List the reservations the caller's org may see on any node, soonest end first

    Args:
        role (list[str] | Unset):
        status (list[str] | Unset):
        node_id (list[str] | Unset):
        gpu_model_id (str | Unset):
        ends_before (datetime.datetime | Unset):
        ends_after (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FleetReservationPage | TooManyRequests]
     """


    kwargs = _get_kwargs(
        role=role,
status=status,
node_id=node_id,
gpu_model_id=gpu_model_id,
ends_before=ends_before,
ends_after=ends_after,
limit=limit,
cursor=cursor,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    role: list[str] | Unset = UNSET,
    status: list[str] | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    gpu_model_id: str | Unset = UNSET,
    ends_before: datetime.datetime | Unset = UNSET,
    ends_after: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Error | FleetReservationPage | TooManyRequests | None:
    """ List the reservations the caller's org may see on any node, soonest end first

    Args:
        role (list[str] | Unset):
        status (list[str] | Unset):
        node_id (list[str] | Unset):
        gpu_model_id (str | Unset):
        ends_before (datetime.datetime | Unset):
        ends_after (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FleetReservationPage | TooManyRequests
     """


    return sync_detailed(
        client=client,
role=role,
status=status,
node_id=node_id,
gpu_model_id=gpu_model_id,
ends_before=ends_before,
ends_after=ends_after,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    role: list[str] | Unset = UNSET,
    status: list[str] | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    gpu_model_id: str | Unset = UNSET,
    ends_before: datetime.datetime | Unset = UNSET,
    ends_after: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Response[Error | FleetReservationPage | TooManyRequests]:
    """ List the reservations the caller's org may see on any node, soonest end first

    Args:
        role (list[str] | Unset):
        status (list[str] | Unset):
        node_id (list[str] | Unset):
        gpu_model_id (str | Unset):
        ends_before (datetime.datetime | Unset):
        ends_after (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | FleetReservationPage | TooManyRequests]
     """


    kwargs = _get_kwargs(
        role=role,
status=status,
node_id=node_id,
gpu_model_id=gpu_model_id,
ends_before=ends_before,
ends_after=ends_after,
limit=limit,
cursor=cursor,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    role: list[str] | Unset = UNSET,
    status: list[str] | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    gpu_model_id: str | Unset = UNSET,
    ends_before: datetime.datetime | Unset = UNSET,
    ends_after: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Error | FleetReservationPage | TooManyRequests | None:
    """ List the reservations the caller's org may see on any node, soonest end first

    Args:
        role (list[str] | Unset):
        status (list[str] | Unset):
        node_id (list[str] | Unset):
        gpu_model_id (str | Unset):
        ends_before (datetime.datetime | Unset):
        ends_after (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | FleetReservationPage | TooManyRequests
     """


    return (await asyncio_detailed(
        client=client,
role=role,
status=status,
node_id=node_id,
gpu_model_id=gpu_model_id,
ends_before=ends_before,
ends_after=ends_after,
limit=limit,
cursor=cursor,

    )).parsed
