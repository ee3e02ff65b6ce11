"""The terminations slice's settings (``kernel.settings.section``): the sweeper's pace and
where a registered node's queue is made."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reservations.kernel.settings import SettingsError, section


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
    # Where a registered node's queue is made (PutNodeFunction only: the stack's
    # NodeQueuePrefix and its shared dead-letter queue). No default: they name resources.
    node_queue_prefix: str | None = Field(None, alias="NODE_QUEUE_PREFIX", min_length=1)
    node_dead_letter_queue_arn: str | None = Field(
        None, alias="NODE_DEAD_LETTER_QUEUE_ARN", min_length=1
    )


settings = section(TerminationSettings)


def node_queue_settings() -> tuple[str, str]:
    """The node queues' name prefix and dead-letter queue ARN; SettingsError naming each
    variable that is not set."""
    current = settings()
    prefix, arn = current.node_queue_prefix, current.node_dead_letter_queue_arn
    if prefix is None or arn is None:
        missing = [
            name
            for name, value in (("NODE_QUEUE_PREFIX", prefix), ("NODE_DEAD_LETTER_QUEUE_ARN", arn))
            if value is None
        ]
        raise SettingsError(f"invalid function environment: {', '.join(missing)}: not set")
    return prefix, arn
