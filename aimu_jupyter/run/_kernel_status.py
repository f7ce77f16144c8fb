"""While a run goes on, the kernel reads busy, and each message handled meanwhile ends.

A frontend learns the kernel's state from iopub ``status`` messages. JupyterLab and
Notebook 7 take *every* ``status`` as the kernel's state, whatever message it answers;
the widget manager also waits for the ``idle`` that answers each of its own messages before
it sends the next change of a widget (its message throttle). Seen with ipykernel 7.4 in
JupyterLab 4.6 and Notebook 7.6, while an ``%%agent`` cell awaits its run:

- A comm message the frontend sends over a kernel subshell (the default for widget and our
  inbox comms) is answered ``busy`` … ``idle`` with that message as parent: the frontend
  then shows the kernel "Idle" while the cell still runs.
- A comm message that reaches the main shell while the cell holds it is handled at once
  without any ``status``: the widget manager never sees the ``idle`` it waits for, so every
  later change of that widget stays in the browser. A reason typed into the approval panel
  arrived as its first key press.

:func:`kernel_busy` fixes both for as long as the run goes on: a message handled without a
``status`` gets its ``idle``, and every ``idle`` that is not the cell's own is followed by
``busy`` for the running cell. nbclient and other clients that read only the ``status`` of
their own request see nothing new.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref
from collections.abc import Iterator
from typing import Any

_keepers: weakref.WeakKeyDictionary[Any, _StatusKeeper] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def kernel_busy(kernel: Any) -> Iterator[None]:
    """While the block runs inside an executing cell of ``kernel``, the kernel reads busy.

    Does nothing without a kernel (terminal IPython), outside an ``execute_request`` or
    with a kernel that lacks the methods this relies on.
    """
    parent = _cell_parent(kernel)
    keeper = _keeper(kernel) if parent is not None else None
    if keeper is None:
        yield
        return
    keeper.enter(parent)
    try:
        yield
    finally:
        keeper.leave()


def _cell_parent(kernel: Any) -> dict[str, Any] | None:
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    parent = get_parent("shell") or {}
    return parent if parent.get("header", {}).get("msg_type") == "execute_request" else None


def _keeper(kernel: Any) -> _StatusKeeper | None:
    keeper = _keepers.get(kernel)
    if keeper is None and _StatusKeeper.fits(kernel):
        keeper = _keepers[kernel] = _StatusKeeper(kernel)
    return keeper


def _msg_id(parent: Any) -> str | None:
    header = parent.get("header") if isinstance(parent, dict) else None
    return header.get("msg_id") if isinstance(header, dict) else None


class _StatusKeeper:
    """Wraps one kernel's status publication and shell dispatch (installed once, acting only
    while a run is going on)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._lock = threading.RLock()
        self._cell: dict[str, Any] | None = None
        self._runs = 0
        self._publish = kernel._publish_status
        self._dispatch = kernel.dispatch_shell
        kernel._publish_status = self._publish_status
        kernel.dispatch_shell = self._dispatch_shell

    @staticmethod
    def fits(kernel: Any) -> bool:
        """Whether ``kernel`` has the (ipykernel >= 7.4) methods this wraps."""
        dispatch = getattr(kernel, "dispatch_shell", None)
        if dispatch is None or not callable(getattr(kernel, "_publish_status", None)):
            return False
        try:
            return "concurrent" in inspect.signature(dispatch).parameters
        except (TypeError, ValueError):
            return False

    def enter(self, cell: dict[str, Any]) -> None:
        with self._lock:
            if self._runs == 0:
                self._cell = cell
            self._runs += 1

    def leave(self) -> None:
        with self._lock:
            self._runs -= 1
            if self._runs == 0:
                self._cell = None

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        with self._lock:
            self._publish(status, channel, parent)
            cell = self._cell
            if status != "idle" or cell is None:
                return
            answered = parent or self.kernel.get_parent(channel)
            if _msg_id(answered) != _msg_id(cell):
                self._publish("busy", "shell", cell)

    async def _dispatch_shell(
        self, msg: Any, subshell_id: str | None = None, *, concurrent: bool = False
    ) -> None:
        await self._dispatch(msg, subshell_id=subshell_id, concurrent=concurrent)
        if not concurrent or self._cell is None:
            return
        handled = self.kernel.get_parent("shell")
        if _msg_id(handled) not in (None, _msg_id(self._cell)):
            self._publish_status("idle", "shell", handled)
