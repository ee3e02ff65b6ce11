"""``/v1/webhooks``: an org's subscriptions to its own feed (``events.read``, any org).

Subscribe, unsubscribe and rotate a secret are writes of the org's ``ORGHOOK#`` partition
through the one write pipeline (its Idempotency-Key, its retries, its outcomes' lines and
metrics): each reads the org's subscriptions and counter, decides, and commits one
transaction conditioned on what it read. The limit of 10 is the counter's condition: two
concurrent subscribes both read 9, one commits 10, the other loses the race, reads 10 again
and is refused with 409 ``subscription_limit``.

Get and list read the org's partition only: another org's subscription is not found, the
same 404 as an unknown id, a malformed one or a key without ``events.read``. No answer but
a subscribe's and a rotation's shows a secret.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from reservations.events import EVENT_TYPES, EVENTS_READ
from reservations.kernel.bodies import RawBody, optional_body, required_body
from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.errors import FieldProblem, InvalidRequest, NotFound
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.ids import is_resource_id
from reservations.kernel.pipeline import (
    Access,
    Body,
    Commit,
    Committed,
    Decide,
    Decision,
    Partition,
    Request,
    Route,
    StoreBacked,
    WriteSpec,
)
from reservations.kernel.wire import response_json
from reservations.webhooks.errors import SubscriptionLimit
from reservations.webhooks.models.api import (
    HookWrite,
    NoBody,
    OrgHooks,
    SecretRotation,
    SubscribeRequest,
    SubscriptionCreate,
    SubscriptionDelete,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
)
from reservations.webhooks.models.domain import (
    MAX_SUBSCRIPTIONS_PER_ORG,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.ports import SubscriptionStore, WebhookPorts
from reservations.webhooks.rules.urls import url_problem

WEBHOOKS_LIST = "webhooks"
_EVENT_TYPES = frozenset(EVENT_TYPES)
B = TypeVar("B")
# Any org's key with events.read manages its own org's webhooks; no node settles anything.
HOOKS_ACCESS: Access[OrgHooks] = Access(permitted=lambda caller: caller.has(EVENTS_READ))


@dataclass(frozen=True)
class HookPartition(StoreBacked[HookWrite]):
    """The caller's org's webhooks, through the hook store: a write's :class:`Partition`."""

    store: SubscriptionStore

    def read(self, route: Route, caller: Caller) -> OrgHooks:
        return self.store.load_hooks(caller.org_id)


def hook_partition(ports: WebhookPorts) -> Partition[OrgHooks, HookWrite]:
    return HookPartition(ports.webhooks)


def subscribe_parser(allow_local: Callable[[], bool]) -> Callable[[RawBody], SubscribeRequest]:
    """The subscribe body's parser: ``url`` subscribable (``http://127.0.0.1:<port>`` too
    where the stack allows a local receiver), ``types`` known and not repeated; 400 naming
    the field."""

    def parse(raw: RawBody) -> SubscribeRequest:
        request = required_body(raw, SubscribeRequest)
        problems = []
        if (problem := url_problem(request.url, allow_local())) is not None:
            problems.append(FieldProblem("url", problem))
        for index, name in enumerate(request.types or ()):
            if name not in _EVENT_TYPES:
                problems.append(FieldProblem(f"types[{index}]", "is not an event type"))
            elif name in (request.types or [])[:index]:
                problems.append(FieldProblem(f"types[{index}]", f"duplicate of {name}"))
        if problems:
            text = ", ".join(p.field + " " + p.problem for p in problems)
            raise InvalidRequest(f"invalid request: {text}", problems)
        return request

    return parse


def _no_body(raw: RawBody) -> None:
    """Rotate takes no body: none, blank or ``{}``; anything else is a 400."""
    optional_body(raw, NoBody)


def decide_subscribe(
    hooks: OrgHooks, request: Request[SubscribeRequest], caller: Caller, now: datetime
) -> SubscriptionLimit | Decision[HookWrite]:
    """A new subscription with a new secret, 201 showing the secret once; 409
    ``subscription_limit`` when the org has 10 already (disabled ones count: deleting one
    makes room)."""
    if hooks.count >= MAX_SUBSCRIPTIONS_PER_ORG:
        return SubscriptionLimit(
            f"org {caller.org_id} already has {MAX_SUBSCRIPTIONS_PER_ORG} webhook subscriptions"
        )
    body = request.body
    subscription = Subscription(
        id=request.new_id(),
        org_id=caller.org_id,
        url=body.url,
        secrets=SigningSecrets(request.new_secret()),
        created_at=now,
        types=None if body.types is None else frozenset(body.types),
        description=body.description,
    )
    view = SubscriptionWithSecret.with_secret(subscription)
    location = f"{request.route.path}/{subscription.id}"
    answer = Outcome(201, response_json(view), (("Location", location),))
    return Decision(SubscriptionCreate(subscription.id, subscription, hooks.count), answer)


