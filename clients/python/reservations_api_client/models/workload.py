from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.waiting_for_view import WaitingForView
  from ..models.workload_termination import WorkloadTermination





T = TypeVar("T", bound="Workload")



@_attrs_define
class Workload:
    """ A workload on a node: as ``POST /v1/nodes/{nodeId}/workloads`` answers it (running),
    or as read, ``terminating`` with its termination once a reclaim asked the node to stop
    it, or ``ended`` (from the node's history) with its own use once it left the node.

        Attributes:
            id (str):
            kind (str): known values: vm, pod; a newer API may send others
            node_id (str):
            org_id (str):
            state (str): running, terminating or waiting while on the node; ended once it left it (its end, or its node's
                report that it stopped): GET alone shows that, from the node's history, for HistoryRetentionDays; known values:
                running, terminating, waiting, ended; a newer API may send others
            tier (str): known values: spot, reserved, on-demand; a newer API may send others
            unit_ids (list[str]): sorted
            created_at (datetime.datetime | Unset): when it was placed; absent on items older than the field
            gpu_ms (int | Unset): ended only: (usedTo - usedFrom) in whole milliseconds times the sellableGpus of its units
                as the node stated them at its end
            promised_min_run_seconds (int | Unset): fixed at its placement: no reclaim stops it before createdAt plus this
                (the smallest its units' reservations' lending policies promised; 0 but for spot) Default: 0.
            promised_notice_seconds (int | Unset): fixed at its placement: the notice any reclaim gives it at least (the
                smallest its units' reservations' lending policies promised; 0 but for spot) Default: 0.
            termination (WorkloadTermination | Unset): A terminating workload's termination: the message the node was sent.
            used_from (datetime.datetime | Unset): ended only, to the millisecond: when its use began (the commit of its
                placement, or of its workload.started if it waited); usedTo if it never started
            used_to (datetime.datetime | Unset): ended only, to the millisecond: the commit of the write that ended it (its
                workload.ended's or workload.terminated's time)
            waiting_for (list[WaitingForView] | Unset): waiting only (a placement that took lent units back): the spot
                workloads it still waits on; it becomes running, with workload.started, when the last stops
     """

    id: str
    kind: str
    node_id: str
    org_id: str
    state: str
    tier: str
    unit_ids: list[str]
    created_at: datetime.datetime | Unset = UNSET
    gpu_ms: int | Unset = UNSET
    promised_min_run_seconds: int | Unset = 0
    promised_notice_seconds: int | Unset = 0
    termination: WorkloadTermination | Unset = UNSET
    used_from: datetime.datetime | Unset = UNSET
    used_to: datetime.datetime | Unset = UNSET
    waiting_for: list[WaitingForView] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.waiting_for_view import WaitingForView # noqa: PLC0415
        from ..models.workload_termination import WorkloadTermination # noqa: PLC0415
        id = self.id

        kind = self.kind

        node_id = self.node_id

        org_id = self.org_id

        state = self.state

        tier = self.tier

        unit_ids = self.unit_ids



        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        gpu_ms = self.gpu_ms

        promised_min_run_seconds = self.promised_min_run_seconds

        promised_notice_seconds = self.promised_notice_seconds

        termination: dict[str, Any] | Unset = UNSET
        if not isinstance(self.termination, Unset):
            termination = self.termination.to_dict()

        used_from: str | Unset = UNSET
        if not isinstance(self.used_from, Unset):
            used_from = self.used_from.isoformat()

        used_to: str | Unset = UNSET
        if not isinstance(self.used_to, Unset):
            used_to = self.used_to.isoformat()

        waiting_for: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.waiting_for, Unset):
            waiting_for = []
            for waiting_for_item_data in self.waiting_for:
                waiting_for_item = waiting_for_item_data.to_dict()
                waiting_for.append(waiting_for_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "kind": kind,
            "nodeId": node_id,
            "orgId": org_id,
            "state": state,
            "tier": tier,
            "unitIds": unit_ids,
        })
        if created_at is not UNSET:
            field_dict["createdAt"] = created_at
        if gpu_ms is not UNSET:
            field_dict["gpuMs"] = gpu_ms
        if promised_min_run_seconds is not UNSET:
            field_dict["promisedMinRunSeconds"] = promised_min_run_seconds
        if promised_notice_seconds is not UNSET:
            field_dict["promisedNoticeSeconds"] = promised_notice_seconds
        if termination is not UNSET:
            field_dict["termination"] = termination
        if used_from is not UNSET:
            field_dict["usedFrom"] = used_from
        if used_to is not UNSET:
            field_dict["usedTo"] = used_to
        if waiting_for is not UNSET:
            field_dict["waitingFor"] = waiting_for

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.waiting_for_view import WaitingForView # noqa: PLC0415
        from ..models.workload_termination import WorkloadTermination # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        node_id = d.pop("nodeId")

        org_id = d.pop("orgId")

        state = d.pop("state")

        tier = d.pop("tier")

        unit_ids = cast(list[str], d.pop("unitIds"))


        _created_at = d.pop("createdAt", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at,  Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)




        gpu_ms = d.pop("gpuMs", UNSET)

        promised_min_run_seconds = d.pop("promisedMinRunSeconds", UNSET)

        promised_notice_seconds = d.pop("promisedNoticeSeconds", UNSET)

        _termination = d.pop("termination", UNSET)
        termination: WorkloadTermination | Unset
        if isinstance(_termination,  Unset):
            termination = UNSET
        else:
            termination = WorkloadTermination.from_dict(_termination)




        _used_from = d.pop("usedFrom", UNSET)
        used_from: datetime.datetime | Unset
        if isinstance(_used_from,  Unset):
            used_from = UNSET
        else:
            used_from = datetime.datetime.fromisoformat(_used_from)




        _used_to = d.pop("usedTo", UNSET)
        used_to: datetime.datetime | Unset
        if isinstance(_used_to,  Unset):
            used_to = UNSET
        else:
            used_to = datetime.datetime.fromisoformat(_used_to)




        _waiting_for = d.pop("waitingFor", UNSET)
        waiting_for: list[WaitingForView] | Unset = UNSET
        if _waiting_for is not UNSET:
            waiting_for = []
            for waiting_for_item_data in _waiting_for:
                waiting_for_item = WaitingForView.from_dict(waiting_for_item_data)



                waiting_for.append(waiting_for_item)


        workload = cls(
            id=id,
            kind=kind,
            node_id=node_id,
            org_id=org_id,
            state=state,
            tier=tier,
            unit_ids=unit_ids,
            created_at=created_at,
            gpu_ms=gpu_ms,
            promised_min_run_seconds=promised_min_run_seconds,
            promised_notice_seconds=promised_notice_seconds,
            termination=termination,
            used_from=used_from,
            used_to=used_to,
            waiting_for=waiting_for,
        )


        workload.additional_properties = d
        return workload

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
