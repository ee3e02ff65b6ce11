from typing import Literal

PlaceWorkloadRequestTier = Literal['on-demand', 'reserved', 'spot']

PLACE_WORKLOAD_REQUEST_TIER_VALUES: set[PlaceWorkloadRequestTier] = { 'on-demand', 'reserved', 'spot',  }

def check_place_workload_request_tier(value: str) -> PlaceWorkloadRequestTier:
    if value in PLACE_WORKLOAD_REQUEST_TIER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {PLACE_WORKLOAD_REQUEST_TIER_VALUES!r}")
