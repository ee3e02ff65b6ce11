from typing import Literal

PlaceWorkloadRequestKind = Literal['pod', 'vm']

PLACE_WORKLOAD_REQUEST_KIND_VALUES: set[PlaceWorkloadRequestKind] = { 'pod', 'vm',  }

def check_place_workload_request_kind(value: str) -> PlaceWorkloadRequestKind:
    if value in PLACE_WORKLOAD_REQUEST_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {PLACE_WORKLOAD_REQUEST_KIND_VALUES!r}")
