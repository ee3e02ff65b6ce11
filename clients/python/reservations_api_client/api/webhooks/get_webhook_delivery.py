from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.delivery_detail import DeliveryDetail
from ...models.error import Error
from ...models.too_many_requests import TooManyRequests
from typing import cast



def _get_kwargs(
    subscription_id: str,
    event_id: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/webhooks/{subscription_id}/deliveries/{event_id}".format(subscription_id=quote(str(subscription_id), safe=""),event_id=quote(str(event_id), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> DeliveryDetail | Error | TooManyRequests | None:
    if response.status_code == 200:
        response_200 = DeliveryDetail.from_dict(response.json())



        return response_200

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[DeliveryDetail | Error | TooManyRequests]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    subscription_id: str,
    event_id: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[DeliveryDetail | Error | TooManyRequests]:
    """ One event's delivery to a subscription: where it stands and every attempt, newest first

    Args:
        subscription_id (str):
        event_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeliveryDetail | Error | TooManyRequests]
     """


    kwargs = _get_kwargs(
        subscription_id=subscription_id,
event_id=event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    subscription_id: str,
    event_id: str,
    *,
    client: AuthenticatedClient | Client,

) -> DeliveryDetail | Error | TooManyRequests | None:
    """ One event's delivery to a subscription: where it stands and every attempt, newest first

    Args:
        subscription_id (str):
        event_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeliveryDetail | Error | TooManyRequests
     """


    return sync_detailed(
        subscription_id=subscription_id,
event_id=event_id,
client=client,

    ).parsed

async def asyncio_detailed(
    subscription_id: str,
    event_id: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[DeliveryDetail | Error | TooManyRequests]:
    """ One event's delivery to a subscription: where it stands and every attempt, newest first

    Args:
        subscription_id (str):
        event_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeliveryDetail | Error | TooManyRequests]
     """


    kwargs = _get_kwargs(
        subscription_id=subscription_id,
event_id=event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    subscription_id: str,
    event_id: str,
    *,
    client: AuthenticatedClient | Client,

) -> DeliveryDetail | Error | TooManyRequests | None:
    """ One event's delivery to a subscription: where it stands and every attempt, newest first

    Args:
        subscription_id (str):
        event_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeliveryDetail | Error | TooManyRequests
     """


    return (await asyncio_detailed(
        subscription_id=subscription_id,
event_id=event_id,
client=client,

    )).parsed
