"""Compaction: shorten a conversation before a model turn, without breaking it.

A compaction policy is any ``messages -> messages`` callable. The agent applies it before
every model turn and keeps what it returns as the conversation, after checking that no tool
call lost its result (or a result its call): providers reject such a conversation, so the
check fails loudly with :class:`CompactionError` instead. Two ready policies:

- :func:`keep_last` keeps the system message and the last ``n`` turns;
- :func:`drop_old_tool_results` empties the oldest tool results once the conversation is over
  a token budget, leaving a note of what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aimu._checks import whole_number

Messages = list[dict[str, Any]]
Compaction = Callable[[Messages], Messages]


class CompactionError(ValueError):
    """A compaction policy returned a conversation a model cannot take (an orphaned tool call
    or result, or not a list of messages)."""


def keep_last(n: int) -> Compaction:
    """Keep system messages and the last ``n`` turns.

    A turn is a user message, or an assistant message together with the results of the tool
    calls it made, so a call is never separated from its result. When the kept turns do not
    start with a user message, the latest user message before them is kept too: the model
    still sees the task it is working on.
    """
    whole_number(n, "keep_last(n): n")

    def compact(messages: Messages) -> Messages:
        system = [m for m in messages if m.get("role") == "system"]
        turns = _turns([m for m in messages if m.get("role") != "system"])
        if len(turns) <= n:
            return messages
        kept, dropped = turns[-n:], turns[:-n]
        if kept[0][0].get("role") != "user":
            task = next((t for t in reversed(dropped) if t[0].get("role") == "user"), None)
            if task is not None:
                kept.insert(0, task)
        return system + [m for turn in kept for m in turn]

    compact.__name__ = f"keep_last({n})"
    return compact


def drop_old_tool_results(max_tokens: int) -> Compaction:
    """Empty the oldest tool results while the conversation is over ``max_tokens``.

    Tokens are estimated at four characters each. A dropped result is replaced by a note
    naming the tool and the size removed, so the model knows the call happened and can call
    again if it needs the data. The latest turn's results are never dropped.
    """
    whole_number(max_tokens, "drop_old_tool_results: max_tokens")

    count = _RunningCount()

    def compact(messages: Messages) -> Messages:
        total = count(messages)
        if total <= max_tokens:
            return messages
        last_assistant = max(
            (i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
        )
        result = list(messages)
        for i, message in enumerate(messages):
            if total <= max_tokens:
                break
            if message.get("role") != "tool" or i > last_assistant or _is_note(message):
                continue
            content = str(message.get("content") or "")
            note = (
                f"[Result of {message.get('name') or 'a tool'} dropped to fit the context "
                f"({len(content)} characters). Call the tool again if you need it.]"
            )
            replaced = {k: v for k, v in message.items() if k != "images"}
            replaced["content"] = note
            result[i] = replaced
            total -= estimate_tokens([message]) - estimate_tokens([replaced])
        count.remember(result, total)
        return result

    compact.__name__ = f"drop_old_tool_results({max_tokens})"
    return compact


def estimate_tokens(messages: Messages) -> int:
    """A rough token count: characters of content and tool calls, divided by four."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if content:
            chars += len(content) if isinstance(content, str) else len(str(content))
        for call in m.get("tool_calls") or ():
            function = call.get("function") or {}
            chars += len(function.get("name") or "") + len(function.get("arguments") or "")
    return chars // 4


class _RunningCount:
    """:func:`estimate_tokens` of a growing conversation, counting only what was appended.

    The loop appends to the conversation between turns, so when the message last counted is
    still in its place only the messages after it are new; anything else is counted afresh.
    The state is one tuple, replaced whole, so agents sharing a policy never mix counts.
    """

    def __init__(self) -> None:
        self._state: tuple[int, Any, int] = (0, None, 0)

    def __call__(self, messages: Messages) -> int:
        length, last, total = self._state
        size = len(messages)
        if length and size >= length and messages[length - 1] is last:
            if size > length:
                total += estimate_tokens(messages[length:])
        else:
            total = estimate_tokens(messages)
        self._state = (size, messages[-1] if size else None, total)
        return total

    def remember(self, messages: Messages, total: int) -> None:
        """Record ``total`` as the count of ``messages`` (after a policy rewrote them)."""
        self._state = (len(messages), messages[-1] if messages else None, total)


def check_conversation(messages: Any) -> None:
    """Raise :class:`CompactionError` unless every tool call is answered right after its
    turn and every tool result answers a call of the turn before it."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise CompactionError(
            "the compaction policy must return a list of message dicts, not "
            f"{type(messages).__name__}"
        )
    pending: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise CompactionError(
                    f"the compaction policy left the result of tool call {call_id!r} "
                    f"({message.get('name')}) without the assistant turn that made the call; "
                    "drop or keep a call together with its result"
                )
            del pending[call_id]
            continue
        if pending:
            raise CompactionError(_orphaned(pending))
        if role == "assistant":
            pending = {
                c.get("id"): c.get("function", {}).get("name")
                for c in message.get("tool_calls") or ()
            }
    if pending:
        raise CompactionError(_orphaned(pending))


def _orphaned(pending: dict[str, str]) -> str:
    calls = ", ".join(f"{call_id!r} ({name})" for call_id, name in pending.items())
    return (
        f"the compaction policy removed the result of tool call {calls} but kept the call; "
        "drop or keep a call together with its result"
    )


def _turns(messages: Messages) -> list[Messages]:
    turns: list[Messages] = []
    for message in messages:
        if message.get("role") == "tool" and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return turns


def _is_note(message: dict[str, Any]) -> bool:
    return str(message.get("content") or "").startswith("[Result of ")
