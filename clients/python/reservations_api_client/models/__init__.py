""" Contains all the data models used in inputs/outputs """

from .cancel_request import CancelRequest
from .create_reservation_request import CreateReservationRequest
from .delivery_detail import DeliveryDetail
from .delivery_page import DeliveryPage
from .delivery_view import DeliveryView
from .error import Error
from .error_detail import ErrorDetail
from .event import Event
from .event_data import EventData
from .event_page import EventPage
from .fleet_reservation_page import FleetReservationPage
from .lending_policy import LendingPolicy
from .lending_policy_request import LendingPolicyRequest
from .no_body import NoBody
from .node import Node
from .node_request import NodeRequest
from .place_workload_request import PlaceWorkloadRequest
from .reaffirm_request import ReaffirmRequest
from .reclaim_result import ReclaimResult
from .reclaim_termination import ReclaimTermination
from .reservation import Reservation
from .reservation_page import ReservationPage
from .retry_queued import RetryQueued
from .subscribe_request import SubscribeRequest
from .subscription_page import SubscriptionPage
from .subscription_view import SubscriptionView
from .subscription_with_secret import SubscriptionWithSecret
from .too_many_requests import TooManyRequests
from .unit import Unit
from .unit_spec import UnitSpec
from .units_request import UnitsRequest
from .update_reservation_request import UpdateReservationRequest
from .usage_figures import UsageFigures
from .usage_page import UsagePage
from .usage_row import UsageRow
from .waiting_for_view import WaitingForView
from .workload import Workload
from .workload_page import WorkloadPage
from .workload_termination import WorkloadTermination

__all__ = (
    "CancelRequest",
    "CreateReservationRequest",
    "DeliveryDetail",
    "DeliveryPage",
    "DeliveryView",
    "Error",
    "ErrorDetail",
    "Event",
    "EventData",
    "EventPage",
    "FleetReservationPage",
    "LendingPolicy",
    "LendingPolicyRequest",
    "NoBody",
    "Node",
    "NodeRequest",
    "PlaceWorkloadRequest",
    "ReaffirmRequest",
    "ReclaimResult",
    "ReclaimTermination",
    "Reservation",
    "ReservationPage",
    "RetryQueued",
    "SubscribeRequest",
    "SubscriptionPage",
    "SubscriptionView",
    "SubscriptionWithSecret",
    "TooManyRequests",
    "Unit",
    "UnitSpec",
    "UnitsRequest",
    "UpdateReservationRequest",
    "UsageFigures",
    "UsagePage",
    "UsageRow",
    "WaitingForView",
    "Workload",
    "WorkloadPage",
    "WorkloadTermination",
)
