from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.too_many_requests import TooManyRequests
from ...models.usage_page import UsagePage
from ...types import UNSET, Unset
from typing import cast
import datetime



def _get_kwargs(
    *,
    from_: datetime.datetime,
    to: datetime.datetime,
    granularity: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    reservation_id: list[str] | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_from_ = from_.isoformat()
    params["from"] = json_from_

    json_to = to.isoformat()
    params["to"] = json_to

    params["granularity"] = granularity

    params["groupBy"] = group_by

    json_node_id: list[str] | Unset = UNSET
    if not isinstance(node_id, Unset):
        json_node_id = node_id


    params["nodeId"] = json_node_id

    json_reservation_id: list[str] | Unset = UNSET
    if not isinstance(reservation_id, Unset):
        json_reservation_id = reservation_id


    params["reservationId"] = json_reservation_id

    params["limit"] = limit

    params["cursor"] = cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/usage",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | TooManyRequests | UsagePage | None:
    if response.status_code == 200:
        response_200 = UsagePage.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | TooManyRequests | UsagePage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    from_: datetime.datetime,
    to: datetime.datetime,
    granularity: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    reservation_id: list[str] | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Response[Error | TooManyRequests | UsagePage]:
    """ Usage rows the caller may see: each state's unit- and GPU-milliseconds

    Args:
        from_ (datetime.datetime):
        to (datetime.datetime):
        granularity (str | Unset): known values: hour, day; a newer API may send others
        group_by (str | Unset): known values: node, reservation; a newer API may send others
        node_id (list[str] | Unset):
        reservation_id (list[str] | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TooManyRequests | UsagePage]
     """


    kwargs = _get_kwargs(
        from_=from_,
to=to,
granularity=granularity,
group_by=group_by,
node_id=node_id,
reservation_id=reservation_id,
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
    from_: datetime.datetime,
    to: datetime.datetime,
    granularity: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    reservation_id: list[str] | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Error | TooManyRequests | UsagePage | None:
    """ Usage rows the caller may see: each state's unit- and GPU-milliseconds

    Args:
        from_ (datetime.datetime):
        to (datetime.datetime):
        granularity (str | Unset): known values: hour, day; a newer API may send others
        group_by (str | Unset): known values: node, reservation; a newer API may send others
        node_id (list[str] | Unset):
        reservation_id (list[str] | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TooManyRequests | UsagePage
     """


    return sync_detailed(
        client=client,
from_=from_,
to=to,
granularity=granularity,
group_by=group_by,
node_id=node_id,
reservation_id=reservation_id,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    from_: datetime.datetime,
    to: datetime.datetime,
    granularity: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    reservation_id: list[str] | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Response[Error | TooManyRequests | UsagePage]:
    """ Usage rows the caller may see: each state's unit- and GPU-milliseconds

    Args:
        from_ (datetime.datetime):
        to (datetime.datetime):
        granularity (str | Unset): known values: hour, day; a newer API may send others
        group_by (str | Unset): known values: node, reservation; a newer API may send others
        node_id (list[str] | Unset):
        reservation_id (list[str] | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TooManyRequests | UsagePage]
     """


    kwargs = _get_kwargs(
        from_=from_,
to=to,
granularity=granularity,
group_by=group_by,
node_id=node_id,
reservation_id=reservation_id,
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
    from_: datetime.datetime,
    to: datetime.datetime,
    granularity: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    node_id: list[str] | Unset = UNSET,
    reservation_id: list[str] | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,

) -> Error | TooManyRequests | UsagePage | None:
    """ Usage rows the caller may see: each state's unit- and GPU-milliseconds

    Args:
        from_ (datetime.datetime):
        to (datetime.datetime):
        granularity (str | Unset): known values: hour, day; a newer API may send others
        group_by (str | Unset): known values: node, reservation; a newer API may send others
        node_id (list[str] | Unset):
        reservation_id (list[str] | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TooManyRequests | UsagePage
     """


    return (await asyncio_detailed(
        client=client,
from_=from_,
to=to,
granularity=granularity,
group_by=group_by,
node_id=node_id,
reservation_id=reservation_id,
limit=limit,
cursor=cursor,

    )).parsed
