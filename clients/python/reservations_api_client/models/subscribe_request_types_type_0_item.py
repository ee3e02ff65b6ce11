from typing import Literal

SubscribeRequestTypesType0Item = Literal['node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck']

SUBSCRIBE_REQUEST_TYPES_TYPE_0_ITEM_VALUES: set[SubscribeRequestTypesType0Item] = { 'node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck',  }

def check_subscribe_request_types_type_0_item(value: str) -> SubscribeRequestTypesType0Item:
    if value in SUBSCRIBE_REQUEST_TYPES_TYPE_0_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SUBSCRIBE_REQUEST_TYPES_TYPE_0_ITEM_VALUES!r}")
