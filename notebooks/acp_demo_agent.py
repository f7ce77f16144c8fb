"""A tiny outside agent for the course: it speaks the Agent Client Protocol on stdin/stdout.

Real ones are Claude Code (``npx @zed-industries/claude-code-acp``), Codex, Gemini CLI,
Goose... This one needs no model and no network, so the lesson runs anywhere: it reads the
Markdown file the prompt names, and when asked to "finish" it, asks permission to replace
"draft" by "final" in it, showing the edit as a diff. It counts the prompts of its session.
Written with the ``agent-client-protocol`` SDK's agent side.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.schema import PermissionOption


class DemoAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, dict[str, Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any):
        return acp.InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **_: Any):
        session_id = uuid.uuid4().hex[:8]
        self.sessions[session_id] = {"cwd": Path(cwd), "prompts": 0}
        return acp.NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **_: Any) -> None:
        pass

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any):
        session = self.sessions[session_id]
        session["prompts"] += 1
        text = " ".join(getattr(block, "text", "") for block in prompt).rpartition("Now:")[2]
        send = self.conn.session_update
        await send(session_id, acp.update_agent_thought_text("Which file, and what to do?"))
        names = re.findall(r"[\w.-]+\.md", text)
        if not names:
            await send(session_id, acp.update_agent_message_text(
                f"Prompt {session['prompts']} of this session: name a .md file for me."))  # fmt: skip
            return acp.PromptResponse(stop_reason="end_turn")
        path = session["cwd"] / names[0]
        steps = [acp.plan_entry(f"Read {path.name}", status="in_progress")]
        finish = "finish" in text.lower()
        if finish:
            steps.append(acp.plan_entry(f"Turn the draft of {path.name} final"))
        await send(session_id, acp.update_plan(steps))
        await send(session_id, acp.start_read_tool_call("read", f"Read {path.name}", path.name))
        old = path.read_text()
        first = old.splitlines()[0] if old else "(empty)"
        await send(session_id, acp.update_tool_call(
            "read", status="completed", content=[acp.tool_content(acp.text_block(first))]))  # fmt: skip
        said = f"Prompt {session['prompts']} of this session. {path.name} begins: {first}"
        if finish:
            said += " " + await self._finish(session_id, path, old)
        await send(session_id, acp.update_agent_message_text(said))
        return acp.PromptResponse(stop_reason="end_turn")

    async def _finish(self, session_id: str, path: Path, old: str) -> str:
        new = old.replace("draft", "final").replace("Draft", "Final")
        diff = acp.tool_diff_content(str(path), new, old)
        title = f"Edit {path.name}"
        await self.conn.session_update(
            session_id, acp.start_edit_tool_call("edit", title, path.name, new)
        )
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=acp.update_tool_call("edit", title=title, content=[diff]),
            options=[
                PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ],
        )
        allowed = getattr(answer.outcome, "option_id", "no") in ("once", "always")
        if allowed:
            path.write_text(new)
        await self.conn.session_update(session_id, acp.update_tool_call(
            "edit", status="completed" if allowed else "failed", content=[diff]))  # fmt: skip
        return "I made it final." if allowed else "I was not allowed to edit it, so I did not."


if __name__ == "__main__":
    asyncio.run(acp.run_agent(DemoAgent()))
