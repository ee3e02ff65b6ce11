"""An example of each response body's schema (and of each schema it holds) for the OpenAPI
document, by the model's name: what the demo fleet's calls answer (``README.md``). The
request bodies' examples are their models' own. A test validates each against its schema."""

from __future__ import annotations

from typing import Any

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
_LENDING = {
    "auto": True,
    "idleSeconds": 900,
    "keepUnlent": 1,
    "noticeSeconds": 120,
    "minRunSeconds": 600,
    "relendAfterSeconds": 300,
}
_RESERVATION = {
    "id": "res-a-active",
    "nodeId": "node-a1",
    "status": "active",
    "startsAt": _T0,
    "endsAt": "2034-12-31T00:00:00Z",
    "allowedOrgIds": ["org-lab"],
    "managingOrgIds": ["org-broker"],
    "reservedUnitIds": ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"],
    "releasedUnitIds": ["0000:06:00.0"],
    "contractRef": "lab-2026-q4",
    "topologyGen": 4,
    "lending": _LENDING,
    "createdAt": _T0,
    "updatedAt": _T1,
    "etag": "3f1c9a27d05e84b6c2aa",
}
_TERMINATION = {
    "id": "term-7f3k",
    "reservationId": "res-a-active",
    "requestedAt": "2026-11-30T08:15:00.318Z",
    "terminateAt": "2026-11-30T08:17:00.318Z",
}
_RECLAIMED = {
    "workloadId": "vm-17",
    "terminationId": "term-7f3k",
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
_EVENT = {
    "specversion": "1.0",
    "id": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3",
    "type": "reservation.reclaimed",
    "source": "/v1/nodes/node-a1",
    "subject": "reservations/res-a-active",
    "time": "2026-11-30T08:15:00.123Z",
    "datacontenttype": "application/json",
    "data": {
        "actor": {"orgId": "org-broker"},
        "reason": "lab needs them",
        "unitIds": ["0000:04:00.0"],
        "terminated": ["vm-17"],
        "skipped": [],
    },
}
_DELIVERY = {
    "eventId": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3",
    "type": "reservation.reclaimed",
    "attempt": 2,
    "at": _T1,
    "status": 503,
    "error": "the endpoint answered 503",
    "nextAttemptAt": "2026-11-30T08:20:00Z",
    "state": "pending",
}
_SUBSCRIPTION = {
    "id": "whk-5c2m9q",
    "url": "https://hooks.example.com/reservations",
    "types": ["workload.termination_requested"],
    "description": "spot terminations to the scheduler",
    "status": "active",
    "createdAt": _T0,
}
_SIGNING = "whsec_ExampleOnlyOfNoSubscription00000"
_CURSOR = "eyJhZnRlciI6InJlcy1hLWFjdGl2ZSJ9.c2lnbmF0dXJl"

EXAMPLES: dict[str, list[Any]] = {
    "UnitView": [_UNIT],
    "ReservationView": [_RESERVATION, {**_RESERVATION, "lending": None}],
    "LendingPolicyView": [_LENDING],
    "ReservationPage": [{"items": [_RESERVATION], "nextCursor": _CURSOR}],
    "FleetReservationPage": [{"items": [_RESERVATION], "nextCursor": _CURSOR}],
    "ReclaimResponse": [
        {
            **_RESERVATION,
            "releasedUnitIds": [],
            "terminated": ["vm-17"],
            "skipped": ["vm-21"],
            "reclaimedUnitIds": ["0000:04:00.0"],
            "terminateAt": "2026-11-30T08:17:00.318Z",
            "terminations": [_RECLAIMED],
        },
        {
            **_RESERVATION,
            "wouldTerminate": ["vm-17"],
            "wouldSkip": [],
            "reclaimedUnitIds": ["0000:04:00.0"],
            "planId": "eyJ4IjoxNzk2NTU2NDAwMDAwfQ.c2lnbmF0dXJl",
            "planExpiresAt": "2026-11-29T12:05:00Z",
        },
    ],
    "NodeView": [
        {
            "id": "node-a1",
            "ownerOrgId": "org-acme",
            "topologyGen": 4,
            "unitIds": ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"],
            "createdAt": _T0,
            "updatedAt": _T1,
        }
    ],
    "WorkloadView": [_WORKLOAD],
    "WorkloadPage": [{"items": [_WORKLOAD]}],
    "WorkloadTermination": [_TERMINATION],
    "ReclaimTermination": [_RECLAIMED],
    "CloudEventView": [_EVENT],
    "EventPage": [{"items": [_EVENT], "nextCursor": _CURSOR, "hasMore": False}],
    "SubscriptionView": [_SUBSCRIPTION],
    "SubscriptionWithSecret": [{**_SUBSCRIPTION, "secret": _SIGNING}],
    "SubscriptionPage": [{"items": [_SUBSCRIPTION]}],
    "SubscriptionStatus": ["active"],
    "DeliveryView": [_DELIVERY],
    "DeliveryPage": [{"items": [_DELIVERY], "nextCursor": _CURSOR}],
    "DeliveryDetail": [
        {
            "subscriptionId": "whsub-0123456789abcdefghij",
            "eventId": _DELIVERY["eventId"],
            "type": _DELIVERY["type"],
            "state": "pending",
            "attemptCount": 2,
            "lastAttemptAt": _T1,
            "nextAttemptAt": _DELIVERY["nextAttemptAt"],
            "attempts": [
                _DELIVERY,
                {
                    **_DELIVERY,
                    "attempt": 1,
                    "at": "2026-11-30T08:14:55Z",
                    "status": 500,
                    "error": "the endpoint answered 500",
                    "nextAttemptAt": _T1,
                },
            ],
        }
    ],
    "DeliveryState": ["failed"],
    "RetryQueued": [{"eventId": _DELIVERY["eventId"], "attempt": 9, "queuedAt": _T1}],
    "ErrorBody": [
        {
            "error": "units not in reservation res-a-active: 0000:08:00.0",
            "code": "units_not_in_reservation",
            "details": [{"field": "unitIds[2]", "problem": "0000:08:00.0 is not reserved"}],
            "requestId": "Jx3kPgB7oAMEbQw=",
        }
    ],
    "ErrorDetail": [{"field": "unitIds[2]", "problem": "0000:08:00.0 is not reserved"}],
    "ThrottledBody": [{"message": "Too Many Requests"}],
    "NoBody": [{}],
}
