from typing import Literal

ReclaimResultStatus = Literal['active', 'cancelled', 'expired', 'needs-review', 'pending']

RECLAIM_RESULT_STATUS_VALUES: set[ReclaimResultStatus] = { 'active', 'cancelled', 'expired', 'needs-review', 'pending',  }

def check_reclaim_result_status(value: str) -> ReclaimResultStatus:
    if value in RECLAIM_RESULT_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {RECLAIM_RESULT_STATUS_VALUES!r}")
