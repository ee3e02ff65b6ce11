from typing import Literal

SubscriptionViewTypesItem = Literal['node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck']

SUBSCRIPTION_VIEW_TYPES_ITEM_VALUES: set[SubscriptionViewTypesItem] = { 'node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck',  }

def check_subscription_view_types_item(value: str) -> SubscriptionViewTypesItem:
    if value in SUBSCRIPTION_VIEW_TYPES_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SUBSCRIPTION_VIEW_TYPES_ITEM_VALUES!r}")
