"""The node partition's grants, which every slice that reads or writes a node's partition
lists in its endpoints' declarations (``kernel.grants``)."""

from __future__ import annotations

from reservations.kernel.grants import Grant

NODES, HISTORY, EVENTS = "NODE#*", "NODEHIST#*", "NODEEVT#*"
WORKLOAD_HISTORY = "WLHIST#*"

READ_PARTITIONS = Grant(
    sid="ReadNodePartitions",
    actions=("dynamodb:Query",),
    keys=(NODES,),
    why="The node's partition, read strongly consistent (one Query, warm).",
)
READ_ENDED = Grant(
    sid="ReadNodeHistory",
    actions=("dynamodb:GetItem",),
    keys=(HISTORY,),
    why="The route's reservation when it is not in the node's partition (ended, moved to the "
    "node's history): one GetItem, so a write on it is refused as ended.",
)
WRITE_EVENTS = Grant(
    sid="WriteEvents",
    actions=("dynamodb:PutItem",),
    keys=(EVENTS,),
    why="The write's events, in the node's feed, in the write's transaction.",
)
