"""The lab extension's "tell the agent…" field: talking to a run over a comm, in its own output.

While a run that has an inbox goes on, its record carries ``inbox``: a key naming the run.
The JupyterLab extension, drawing that record, opens a comm on target :data:`TARGET` with
``{"run": key}``. The kernel answers ``{"draw": true}`` when the run has no other box, and
the extension then draws a text field inside the run's own output; each ``{"text": ...}``
it sends goes into the run's :class:`~aimu.agents.Inbox`, answered by
``{"sent": text}``. When the run ends the record's ``inbox`` is ``null`` and the field goes:
nothing is left in the cell or the saved notebook. A frontend without the extension never
opens the comm, and gets the ipywidgets box (:mod:`.inbox_box`) instead.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from aimu.agents.inbox import Inbox

TARGET = "aimu.inbox"
#: The comm target the extension asks whether a record's run still goes on in this kernel:
#: ``{"run": id}`` is answered ``{"running": bool}``. A saved record still marked running
#: whose kernel does not know it (restarted, died, another kernel) did not finish.
RUNNING_TARGET = "aimu.run"
#: How long a run waits for the extension to claim its inbox before showing a widget box.
CLAIM_SECONDS = 1.5


@dataclass
class _Run:
    inbox: Inbox
    loop: asyncio.AbstractEventLoop
    claimed: asyncio.Event = field(default_factory=asyncio.Event)
    boxed: bool = False  # a widget box shows instead: a late claim is refused
    sent: list[str] = field(default_factory=list)


class InboxFields:
    """The runs whose inbox the extension may claim, by key, for one kernel."""

    def __init__(self, kernel: Any) -> None:
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()
        #: The ids of the runs going on in this kernel (:data:`RUNNING_TARGET`).
        self.running: set[str] = set()
        kernel.comm_manager.register_target(TARGET, self._opened)
        kernel.comm_manager.register_target(RUNNING_TARGET, self._asked_running)

    def open(self, key: str, inbox: Inbox) -> None:
        with self._lock:
            self._runs[key] = _Run(inbox, asyncio.get_running_loop())

    async def claimed(self, key: str) -> bool:
        """Whether the extension claimed the run's inbox within :data:`CLAIM_SECONDS`; if not,
        the caller shows a widget box and a later claim is refused."""
        run = self._runs[key]
        try:
            await asyncio.wait_for(run.claimed.wait(), CLAIM_SECONDS)
        except TimeoutError:
            with self._lock:
                if not run.claimed.is_set():
                    run.boxed = True
                    return False
        return True

    def close(self, key: str) -> list[str]:
        """Forget the run; what was sent through its field."""
        with self._lock:
            run = self._runs.pop(key, None)
        return run.sent if run is not None else []

    def _asked_running(self, comm: Any, message: dict[str, Any]) -> None:
        comm.send({"running": _data(message).get("run") in self.running})

    def _opened(self, comm: Any, message: dict[str, Any]) -> None:
        key = _data(message).get("run")
        with self._lock:
            run = self._runs.get(key) if isinstance(key, str) else None
            draw = run is not None and not run.boxed
        comm.send({"draw": draw})
        if not draw:
            return  # the extension closes the comms it opens; a second close would reach it unknown
        run.loop.call_soon_threadsafe(run.claimed.set)

        def received(msg: dict[str, Any]) -> None:
            text = _data(msg).get("text")
            if not isinstance(text, str) or not text.strip() or key not in self._runs:
                return
            run.inbox.put(text.strip())
            run.sent.append(text.strip())
            comm.send({"sent": text.strip()})

        comm.on_msg(received)


def _data(message: Any) -> dict[str, Any]:
    """A comm message's ``data``, or ``{}`` for anything shaped otherwise."""
    content = message.get("content") if isinstance(message, dict) else None
    data = content.get("data") if isinstance(content, dict) else None
    return data if isinstance(data, dict) else {}
