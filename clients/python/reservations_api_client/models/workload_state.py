from typing import Literal

WorkloadState = Literal['running', 'terminating']

WORKLOAD_STATE_VALUES: set[WorkloadState] = { 'running', 'terminating',  }

def check_workload_state(value: str) -> WorkloadState:
    if value in WORKLOAD_STATE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {WORKLOAD_STATE_VALUES!r}")
