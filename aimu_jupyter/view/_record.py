"""The record of one agent run, folded from its :class:`~aimu.models.StreamChunk` stream.

:class:`RunRecord` turns chunks into the structured transcript the JupyterLab extension
renders (``application/vnd.aimu.run+json``, version 1) and into the Markdown and plain-text
fallbacks every other frontend shows (VS Code, nbviewer, GitHub). It knows nothing about
IPython: the notebook layer feeds it chunks and publishes :meth:`RunRecord.bundle`. What a
model, a tool or a server wrote is escaped for the view it goes into (:mod:`aimu.text`):
HTML in it is shown as text in the Markdown, control characters are shown in the plain
text, and only known image types become ``data:`` URLs.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from aimu.models.chunks import Phase, StreamChunk
from aimu.models.prices import Price, format_money
from aimu.secrets import redact
from aimu.text import data_url, inline_code, markdown_line, markdown_text, visible, visible_line

MIME_TYPE = "application/vnd.aimu.run+json"
VERSION = 1

#: A tool's progress list keeps at most this many of its latest entries.
PROGRESS_KEPT = 50
#: Results longer than this (characters or lines) are folded in the Markdown view.
FOLD_CHARS = 600
FOLD_LINES = 12
#: Argument values longer than this are shortened in the Markdown view.
ARGUMENT_CHARS = 300

_APPROVAL_SOURCES = ("user", "policy", "timeout", "always")
#: What a call stopped by the user (the stop button, an interrupt) says, whatever it was doing.
STOPPED = "stopped by you"
#: What a record still running says about itself, for a copy saved before the run ended.
#: The footer's words for a run that stopped at its limit of tool rounds.
AT_LIMIT = "stopped at the limit of tool rounds (max_iterations): its last calls did not run"
UNFINISHED = "if this notebook was reopened, the run did not finish: the kernel stopped"
#: What a card with images says when the run's model reads text only.
UNSEEN = "The model did not see the images: it reads text only."


class ShownPrompt(str):
    """A prompt written for the model that a person reads in another form: ``markdown``.

    ``%agent_fix`` sends the model the whole trimmed traceback and fenced sources; the run's
    record shows the person the question, the cell and the error instead. It is a ``str``,
    so it goes everywhere a prompt goes unchanged.
    """

    markdown: str

    def __new__(cls, text: str, markdown: str) -> ShownPrompt:
        made = super().__new__(cls, text)
        made.markdown = markdown
        return made

    def __reduce__(self):
        return ShownPrompt, (str(self), self.markdown)


class RunRecord:
    """One run's transcript, built only from the chunks it is given.

    ``apply(chunk)`` folds one chunk in; ``finish(status, error)`` closes the record. Chunks
    of a sub-agent (named ``f"{parent}/{label}@{tool_call_id}"``) are nested under the tool
    card with that id, as that card's ``children``. ``sees_images`` is the run's client's
    :attr:`~aimu.models.base.ModelClient.sees_images`: for a model that reads text only, a
    card with images says so once (:data:`UNSEEN`) instead of naming each image.
    """

    def __init__(
        self,
        prompt: str,
        model: str,
        agent: str = "agent",
        clock: Callable[[], float] = time.monotonic,
        sees_images: bool = True,
        price: Price | None = None,
        structured: bool = False,
    ):
        self.prompt = str(prompt)
        #: A ``--schema`` run: its answer is a validated value, shown as a table.
        self.structured = structured
        #: What the record shows in place of the prompt (Markdown), when it is not the text.
        self.prompt_markdown: str | None = getattr(prompt, "markdown", None)
        self.model = redact(model)
        #: The model's price (:data:`aimu.prices`): the footer shows the run's cost.
        self.price = price
        self.agent = agent
        self.status = "running"
        self.error: str | None = None
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.events: list[dict[str, Any]] = []
        self.answer = ""
        #: The turns a response cache answered: ``[{"iteration", "answered"}]``.
        self.replayed: list[dict[str, Any]] = []
        #: Whether the run stopped at its limit of tool rounds.
        self.at_limit = False
        self._turns = 0
        self._clock = clock
        self._started = clock()
        self._ended: float | None = None
        self._tools: dict[int, dict[str, dict[str, Any]]] = {}
        self._sees_images = sees_images
        #: While the run takes messages: the key the lab extension claims its inbox by.
        self.inbox: str | None = None
        #: Names the run, so a frontend can ask the kernel whether it still goes on.
        self.run = uuid.uuid4().hex

    # -- folding -------------------------------------------------------------------------

    def apply(self, chunk: StreamChunk) -> None:
        """Fold one chunk into the record."""
        events = self._events_for(chunk.agent)
        content = chunk.content
        phase = chunk.phase
        if phase is Phase.TEXT:
            _append_text(events, "text", content)
        elif phase is Phase.THINKING:
            _append_text(events, "thinking", content)
        elif phase is Phase.TOOL_CALL:
            card = self._card(events, content)
            card["arguments"] = content.get("arguments") or {}
            card["argument_names"] = _names(card["arguments"])
            card["code"] = _code_arguments(content.get("code"), card["arguments"])
            _show_arguments(card)
            if card["status"] not in ("awaiting_approval", "denied"):
                card["status"] = "running"
        elif phase is Phase.APPROVAL_REQUESTED:
            card = self._card(events, content)
            card["status"] = "awaiting_approval"
        elif phase is Phase.APPROVAL_DECIDED:
            card = self._card(events, content)
            approved = bool(content.get("approved"))
            by = content.get("by")
            by = by if by in _APPROVAL_SOURCES else "policy"
            card["approval"] = {
                "approved": approved,
                "reason": content.get("reason") or "",
                "by": by,
            }
            if content.get("why"):
                card["approval"]["why"] = content["why"]
            if by == "always":
                card["approval"]["chosen_at"] = str(content.get("chosen_at") or "")
            card["status"] = "running" if approved else "denied"
        elif phase is Phase.TOOL_PROGRESS:
            card = self._card(events, content)
            progress = content.get("progress")
            shown = progress_text(progress) if _is_step(progress) else progress
            card["progress"].append(visible(shown) if isinstance(shown, str) else shown)
            del card["progress"][:-PROGRESS_KEPT]
        elif phase is Phase.TOOL_RESULT:
            card = self._card(events, content)
            card["result"] = content.get("result")
            _show_result(card)
            card["is_error"] = bool(content.get("is_error"))
            card["images"] = list(content.get("images") or [])
            card["images_note"] = self._images_note(card["images"], content.get("images_unsent"))
            if content.get("diffs"):
                card["diffs"] = list(content["diffs"])
            if card["status"] != "denied":
                card["status"] = "error" if card["is_error"] else "done"
        elif phase is Phase.USER_MESSAGE:
            events.append({"type": "user_message", "text": str(content.get("text", ""))})
        elif phase is Phase.PLAN:
            _set_plan(events, content.get("entries") or [])
        elif phase is Phase.DONE and chunk.agent == self.agent:
            self.usage = dict(content.get("usage") or self.usage)
            self.answer = content.get("text", "")
            self.replayed = list(content.get("replayed") or [])
            if isinstance(content.get("output"), dict):
                _set_output(self.events, self.answer, content["output"])
            self._turns = chunk.iteration
            stop = content.get("stop_reason")
            self.at_limit = stop == "max_iterations"
            self.finish("interrupted" if stop == "interrupted" else "done")

    def _images_note(self, images: list[dict[str, Any]], unsent: Any) -> str:
        """What the card says about images the model will not get, as the chunk says it
        (``images_unsent``: per image, ``""`` or why not)."""
        if not images:
            return ""
        if not self._sees_images:
            return UNSEEN
        reasons = list(unsent) if isinstance(unsent, list) else []
        notes = [
            f"{image.get('description') or f'image {number}'}: {reason}"
            for number, (image, reason) in enumerate(zip(images, reasons, strict=False), 1)
            if isinstance(reason, str) and reason
        ]
        return "; ".join(notes)

    def finish(self, status: str, error: str | None = None) -> None:
        """Close the record: ``"done"``, ``"interrupted"`` or ``"error"`` (with a message)."""
        if status not in ("done", "interrupted", "error"):
            raise ValueError(f"unknown final status {status!r}")
        self.status = status
        self.error = error
        if self._ended is None:
            self._ended = self._clock()
        for card in _walk_tools(self.events):
            if card["status"] not in ("awaiting_approval", "running"):
                continue
            if status == "interrupted":
                card["status"] = "stopped"
                continue
            if card["status"] == "awaiting_approval":
                card["status"] = "denied"
                card["approval"] = {
                    "approved": False,
                    "by": "policy",
                    "reason": "the run ended before anyone answered",
                }
            else:
                card["status"] = "error"
                card["is_error"] = True
                if card["result"] is None:
                    card["result"] = (
                        "Stopped: the run ended while this call was running; it may have "
                        "done part of its work."
                    )

    def tool_cards(self):
        """Every tool card, sub-agents' included, in order."""
        return _walk_tools(self.events)

    def pending_tool(self, call_id: str) -> dict[str, Any] | None:
        """The tool card with ``call_id``, wherever it is nested."""
        for card in _walk_tools(self.events):
            if card["id"] == call_id:
                return card
        return None

    @property
    def duration_s(self) -> float:
        end = self._ended if self._ended is not None else self._clock()
        return round(max(0.0, end - self._started), 3)

    def _events_for(self, agent: str) -> list[dict[str, Any]]:
        """The event list a chunk from ``agent`` belongs in (nested for sub-agents)."""
        if agent == self.agent or not agent.startswith(self.agent + "/"):
            return self.events
        events = self.events
        for segment in agent[len(self.agent) + 1 :].split("/"):
            _, at, call_id = segment.rpartition("@")
            card = self._tools.get(id(events), {}).get(call_id) if at else None
            if card is None:
                return events
            events = card["children"]
        return events

    def _card(self, events: list[dict[str, Any]], content: dict[str, Any]) -> dict[str, Any]:
        call_id = str(content.get("id", ""))
        cards = self._tools.setdefault(id(events), {})
        card = cards.get(call_id)
        if card is None:
            card = {
                "type": "tool",
                "id": call_id,
                "name": str(content.get("name", "")),
                "arguments": content.get("arguments") or {},
                "argument_names": _names(content.get("arguments")),
                "code": {},
                "status": "running",
                "progress": [],
                "result": None,
                "is_error": False,
                "images": [],
                "images_note": "",
                "approval": None,
                "children": [],
            }
            _show_arguments(card)
            cards[call_id] = card
            events.append(card)
        return card

    # -- output --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The record in the ``application/vnd.aimu.run+json`` (version 1) shape."""
        return {
            "version": VERSION,
            "prompt": self.prompt,
            **({"prompt_markdown": self.prompt_markdown} if self.prompt_markdown else {}),
            "model": self.model,
            "status": self.status,
            "error": self.error,
            "usage": dict(self.usage),
            "duration_s": self.duration_s,
            "events": self.events,
            "inbox": self.inbox,
            **({"replayed": self._replayed_json()} if self.replayed else {}),
            **({"limit": AT_LIMIT} if self.at_limit else {}),
            "run": self.run,
        }

    def _replayed_json(self) -> dict[str, Any]:
        return {"turns": self.replayed, "note": replayed_note(self.replayed, self._turns)}

    def markdown(self) -> str:
        """The run as Markdown: answer, tool cards as folded sections, thinking folded."""
        parts = _events_markdown(self.events, final=self.status != "running")
        if self.prompt_markdown:
            parts.insert(0, _quote(self.prompt_markdown))
        if self.status == "running" and len(parts) == bool(self.prompt_markdown):
            parts.append("*Thinking…*")
        if self.status == "interrupted":
            parts.append(f"**{STOPPED.capitalize()}.** The conversation is kept.")
        elif self.status == "error":
            parts.append(f"**Error:** {_inline(self.error or 'the run failed')}")
        parts.append(f"<sub>{_inline(self.footer())}</sub>")
        return "\n\n".join(parts)

    def plain(self) -> str:
        """The run as plain text, for frontends that render nothing richer."""
        lines = _events_plain(self.events, indent="")
        if self.status == "interrupted":
            lines.append(f"[{STOPPED}] The conversation is kept.")
        elif self.status == "error":
            lines.append(f"[error] {self.error or 'the run failed'}")
        lines.append(f"-- {self.footer()}")
        return visible("\n".join(lines))

    def footer(self) -> str:
        """``model · N in / M out tokens · $cost · T s`` plus the status while not done (the
        cost where the model's price is known), and which turns a response cache replayed."""
        usage = self.usage
        parts = [
            self.model or "model",
            f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out tokens",
        ]
        if self.price is not None:
            parts.append(format_money(self.price.cost(usage)))
        parts.append(f"{self.duration_s:.1f} s")
        if self.status == "running":
            parts.append(f"running… ({UNFINISHED})")
        elif self.status == "interrupted":
            parts.append(STOPPED)
        elif self.status != "done":
            parts.append(self.status)
        if self.replayed:
            parts.append(replayed_note(self.replayed, self._turns))
        if self.at_limit:
            parts.append(AT_LIMIT)
        return " · ".join(parts)

    def bundle(self) -> dict[str, Any]:
        """The MIME bundle to publish: Markdown, plain text and the structured record."""
        return {
            "text/markdown": self.markdown(),
            "text/plain": self.plain(),
            MIME_TYPE: self.to_json(),
        }


