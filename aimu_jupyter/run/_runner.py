"""One agent run in a notebook: assemble it from its spec, drive the loop, show it live.

Shared by ``%%agent`` and :func:`aimu_jupyter.run_agent` (``--each`` rows run in
:mod:`aimu_jupyter.run._each`). The run is a coroutine awaited by
the cell itself (a top-level-await cell), so the cell stays busy until the run ends, its
output lands in that cell, and an interrupt cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from aimu.agents.inbox import Inbox
from aimu.models.chunks import StreamChunk
from aimu.models.errors import ModelError
from aimu.models.prices import prices
from aimu_jupyter.kernel_tools._new_cells import CodeLog, logging_code_to
from aimu_jupyter.run import _options as run_options
from aimu_jupyter.run._assemble import assemble
from aimu_jupyter.run._errors import AgentFailed, AgentInterrupted
from aimu_jupyter.run._kernel_status import kernel_busy
from aimu_jupyter.run._quiet import quiet_library_logs
from aimu_jupyter.run._session import DEFAULT_CONVERSATION, Session
from aimu_jupyter.run._spec import RunSpec
from aimu_jupyter.run._wake import sigint_cancels, wake_on_signals
from aimu_jupyter.view._choose import RunView, open_view
from aimu_jupyter.view._inbox_box import InboxBox
from aimu_jupyter.view._inbox_field import InboxFields
from aimu_jupyter.view._record import RunRecord


async def run(session: Session, prompt: str, spec: RunSpec) -> Any:
    """Run ``prompt`` as ``spec`` says in a conversation of ``session`` and return the final
    answer (with a schema, a validated instance). The kernel reads busy until the run ends
    (:func:`~aimu_jupyter.run._kernel_status.kernel_busy`), whatever the frontend sends
    meanwhile.

    Raises :class:`UsageError` for options the user got wrong, :class:`AgentFailed` when
    the model cannot be used, :class:`AgentInterrupted` when the run is stopped.
    """
    with kernel_busy(getattr(session.shell, "kernel", None)):
        quiet_library_logs()
        parts = await assemble(session, spec)
        conversation = session.conversation(spec.name, spec.new)
        parts.client = client = conversation.keep(parts.client)
        price = prices.for_client(client)
        record = RunRecord(prompt, client.name, sees_images=client.sees_images, price=price,
                           structured=parts.answer_type is not None)  # fmt: skip
        view = open_view(session, parts.settings, record, display=spec.display, nested=spec.nested)
        policy = parts.policy(
            ask=view.ask,
            always_allowed=conversation.always_allowed,
            always_chosen=conversation.always_chosen,
        )
        stop = asyncio.Event()
        inbox = Inbox() if view.may_draw_widgets else None  # someone may type into the box
        events = session.usage.sink(spec.name or DEFAULT_CONVERSATION, price)
        agent = parts.agent(
            policy, view.settle, stop, name=record.agent, inbox=inbox, events=events
        )
        agent.messages = conversation.messages
        if spec.system_message is not None and agent.messages:
            _replace_system(agent.messages, spec.system_message)
        session.notebook_bridge()  # ready before the record is shown: the extension opens it
        async with _inbox_shown(session, view, record, inbox):
            stream = agent.stream(prompt, schema=parts.answer_type)
            await _follow(
                stream,
                record,
                view,
                stop,
                conversation.code_log,
                in_terminal=getattr(session.shell, "kernel", None) is None,
            )
        if parts.answer_type is not None:
            return run_options.structured_answer(record.answer, parts.answer_type)
        return record.answer


async def _follow(
    stream: AsyncIterator[StreamChunk],
    record: RunRecord,
    view: RunView,
    stop: asyncio.Event,
    code_log: CodeLog,
    in_terminal: bool,
) -> None:
    """Fold the run's chunks into its record and view until it ends; end the record as the
    run ended (done, stopped, failed) and raise what the cell shows for it."""
    try:
        interrupts = sigint_cancels() if in_terminal else contextlib.nullcontext()
        with wake_on_signals(), logging_code_to(code_log), interrupts:
            async for chunk in stream:
                record.apply(chunk)
                view.feed(chunk)
                if stop.is_set():
                    raise KeyboardInterrupt
    except (asyncio.CancelledError, KeyboardInterrupt):
        record.finish("interrupted")
        raise AgentInterrupted() from None
    except ModelError as exc:
        record.finish("error", str(exc))
        raise AgentFailed(str(exc)) from None
    except BaseException as exc:
        record.finish("error", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        await stream.aclose()


@contextlib.asynccontextmanager
async def _inbox_shown(
    session: Session, view: RunView, record: RunRecord, inbox: Inbox | None
) -> AsyncIterator[None]:
    """Show the run, with a "tell the agent…" field while it runs if someone may type into
    it; close the view, the box and the field when the run ends."""
    fields = session.inbox_fields if inbox is not None else None
    if fields is not None:
        record.inbox = uuid.uuid4().hex
        fields.open(record.inbox, inbox)
    running = session.inbox_fields
    if running is not None:
        running.running.add(record.run)
    view.show()
    boxes: list[InboxBox] = []
    showing = None
    if inbox is not None:
        showing = asyncio.ensure_future(_show_box(view, inbox, boxes, fields, record.inbox))
    try:
        yield
    finally:
        if showing is not None:
            showing.cancel()
            await asyncio.gather(showing, return_exceptions=True)
        for box in boxes:
            box.close()
        if fields is not None and record.inbox is not None:
            fields.close(record.inbox)
            record.inbox = None  # the extension's field goes with the final record
        if running is not None:
            running.running.discard(record.run)
        await view.close()


async def _show_box(
    view: RunView,
    inbox: Inbox,
    shown: list[InboxBox],
    fields: InboxFields | None,
    key: str | None,
) -> None:
    """Show the "tell the agent…" box once the frontend is known to draw widgets, unless the
    lab extension claimed the run's inbox for its own field (:mod:`.inbox_field`)."""
    if fields is not None and key is not None and await fields.claimed(key):
        return
    if await view.widgets_drawn():
        box = InboxBox(inbox)
        box.show()
        shown.append(box)


def _replace_system(messages: list[dict[str, Any]], system: str) -> None:
    if messages and messages[0].get("role") == "system":
        messages[0] = {"role": "system", "content": system}
    else:
        messages.insert(0, {"role": "system", "content": system})
