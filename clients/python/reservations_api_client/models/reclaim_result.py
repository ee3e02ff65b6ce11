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
  from ..models.lending_policy import LendingPolicy
  from ..models.reclaim_termination import ReclaimTermination





T = TypeVar("T", bound="ReclaimResult")



@_attrs_define
class ReclaimResult:
    """ The reservation after the reclaim, plus what was (or, dry run, would be) done.

        Attributes:
            allowed_org_ids (list[str]):
            created_at (datetime.datetime):
            etag (str): the reservation's version tag: its ETag header without the quotes; changes whenever anything else
                here does (its effective status too), and only then
            id (str):
            managing_org_ids (list[str]):
            node_id (str):
            reclaimed_unit_ids (list[str]): the units reclaimed (dry run: that would be), sorted: the named ones, or those
                chosen by count or by the plan
            released_unit_ids (list[str]):
            reserved_unit_ids (list[str]):
            starts_at (datetime.datetime):
            status (str): known values: pending, active, expired, cancelled, needs-review; a newer API may send others
            updated_at (datetime.datetime):
            contract_ref (str | Unset):
            ends_at (datetime.datetime | Unset):
            lending (LendingPolicy | None | Unset): its lending policy (PUT .../lending), null when it has none
            plan_expires_at (datetime.datetime | Unset): dry run: until when the plan may be applied (5 minutes)
            plan_id (str | Unset): dry run: the plan, opaque and signed; POST it back as {"planId": ...} to do exactly this
                reclaim, while nothing it is bound to changes
            reason (str | Unset):
            skipped (list[str] | Unset): real run: not spot, left running
            terminate_at (datetime.datetime | Unset): real run: this call's deadline, its commit plus the larger of
                noticeSeconds and the reservation's lending policy's noticeSeconds (to the millisecond); each terminated
                workload has its own in terminations, which may be later
            terminated (list[str] | Unset): real run: workload ids
            terminations (list[ReclaimTermination] | Unset): real run: each workload in terminated (by id) with its
                terminationId and its own terminateAt
            topology_gen (int | Unset):
            would_skip (list[str] | Unset): dry run
            would_terminate (list[str] | Unset): dry run
     """

    allowed_org_ids: list[str]
    created_at: datetime.datetime
    etag: str
    id: str
    managing_org_ids: list[str]
    node_id: str
    reclaimed_unit_ids: list[str]
    released_unit_ids: list[str]
    reserved_unit_ids: list[str]
    starts_at: datetime.datetime
    status: str
    updated_at: datetime.datetime
    contract_ref: str | Unset = UNSET
    ends_at: datetime.datetime | Unset = UNSET
    lending: LendingPolicy | None | Unset = UNSET
    plan_expires_at: datetime.datetime | Unset = UNSET
    plan_id: str | Unset = UNSET
    reason: str | Unset = UNSET
    skipped: list[str] | Unset = UNSET
    terminate_at: datetime.datetime | Unset = UNSET
    terminated: list[str] | Unset = UNSET
    terminations: list[ReclaimTermination] | Unset = UNSET
    topology_gen: int | Unset = UNSET
    would_skip: list[str] | Unset = UNSET
    would_terminate: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.lending_policy import LendingPolicy # noqa: PLC0415
        from ..models.reclaim_termination import ReclaimTermination # noqa: PLC0415
        allowed_org_ids = self.allowed_org_ids



        created_at = self.created_at.isoformat()

        etag = self.etag

        id = self.id

        managing_org_ids = self.managing_org_ids



        node_id = self.node_id

        reclaimed_unit_ids = self.reclaimed_unit_ids



        released_unit_ids = self.released_unit_ids



        reserved_unit_ids = self.reserved_unit_ids



        starts_at = self.starts_at.isoformat()

        status = self.status

        updated_at = self.updated_at.isoformat()

        contract_ref = self.contract_ref

        ends_at: str | Unset = UNSET
        if not isinstance(self.ends_at, Unset):
            ends_at = self.ends_at.isoformat()

        lending: dict[str, Any] | None | Unset
        if isinstance(self.lending, Unset):
            lending = UNSET
        elif isinstance(self.lending, LendingPolicy):
            lending = self.lending.to_dict()
        else:
            lending = self.lending

        plan_expires_at: str | Unset = UNSET
        if not isinstance(self.plan_expires_at, Unset):
            plan_expires_at = self.plan_expires_at.isoformat()

        plan_id = self.plan_id

        reason = self.reason

        skipped: list[str] | Unset = UNSET
        if not isinstance(self.skipped, Unset):
            skipped = self.skipped



        terminate_at: str | Unset = UNSET
        if not isinstance(self.terminate_at, Unset):
            terminate_at = self.terminate_at.isoformat()

        terminated: list[str] | Unset = UNSET
        if not isinstance(self.terminated, Unset):
            terminated = self.terminated



        terminations: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.terminations, Unset):
            terminations = []
            for terminations_item_data in self.terminations:
                terminations_item = terminations_item_data.to_dict()
                terminations.append(terminations_item)



        topology_gen = self.topology_gen

        would_skip: list[str] | Unset = UNSET
        if not isinstance(self.would_skip, Unset):
            would_skip = self.would_skip



        would_terminate: list[str] | Unset = UNSET
        if not isinstance(self.would_terminate, Unset):
            would_terminate = self.would_terminate




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "allowedOrgIds": allowed_org_ids,
            "createdAt": created_at,
            "etag": etag,
            "id": id,
            "managingOrgIds": managing_org_ids,
            "nodeId": node_id,
            "reclaimedUnitIds": reclaimed_unit_ids,
            "releasedUnitIds": released_unit_ids,
            "reservedUnitIds": reserved_unit_ids,
            "startsAt": starts_at,
            "status": status,
            "updatedAt": updated_at,
        })
        if contract_ref is not UNSET:
            field_dict["contractRef"] = contract_ref
        if ends_at is not UNSET:
            field_dict["endsAt"] = ends_at
        if lending is not UNSET:
            field_dict["lending"] = lending
        if plan_expires_at is not UNSET:
            field_dict["planExpiresAt"] = plan_expires_at
        if plan_id is not UNSET:
            field_dict["planId"] = plan_id
        if reason is not UNSET:
            field_dict["reason"] = reason
        if skipped is not UNSET:
            field_dict["skipped"] = skipped
        if terminate_at is not UNSET:
            field_dict["terminateAt"] = terminate_at
        if terminated is not UNSET:
            field_dict["terminated"] = terminated
        if terminations is not UNSET:
            field_dict["terminations"] = terminations
        if topology_gen is not UNSET:
            field_dict["topologyGen"] = topology_gen
        if would_skip is not UNSET:
            field_dict["wouldSkip"] = would_skip
        if would_terminate is not UNSET:
            field_dict["wouldTerminate"] = would_terminate

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lending_policy import LendingPolicy # noqa: PLC0415
        from ..models.reclaim_termination import ReclaimTermination # noqa: PLC0415
        d = dict(src_dict)
        allowed_org_ids = cast(list[str], d.pop("allowedOrgIds"))


        created_at = datetime.datetime.fromisoformat(d.pop("createdAt"))




        etag = d.pop("etag")

        id = d.pop("id")

        managing_org_ids = cast(list[str], d.pop("managingOrgIds"))


        node_id = d.pop("nodeId")

        reclaimed_unit_ids = cast(list[str], d.pop("reclaimedUnitIds"))


        released_unit_ids = cast(list[str], d.pop("releasedUnitIds"))


        reserved_unit_ids = cast(list[str], d.pop("reservedUnitIds"))


        starts_at = datetime.datetime.fromisoformat(d.pop("startsAt"))




        status = d.pop("status")

        updated_at = datetime.datetime.fromisoformat(d.pop("updatedAt"))




        contract_ref = d.pop("contractRef", UNSET)

        _ends_at = d.pop("endsAt", UNSET)
        ends_at: datetime.datetime | Unset
        if isinstance(_ends_at,  Unset):
            ends_at = UNSET
        else:
            ends_at = datetime.datetime.fromisoformat(_ends_at)




        def _parse_lending(data: object) -> LendingPolicy | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                lending_type_0 = LendingPolicy.from_dict(data)



                return lending_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LendingPolicy | None | Unset, data)

        lending = _parse_lending(d.pop("lending", UNSET))


        _plan_expires_at = d.pop("planExpiresAt", UNSET)
        plan_expires_at: datetime.datetime | Unset
        if isinstance(_plan_expires_at,  Unset):
            plan_expires_at = UNSET
        else:
            plan_expires_at = datetime.datetime.fromisoformat(_plan_expires_at)




        plan_id = d.pop("planId", UNSET)

        reason = d.pop("reason", UNSET)

        skipped = cast(list[str], d.pop("skipped", UNSET))


        _terminate_at = d.pop("terminateAt", UNSET)
        terminate_at: datetime.datetime | Unset
        if isinstance(_terminate_at,  Unset):
            terminate_at = UNSET
        else:
            terminate_at = datetime.datetime.fromisoformat(_terminate_at)




        terminated = cast(list[str], d.pop("terminated", UNSET))


        _terminations = d.pop("terminations", UNSET)
        terminations: list[ReclaimTermination] | Unset = UNSET
        if _terminations is not UNSET:
            terminations = []
            for terminations_item_data in _terminations:
                terminations_item = ReclaimTermination.from_dict(terminations_item_data)



                terminations.append(terminations_item)


        topology_gen = d.pop("topologyGen", UNSET)

        would_skip = cast(list[str], d.pop("wouldSkip", UNSET))


        would_terminate = cast(list[str], d.pop("wouldTerminate", UNSET))


        reclaim_result = cls(
            allowed_org_ids=allowed_org_ids,
            created_at=created_at,
            etag=etag,
            id=id,
            managing_org_ids=managing_org_ids,
            node_id=node_id,
            reclaimed_unit_ids=reclaimed_unit_ids,
            released_unit_ids=released_unit_ids,
            reserved_unit_ids=reserved_unit_ids,
            starts_at=starts_at,
            status=status,
            updated_at=updated_at,
            contract_ref=contract_ref,
            ends_at=ends_at,
            lending=lending,
            plan_expires_at=plan_expires_at,
            plan_id=plan_id,
            reason=reason,
            skipped=skipped,
            terminate_at=terminate_at,
            terminated=terminated,
            terminations=terminations,
            topology_gen=topology_gen,
            would_skip=would_skip,
            would_terminate=would_terminate,
        )


        reclaim_result.additional_properties = d
        return reclaim_result

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
