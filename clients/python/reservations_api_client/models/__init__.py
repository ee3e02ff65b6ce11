""" Contains all the data models used in inputs/outputs """

from .cancel_request import CancelRequest
from .create_reservation_request import CreateReservationRequest
from .delivery_detail import DeliveryDetail
from .delivery_detail_type import DeliveryDetailType
from .delivery_page import DeliveryPage
from .delivery_state import DeliveryState
from .delivery_view import DeliveryView
from .delivery_view_type import DeliveryViewType
from .error import Error
from .error_code import ErrorCode
from .error_detail import ErrorDetail
from .event import Event
from .event_data import EventData
from .event_page import EventPage
from .event_type import EventType
from .fleet_reservation_page import FleetReservationPage
from .list_events_types_item import ListEventsTypesItem
from .list_fleet_reservations_role_item import ListFleetReservationsRoleItem
from .list_fleet_reservations_status_item import ListFleetReservationsStatusItem
from .list_node_events_types_item import ListNodeEventsTypesItem
from .list_reservations_status_item import ListReservationsStatusItem
from .list_workloads_state_item import ListWorkloadsStateItem
from .no_body import NoBody
from .node import Node
from .node_request import NodeRequest
from .place_workload_request import PlaceWorkloadRequest
from .place_workload_request_kind import PlaceWorkloadRequestKind
from .place_workload_request_tier import PlaceWorkloadRequestTier
from .reaffirm_request import ReaffirmRequest
from .reclaim_result import ReclaimResult
from .reclaim_result_status import ReclaimResultStatus
from .reservation import Reservation
from .reservation_page import ReservationPage
from .reservation_status import ReservationStatus
from .retry_queued import RetryQueued
from .subscribe_request import SubscribeRequest
from .subscribe_request_types_type_0_item import SubscribeRequestTypesType0Item
from .subscription_page import SubscriptionPage
from .subscription_status import SubscriptionStatus
from .subscription_view import SubscriptionView
from .subscription_view_types_item import SubscriptionViewTypesItem
from .subscription_with_secret import SubscriptionWithSecret
from .subscription_with_secret_types_item import SubscriptionWithSecretTypesItem
from .too_many_requests import TooManyRequests
from .unit import Unit
from .unit_spec import UnitSpec
from .unit_state import UnitState
from .units_request import UnitsRequest
from .update_reservation_request import UpdateReservationRequest
from .workload import Workload
from .workload_kind import WorkloadKind
from .workload_page import WorkloadPage
from .workload_state import WorkloadState
from .workload_termination import WorkloadTermination
from .workload_tier import WorkloadTier

__all__ = (
    "CancelRequest",
    "CreateReservationRequest",
    "DeliveryDetail",
    "DeliveryDetailType",
    "DeliveryPage",
    "DeliveryState",
    "DeliveryView",
    "DeliveryViewType",
    "Error",
    "ErrorCode",
    "ErrorDetail",
    "Event",
    "EventData",
    "EventPage",
    "EventType",
    "FleetReservationPage",
    "ListEventsTypesItem",
    "ListFleetReservationsRoleItem",
    "ListFleetReservationsStatusItem",
    "ListNodeEventsTypesItem",
    "ListReservationsStatusItem",
    "ListWorkloadsStateItem",
    "NoBody",
    "Node",
    "NodeRequest",
    "PlaceWorkloadRequest",
    "PlaceWorkloadRequestKind",
    "PlaceWorkloadRequestTier",
    "ReaffirmRequest",
    "ReclaimResult",
    "ReclaimResultStatus",
    "Reservation",
    "ReservationPage",
    "ReservationStatus",
    "RetryQueued",
    "SubscribeRequest",
    "SubscribeRequestTypesType0Item",
    "SubscriptionPage",
    "SubscriptionStatus",
    "SubscriptionView",
    "SubscriptionViewTypesItem",
    "SubscriptionWithSecret",
    "SubscriptionWithSecretTypesItem",
    "TooManyRequests",
    "Unit",
    "UnitSpec",
    "UnitsRequest",
    "UnitState",
    "UpdateReservationRequest",
    "Workload",
    "WorkloadKind",
    "WorkloadPage",
    "WorkloadState",
    "WorkloadTermination",
    "WorkloadTier",
)
