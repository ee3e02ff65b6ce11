"""A fleet loaded into a local endpoint (the emulator, or moto in a test), as the loader
command would load it there: node queues made, then every item written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from reservations_tools.fleet.loader import (
    check_key_ids,
    create_node_queues,
    local_dead_letter_arn,
    write_fleet,
)
from reservations_tools.fleet.model import Fleet, parse_fleet

# The local stack's names: template.yaml's logical ids and the NodeQueuePrefix default.
TABLE = "ReservationsTable"
NODE_QUEUE_PREFIX = "reservations-node-"


def load_fleet(
    fleet: Fleet | dict[str, Any], dynamodb: Any, sqs: Any, at: datetime | None = None
) -> Fleet:
    """Make the fleet's node queues and write its items, loaded ``at`` (default: now); a
    document is validated first."""
    if not isinstance(fleet, Fleet):
        fleet = parse_fleet(json.dumps(fleet))
    check_key_ids(dynamodb, TABLE, fleet)  # a refused file makes no queue either
    urls = create_node_queues(fleet, sqs, NODE_QUEUE_PREFIX, local_dead_letter_arn(sqs))
    write_fleet(fleet, dynamodb, TABLE, at or datetime.now(UTC), urls)
    return fleet
