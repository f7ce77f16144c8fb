"""Fixtures for the batch tests: the ticket server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ticket_server import TicketServer


@pytest.fixture
def tickets() -> Iterator[TicketServer]:
    server = TicketServer()
    yield server
    server.wire.close()
