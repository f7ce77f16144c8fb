"""A call a remembered "Always allow" covers is decided at once: it never shows as awaiting
approval, and the record says where the choice was made."""

from __future__ import annotations

import asyncio

import aimu
import aimu.aio
from aimu.models.chunks import Phase
from aimu.models.providers.scripted import ScriptedClient, call
from aimu_jupyter.approval._policy import NotebookPolicy
from aimu_jupyter.view._record import RunRecord


@aimu.tool(read_only=False)
def write_note(text: str) -> str:
    """Write a note.

    Args:
        text: What to write.
    """
    return f"wrote {text}"


def test_calls_always_allow_covers_go_straight_to_decided_and_the_record_says_where():
    asked = []

    async def ask(tool_name, arguments, agent):
        asked.append(arguments["text"])
        return "always", ""

    events = []
    model = ScriptedClient([
        call("write_note", text="one"), call("write_note", text="two"), "done",
        call("write_note", text="three"), "done again",
    ])  # fmt: skip
    agent = aimu.aio.Agent(model, tools=[write_note], tool_approval=NotebookPolicy(ask=ask),
                           events=events.append)  # fmt: skip

    async def record_of(task):
        record = RunRecord(task, model.name)
        chunks = []
        async for chunk in agent.stream(task):
            chunks.append(chunk)
            record.apply(chunk)
        return chunks, record

    first, first_record = asyncio.run(record_of("first"))
    second, second_record = asyncio.run(record_of("second"))
    assert asked == ["one"]
    requested = [c.content["id"] for c in first + second if c.phase is Phase.APPROVAL_REQUESTED]
    decided = [c.content for c in first + second if c.phase is Phase.APPROVAL_DECIDED]
    assert len(requested) == 1 and decided[0]["id"] == requested[0]
    assert [(d["by"], d.get("chosen_at")) for d in decided] == [
        ("always", None),
        ("always", "write_note(text='one')"),
        ("always", "write_note(text='one')"),
    ]
    assert "allowed: Always allow, chosen here" in first_record.markdown()
    covered = "allowed: Always allow, chosen at write_note(text='one')"
    assert covered in first_record.markdown() and covered in second_record.markdown()
    kinds = [e.type for e in events if e.type.startswith("approval")]
    assert kinds == ["approval_requested", "approval_decided", "approval_decided",
                     "approval_decided"]  # fmt: skip
