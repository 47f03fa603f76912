"""The MCP SDK must not choose how the process logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import cast

import pytest

from docchat.mcp_server.server import build_server
from docchat.mcp_server.tools import LibraryTools


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    """The root logger, put back as it was after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_building_the_mcp_server_leaves_root_logging_alone(root_logger: logging.Logger) -> None:
    # As in a process that has not configured logging yet (pytest's capturing handlers go too).
    root_logger.handlers[:] = []
    root_logger.setLevel(logging.WARNING)

    # Before the fix, MCPServer() installed a rich console handler at INFO on such a root
    # logger (the benchmarks' workers then logged every document through it).
    build_server(cast(LibraryTools, object()))

    assert root_logger.handlers == []
    assert root_logger.level == logging.WARNING
