"""The terminations slice's settings (``kernel.settings.section``): the sweeper's pace (a
node's queue is made with the node: ``nodes.settings``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reservations.kernel.settings import section


class TerminationSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # The sweeper's pace (set on SweeperFunction from the stack's parameters; the defaults
    # are those parameters' defaults): how long a committed termination waits for the
    # reclaim's own send, how long a delivered one may stay unreported, how many deliveries
    # before it is flagged stuck, and the slow pace at which a stuck one is still sent.
    sweeper_grace_seconds: float = Field(60.0, alias="SWEEPER_GRACE_SECONDS", ge=0)
    confirm_deadline_seconds: float = Field(
        600.0, alias="TERMINATION_CONFIRM_DEADLINE_SECONDS", ge=0
    )
    max_deliveries: int = Field(5, alias="TERMINATION_MAX_DELIVERIES", ge=1)
    stuck_resend_seconds: float = Field(3600.0, alias="STUCK_RESEND_SECONDS", ge=0)


settings = section(TerminationSettings)
