"""verify_webhook: a delivery signed by the Standard Webhooks scheme (signed here with the
reference implementation itself, as the service signs) becomes the typed event; anything
else is InvalidWebhook, whatever is wrong with it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook

from reservations_client import InvalidWebhook, verify_webhook
from reservations_client.webhooks import new_secret, signed_headers

OLD, NEW = new_secret(), new_secret()
EVENT = {"specversion": "1.0", "id": "evt-7", "type": "reservation.reclaimed",
         "source": "/v1/nodes/node-a1", "subject": "reservations/res-1",
         "time": "2026-12-01T05:08:47.123Z", "datacontenttype": "application/json",
         "data": {"unitIds": ["0000:04:00.0"], "terminated": ["vm-17"]}}  # fmt: skip
BODY = json.dumps(EVENT)


def delivery(secrets: list[str], body: str = BODY, at: datetime | None = None) -> dict[str, str]:
    """The headers the service sends: one signature per secret in force, space-separated."""
    moment = at or datetime.now(UTC)
    return {
        "Webhook-Id": EVENT["id"],
        "Webhook-Timestamp": str(int(moment.timestamp())),
        "Webhook-Signature": " ".join(Webhook(s).sign(EVENT["id"], moment, body) for s in secrets),
    }


def test_a_signed_delivery_is_the_typed_event():
    event = verify_webhook(BODY.encode(), delivery([NEW]), NEW)
    assert (event.id, event.type_, event.subject) == ("evt-7", "reservation.reclaimed",
                                                      "reservations/res-1")  # fmt: skip
    assert event.time == datetime(2026, 12, 1, 5, 8, 47, 123000, tzinfo=UTC)
    assert event.data.to_dict()["terminated"] == ["vm-17"]


def test_during_a_rotation_either_secret_verifies():
    both = delivery([NEW, OLD])
    assert verify_webhook(BODY, both, [NEW]).id == "evt-7"
    assert verify_webhook(BODY, both, [OLD]).id == "evt-7"
    signed_by_old = delivery([OLD])
    assert verify_webhook(BODY, signed_by_old, [NEW, OLD]).id == "evt-7"
    with pytest.raises(InvalidWebhook, match="signature"):
        verify_webhook(BODY, signed_by_old, [NEW])


@pytest.mark.parametrize("tampered", [
    BODY.replace("vm-17", "vm-18"), BODY + " ", json.dumps({**EVENT, "id": "evt-8"}),
])  # fmt: skip
def test_a_tampered_body_is_refused(tampered):
    with pytest.raises(InvalidWebhook, match="signature"):
        verify_webhook(tampered, delivery([NEW]), [NEW, OLD])


def test_an_old_or_future_timestamp_is_refused_though_signed():
    late = datetime.now(UTC) - timedelta(minutes=6)
    with pytest.raises(InvalidWebhook, match="too old"):
        verify_webhook(BODY, delivery([NEW], at=late), NEW)
    early = datetime.now(UTC) + timedelta(minutes=6)
    with pytest.raises(InvalidWebhook, match="too new"):
        verify_webhook(BODY, delivery([NEW], at=early), NEW)


@pytest.mark.parametrize("broken", [
    {"Webhook-Signature": ""}, {"Webhook-Id": ""}, {"Webhook-Timestamp": "soon"},
    {"Webhook-Signature": "garbage"}, {"Webhook-Signature": "v1,not base64!"},
    {"Webhook-Signature": "v2,c2lnbmF0dXJl"},
])  # fmt: skip
def test_broken_headers_are_refused_never_an_unexpected_exception(broken):
    with pytest.raises(InvalidWebhook):
        verify_webhook(BODY, delivery([NEW]) | broken, NEW)


def test_a_signed_body_that_is_not_an_event_is_refused():
    for body in ("[1, 2]", json.dumps({"id": "evt-7"})):
        with pytest.raises(InvalidWebhook, match="not an event"):
            verify_webhook(body, delivery([NEW], body=body), NEW)


def test_no_secret_verifies_nothing():
    with pytest.raises(InvalidWebhook):
        verify_webhook(BODY, delivery([NEW]), [])


def test_what_listen_signs_verifies_as_the_service_would():
    headers = signed_headers(NEW, "evt-7", BODY, datetime.now(UTC))
    assert headers["webhook-id"] == "evt-7"
    assert verify_webhook(BODY, headers, NEW).id == "evt-7"
    assert Webhook(NEW).verify(BODY, headers) == EVENT
