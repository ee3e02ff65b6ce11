"""The one retry policy of every conditional write: re-read and decide again after a lost
race, with full-jitter backoff, a bounded number of times; then 409 ``conflict``."""

from __future__ import annotations

import random
from collections.abc import Callable

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.errors import Conflict
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.observability import metrics

MAX_ATTEMPTS = 5
_BACKOFF_BASE = 0.025
_BACKOFF_CAP = 0.4


def backoff(attempt: int) -> float:
    """Seconds to wait after losing attempt ``attempt`` (0-based): full jitter, capped."""
    return random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt))  # noqa: S311


def retried(
    attempt: Callable[[], Outcome | None], sleep: Callable[[float], None], name: str, what: str
) -> Outcome:
    """``attempt``'s answer; it returns None when a concurrent writer won and it must run again.

    ``name`` prefixes the metrics (``<name>ConflictsRetried``, ``<name>Conflicts``); ``what``
    says in the 409 what kept changing.
    """
    for number in range(MAX_ATTEMPTS):
        outcome = attempt()
        if outcome is not None:
            return outcome
        metrics.add_metric(name=f"{name}ConflictsRetried", unit=MetricUnit.Count, value=1)
        sleep(backoff(number))
    metrics.add_metric(name=f"{name}Conflicts", unit=MetricUnit.Count, value=1)
    raise Conflict(f"{what}; retry the request")
