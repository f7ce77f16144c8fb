"""Logging around MCP clients: no secret in any log record, and no FastMCP console output.

FastMCP and the HTTP libraries under it log request URLs (an ``?api_key=`` query included)
and errors holding request headers. A log record factory scrubs every record made while a
client holding secrets is alive, whichever logger makes it. FastMCP also puts console handlers
on its ``fastmcp`` logger at import, printing INFO lines ("Proxy detected connected client…")
into cells; they are removed so its records reach the standard logging tree like any
library's, shown only when the user turns logging on. Setting ``FASTMCP_LOG_LEVEL`` or
``FASTMCP_LOG_ENABLED`` keeps FastMCP's own handlers.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
import weakref
from typing import Any

from aimu.secrets import Redactor

_REDACTORS: weakref.WeakSet[Redactor] = weakref.WeakSet()
_install_lock = threading.Lock()
_installed = False


def scrub_logs_of(redactor: Redactor) -> None:
    """Keep ``redactor``'s secrets out of every log record while it is alive."""
    global _installed
    if not redactor:
        return
    _REDACTORS.add(redactor)
    with _install_lock:
        if not _installed:
            logging.setLogRecordFactory(_scrubbing(logging.getLogRecordFactory()))
            _installed = True


def _scrubbing(make: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if _REDACTORS:
            _scrub(record, list(_REDACTORS))
        return record

    return factory


def _scrub(record: logging.LogRecord, redactors: list[Redactor]) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record stays as it is; logging reports it
        return
    clean = _redact(message, redactors)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        clean = _redact(text, redactors)
        if clean != text:  # the exception object itself (headers, URLs) is dropped too
            record.exc_info, record.exc_text = None, clean


def _redact(text: str, redactors: list[Redactor]) -> str:
    for redactor in redactors:
        text = redactor.redact(text)
    return text


def quiet_fastmcp() -> None:
    """Hand the ``fastmcp`` logger back to the logging tree, unless the user configured it."""
    if "FASTMCP_LOG_LEVEL" in os.environ or "FASTMCP_LOG_ENABLED" in os.environ:
        return
    from rich.logging import RichHandler

    fastmcp_logger = logging.getLogger("fastmcp")
    installed = [h for h in fastmcp_logger.handlers if isinstance(h, RichHandler)]
    if not installed or fastmcp_logger.propagate:
        return
    for handler in installed:
        fastmcp_logger.removeHandler(handler)
    fastmcp_logger.propagate = True
    fastmcp_logger.setLevel(logging.NOTSET)
