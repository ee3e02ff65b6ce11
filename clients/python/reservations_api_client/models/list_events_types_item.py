from typing import Literal

ListEventsTypesItem = Literal['node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck']

LIST_EVENTS_TYPES_ITEM_VALUES: set[ListEventsTypesItem] = { 'node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck',  }

def check_list_events_types_item(value: str) -> ListEventsTypesItem:
    if value in LIST_EVENTS_TYPES_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_EVENTS_TYPES_ITEM_VALUES!r}")
