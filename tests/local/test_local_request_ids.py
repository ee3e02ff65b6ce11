"""The local stack's API gives each request its own ``requestContext.requestId``, as API
Gateway does (``devstack.sam_cli``): SAM CLI's default is one id per process."""

from __future__ import annotations

import pytest
from samcli.local.events import api_event

from devstack import sam_cli

pytestmark = pytest.mark.disable_socket


def test_sam_cli_alone_gives_every_request_the_same_id() -> None:
    """Why the shim exists: if this fails, SAM CLI mends it and the shim can go."""
    first, second = api_event.RequestContextV2(), api_event.RequestContextV2()
    assert first.request_id == second.request_id


def test_through_the_shim_each_request_has_its_own_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_event.RequestContextV2, "__init__", sam_cli._with_own_id)
    ids = {api_event.RequestContextV2().request_id for _ in range(3)}
    assert len(ids) == 3
    assert api_event.RequestContextV2(request_id="given").request_id == "given"
    assert api_event.RequestContextV2().to_dict()["requestId"] not in ids
