"""One display per run, updated in place, throttled, with a guaranteed final update.

jupyter_server drops iopub messages above its rate limit, and a streamed answer produces far
more chunks than a browser needs frames. :class:`LiveDisplay` publishes at most one update
per ``min_interval`` (20 per second by default), spaces large bundles further apart so the
bytes sent stay bounded, and always publishes the last state on :meth:`LiveDisplay.close`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

Publish = Callable[[dict[str, Any], bool], None]

#: At most this many updates per second.
MAX_RATE = 20.0
#: Bundles are spaced so that no more than this many bytes per second are published.
BYTE_RATE = 2_000_000


class LiveDisplay:
    """Throttled publication of ``render()``'s MIME bundle to one display.

    ``publish(bundle, first)`` sends the bundle (``first`` is true for the initial display,
    false for updates). :meth:`changed` is cheap to call on every chunk; a timer on the
    running event loop publishes the latest state when an update was held back. With
    ``final_only`` (a terminal, where a display cannot be updated in place) only
    :meth:`close` publishes.
    """

    def __init__(
        self,
        render: Callable[[], dict[str, Any]],
        publish: Publish,
        *,
        min_interval: float = 1.0 / MAX_RATE,
        byte_rate: float = BYTE_RATE,
        clock: Callable[[], float] = time.monotonic,
        final_only: bool = False,
    ):
        self._render = render
        self._final_only = final_only
        self._publish = publish
        self._min_interval = min_interval
        self._byte_rate = byte_rate
        self._clock = clock
        self._interval = min_interval
        self._last = -float("inf")
        self._timer: asyncio.TimerHandle | None = None
        self._shown = False
        self._closed = False
        self._extra: dict[str, Any] = {}
        self.updates = 0

    def show(self) -> None:
        """Publish the initial state now (a new display, not an update: the first update
        may follow at once, so the first words of an answer are not held back)."""
        if self._final_only:
            return
        self._flush()
        self._last = -float("inf")

    def changed(self) -> None:
        """Note that the state changed: publish now, or schedule it if too soon."""
        if self._closed or self._final_only:
            return
        now = self._clock()
        due = self._last + self._interval
        if now >= due:
            self._flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._timer = loop.call_later(due - now, self._on_timer)

    async def settle(self) -> None:
        """Show the current state before the loop blocks (a tool about to run inline).

        Yields first so chunks already emitted are folded in, then waits out the throttle
        rather than breaking it.
        """
        for _ in range(3):
            await asyncio.sleep(0)
        if self._closed or self._final_only:
            return
        wait = self._last + self._interval - self._clock()
        if wait > 0:
            await asyncio.sleep(wait)
        self._flush()

    def overlay(self, extra: dict[str, Any] | None) -> None:
        """Publish ``extra`` MIME entries with every bundle until called with ``None``.

        An approval panel is shown this way, as a widget view in the run's own output: once
        it is answered the output is the record alone, and nothing is left behind.
        """
        self._extra = dict(extra or {})
        if not self._closed and not self._final_only:
            self._flush()

    def close(self) -> None:
        """Publish the final state, whatever the throttle says, and stop the timer."""
        if self._closed:
            return
        self._extra = {}
        self._flush()
        self._closed = True

    def _on_timer(self) -> None:
        self._timer = None
        if not self._closed:
            self._flush()

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        bundle = self._render()
        if self._extra:
            bundle = {**bundle, **self._extra}
        self._publish(bundle, not self._shown)
        self._shown = True
        self.updates += 1
        self._last = self._clock()
        size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in bundle.values())
        self._interval = max(self._min_interval, size / self._byte_rate)
