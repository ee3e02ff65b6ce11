from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.place_workload_request import PlaceWorkloadRequest
from ...models.too_many_requests import TooManyRequests
from ...models.workload import Workload
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    node_id: str,
    *,
    body: PlaceWorkloadRequest,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["idempotency-key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/nodes/{node_id}/workloads".format(node_id=quote(str(node_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | TooManyRequests | Workload | None:
    if response.status_code == 201:
        response_201 = Workload.from_dict(response.json())



        return response_201

    if response.status_code == 202:
        response_202 = Workload.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | TooManyRequests | Workload]:
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
    body: PlaceWorkloadRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | TooManyRequests | Workload]:
    """ Place a workload on units of a node (operator keys with workload.place)

    Args:
        node_id (str):
        idempotency_key (str | Unset):
        body (PlaceWorkloadRequest): The body of place: the scheduler's workload, whose org, at
            which tier, on which units
            (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
            ``count`` of its units the service chooses, taking lent ones back.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TooManyRequests | Workload]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
body=body,
idempotency_key=idempotency_key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlaceWorkloadRequest,
    idempotency_key: str | Unset = UNSET,

) -> Error | TooManyRequests | Workload | None:
    """ Place a workload on units of a node (operator keys with workload.place)

    Args:
        node_id (str):
        idempotency_key (str | Unset):
        body (PlaceWorkloadRequest): The body of place: the scheduler's workload, whose org, at
            which tier, on which units
            (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
            ``count`` of its units the service chooses, taking lent ones back.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TooManyRequests | Workload
     """


    return sync_detailed(
        node_id=node_id,
client=client,
body=body,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlaceWorkloadRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[Error | TooManyRequests | Workload]:
    """ Place a workload on units of a node (operator keys with workload.place)

    Args:
        node_id (str):
        idempotency_key (str | Unset):
        body (PlaceWorkloadRequest): The body of place: the scheduler's workload, whose org, at
            which tier, on which units
            (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
            ``count`` of its units the service chooses, taking lent ones back.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TooManyRequests | Workload]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
body=body,
idempotency_key=idempotency_key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlaceWorkloadRequest,
    idempotency_key: str | Unset = UNSET,

) -> Error | TooManyRequests | Workload | None:
    """ Place a workload on units of a node (operator keys with workload.place)

    Args:
        node_id (str):
        idempotency_key (str | Unset):
        body (PlaceWorkloadRequest): The body of place: the scheduler's workload, whose org, at
            which tier, on which units
            (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
            ``count`` of its units the service chooses, taking lent ones back.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TooManyRequests | Workload
     """


    return (await asyncio_detailed(
        node_id=node_id,
client=client,
body=body,
idempotency_key=idempotency_key,

    )).parsed
