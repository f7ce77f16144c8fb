"""LoopThread, the one bridge from blocking code to an event loop in a daemon thread: an
interrupt cancels the task there and is raised once the task's ``finally`` blocks have run,
a stop event does the same for a tool's worker thread, and closing is bounded and works from
the loop's own thread."""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import threading
import time

import pytest

from aimu._sync import LoopThread, at_close
from aimu.tools.stopping import CallStopped

request = contextvars.ContextVar("request", default="none")


@pytest.fixture
def loop_thread():
    worker = LoopThread("aimu-test")
    yield worker
    worker.close()
    assert worker.join(0)


class Hang:
    """A coroutine that waits forever and notes, from its ``finally``, that it cleaned up."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cleaned = threading.Event()

    async def __call__(self) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.2)  # clean-up that needs the loop
            self.cleaned.set()
        return "unreachable"

    def interrupt_when_started(self) -> None:
        def press() -> None:
            self.started.wait(10)
            _thread.interrupt_main()

        threading.Thread(target=press, daemon=True).start()


def test_the_loop_runs_in_a_daemon_thread_of_the_given_name(loop_thread):
    async def where() -> tuple[str, bool]:
        thread = threading.current_thread()
        return thread.name, thread.daemon

    assert loop_thread.run(where) == ("aimu-test", True)


def test_work_runs_in_a_copy_of_the_callers_context(loop_thread):
    async def seen() -> str:
        value = request.get()
        request.set("changed on the loop")
        return value

    token = request.set("cell 7")
    try:
        assert loop_thread.run(seen) == "cell 7"
        assert loop_thread.submit(seen).result(5) == "cell 7"
        assert request.get() == "cell 7"
    finally:
        request.reset(token)


def test_an_interrupt_cancels_the_task_and_is_raised_after_its_finally_ran(
    loop_thread, sigint_handled
):
    hang = Hang()
    hang.interrupt_when_started()
    with pytest.raises(KeyboardInterrupt):
        loop_thread.run(hang)
    assert hang.cleaned.is_set()
    assert loop_thread.run(lambda: asyncio.sleep(0, "still serving")) == "still serving"


def test_an_interrupted_task_that_raises_its_own_error_ends_with_that_error(
    loop_thread, sigint_handled
):
    started = threading.Event()

    async def converts() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise LookupError("interrupted, recorded as such") from None

    threading.Thread(target=lambda: (started.wait(10), _thread.interrupt_main())).start()
    with pytest.raises(LookupError, match="recorded as such"):
        loop_thread.run(converts)


def test_a_keyboard_interrupt_raised_by_the_task_reaches_the_caller_and_the_loop_goes_on(
    loop_thread,
):
    class Stopped(KeyboardInterrupt):
        """As an interrupted notebook run ends (``AgentInterrupted``)."""

    async def interrupted() -> None:
        raise Stopped("the run was stopped")

    with pytest.raises(Stopped):
        loop_thread.run(interrupted)
    assert loop_thread.run(lambda: asyncio.sleep(0, "still serving")) == "still serving"


def test_an_interrupted_iteration_is_cancelled_on_the_loop(loop_thread, sigint_handled):
    hang = Hang()

    async def items():
        yield 1
        await hang()

    seen = []
    with pytest.raises(KeyboardInterrupt):
        for item in loop_thread.iterate(items):
            seen.append(item)
            hang.interrupt_when_started()
    assert seen == [1]
    assert hang.cleaned.is_set()


def test_leaving_an_iteration_early_cancels_it_on_the_loop(loop_thread):
    hang = Hang()

    async def items():
        yield "first"
        await hang()

    stream = loop_thread.iterate(items)
    assert next(stream) == "first"
    hang.started.wait(10)
    stream.close()
    assert hang.cleaned.is_set()


def test_a_set_stop_event_cancels_the_task_and_raises_call_stopped(loop_thread):
    hang = Hang()
    stop = threading.Event()
    threading.Thread(target=lambda: (hang.started.wait(10), stop.set())).start()
    with pytest.raises(CallStopped):
        loop_thread.run(hang, stop=stop)
    assert hang.cleaned.is_set()


def test_cancelling_a_submitted_future_cancels_its_task():
    worker = LoopThread()
    hang = Hang()
    future = worker.submit(hang)
    assert hang.started.wait(10)
    future.cancel()
    assert hang.cleaned.wait(10)
    worker.close()


def test_close_ends_what_still_runs_then_releases_the_loop_and_refuses_new_work():
    worker = LoopThread()
    hang = Hang()
    released: list[str] = []

    async def release() -> None:
        released.append("pool closed")

    async def last() -> None:
        released.append("last")

    at_close(worker.loop, release)
    running = worker.submit(hang)
    assert hang.started.wait(10)
    worker.close(last)
    assert worker.join(0)
    assert released == ["last", "pool closed"]
    assert hang.cleaned.is_set() and running.cancelled()
    assert worker.loop.is_closed()
    with pytest.raises(RuntimeError, match="closed"):
        worker.run(lambda: asyncio.sleep(0))
    worker.close()


def test_close_from_the_loops_own_thread_returns_and_the_loop_ends():
    worker = LoopThread()

    async def close_here() -> str:
        worker.close()
        return "returned"

    assert worker.submit(close_here).result(5) == "returned"
    assert worker.join(5)


def test_close_gives_up_on_a_last_step_that_hangs():
    worker = LoopThread()
    gate = threading.Event()
    started = time.monotonic()
    worker.close(lambda: asyncio.to_thread(gate.wait), timeout=0.3)
    assert time.monotonic() - started < 2
    assert not worker.join(0)  # abandoned to its daemon thread
    gate.set()
    assert worker.join(10)
