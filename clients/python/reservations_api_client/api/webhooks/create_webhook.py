from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.subscribe_request import SubscribeRequest
from ...models.subscription_with_secret import SubscriptionWithSecret
from ...models.too_many_requests import TooManyRequests
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    body: SubscribeRequest,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["idempotency-key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/webhooks",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | SubscriptionWithSecret | TooManyRequests | None:
    if response.status_code == 201:
        response_201 = SubscriptionWithSecret.from_dict(response.json())



        return response_201

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

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())



        return response_415

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())



        return response_422

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | SubscriptionWithSecret | TooManyRequests]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SubscribeRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | SubscriptionWithSecret | TooManyRequests]:
    """ Subscribe an endpoint to the caller's org's feed (at most 10 per org)

    Args:
        idempotency_key (str | Unset):
        body (SubscribeRequest): The body of ``POST /v1/webhooks``: where to send, which types
            (absent: every type).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SubscriptionWithSecret | TooManyRequests]
     """


    kwargs = _get_kwargs(
        body=body,
idempotency_key=idempotency_key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    body: SubscribeRequest,
    idempotency_key: str | Unset = UNSET,

) -> Error | SubscriptionWithSecret | TooManyRequests | None:
    """ Subscribe an endpoint to the caller's org's feed (at most 10 per org)

    Args:
        idempotency_key (str | Unset):
        body (SubscribeRequest): The body of ``POST /v1/webhooks``: where to send, which types
            (absent: every type).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SubscriptionWithSecret | TooManyRequests
     """


    return sync_detailed(
        client=client,
body=body,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SubscribeRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | SubscriptionWithSecret | TooManyRequests]:
    """ Subscribe an endpoint to the caller's org's feed (at most 10 per org)

    Args:
        idempotency_key (str | Unset):
        body (SubscribeRequest): The body of ``POST /v1/webhooks``: where to send, which types
            (absent: every type).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SubscriptionWithSecret | TooManyRequests]
     """


    kwargs = _get_kwargs(
        body=body,
idempotency_key=idempotency_key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: SubscribeRequest,
    idempotency_key: str | Unset = UNSET,

) -> Error | SubscriptionWithSecret | TooManyRequests | None:
    """ Subscribe an endpoint to the caller's org's feed (at most 10 per org)

    Args:
        idempotency_key (str | Unset):
        body (SubscribeRequest): The body of ``POST /v1/webhooks``: where to send, which types
            (absent: every type).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SubscriptionWithSecret | TooManyRequests
     """


    return (await asyncio_detailed(
        client=client,
body=body,
idempotency_key=idempotency_key,

    )).parsed