# -- folding helpers ---------------------------------------------------------------------


def _append_text(events: list[dict[str, Any]], kind: str, text: Any) -> None:
    if not isinstance(text, str) or not text:
        return
    if events and events[-1]["type"] == kind:
        events[-1]["text"] += text
    else:
        events.append({"type": kind, "text": text})


def _set_output(events: list[dict[str, Any]], answer: str, output: dict[str, Any]) -> None:
    """Mark the run's answer as the validated ``output`` of a ``--schema`` run: the answer's
    text event (split from earlier text it was merged with, a rejected try) gets the value,
    which the views show as a table; the text stays, as the model wrote it."""
    last = events[-1] if events else None
    if last is None or last["type"] != "text" or not answer.strip():
        events.append({"type": "text", "text": answer, "output": output})
        return
    before, found, _ = last["text"].rpartition(answer)
    if not found:
        last["output"] = output
    elif before.strip():
        last["text"] = before
        events.append({"type": "text", "text": answer, "output": output})
    else:
        last["output"] = output


def output_rows(output: dict[str, Any]) -> list[tuple[str, str]]:
    """A validated answer as ``(field, value)`` rows: strings as they are, the rest JSON."""
    return [
        (str(name), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for name, value in output.items()
    ]


def _set_plan(events: list[dict[str, Any]], entries: list[Any]) -> None:
    """An outside agent's plan: one event, replaced in place by each newer plan."""
    shown = [
        {
            "content": str(e.get("content", "")),
            "status": str(e.get("status", "pending")),
            "priority": str(e.get("priority", "")),
        }
        for e in entries
        if isinstance(e, dict)
    ]
    for event in events:
        if event["type"] == "plan":
            event["entries"] = shown
            return
    events.append({"type": "plan", "entries": shown})


_PLAN_MARK = {"completed": "x", "in_progress": "~"}


def plan_lines(entries: list[dict[str, Any]]) -> list[str]:
    """A plan as checklist lines: ``[x]`` done, ``[~]`` in progress, ``[ ]`` pending."""
    return [f"[{_PLAN_MARK.get(e['status'], ' ')}] {_inline(e['content'])}" for e in entries]


def _walk_tools(events: list[dict[str, Any]]):
    for event in events:
        if event["type"] == "tool":
            yield event
            yield from _walk_tools(event["children"])


# -- Markdown ------------------------------------------------------------------------------

_STATUS_LABEL = {
    "awaiting_approval": "waiting for approval",
    "running": "running…",
    "done": "done",
    "error": "failed",
    "denied": "not run",
    "stopped": STOPPED,
}


def _events_markdown(events: list[dict[str, Any]], final: bool) -> list[str]:
    parts: list[str] = []
    for event in events:
        kind = event["type"]
        if kind == "text" and isinstance(event.get("output"), dict):
            rows = [f"| {_cell(k)} | {_cell(v)} |" for k, v in output_rows(event["output"])]
            parts.append("\n".join(["| field | value |", "| --- | --- |", *rows]))
        elif kind == "text":
            parts.append(markdown_text(event["text"].strip("\n")))
        elif kind == "thinking":
            parts.append(_details("Thinking", _quote(markdown_text(event["text"]))))
        elif kind == "tool":
            parts.append(_tool_markdown(event, final))
        elif kind == "user_message":
            parts.append(_quote(f"**You, during the run:** {markdown_text(event['text'])}"))
        elif kind == "plan":
            lines = "\n".join(f"- {line}" for line in plan_lines(event["entries"]))
            parts.append(f"**Plan**\n\n{lines}")
    return [part for part in parts if part]


def _tool_markdown(card: dict[str, Any], final: bool) -> str:
    status = _STATUS_LABEL.get(card["status"], card["status"])
    head = f"**🔧 {inline_code(card['name'])}** · {status}"
    approval = approval_line(card["approval"])
    if approval:
        head += f" · {_inline(approval)}"
    lines = [head]
    lines.extend(arguments_markdown(card))
    if card["progress"] and card["status"] == "running":
        lines.append(f"> {_inline(progress_text(card['progress'][-1]))}")
    if card["children"]:
        inner = "\n\n".join(_events_markdown(card["children"], final))
        lines.append(_details("sub-agent", _quote(inner)))
    result = card["result"]
    if result is not None:
        body = fence(visible(result), "diff" if card.get("diffs") else "")
        long = len(result) > FOLD_CHARS or result.count("\n") >= FOLD_LINES
        if long:
            lines.append(_details(f"result ({len(result):,} characters)", body))
        else:
            lines.append(body)
    for image in card["images"]:
        url = data_url(image.get("mime_type"), image.get("data"))
        if url is None:
            lines.append(_inline(image_line(image)))
        else:
            lines.append(f"![{markdown_line(image.get('description') or 'image')}]({url})")
    if card.get("images_note"):
        lines.append(f"*{_inline(card['images_note'])}*")
    return "\n\n".join(lines)


def replayed_note(replayed: list[dict[str, Any]], turns: int) -> str:
    """``replayed (answered 2026-05-01 09:30 UTC)``, or which turns of how many were."""
    first = min(str(turn.get("answered", "")) for turn in replayed)
    when = first.replace("T", " ").removesuffix("Z")[:16] + " UTC" if first else "earlier"
    if len(replayed) >= turns:
        return f"replayed (answered {when})"
    numbers = ", ".join(str(turn.get("iteration")) for turn in replayed)
    return f"turn{'s' * (len(replayed) > 1)} {numbers} of {turns} replayed (answered {when})"


def approval_line(approval: dict[str, Any] | None) -> str:
    """The static line that replaces an answered approval panel."""
    if not approval:
        return ""
    reason = approval.get("reason") or ""
    by = approval.get("by")
    why = approval.get("why") or ""
    asked = f" (it asked because {why})" if why else ""
    if by == "timeout":
        verdict = "approved" if approval.get("approved") else "denied"
        return f"timed out: {verdict} by policy{asked}"
    if by == "always":
        chosen = approval.get("chosen_at")
        return f"allowed: Always allow, chosen {f'at {chosen}' if chosen else 'here'}"
    if approval.get("approved"):
        return ("approved" if by == "user" else "approved by policy") + asked
    text = "denied" if by == "user" else "denied by policy"
    return (f"{text}: {reason}" if reason else text) + asked


def arguments_markdown(card: dict[str, Any]) -> list[str]:
    """A call's arguments as a reader wants them: each argument that is code as a code
    block, the others as a small table (long values shortened)."""
    arguments = card["arguments"]
    if not isinstance(arguments, dict):
        return (
            [_details("arguments", fence(pretty_arguments(arguments), "json"))] if arguments else []
        )
    code = card.get("code") or {}
    names = ordered_names(card)
    parts = []
    plain = [name for name in names if name not in code]
    if plain:
        rows = [f"| `{_cell(name)}` | {_cell(_value_text(arguments[name]))} |" for name in plain]
        parts.append("\n".join(["| argument | value |", "| --- | --- |", *rows]))
    for name in names:
        if name not in code:
            continue
        label = f"`{_inline(name)}`" + (f" ({code[name]})" if code[name] else "")
        block = card["code_markdown"][name]
        text = str(arguments[name])
        if len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES:
            parts.append(_details(f"{label}: {text.count(chr(10)) + 1:,} lines", block))
        else:
            parts.append(f"{label}:\n\n{block}")
    return parts


def call_label(tool_name: str, arguments: Any, limit: int = 60) -> str:
    """``name(a=1, b="x")``, one short line of plain text naming a call to a person (whoever
    writes it into Markdown or HTML escapes it there)."""
    if isinstance(arguments, dict):
        shown = ", ".join(
            f"{k}={_value_text(v)!r}" if isinstance(v, str) else f"{k}={_value_text(v)}"
            for k, v in arguments.items()
        )
    else:
        shown = _value_text(arguments)
    shown = " ".join(visible_line(shown).split())
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f"{tool_name}({shown})"


def ordered_names(card: dict[str, Any]) -> list[str]:
    """The card's argument names in the order the model gave them (a saved notebook sorts
    JSON keys; ``argument_names`` keeps the order)."""
    arguments = card["arguments"] if isinstance(card["arguments"], dict) else {}
    order = [n for n in card.get("argument_names") or () if n in arguments]
    return order + [n for n in arguments if n not in order]


def _names(arguments: Any) -> list[str]:
    return list(arguments) if isinstance(arguments, dict) else []


def _show_arguments(card: dict[str, Any]) -> None:
    """Give the card what a frontend draws for its arguments, so no frontend restates the
    rules: each code argument as a fenced Markdown block, and under ``shown`` the string
    arguments whose control or bidi characters must be shown rather than obeyed."""
    arguments = card["arguments"]
    code = card["code"]
    card.pop("code_markdown", None)
    if code:
        card["code_markdown"] = {name: fence(arguments[name], code[name]) for name in code}
    strings = arguments.items() if isinstance(arguments, dict) else ()
    shown = {name: visible(v) for name, v in strings if isinstance(v, str) and visible(v) != v}
    _set_shown(card, "arguments", shown)


def _show_result(card: dict[str, Any]) -> None:
    result = card["result"]
    shown = visible(result) if isinstance(result, str) else result
    _set_shown(card, "result", shown if shown != result else None)


def _set_shown(card: dict[str, Any], field: str, value: Any) -> None:
    shown = {k: v for k, v in card.get("shown", {}).items() if k != field}
    if value:
        shown[field] = value
    if shown:
        card["shown"] = shown
    else:
        card.pop("shown", None)


def _code_arguments(declared: Any, arguments: Any) -> dict[str, str]:
    """The tool's ``__tool_code__`` entries naming string arguments of this call."""
    if not isinstance(declared, dict) or not isinstance(arguments, dict):
        return {}
    return {
        str(name): str(language or "")
        for name, language in declared.items()
        if isinstance(arguments.get(name), str)
    }


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return (
        text
        if len(text) <= ARGUMENT_CHARS
        else f"{text[:ARGUMENT_CHARS]}… ({len(text):,} characters)"
    )


def _cell(text: str) -> str:
    """``text`` inside a Markdown table cell: one line, pipes and backticks kept literal."""
    return _inline(text).replace("|", "\\|").replace("`", "\\`")


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.strip("\n").split("\n"))


