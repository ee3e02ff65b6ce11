"""The nodes slice: a node's partition (its units, reservations and workloads as stored),
its registration and reads, and what every slice that reads or writes a node's partition
shares: the model, the rules of status and access, the table's keys and items, the writers.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.nodes.errors import UnitsUnavailable
from reservations.nodes.ids import (
    MAX_UNITS,
    UnitIds,
    is_workload_id,
    normalize_unit_id,
    normalized_unit_ids,
    unit_ids_field,
)
from reservations.nodes.models.partition import (
    LendingPolicy,
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    ReviewScope,
    Termination,
    TerminationState,
    Tier,
    Unit,
    UnitGenerations,
    UnitLending,
    Workload,
    WorkloadState,
    termination_of,
)
from reservations.nodes.models.views import WorkloadView
from reservations.nodes.models.writes import EventedWrite, TopologyRead
from reservations.nodes.partition import node_partition, with_events
from reservations.nodes.ports import NodePorts, PartitionStore, ReservationReader
from reservations.nodes.register import OPERATOR
from reservations.nodes.rules.access import READ, named_at, runs_the_node
from reservations.nodes.rules.events import reservation_event, reviews_derived, workload_data
from reservations.nodes.rules.promises import with_promises
from reservations.nodes.rules.status import (
    changed_since_sold,
    effective_status,
    in_term,
    status_at,
)
from reservations.nodes.rules.units import not_reservable_reason
from reservations.nodes.table import grants as node_grants
from reservations.nodes.table.actions import clock_read_condition, name_orgs, topology_check
from reservations.nodes.table.items import (
    PLACEMENTS,
    clock_attributes,
    lending_attributes,
    named_from_item,
    node_from_item,
    reservation_from_item,
    reservation_history_item,
    reservation_item,
    unit_from_item,
    workload_from_item,
    workload_item,
)
from reservations.nodes.table.keys import (
    LEND_AT,
    NODE_EVENTS_PREFIX,
    NODE_HISTORY_PREFIX,
    OPEN_TERMINATION,
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    access_key,
    lend_shards,
    node_events_pk,
    node_id_of,
    node_key,
    node_pk,
    reservation_history_key,
    reservation_key,
    unit_key,
    workload_key,
)
from reservations.nodes.table.records import workload_history_item
from reservations.nodes.table.store import Writer
from reservations.nodes.views import workload_view
from reservations.nodes.wiring import node_table

__all__ = [
    "LEND_AT",
    "MAX_UNITS",
    "NODE_EVENTS_PREFIX",
    "NODE_HISTORY_PREFIX",
    "OPEN_TERMINATION",
    "OPERATOR",
    "PLACEMENTS",
    "READ",
    "RESERVATION_PREFIX",
    "UNIT_PREFIX",
    "EventedWrite",
    "LendingPolicy",
    "ListAccess",
    "Node",
    "NodePorts",
    "NodeSnapshot",
    "PartitionStore",
    "Reservation",
    "ReservationReader",
    "ReservationStatus",
    "ReviewScope",
    "Termination",
    "TerminationState",
    "Tier",
    "TopologyRead",
    "Unit",
    "UnitGenerations",
    "UnitIds",
    "UnitLending",
    "UnitsUnavailable",
    "Workload",
    "WorkloadState",
    "WorkloadView",
    "Writer",
    "access_key",
    "changed_since_sold",
    "clock_attributes",
    "clock_read_condition",
    "effective_status",
    "in_term",
    "is_workload_id",
    "lend_shards",
    "lending_attributes",
    "name_orgs",
    "named_at",
    "named_from_item",
    "node_events_pk",
    "node_from_item",
    "node_grants",
    "node_id_of",
    "node_key",
    "node_partition",
    "node_pk",
    "node_table",
    "normalize_unit_id",
    "normalized_unit_ids",
    "not_reservable_reason",
    "reservation_event",
    "reservation_from_item",
    "reservation_history_item",
    "reservation_history_key",
    "reservation_item",
    "reservation_key",
    "reviews_derived",
    "runs_the_node",
    "status_at",
    "termination_of",
    "topology_check",
    "unit_from_item",
    "unit_ids_field",
    "unit_key",
    "with_events",
    "with_promises",
    "workload_data",
    "workload_from_item",
    "workload_history_item",
    "workload_item",
    "workload_key",
    "workload_view",
]
