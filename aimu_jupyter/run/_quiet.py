"""Library logs stay out of cells unless the user turns them on.

FastMCP installs its own log handler at import, at INFO: in a notebook each of its lines
("Proxy detected connected client…") lands in the running cell as rich stderr. Unless the
user chose a level (``FASTMCP_LOG_LEVEL``, or a level of their own on the ``fastmcp``
logger), it is kept to warnings. Checked at each run, since FastMCP may be imported late.
"""

from __future__ import annotations

import logging
import os
import sys

#: The level FastMCP sets on its logger when no one chose one.
_FASTMCP_DEFAULT = logging.INFO


def quiet_library_logs() -> None:
    """Lower FastMCP's logger to WARNING if it is imported and still at its own default."""
    if "fastmcp" not in sys.modules or os.environ.get("FASTMCP_LOG_LEVEL"):
        return
    logger = logging.getLogger("fastmcp")
    if logger.level == _FASTMCP_DEFAULT:
        logger.setLevel(logging.WARNING)