def decide_unsubscribe(
    hooks: OrgHooks, request: Request[None], caller: Caller, now: datetime
) -> NotFound | Decision[HookWrite]:
    """The org's subscription gone, 204; in-flight deliveries are dropped by the sender
    (their subscription is not found)."""
    subscription = hooks.find(request.route.params["subscriptionId"])
    if subscription is None:
        return NotFound()
    write = SubscriptionDelete(request.new_id(), subscription, hooks.count)
    return Decision(write, Outcome(204, ""))


def decide_rotation(
    hooks: OrgHooks, request: Request[None], caller: Caller, now: datetime
) -> NotFound | Decision[HookWrite]:
    """A new current secret, 200 showing it; the one it replaces signs for 24 h more."""
    subscription = hooks.find(request.route.params["subscriptionId"])
    if subscription is None:
        return NotFound()
    rotated = subscription.secrets.rotated(request.new_secret(), now)
    after = Subscription(**{**_fields(subscription), "secrets": rotated})
    answer = Outcome(200, response_json(SubscriptionWithSecret.with_secret(after)))
    return Decision(SecretRotation(request.new_id(), after, subscription.secrets), answer)


def _fields(subscription: Subscription) -> dict[str, Any]:
    return {name: getattr(subscription, name) for name in Subscription.__slots__}


def _committed(message: str) -> Callable[[HookWrite], Committed]:
    def committed(write: HookWrite) -> Committed:
        # Never the secret or the URL's query: the id and the org say which.
        subscription = write.subscription
        context = {"subscriptionId": subscription.id}
        return Committed(message, context, {"WebhookSubscriptionsChanged": 1})

    return committed


def _hook_spec(
    name: str,
    conflict: str,
    parse: Callable[[RawBody], B],
    decide: Decide[OrgHooks, B, HookWrite],
    message: str,
) -> WriteSpec[B, OrgHooks, HookWrite, WebhookPorts]:
    """A write of the org's webhooks, in its partition, under the webhooks' access;
    ``message``: the log line once committed."""
    return WriteSpec(
        name=name,
        access=HOOKS_ACCESS,
        body=Body(parse=parse),
        decide=decide,
        commit=Commit(partition=hook_partition, committed=_committed(message)),
        conflict=conflict,
    )


def subscribe_spec(
    allow_local: Callable[[], bool],
) -> WriteSpec[SubscribeRequest, OrgHooks, HookWrite, WebhookPorts]:
    """``POST /v1/webhooks``; ``allow_local``: the stack's local receiver allowance."""
    return _hook_spec(
        "Subscribe",
        "the org's webhooks kept changing while subscribing",
        subscribe_parser(allow_local),
        decide_subscribe,
        "webhook subscribed",
    )


UNSUBSCRIBE: WriteSpec[None, OrgHooks, HookWrite, WebhookPorts] = _hook_spec(
    "Unsubscribe",
    "webhook {subscriptionId} kept changing while deleting it",
    lambda _raw: None,
    decide_unsubscribe,
    "webhook deleted",
)

ROTATE_SECRET: WriteSpec[None, OrgHooks, HookWrite, WebhookPorts] = _hook_spec(
    "SecretRotation",
    "webhook {subscriptionId} kept changing while rotating its secret",
    _no_body,
    decide_rotation,
    "webhook secret rotated",
)


def get_subscription(
    caller: Caller, subscription_id: str, store: SubscriptionStore
) -> SubscriptionView:
    """The caller's org's subscription (never its secret); the one 404 otherwise."""
    if not (is_resource_id(subscription_id) and caller.has(EVENTS_READ)):
        raise NotFound()
    subscription = store.load_subscription(caller.org_id, subscription_id)
    if subscription is None:
        raise NotFound()
    return SubscriptionView.of(subscription)


def list_subscriptions(
    caller: Caller, limit: str | None, cursor: str | None, store: SubscriptionStore, key: bytes
) -> SubscriptionPage:
    """A page of the org's subscriptions, sorted by id (one Query: an org has at most 10)."""
    if not caller.has(EVENTS_READ):
        raise NotFound()
    size = page_limit(limit)
    scope = CursorScope("", "", caller.org_id, WEBHOOKS_LIST)
    after = decode_cursor(cursor, scope, key).after if cursor else ""
    listed = [s for s in store.load_hooks(caller.org_id).subscriptions if s.id > after]
    listed.sort(key=lambda s: s.id)
    page = listed[:size]
    more = len(listed) > size
    next_cursor = encode_cursor(Cursor(page[-1].id), scope, key) if more else None
    return SubscriptionPage(items=[SubscriptionView.of(s) for s in page], next_cursor=next_cursor)
