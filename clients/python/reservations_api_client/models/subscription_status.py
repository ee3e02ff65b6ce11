from typing import Literal

SubscriptionStatus = Literal['active', 'disabled']

SUBSCRIPTION_STATUS_VALUES: set[SubscriptionStatus] = { 'active', 'disabled',  }

def check_subscription_status(value: str) -> SubscriptionStatus:
    if value in SUBSCRIPTION_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SUBSCRIPTION_STATUS_VALUES!r}")
