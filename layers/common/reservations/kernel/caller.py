"""Who is calling: the stored API key and the authenticated principal of one request."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored API key: only its hash is kept; ``key_id`` is a non-secret handle for audit."""

    key_id: str
    org_id: str
    permissions: frozenset[str]
    platform_operator: bool
    revoked: bool = False
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal of one request."""

    key_id: str
    org_id: str
    permissions: frozenset[str] = field(default_factory=frozenset)
    platform_operator: bool = False
    # The SHA-256 of the key itself: what scopes its Idempotency-Key records, since
    # display ids (``key_id``) of two keys may collide.
    key_hash: str = ""

    def has(self, permission: str) -> bool:
        return permission in self.permissions
