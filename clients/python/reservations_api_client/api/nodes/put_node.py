from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error import Error
from ...models.node import Node
from ...models.node_request import NodeRequest
from ...models.too_many_requests import TooManyRequests
from typing import cast



def _get_kwargs(
    node_id: str,
    *,
    body: NodeRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/nodes/{node_id}".format(node_id=quote(str(node_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Node | TooManyRequests | None:
    if response.status_code == 200:
        response_200 = Node.from_dict(response.json())



        return response_200

    if response.status_code == 201:
        response_201 = Node.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Node | TooManyRequests]:
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
    body: NodeRequest,

) -> Response[Error | Node | TooManyRequests]:
    """ Register a node or update its topology (operator only)

     PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the header is answered
    exactly as one without it (the header is neither checked nor stored). A repeat of the stored node
    changes nothing and answers 200; a retry after a lost 201 answers 200.

    Args:
        node_id (str):
        body (NodeRequest): ``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation
            and units.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Node | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NodeRequest,

) -> Error | Node | TooManyRequests | None:
    """ Register a node or update its topology (operator only)

     PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the header is answered
    exactly as one without it (the header is neither checked nor stored). A repeat of the stored node
    changes nothing and answers 200; a retry after a lost 201 answers 200.

    Args:
        node_id (str):
        body (NodeRequest): ``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation
            and units.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Node | TooManyRequests
     """


    return sync_detailed(
        node_id=node_id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NodeRequest,

) -> Response[Error | Node | TooManyRequests]:
    """ Register a node or update its topology (operator only)

     PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the header is answered
    exactly as one without it (the header is neither checked nor stored). A repeat of the stored node
    changes nothing and answers 200; a retry after a lost 201 answers 200.

    Args:
        node_id (str):
        body (NodeRequest): ``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation
            and units.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Node | TooManyRequests]
     """


    kwargs = _get_kwargs(
        node_id=node_id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    node_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NodeRequest,

) -> Error | Node | TooManyRequests | None:
    """ Register a node or update its topology (operator only)

     PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the header is answered
    exactly as one without it (the header is neither checked nor stored). A repeat of the stored node
    changes nothing and answers 200; a retry after a lost 201 answers 200.

    Args:
        node_id (str):
        body (NodeRequest): ``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation
            and units.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Node | TooManyRequests
     """


    return (await asyncio_detailed(
        node_id=node_id,
client=client,
body=body,

    )).parsed
