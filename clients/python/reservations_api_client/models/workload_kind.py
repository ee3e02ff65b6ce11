from typing import Literal

WorkloadKind = Literal['pod', 'vm']

WORKLOAD_KIND_VALUES: set[WorkloadKind] = { 'pod', 'vm',  }

def check_workload_kind(value: str) -> WorkloadKind:
    if value in WORKLOAD_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {WORKLOAD_KIND_VALUES!r}")
