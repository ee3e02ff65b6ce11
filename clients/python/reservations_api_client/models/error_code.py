from typing import Literal

ErrorCode = Literal['conflict', 'delivery_not_failed', 'idempotency_in_progress', 'idempotency_key_reused', 'internal', 'invalid_request', 'not_enough_released', 'not_found', 'plan_stale', 'precondition_failed', 'reservation_not_active', 'reservation_not_changeable', 'reservation_not_in_review', 'stale_topology', 'storage_limit', 'subscription_disabled', 'subscription_limit', 'unauthorized', 'units_not_in_reservation', 'units_not_reservable', 'units_not_sellable', 'units_unavailable', 'unsupported_media_type', 'workload_exists']

ERROR_CODE_VALUES: set[ErrorCode] = { 'conflict', 'delivery_not_failed', 'idempotency_in_progress', 'idempotency_key_reused', 'internal', 'invalid_request', 'not_enough_released', 'not_found', 'plan_stale', 'precondition_failed', 'reservation_not_active', 'reservation_not_changeable', 'reservation_not_in_review', 'stale_topology', 'storage_limit', 'subscription_disabled', 'subscription_limit', 'unauthorized', 'units_not_in_reservation', 'units_not_reservable', 'units_not_sellable', 'units_unavailable', 'unsupported_media_type', 'workload_exists',  }

def check_error_code(value: str) -> ErrorCode:
    if value in ERROR_CODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ERROR_CODE_VALUES!r}")
