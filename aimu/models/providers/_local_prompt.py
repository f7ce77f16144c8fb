"""The prompts the embedded model reads: a transcript rendered for a small model.

A 135M-parameter model follows the last user turn and little else, so what it must use is put
there. With tools (constrained decoding) the system prompt explains the JSON reply format and
earlier assistant turns are shown in it. The answer after a tool call is *grounded*: the
question and the tool's result are placed together in the final user turn, after a system hint
to state the result's value, and the earlier call is left out (the result says what it found).
A ``response_format`` adds the schema to the system prompt (decoding is constrained to it too).
"""

from __future__ import annotations

import json
from typing import Any

from aimu.models.providers._images import prepare

GROUNDED_HINT = (
    "Answer the question in one short sentence that says what the tool result says, with its "
    "exact numbers, dates and names. Do not work anything out yourself."
)


def render(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None = None,
) -> list[dict[str, str]]:
    """The transcript as plain role/content turns a small model's chat template handles.

    The model reads text only: a tool's images become placeholders naming what was left out.
    """
    messages = prepare(messages, sees=False)
    system = [str(m.get("content") or "") for m in messages if m["role"] == "system"]
    if tools:
        system = [*(system or ["You are a helpful assistant."]), _instructions(tools)]
    elif grounded(messages):
        system = [*system, GROUNDED_HINT]
    if response_format and not tools:
        system.append(
            "Reply with only a JSON value that follows this JSON schema: "
            + json.dumps(response_format["schema"])
        )
    out: list[dict[str, str]] = []
    if any(system):
        out.append({"role": "system", "content": "\n\n".join(s for s in system if s)})
    if not tools and grounded(messages):
        last_user = _last_user(messages)
        out += _turns(messages[:last_user], None)
        out.append({"role": "user", "content": _question_with_results(messages[last_user:])})
        return out
    return out + _turns(messages, tools)


def grounded(messages: list[dict[str, Any]]) -> bool:
    """Whether tool results came in since the user's last message (the answer uses them)."""
    return any(m["role"] == "tool" for m in messages[_last_user(messages) :])


def _last_user(messages: list[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "user"), default=0)


def _question_with_results(turn: list[dict[str, Any]]) -> str:
    """The question, then every tool result of this turn, then what to do with them. The
    tool's name is left out: a small model starts its answer with it and drifts into what
    the tool does."""
    question = str(turn[0].get("content") or "") if turn and turn[0]["role"] == "user" else ""
    results = [
        f"The tool says: {_plain(str(m.get('content') or ''))}" for m in turn if m["role"] == "tool"
    ]
    return "\n\n".join([question, *results, "Answer with what the tool says."])


def _plain(result: str) -> str:
    """A tool result as running text: Markdown heading marks and blank lines dropped, which a
    small model otherwise copies as its whole answer before stopping."""
    lines = [line.strip().lstrip("#").strip() for line in result.strip().splitlines()]
    return "\n".join(line for line in lines if line)


def _turns(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    results: list[str] = []

    def flush() -> None:
        if results:
            these = "this result" if len(results) == 1 else "these results"
            out.append(
                {
                    "role": "user",
                    "content": "\n".join(results) + f"\nAnswer my question with {these}.",
                }
            )
            results.clear()

    for message in messages:
        role = message["role"]
        content = str(message.get("content") or "")
        if role == "system":
            continue
        if role == "tool":
            results.append(f"The tool {message.get('name') or 'tool'} returned: {content}")
            continue
        flush()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if calls and tools:
                content = "\n".join(
                    json.dumps({"tool_call": {"name": c["function"]["name"],
                                              "arguments": _arguments(c)}})
                    for c in calls
                )  # fmt: skip
            elif calls:
                described = ", ".join(
                    f"{c['function']['name']}({c['function'].get('arguments') or '{}'})"
                    for c in calls
                )
                content = f"{content}\nI will call {described}.".strip()
            elif tools:
                content = json.dumps({"answer": content})
        out.append({"role": "assistant" if role == "assistant" else "user", "content": content})
    flush()
    return out


def _arguments(call: dict[str, Any]) -> Any:
    try:
        return json.loads(call["function"].get("arguments") or "{}")
    except json.JSONDecodeError:
        return {}


def _instructions(tools: list[dict[str, Any]]) -> str:
    lines = []
    for spec in tools:
        function = spec["function"]
        properties = (function.get("parameters") or {}).get("properties") or {}
        lines.append(
            f"- {function['name']}: {function.get('description') or ''} "
            f"Arguments: {json.dumps(properties)}"
        )
    return (
        "You can call " + ("this tool" if len(tools) == 1 else "these tools") + ":\n"
        + "\n".join(lines)
        + '\nReply with JSON: {"tool_call": {"name": name, "arguments": {...}}} to call a tool, '
        'or {"answer": text} to answer.'
    )  # fmt: skip
