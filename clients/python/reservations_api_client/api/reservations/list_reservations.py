from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.reservation_page import ReservationPage
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    node_id: str,
    *,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
    status: list[str] | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["cursor"] = cursor

    json_status: list[str] | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status


    params["status"] = json_status


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/nodes/{node_id}/reservations".format(node_id=quote(str(node_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | ReservationPage | TooManyRequests | None:
    if response.status_code == 200:
        response_200 = ReservationPage.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | ReservationPage | TooManyRequests]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
    status: list[str] | Unset = UNSET,

) -> Response[Error | ReservationPage | TooManyRequests]:
    """ List the reservations of a node the caller may see

    Args:
        node_id (str):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):
        status (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ReservationPage | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
limit=limit,
cursor=cursor,
status=status,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
    status: list[str] | Unset = UNSET,

) -> Error | ReservationPage | TooManyRequests | None:
    """ List the reservations of a node the caller may see

    Args:
        node_id (str):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):
        status (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ReservationPage | TooManyRequests
     """


    return sync_detailed(
        node_id=node_id,
client=client,
limit=limit,
cursor=cursor,
status=status,

    ).parsed

async def asyncio_detailed(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
    status: list[str] | Unset = UNSET,

) -> Response[Error | ReservationPage | TooManyRequests]:
    """ List the reservations of a node the caller may see

    Args:
        node_id (str):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):
        status (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ReservationPage | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
limit=limit,
cursor=cursor,
status=status,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
    status: list[str] | Unset = UNSET,

) -> Error | ReservationPage | TooManyRequests | None:
    """ List the reservations of a node the caller may see

    Args:
        node_id (str):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):
        status (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ReservationPage | TooManyRequests
     """


    return (await asyncio_detailed(
        node_id=node_id,
client=client,
limit=limit,
cursor=cursor,
status=status,

    )).parsed
