from typing import Literal

ListFleetReservationsStatusItem = Literal['active', 'cancelled', 'expired', 'needs-review', 'pending']

LIST_FLEET_RESERVATIONS_STATUS_ITEM_VALUES: set[ListFleetReservationsStatusItem] = { 'active', 'cancelled', 'expired', 'needs-review', 'pending',  }

def check_list_fleet_reservations_status_item(value: str) -> ListFleetReservationsStatusItem:
    if value in LIST_FLEET_RESERVATIONS_STATUS_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_FLEET_RESERVATIONS_STATUS_ITEM_VALUES!r}")
