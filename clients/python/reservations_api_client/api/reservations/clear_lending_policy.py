from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    node_id: str,
    reservation_id: str,
    *,
    if_match: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_match, Unset):
        headers["if-match"] = if_match



    

    

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/nodes/{node_id}/reservations/{reservation_id}/lending".format(node_id=quote(str(node_id), safe=""),reservation_id=quote(str(reservation_id), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Error | TooManyRequests | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Error | TooManyRequests]:
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
    if_match: str | Unset = UNSET,

) -> Response[Any | Error | TooManyRequests]:
    """ Remove a reservation's lending policy: nothing is lent by itself any more

     Promises already made to spot workloads stay theirs.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
reservation_id=reservation_id,
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
    if_match: str | Unset = UNSET,

) -> Any | Error | TooManyRequests | None:
    """ Remove a reservation's lending policy: nothing is lent by itself any more

     Promises already made to spot workloads stay theirs.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | TooManyRequests
     """


    return sync_detailed(
        node_id=node_id,
reservation_id=reservation_id,
client=client,
if_match=if_match,

    ).parsed

async def asyncio_detailed(
    node_id: str,
    reservation_id: str,
    *,
    client: AuthenticatedClient | Client,
    if_match: str | Unset = UNSET,

) -> Response[Any | Error | TooManyRequests]:
    """ Remove a reservation's lending policy: nothing is lent by itself any more

     Promises already made to spot workloads stay theirs.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
reservation_id=reservation_id,
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
    if_match: str | Unset = UNSET,

) -> Any | Error | TooManyRequests | None:
    """ Remove a reservation's lending policy: nothing is lent by itself any more

     Promises already made to spot workloads stay theirs.

    Args:
        node_id (str):
        reservation_id (str):
        if_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | TooManyRequests
     """


    return (await asyncio_detailed(
        node_id=node_id,
reservation_id=reservation_id,
client=client,
if_match=if_match,

    )).parsed
