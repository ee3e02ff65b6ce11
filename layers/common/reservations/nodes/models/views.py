"""The node partition as the API shows it: units, workloads and the node (camelCase on the
wire, absent rather than null). A reservation's view is the lifecycle slice's
(``lifecycle.models.ReservationView``)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from reservations.kernel.wire import NextCursor, Timestamp, WireModel

# What the demo fleet's calls answer (README.md): each answer's examples, beside its fields.
_T0 = "2026-11-29T10:00:00Z"
_T1 = "2026-11-30T08:15:00Z"
_UNIT = {
    "id": "0000:04:00.0",
    "allocClass": "vfio-group",
    "gpuModelId": "nvidia-h100-sxm5-80gb",
    "gpuModelName": "NVIDIA H100 SXM5 80GB",
    "sellableGpus": 1,
    "state": "claimed",
    "claimedBy": "vm:vm-17",
    "reservable": True,
    "reservationId": "res-a-active",
    "released": True,
    "promisedNoticeSeconds": 120,
    "promisedMinRunSeconds": 600,
}
_TERMINATION = {
    "id": "term-7f3k",
    "reservationId": "res-a-active",
    "requestedAt": "2026-11-30T08:15:00.318Z",
    "terminateAt": "2026-11-30T08:17:00.318Z",
}
_WORKLOAD = {
    "id": "vm-17",
    "nodeId": "node-a1",
    "kind": "vm",
    "tier": "spot",
    "orgId": "org-spotbuyer",
    "unitIds": ["0000:04:00.0"],
    "state": "terminating",
    "createdAt": _T0,
    "termination": _TERMINATION,
    "promisedNoticeSeconds": 120,
    "promisedMinRunSeconds": 600,
}

# A spot VM as GET answers it once its node reported it stopped: two units of one GPU each,
# from its placement's commit to the report's.
_ENDED_WORKLOAD = {
    **{name: value for name, value in _WORKLOAD.items() if name != "termination"},
    "id": "vm-18",
    "unitIds": ["0000:05:00.0", "0000:08:00.0"],
    "state": "ended",
    "createdAt": "2026-11-30T07:52:00Z",
    "usedFrom": "2026-11-30T07:52:00.318Z",
    "usedTo": "2026-11-30T08:17:02.655Z",
    "gpuMs": 3004674,
}


class UnitView(WireModel):
    """One allocatable GPU unit as ``GET /v1/nodes/{nodeId}/reservations/units`` shows it."""

    EXAMPLES: ClassVar[list[Any]] = [_UNIT]

    id: str = Field(description="IOMMU group's PCI address, e.g. 0000:04:00.0")
    alloc_class: str = Field(description="vfio-group, device-request, host, mig, ...")
    gpu_model_id: str
    gpu_model_name: str | None = None
    sellable_gpus: int
    state: Literal["free", "claimed"]
    claimed_by: str | None = Field(default=None, description="vm:<id> or pod:<id>")
    held_for: str | None = Field(
        default=None,
        description="vm:<id> or pod:<id>: the waiting workload a take-back holds the unit for "
        "while the spot workload claiming it stops; nothing else may be placed on it",
    )
    reservable: bool
    not_reservable_reason: str | None = None
    reservation_id: str | None = None
    released: bool | None = None
    promised_notice_seconds: int | None = Field(
        default=None,
        description="released units only: the notice a spot workload placed on it now would "
        "be promised (its reservation's lending policy; 0 without one)",
    )
    promised_min_run_seconds: int | None = Field(
        default=None,
        description="released units only: the minimum run a spot workload placed on it now "
        "would be promised (its reservation's lending policy; 0 without one)",
    )


class WorkloadTermination(WireModel):
    """A terminating workload's termination: the message the node was sent."""

    EXAMPLES: ClassVar[list[Any]] = [_TERMINATION]

    id: str
    reservation_id: str | None = Field(default=None, description="the reclaim's reservation")
    requested_at: Timestamp | None = Field(
        default=None, description="when the reclaim asked for it (its commit, to the millisecond)"
    )
    terminate_at: Timestamp | None = Field(
        default=None,
        description="the deadline: requestedAt plus the reclaim's notice (the larger of its "
        "noticeSeconds and its reservation's policy's), never before the workload's promises "
        "(requestedAt plus promisedNoticeSeconds, createdAt plus promisedMinRunSeconds); the "
        "earliest, when several reclaims asked; the node stops it then, not before unless it "
        "stops by itself",
    )


