from typing import Literal

EventType = Literal['node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck']

EVENT_TYPE_VALUES: set[EventType] = { 'node.registered', 'node.updated', 'reservation.activated', 'reservation.cancelled', 'reservation.created', 'reservation.expired', 'reservation.expiring', 'reservation.needs_review', 'reservation.reaffirmed', 'reservation.reclaimed', 'reservation.released', 'reservation.updated', 'workload.ended', 'workload.placed', 'workload.terminated', 'workload.termination_requested', 'workload.termination_stuck',  }

def check_event_type(value: str) -> EventType:
    if value in EVENT_TYPE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EVENT_TYPE_VALUES!r}")
