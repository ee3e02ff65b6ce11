from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.retry_queued import RetryQueued
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    subscription_id: str,
    event_id: str,
    *,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["idempotency-key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/webhooks/{subscription_id}/deliveries/{event_id}/retry".format(subscription_id=quote(str(subscription_id), safe=""),event_id=quote(str(event_id), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | RetryQueued | TooManyRequests | None:
    if response.status_code == 202:
        response_202 = RetryQueued.from_dict(response.json())



        return response_202

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | RetryQueued | TooManyRequests]:
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
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | RetryQueued | TooManyRequests]:
    """ Send a failed delivery again now (one more attempt)

     A retry is one attempt however often it is asked: a repeat, with or without the same Idempotency-
    Key, queues the same attempt, which is made once; the header is checked, and nothing needs keeping.
    A delivery that is not failed is a 409 delivery_not_failed naming its state (a pending one is
    retried on its schedule); one of a disabled subscription is a 409 subscription_disabled (re-enable
    it by deleting it and subscribing again). Neither carries Retry-After: asking again never succeeds.
    Nothing is queued for either.

    Args:
        subscription_id (str):
        event_id (str):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RetryQueued | TooManyRequests]
     """


    kwargs = _get_kwargs(
        subscription_id=subscription_id,
event_id=event_id,
idempotency_key=idempotency_key,

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
    idempotency_key: str | Unset = UNSET,

) -> Error | RetryQueued | TooManyRequests | None:
    """ Send a failed delivery again now (one more attempt)

     A retry is one attempt however often it is asked: a repeat, with or without the same Idempotency-
    Key, queues the same attempt, which is made once; the header is checked, and nothing needs keeping.
    A delivery that is not failed is a 409 delivery_not_failed naming its state (a pending one is
    retried on its schedule); one of a disabled subscription is a 409 subscription_disabled (re-enable
    it by deleting it and subscribing again). Neither carries Retry-After: asking again never succeeds.
    Nothing is queued for either.

    Args:
        subscription_id (str):
        event_id (str):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RetryQueued | TooManyRequests
     """


    return sync_detailed(
        subscription_id=subscription_id,
event_id=event_id,
client=client,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    subscription_id: str,
    event_id: str,
    *,
    client: AuthenticatedClient | Client,
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | RetryQueued | TooManyRequests]:
    """ Send a failed delivery again now (one more attempt)

     A retry is one attempt however often it is asked: a repeat, with or without the same Idempotency-
    Key, queues the same attempt, which is made once; the header is checked, and nothing needs keeping.
    A delivery that is not failed is a 409 delivery_not_failed naming its state (a pending one is
    retried on its schedule); one of a disabled subscription is a 409 subscription_disabled (re-enable
    it by deleting it and subscribing again). Neither carries Retry-After: asking again never succeeds.
    Nothing is queued for either.

    Args:
        subscription_id (str):
        event_id (str):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RetryQueued | TooManyRequests]
     """


    kwargs = _get_kwargs(
        subscription_id=subscription_id,
event_id=event_id,
idempotency_key=idempotency_key,

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
    idempotency_key: str | Unset = UNSET,

) -> Error | RetryQueued | TooManyRequests | None:
    """ Send a failed delivery again now (one more attempt)

     A retry is one attempt however often it is asked: a repeat, with or without the same Idempotency-
    Key, queues the same attempt, which is made once; the header is checked, and nothing needs keeping.
    A delivery that is not failed is a 409 delivery_not_failed naming its state (a pending one is
    retried on its schedule); one of a disabled subscription is a 409 subscription_disabled (re-enable
    it by deleting it and subscribing again). Neither carries Retry-After: asking again never succeeds.
    Nothing is queued for either.

    Args:
        subscription_id (str):
        event_id (str):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RetryQueued | TooManyRequests
     """


    return (await asyncio_detailed(
        subscription_id=subscription_id,
event_id=event_id,
client=client,
idempotency_key=idempotency_key,

    )).parsed
