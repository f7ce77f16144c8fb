"""The open notebook, reached through the lab extension: its cells, read, edited and filled.

The kernel cannot change the notebook itself: writing the ``.ipynb`` underneath would lose the
user's unsaved edits and fight real-time collaboration. Edits go through the frontend's
notebook model instead. While a run is shown, the JupyterLab extension opens a comm on target
:data:`TARGET` from the notebook that shows it; the kernel sends it requests and awaits each
answer:

==================================================  ==============================================
request                                             answer
==================================================  ==============================================
``{"id", "op": "cells"}``                           ``{"id", "cells": [{"id", "index",
                                                    "cell_type", "source", "execution_count"}]}``
``{"id", "op": "edit", "cell_id", "source",         ``{"id", "ok"}``, or ``{"id", "error"}`` when
"expect"}``                                         the cell is gone or no longer holds ``expect``
``{"id", "op": "outputs", "cell_id", "outputs",     ``{"id", "ok"}``: the cell shows these outputs
"execution_count"}``                                (nbformat dicts)
==================================================  ==============================================

Without the extension (VS Code, classic frontends, nbclient, ``jupyter console``) no comm is
opened, and :meth:`NotebookBridge.request` raises :class:`NoFrontend`: the tools say they
cannot edit, and the notebook file is never touched.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

TARGET = "aimu.notebook"
#: Seconds a request waits for the extension to open the comm (it does when it draws a run).
OPEN_SECONDS = 2.0
#: Seconds a request waits for the frontend's answer; a frontend that does not answer (a
#: closed browser tab) is forgotten, and the next request waits for one that opens.
ANSWER_SECONDS = 10.0


class NoFrontend(RuntimeError):
    """No frontend that can change the open notebook is connected (headless, console, or a
    frontend without the aimu lab extension)."""


class NotebookBridge:
    """The comm the lab extension opened from the open notebook, for one kernel."""

    def __init__(self, kernel: Any) -> None:
        self._comm: Any = None
        self._lock = threading.Lock()
        self._opened = threading.Event()
        self._waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
        self._ids = itertools.count(1)
        kernel.comm_manager.register_target(TARGET, self._open)

    @property
    def connected(self) -> bool:
        return self._comm is not None

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return the frontend's answer; :class:`NoFrontend` when no
        frontend is connected or it does not answer in time."""
        if self._comm is None:
            opened = await asyncio.to_thread(self._opened.wait, OPEN_SECONDS)
            if not opened or self._comm is None:
                raise NoFrontend("no frontend that can change the notebook is connected")
        key = str(next(self._ids))
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        with self._lock:
            self._waiting[key] = (loop, future)
            comm = self._comm
        try:
            comm.send({"id": key, "op": op, **fields})
            return await asyncio.wait_for(future, ANSWER_SECONDS)
        except TimeoutError:
            self._closed(comm)
            raise NoFrontend("the notebook's frontend did not answer") from None
        finally:
            with self._lock:
                self._waiting.pop(key, None)

    def _open(self, comm: Any, _message: dict[str, Any]) -> None:
        # The newest comm (a reloaded page's) replaces the last; the page that opened the
        # last one closes it, as it does every comm it opens.
        with self._lock:
            self._comm = comm
        comm.on_msg(self._received)
        comm.on_close(lambda _msg: self._closed(comm))
        self._opened.set()

    def _closed(self, comm: Any) -> None:
        with self._lock:
            if self._comm is comm:
                self._comm = None
                self._opened.clear()

    def _received(self, message: Any) -> None:
        content = message.get("content") if isinstance(message, dict) else None
        data = content.get("data") if isinstance(content, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return
        with self._lock:
            waiting = self._waiting.get(data["id"])
        if waiting is not None:
            loop, future = waiting
            loop.call_soon_threadsafe(_settle, future, data)


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)