def fence(text: str, language: str = "") -> str:
    """``text`` as a fenced code block; its control and bidi characters shown, not obeyed
    (a Markdown viewer prints a code block as it is)."""
    text = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = language if re.fullmatch(r"[\w.+#-]*", language) else ""  # one word, or none
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _inline(text: str) -> str:
    return markdown_line(str(text))


def pretty_arguments(arguments: Any, fold: bool = True) -> str:
    """Arguments as indented JSON, long string values shortened unless ``fold`` is false
    (an approval panel shows what it approves in full)."""
    shown = _fold_values(arguments) if fold else arguments
    return json.dumps(shown, indent=2, ensure_ascii=False, default=str)


def _fold_values(value: Any) -> Any:
    if isinstance(value, str) and len(value) > ARGUMENT_CHARS:
        return f"{value[:ARGUMENT_CHARS]}… ({len(value):,} characters)"
    if isinstance(value, dict):
        return {key: _fold_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fold_values(item) for item in value]
    return value


def progress_text(progress: Any) -> str:
    """A tool's progress report as one line of text; an MCP server's step (``{"progress",
    "total", "message"}``) as ``3/30 · copying``."""
    if isinstance(progress, str):
        return progress
    if _is_step(progress):
        done, total = _number(progress["progress"]), progress.get("total")
        count = done if total is None else f"{done}/{_number(total)}"
        message = progress.get("message")
        return f"{count} · {message}" if message else count
    return json.dumps(progress, ensure_ascii=False, default=str)


