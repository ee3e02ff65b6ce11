from typing import Literal

WorkloadTier = Literal['on-demand', 'reserved', 'spot']

WORKLOAD_TIER_VALUES: set[WorkloadTier] = { 'on-demand', 'reserved', 'spot',  }

def check_workload_tier(value: str) -> WorkloadTier:
    if value in WORKLOAD_TIER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {WORKLOAD_TIER_VALUES!r}")
