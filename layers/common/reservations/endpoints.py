"""Every endpoint of the API, each declared in its slice (``<slice>/endpoints.py``), listed
here in the order the OpenAPI document is merged from their functions: the API's table of
contents, for the document's generator and for the tests. No slice imports it."""

from __future__ import annotations

from reservations.capacity.endpoints import RECLAIM, RELEASE
from reservations.events.endpoints import NODE_EVENTS, ORG_EVENTS
from reservations.nodes.endpoints import GET_NODE, LIST_UNITS, PUT_NODE
from reservations.reservations.endpoints import (
    CANCEL,
    CREATE_RESERVATION,
    GET_RESERVATION,
    LIST_FLEET_RESERVATIONS,
    LIST_RESERVATIONS,
    REAFFIRM,
    UPDATE_RESERVATION,
)
from reservations.webhooks.endpoints import (
    CREATE_WEBHOOK,
    DELETE_WEBHOOK,
    GET_DELIVERY,
    GET_WEBHOOK,
    LIST_DELIVERIES,
    LIST_WEBHOOKS,
    RETRY_DELIVERY,
    ROTATE_WEBHOOK_SECRET,
)
from reservations.workloads.endpoints import (
    END_WORKLOAD,
    GET_WORKLOAD,
    LIST_WORKLOADS,
    PLACE_WORKLOAD,
)

ALL = (
    LIST_UNITS,
    RECLAIM,
    CREATE_RESERVATION,
    GET_RESERVATION,
    LIST_RESERVATIONS,
    RELEASE,
    CANCEL,
    PLACE_WORKLOAD,
    END_WORKLOAD,
    PUT_NODE,
    REAFFIRM,
    NODE_EVENTS,
    ORG_EVENTS,
    CREATE_WEBHOOK,
    LIST_WEBHOOKS,
    GET_WEBHOOK,
    DELETE_WEBHOOK,
    ROTATE_WEBHOOK_SECRET,
    LIST_DELIVERIES,
    GET_DELIVERY,
    RETRY_DELIVERY,
    GET_NODE,
    LIST_WORKLOADS,
    GET_WORKLOAD,
    UPDATE_RESERVATION,
    LIST_FLEET_RESERVATIONS,
)
