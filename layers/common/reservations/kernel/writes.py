"""What every conditional write shares: the version of an item as read, which the write is
conditioned on, and the conflict it meets when that item changed."""

from __future__ import annotations

from dataclasses import dataclass

from reservations.kernel.idempotency.models import StoredResponse


@dataclass(frozen=True, slots=True)
class ItemVersion:
    """An item of the partition as it was read: the write needs it still there."""

    id: str
    version: int


class WriteConflict(Exception):
    """A conditional write lost to a concurrent writer, or met a kept answer (``stored``):
    nothing was changed."""

    def __init__(self, detail: str, stored: StoredResponse | None = None) -> None:
        super().__init__(detail)
        self.stored = stored
