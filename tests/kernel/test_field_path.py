"""One way to name a field, whichever check refused it."""

import pytest

from reservations.kernel.errors import field_path

pytestmark = pytest.mark.disable_socket


@pytest.mark.parametrize(
    ("location", "named"),
    [
        (("unitIds", 2), "unitIds[2]"),
        (("header", "Idempotency-Key"), "header.Idempotency-Key"),
        (("nodes", 0, "units", 3, "id"), "nodes[0].units[3].id"),
        ((0, "id"), "[0].id"),
        ((), ""),
    ],
)
def test_keys_are_joined_by_dots_and_positions_are_brackets(location, named):
    assert field_path(location) == named
