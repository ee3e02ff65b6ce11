from typing import Literal

ListReservationsStatusItem = Literal['active', 'cancelled', 'expired', 'needs-review', 'pending']

LIST_RESERVATIONS_STATUS_ITEM_VALUES: set[ListReservationsStatusItem] = { 'active', 'cancelled', 'expired', 'needs-review', 'pending',  }

def check_list_reservations_status_item(value: str) -> ListReservationsStatusItem:
    if value in LIST_RESERVATIONS_STATUS_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_RESERVATIONS_STATUS_ITEM_VALUES!r}")