def _is_step(progress: Any) -> bool:
    """Whether ``progress`` is an MCP progress notification's ``{"progress", "total",
    "message"}``."""
    if not isinstance(progress, dict) or not set(progress) <= {"progress", "total", "message"}:
        return False
    total, message = progress.get("total"), progress.get("message")
    return (
        _is_number(progress.get("progress"))
        and (total is None or _is_number(total))
        and (message is None or isinstance(message, str))
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: float) -> str:
    return f"{value:g}"


# -- plain text ------------------------------------------------------------------------------


def _events_plain(events: list[dict[str, Any]], indent: str) -> list[str]:
    lines: list[str] = []
    for event in events:
        kind = event["type"]
        if kind == "text" and isinstance(event.get("output"), dict):
            lines.extend(f"{indent}{line}" for line in table_lines(event["output"]))
        elif kind == "text":
            lines.extend(indent + line for line in event["text"].strip("\n").split("\n"))
        elif kind == "thinking":
            lines.append(f"{indent}[thinking: {len(event['text']):,} characters]")
        elif kind == "user_message":
            lines.append(f"{indent}[you, during the run] {event['text']}")
        elif kind == "plan":
            lines.append(f"{indent}[plan]")
            lines.extend(f"{indent}  {line}" for line in plan_lines(event["entries"]))
        elif kind == "tool":
            lines.extend(_tool_plain(event, indent))
    return lines


