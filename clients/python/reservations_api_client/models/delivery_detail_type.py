from typing import Literal

DeliveryDetailType = Literal['node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck']

DELIVERY_DETAIL_TYPE_VALUES: set[DeliveryDetailType] = { 'node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck',  }

def check_delivery_detail_type(value: str) -> DeliveryDetailType:
    if value in DELIVERY_DETAIL_TYPE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DELIVERY_DETAIL_TYPE_VALUES!r}")