class WaitingForView(WireModel):
    """A spot workload a waiting workload waits on: its termination and deadline as of the
    placement."""

    EXAMPLES: ClassVar[list[Any]] = [
        {
            "workloadId": "vm-17",
            "terminationId": "term-7f3k",
            "terminateAt": "2026-11-30T08:17:00.318Z",
        }
    ]

    workload_id: str
    termination_id: str
    terminate_at: Timestamp


class WorkloadView(WireModel):
    """A workload on a node: as ``POST /v1/nodes/{nodeId}/workloads`` answers it (running),
    or as read, ``terminating`` with its termination once a reclaim asked the node to stop
    it, or ``ended`` (from the node's history) with its own use once it left the node."""

    EXAMPLES: ClassVar[list[Any]] = [_WORKLOAD, _ENDED_WORKLOAD]

    id: str
    node_id: str
    kind: Literal["vm", "pod"]
    tier: Literal["spot", "reserved", "on-demand"]
    org_id: str
    unit_ids: list[str] = Field(description="sorted")
    state: Literal["running", "terminating", "waiting", "ended"] = Field(
        description="running, terminating or waiting while on the node; ended once it left "
        "it (its end, or its node's report that it stopped): GET alone shows that, from the "
        "node's history, for HistoryRetentionDays"
    )
    termination: WorkloadTermination | None = Field(default=None, description="terminating only")
    waiting_for: list[WaitingForView] | None = Field(
        default=None,
        description="waiting only (a placement that took lent units back): the spot workloads "
        "it still waits on; it becomes running, with workload.started, when the last stops",
    )
    created_at: Timestamp | None = Field(
        default=None, description="when it was placed; absent on items older than the field"
    )
    promised_notice_seconds: int = Field(
        default=0,
        description="fixed at its placement: the notice any reclaim gives it at least (the "
        "smallest its units' reservations' lending policies promised; 0 but for spot)",
    )
    promised_min_run_seconds: int = Field(
        default=0,
        description="fixed at its placement: no reclaim stops it before createdAt plus this "
        "(the smallest its units' reservations' lending policies promised; 0 but for spot)",
    )
    used_from: Timestamp | None = Field(
        default=None,
        description="ended only, to the millisecond: when its use began (the commit of its "
        "placement, or of its workload.started if it waited); usedTo if it never started",
    )
    used_to: Timestamp | None = Field(
        default=None,
        description="ended only, to the millisecond: the commit of the write that ended it "
        "(its workload.ended's or workload.terminated's time)",
    )
    gpu_ms: int | None = Field(
        default=None,
        ge=0,
        description="ended only: (usedTo - usedFrom) in whole milliseconds times the "
        "sellableGpus of its units as the node stated them at its end",
    )


class WorkloadPage(WireModel):
    """One page of a node's workloads the caller may see, sorted by id."""

    EXAMPLES: ClassVar[list[Any]] = [{"items": [_WORKLOAD]}]

    items: list[WorkloadView]
    next_cursor: NextCursor = None


class NodeView(WireModel):
    """A node as ``PUT /v1/nodes/{nodeId}`` answers it."""

    EXAMPLES: ClassVar[list[Any]] = [
        {
            "id": "node-a1",
            "ownerOrgId": "org-acme",
            "topologyGen": 4,
            "unitIds": ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"],
            "createdAt": _T0,
            "updatedAt": _T1,
        }
    ]

    id: str
    owner_org_id: str
    topology_gen: int
    unit_ids: list[str] = Field(description="sorted")
    created_at: Timestamp
    updated_at: Timestamp
