"""Domain rules are pure: these tests may not open a socket."""

from collections.abc import Iterator

import pytest
from pytest_socket import disable_socket, enable_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    disable_socket()
    yield
    enable_socket()
