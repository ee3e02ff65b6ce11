from typing import Literal

UnitState = Literal['claimed', 'free']

UNIT_STATE_VALUES: set[UnitState] = { 'claimed', 'free',  }

def check_unit_state(value: str) -> UnitState:
    if value in UNIT_STATE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {UNIT_STATE_VALUES!r}")