def _tool_plain(card: dict[str, Any], indent: str) -> list[str]:
    code = card.get("code") or {}
    given = card["arguments"]
    if isinstance(given, dict):
        given = {name: given[name] for name in ordered_names(card) if name not in code}
    arguments = json.dumps(given, ensure_ascii=False, default=str)
    if len(arguments) > ARGUMENT_CHARS:
        arguments = arguments[:ARGUMENT_CHARS] + "…"
    status = _STATUS_LABEL.get(card["status"], card["status"])
    head = f"{indent}[tool {card['name']}({arguments})] {status}"
    approval = approval_line(card["approval"])
    if approval:
        head += f"; {approval}"
    lines = [head]
    for name in ordered_names(card):
        if name in code:
            label = f"{name} ({code[name]})" if code[name] else name
            lines.append(f"{indent}  {label}:")
            text = str(card["arguments"][name])
            shown = text if len(text) <= FOLD_CHARS else text[:FOLD_CHARS] + "…"
            lines.extend(f"{indent}    {line}" for line in shown.rstrip().split("\n"))
    lines.extend(_events_plain(card["children"], indent + "    "))
    result = card["result"]
    if result is not None:
        shown = result if len(result) <= FOLD_CHARS else result[:FOLD_CHARS] + "…"
        lines.extend(f"{indent}  | {line}" for line in shown.rstrip().split("\n"))
    lines.extend(f"{indent}  {image_line(image)}" for image in card["images"])
    if card.get("images_note"):
        lines.append(f"{indent}  ({card['images_note']})")
    return lines


def table_lines(output: dict[str, Any]) -> list[str]:
    """A validated answer as aligned ``field  value`` lines, for plain text and terminals."""
    rows = output_rows(output)
    width = max((len(name) for name, _ in rows), default=0)
    return [f"{name.ljust(width)}  {' '.join(value.split())}" for name, value in rows]


def image_line(image: dict[str, Any]) -> str:
    """An image of a tool's result, as one line of plain text."""
    description = " ".join(str(image.get("description") or "image").split())
    return f"[image {image.get('mime_type', '')}: {description}]"
