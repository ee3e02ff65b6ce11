from typing import Literal

ListFleetReservationsRoleItem = Literal['audience', 'managing', 'owner']

LIST_FLEET_RESERVATIONS_ROLE_ITEM_VALUES: set[ListFleetReservationsRoleItem] = { 'audience', 'managing', 'owner',  }

def check_list_fleet_reservations_role_item(value: str) -> ListFleetReservationsRoleItem:
    if value in LIST_FLEET_RESERVATIONS_ROLE_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_FLEET_RESERVATIONS_ROLE_ITEM_VALUES!r}")
