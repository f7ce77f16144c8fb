"""One agent run in a notebook: resolve the options, drive the loop, show it live.

Shared by ``%%agent`` and :func:`aimu_jupyter.run_agent`. The run is a coroutine awaited by
the cell itself (a top-level-await cell), so the cell stays busy until the run ends, its
output lands in that cell, and an interrupt cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import string
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError

from aimu.agents.inbox import Inbox
from aimu.aio import Agent
from aimu.models.base import ModelClient
from aimu.models.chunks import Phase
from aimu.models.errors import ModelError, NoDefaultModelError
from aimu.models.prices import prices
from aimu_jupyter.approval._policy import MODES, NotebookPolicy
from aimu_jupyter.kernel_tools._new_cells import logging_code_to
from aimu_jupyter.magics import _options as run_options
from aimu_jupyter.run._errors import AgentFailed, AgentInterrupted
from aimu_jupyter.run._kernel_status import kernel_busy
from aimu_jupyter.run._quiet import quiet_library_logs
from aimu_jupyter.run._session import DEFAULT_CONVERSATION, Session, Settings
from aimu_jupyter.run._toolbox import Toolset, resolve_tools
from aimu_jupyter.run._wake import sigint_cancels, wake_on_signals
from aimu_jupyter.view._choose import RunView, open_view
from aimu_jupyter.view._inbox_box import InboxBox
from aimu_jupyter.view._inbox_field import InboxFields
from aimu_jupyter.view._record import RunRecord

NO_MODEL = (
    "No model chosen for the agent. Pick one with --model provider:model "
    "(e.g. --model openai:gpt-4o-mini or --model ollama:qwen3:8b), "
    "%config AimuMagics.model = 'provider:model', or the AIMU_MODEL environment variable."
)


async def run(session: Session, prompt: str, **options: Any) -> Any:
    """Run ``prompt`` in a conversation of ``session`` and return the final answer (see
    :func:`_run` for the options). The kernel reads busy until the run ends
    (:func:`~aimu_jupyter.run._kernel_status.kernel_busy`), whatever the frontend sends
    meanwhile."""
    with kernel_busy(getattr(session.shell, "kernel", None)):
        return await _run(session, prompt, **options)


async def _run(
    session: Session,
    prompt: str,
    *,
    model: str | ModelClient | None = None,
    tools: str | list[Any] | None = None,
    approve: str | Callable | None = None,
    name: str | None = None,
    new: bool = False,
    system: str | None = None,
    max_iterations: int | None = None,
    display: bool = True,
    nested: bool = False,
    thinking: str | bool | None = None,
    generate_kwargs: list[str] | Mapping[str, Any] | None = None,
    compact: str | Callable | None = None,
    schema: str | type | None = None,
    trust_mcp: str | list[Any] | None = None,
    cache: bool | str | None = None,
    fresh: bool = False,
) -> Any:
    """Run ``prompt`` in a conversation of ``session`` and return the final answer.

    ``nested``: the run is driven from inside another cell magic (``%%time``, ``%%capture``)
    on a loop of its own, so no button click can reach it. ``thinking``,
    ``generate_kwargs`` (``name=value`` texts or a dict), ``compact`` and ``schema`` are
    ``--thinking``, ``--option``, ``--compact`` and ``--schema`` (see
    :mod:`aimu_jupyter.magics._options`); with a schema the answer is a validated instance.
    ``trust_mcp`` is ``--trust-mcp``: the MCP clients of ``tools`` whose servers are trusted.
    ``cache`` and ``fresh`` are ``--cache [PATH]`` and ``--fresh``: answers given before are
    replayed from the store (tools still run), and the record says so.

    Raises :class:`UsageError` for options the user got wrong, :class:`AgentFailed` when
    the model cannot be used, :class:`AgentInterrupted` when the run is stopped.
    """
    quiet_library_logs()
    settings = session.settings()
    options = await resolve_options(
        session, settings, model, tools, approve, max_iterations, trust_mcp
    )
    client, toolset, mode, custom, iterations = options
    client = run_options.response_cache(client, cache, settings.cache, fresh)
    user_ns = session.user_ns
    shaping = {
        "thinking": run_options.thinking(thinking),
        "generate_kwargs": run_options.generate_kwargs(generate_kwargs),
        "compaction": run_options.compaction(compact, user_ns),
        "events": session.usage.sink(name or DEFAULT_CONVERSATION, prices.for_client(client)),
    }
    answer_type = run_options.schema(schema, user_ns)

    conversation = session.conversation(name, new)
    client = conversation.keep(client)
    record = RunRecord(prompt, client.name, sees_images=client.sees_images,
                       price=prices.for_client(client),
                       structured=answer_type is not None)  # fmt: skip
    view = open_view(session, settings, record, display=display, nested=nested)
    policy = custom or NotebookPolicy(
        mode=mode,
        ask=view.ask,
        always_allowed=conversation.always_allowed,
        always_chosen=conversation.always_chosen,
    )
    stop = asyncio.Event()
    inbox = Inbox() if view.may_draw_widgets else None  # someone may type into the box
    agent = Agent(
        client,
        system_message=system if system is not None else settings.system or None,
        tools=toolset.for_kernel(view.settle, stop),
        tool_approval=policy,
        max_iterations=iterations,
        concurrent_tool_calls=settings.concurrent_tool_calls,
        name=record.agent,
        inbox=inbox,
        **shaping,
    )
    agent.messages = conversation.messages
    if system is not None and agent.messages:
        _replace_system(agent.messages, system)

    session.notebook_bridge()  # ready before the record is shown: the extension opens it then
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
    decided_by = getattr(policy, "decided_by", None)
    allowed_always = getattr(policy, "allowed_always", None)
    stream = agent.stream(prompt, schema=answer_type)
    in_terminal = getattr(session.shell, "kernel", None) is None
    try:
        interrupts = sigint_cancels() if in_terminal else contextlib.nullcontext()
        with wake_on_signals(), logging_code_to(conversation.code_log), interrupts:
            async for chunk in stream:
                by = None
                if chunk.phase is Phase.APPROVAL_DECIDED and decided_by is not None:
                    by = decided_by(chunk.content.get("name", ""))
                record.apply(chunk, approved_by=by)
                if chunk.phase is Phase.TOOL_RESULT and allowed_always is not None:
                    _note_always(record, chunk.content, allowed_always)
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
    if answer_type is not None:
        return run_options.structured_answer(record.answer, answer_type)
    return record.answer


def _note_always(
    record: RunRecord, content: dict[str, Any], allowed_always: Callable[[str], str | None]
) -> None:
    """Mark a call that "Always allow" let through without asking, on its card."""
    card = record.pending_tool(str(content.get("id", "")))
    if card is None or card["approval"] is not None:
        return
    chosen = allowed_always(str(content.get("name", "")))
    if chosen is not None:
        record.allowed_always(card["id"], chosen)


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


async def resolve_options(
    session: Session,
    settings: Settings,
    model: str | ModelClient | None,
    tools: str | list[Any] | None,
    approve: str | Callable | None,
    max_iterations: int | None,
    trust_mcp: str | list[Any] | None = None,
) -> tuple[ModelClient, Toolset, str | None, Callable | None, int]:
    """``(client, toolset, approval mode, custom policy, max iterations)`` for a run's options,
    each falling back to the notebook's ``%config`` settings."""
    user_ns = session.user_ns
    client = resolve_model(model, settings, user_ns)
    toolset = await resolve_tools(
        _tool_items(tools if tools is not None else settings.tools),
        user_ns,
        session.registry,
        lambda: session.python_tool(settings.allowed_imports),
        session.notebook_tools,
        _tool_items(trust_mcp or []),
    )
    mode, custom = _approval(approve if approve is not None else settings.approval, user_ns)
    iterations = max_iterations if max_iterations is not None else settings.max_iterations
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise UsageError(f"--max-iterations must be a whole number >= 1, not {iterations!r}")
    return client, toolset, mode, custom, iterations


