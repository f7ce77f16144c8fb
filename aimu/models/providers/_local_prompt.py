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
import re
from typing import Any

from aimu.models.providers._images import prepare

GROUNDED_HINT = (
    "Answer the question in one short sentence that says what the tool result says, with its "
    "exact numbers, dates and names. Do not work anything out yourself."
)


#: How the answer turn introduces a tool's result. A small model often begins its answer by
#: repeating it; the local provider drops it there (:data:`RESULT_LABEL` is not an answer).
RESULT_LABEL = "The tool says:"
#: A result longer than this many characters is cut to its most relevant lines.
FOCUS_CHARS = 400
FOCUS_LINES = 3
# fmt: off
_FUNCTION_WORDS = frozenset({
    "the", "and", "for", "are", "was", "were", "has", "have", "had", "does", "did", "not",
    "you", "your", "our", "its", "his", "her", "their", "this", "that", "these", "those",
    "what", "which", "who", "whom", "when", "where", "why", "how", "much", "many", "can",
    "could", "would", "should", "will", "shall", "may", "might", "must", "with", "from",
    "into", "onto", "about", "than", "then", "there", "here", "tell", "give", "get", "got",
    "say", "said", "use", "using", "find", "look",
})
# fmt: on


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
    the tool does. The result's lines that share most words with the question come first, and a
    long result keeps only those: a small model otherwise repeats the wrong line."""
    question = str(turn[0].get("content") or "") if turn and turn[0]["role"] == "user" else ""
    results = [
        RESULT_LABEL + " " + _focused(_plain(str(m.get("content") or "")), question)
        for m in turn
        if m["role"] == "tool"
    ]
    return "\n\n".join([question, *results, "Answer with what the tool says."])


def _plain(result: str) -> str:
    """A tool result as running text: Markdown heading marks and blank lines dropped, which a
    small model otherwise copies as its whole answer before stopping."""
    lines = [line.strip().lstrip("#").strip() for line in result.strip().splitlines()]
    return "\n".join(line for line in lines if line)


def _focused(result: str, question: str) -> str:
    """The result's lines, those sharing most words with the question first (a small model
    repeats what comes first); of a long result only the best :data:`FOCUS_LINES` of those,
    and none that shares less than half as many as the best.
    The question's addresses (URLs, paths) do not count: results repeat them in a header."""
    lines = result.splitlines()
    asked = _stems(" ".join(w for w in question.split() if not _ADDRESS.search(w)))
    scores = [len(asked & _stems(line)) for line in lines]
    ranked = sorted(range(len(lines)), key=lambda i: -scores[i])
    if len(result) > FOCUS_CHARS and scores and max(scores):
        ranked = [i for i in ranked[:FOCUS_LINES] if 2 * scores[i] >= max(scores)]
    return "\n".join(lines[i] for i in ranked)


_ADDRESS = re.compile(r"[/\\]|\w\.\w")  # a URL, a path, a file name: echoed, not asked about


def _stems(text: str) -> set[str]:
    """Content words cut to their first four letters (``opens``/``opening`` → ``open``)."""
    words = re.findall(r"[^\W_]+", text.lower())
    return {w[:4] for w in words if len(w) > 2 and w not in _FUNCTION_WORDS}


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
    """The tools as a small model can take them in: each one's summary (the description's
    first paragraph) and its arguments, one line each, then the reply format."""
    lines = []
    for spec in tools:
        function = spec["function"]
        summary = (function.get("description") or "").strip().split("\n\n")[0]
        properties = (function.get("parameters") or {}).get("properties") or {}
        arguments = "; ".join(_argument(name, schema) for name, schema in properties.items())
        lines.append(
            f"- {function['name']}: {' '.join(summary.split())} Arguments: {arguments or 'none'}."
        )
    return (
        "You can call " + ("this tool" if len(tools) == 1 else "these tools") + ":\n"
        + "\n".join(lines)
        + '\nReply with JSON: {"tool_call": {"name": name, "arguments": {...}}} to call a tool, '
        'or {"answer": text} to answer.'
    )  # fmt: skip


def _argument(name: str, schema: Any) -> str:
    if not isinstance(schema, dict):
        return name
    kind = schema.get("type") or "/".join(
        str(option.get("type")) for option in schema.get("anyOf") or () if isinstance(option, dict)
    )
    described = " ".join(str(schema.get("description") or "").split())
    return f"{name} ({kind or 'any'})" + (f": {described}" if described else "")
