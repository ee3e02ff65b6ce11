from typing import Literal

ReservationStatus = Literal['active', 'cancelled', 'expired', 'needs-review', 'pending']

RESERVATION_STATUS_VALUES: set[ReservationStatus] = { 'active', 'cancelled', 'expired', 'needs-review', 'pending',  }

def check_reservation_status(value: str) -> ReservationStatus:
    if value in RESERVATION_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {RESERVATION_STATUS_VALUES!r}")
