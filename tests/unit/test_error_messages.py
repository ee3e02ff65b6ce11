"""The fixed texts of the errors a client sees whatever it sent: the 401's one message for
every cause, the 415's message and the field its details name (the contract: "``details``
names ``header.Content-Type``"), and the 503's; each as the error's body renders it."""

from __future__ import annotations

import json

from reservations.models.api import error_json
from reservations.models.errors import (
    FieldProblem,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)


def test_unauthorized_says_one_message_whatever_the_cause() -> None:
    error = Unauthorized()
    assert (error.status, error.code) == (401, "unauthorized")
    assert error.message == str(error) == "missing or invalid API key"
    assert error.details == []
    assert json.loads(error_json(error)) == {
        "error": "missing or invalid API key",
        "code": "unauthorized",
    }


def test_unsupported_media_type_names_the_content_type_header() -> None:
    error = UnsupportedMediaType()
    assert (error.status, error.code) == (415, "unsupported_media_type")
    assert error.message == str(error) == "request body must be application/json"
    assert error.details == [FieldProblem("header.Content-Type", "must be application/json")]
    assert json.loads(error_json(error)) == {
        "error": "request body must be application/json",
        "code": "unsupported_media_type",
        "details": [{"field": "header.Content-Type", "problem": "must be application/json"}],
    }


def test_unavailable_is_the_contracts_5xx_asking_to_try_again() -> None:
    error = Unavailable()
    assert (error.status, error.code, error.retry_after) == (503, "internal", 2)
    assert error.message == str(error) == "the service could not answer in time; try again"
    assert error.details == []
    assert json.loads(error_json(error)) == {
        "error": "the service could not answer in time; try again",
        "code": "internal",
    }