def resolve_model(
    model: str | ModelClient | None, settings: Settings, user_ns: Mapping[str, Any]
) -> ModelClient:
    """The client for ``--model``: a notebook variable holding a ``ModelClient``, a
    ``"provider:model"`` string, or the configured default."""
    if isinstance(model, ModelClient):
        return model
    if model is not None and not isinstance(model, str):
        raise UsageError(
            f"--model takes 'provider:model' or a ModelClient, not {type(model).__name__}"
        )
    spec = (model or "").strip() or settings.model_spec()
    if spec.isidentifier() and spec in user_ns:
        value = user_ns[spec]
        if isinstance(value, ModelClient):
            return value
        if not isinstance(value, str):
            raise UsageError(
                f"--model {spec}: the notebook variable {spec!r} holds a "
                f"{type(value).__name__}, not a ModelClient (e.g. aimu.client('openai:gpt-4o'))"
            )
        spec = value.strip()
    from aimu.models import registry

    try:
        return registry.client(spec or registry.default_model())
    except NoDefaultModelError:
        raise UsageError(f"{NO_MODEL} To work offline: pip install 'aimu-jupyter[local]'") from None
    except ModelError as exc:
        raise AgentFailed(str(exc)) from None
    except TypeError as exc:
        raise UsageError(f"--model: {exc}") from None


