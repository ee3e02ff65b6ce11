"""The nodes slice's settings (``kernel.settings.section``): where a registered node's
spot-termination queue is made."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reservations.kernel.settings import SettingsError, section


class NodeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    # Where a registered node's queue is made (PutNodeFunction only: the stack's
    # NodeQueuePrefix and its shared dead-letter queue). No default: they name resources.
    node_queue_prefix: str | None = Field(None, alias="NODE_QUEUE_PREFIX", min_length=1)
    node_dead_letter_queue_arn: str | None = Field(
        None, alias="NODE_DEAD_LETTER_QUEUE_ARN", min_length=1
    )


settings = section(NodeSettings)


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