def interpolate(prompt: str, user_ns: Mapping[str, Any]) -> str:
    """Replace ``{name}`` (and ``{name.attr}``, ``{name[0]}``, ``{name:.2f}``) with notebook
    values; ``{{`` and ``}}`` are literal braces. An unknown name is an error."""
    hint = (
        "Double the braces ({{ }}) for literal ones, or use --no-interpolate for prompts "
        "with code or JSON."
    )
    try:
        return string.Formatter().vformat(prompt, (), _Names(user_ns))
    except _Placeholder as exc:
        field = exc.args[0]
        if field.isidentifier():
            problem = f"the prompt uses {{{field}}} but no notebook variable is named {field!r}"
        else:
            problem = (
                f"{{{field}}} in the prompt is not a variable name (only {{name}}, "
                "{name.attr} and {name[key]} are filled in)"
            )
        raise UsageError(f"{problem}. {hint}") from None
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise UsageError(
            f"the prompt's {{...}} placeholders could not be filled "
            f"({type(exc).__name__}: {exc}). {hint}"
        ) from None


class _Placeholder(KeyError):
    """A ``{field}`` that names no notebook variable."""


class _Names(Mapping):
    def __init__(self, user_ns: Mapping[str, Any]):
        self._ns = user_ns

    def __getitem__(self, key: str) -> Any:
        if not key.isidentifier() or key not in self._ns:
            raise _Placeholder(key)
        return self._ns[key]

    def __iter__(self):
        return iter(self._ns)

    def __len__(self) -> int:
        return len(self._ns)


def _tool_items(tools: str | list[Any]) -> list[Any]:
    """``--tools`` as a list of item names (and, from Python, tool objects)."""
    if isinstance(tools, str):
        return [item.strip() for item in tools.split(",") if item.strip()]
    items: list[Any] = []
    for item in tools:
        items.extend(_tool_items(item) if isinstance(item, str) else [item])
    return items


def _approval(value: str | Callable, user_ns: Mapping[str, Any]) -> tuple[str | None, Any]:
    """``(mode, custom policy)`` from ``--approve``: a mode name, a callable, or the name of
    a notebook variable holding a policy."""
    if callable(value):
        return None, value
    text = (value or "").strip().lower()
    if not text:
        return None, None
    if text in MODES:
        return text, None
    if value.strip() in user_ns and callable(user_ns[value.strip()]):
        return None, user_ns[value.strip()]
    raise UsageError(
        f"--approve {value}: use auto (run every call), ask (ask for every call), deny "
        "(refuse calls that would ask), or the name of a notebook variable holding a policy"
    )


def _replace_system(messages: list[dict[str, Any]], system: str) -> None:
    if messages and messages[0].get("role") == "system":
        messages[0] = {"role": "system", "content": system}
    else:
        messages.insert(0, {"role": "system", "content": system})
