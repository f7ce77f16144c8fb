"""A fake ACP agent, written with the SDK's agent side, run as a stdio subprocess.

What it does is read from the prompt's words (all of them apply, in this order):

- always: a thought, a one-entry plan, and ``turn N of session S`` (N counts this session's
  prompts, so a test can tell a continued session from a new one);
- ``read``: a read tool call of ``notes.txt`` that completes with the file's first line;
- ``edit``: asks permission for an edit of ``notes.txt`` (a diff), then says which option it
  was given (``permission: <optionId>``) and edits only when allowed;
- ``tools``: calls the client's MCP tool ``nb_echo`` (from the session's ``mcpServers``) and
  says what came back (``echo: ...``);
- ``slow``: streams ``tick`` until cancelled; a cancel is written to ``cancelled.txt``;
- ``crash``: writes ``boom`` to stderr and exits with code 3;
- ``login``: refuses with ACP's "authentication required".

``FAKE_AGENT_LOG`` names a file each request's method is appended to.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.schema import AgentCapabilities, McpCapabilities, PermissionOption


class FakeAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def _log(self, what: str) -> None:
        path = os.environ.get("FAKE_AGENT_LOG")
        if path:
            with open(path, "a") as log:
                log.write(what + "\n")

    async def initialize(self, protocol_version: int, client_capabilities=None, **_: Any):
        caps = client_capabilities.model_dump(by_alias=True) if client_capabilities else {}
        self._log("initialize " + json.dumps(caps, sort_keys=True))
        return acp.InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=True)),
        )

    async def new_session(self, cwd: str, mcp_servers=None, **_: Any):
        session_id = uuid.uuid4().hex[:8]
        self.sessions[session_id] = {"cwd": cwd, "turns": 0, "mcp": list(mcp_servers or [])}
        self._log(f"new_session {cwd} mcp={len(mcp_servers or [])}")
        return acp.NewSessionResponse(session_id=session_id)

    async def authenticate(self, method_id: str, **_: Any):
        return None

    async def cancel(self, session_id: str, **_: Any) -> None:
        self._log("cancel")
        self.cancelled.add(session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any):
        session = self.sessions[session_id]
        session["turns"] += 1
        text = " ".join(getattr(block, "text", "") for block in prompt)
        words = set(re.findall(r"[a-z]+", text.rpartition("Now:")[2].lower()))  # not the history
        self._log("prompt " + text)
        cwd = Path(session["cwd"])
        if "login" in words:
            raise acp.RequestError.auth_required({"hint": "run fake-agent login"})
        if "crash" in words:
            print("boom", file=sys.stderr, flush=True)
            os._exit(3)
        say = self._say(session_id)
        await self.conn.session_update(
            session_id, acp.update_agent_thought_text("Thinking it over.")
        )
        await self.conn.session_update(
            session_id,
            acp.update_plan([acp.plan_entry("Answer the prompt", status="in_progress")]),
        )
        await say(f"turn {session['turns']} of session {session_id}. ")
        if "read" in words:
            await self.conn.session_update(
                session_id, acp.start_read_tool_call("read-1", "Read notes.txt", "notes.txt")
            )
            first = (cwd / "notes.txt").read_text().splitlines()[0]
            await self.conn.session_update(
                session_id,
                acp.update_tool_call(
                    "read-1",
                    status="completed",
                    content=[acp.tool_content(acp.text_block(first))],
                ),
            )
        if "edit" in words:
            await self._edit(session_id, cwd, say)
        if "tools" in words:
            await say("echo: " + await self._call_tool(session, "nb_echo", {"text": "hello"}))
        if "slow" in words:
            while session_id not in self.cancelled:
                await say("tick ")
                await asyncio.sleep(0.05)
            (cwd / "cancelled.txt").write_text("cancelled")
            return acp.PromptResponse(stop_reason="cancelled")
        await say("Done.")
        return acp.PromptResponse(stop_reason="end_turn")

    def _say(self, session_id: str):
        async def say(text: str) -> None:
            await self.conn.session_update(session_id, acp.update_agent_message_text(text))

        return say

    async def _edit(self, session_id: str, cwd: Path, say) -> None:
        path = cwd / "notes.txt"
        old = path.read_text()
        new = old.replace("draft", "final")
        diff = acp.tool_diff_content(str(path), new, old)
        await self.conn.session_update(
            session_id,
            acp.start_edit_tool_call("edit-1", "Edit notes.txt", str(path), new),
        )
        options = [
            PermissionOption(option_id="yes", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="yes-always", name="Always allow", kind="allow_always"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=acp.update_tool_call("edit-1", title="Edit notes.txt", content=[diff]),
            options=options,
        )
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None) or outcome.outcome
        await say(f"permission: {chosen}. ")
        allowed = chosen in ("yes", "yes-always")
        if allowed:
            path.write_text(new)
        await self.conn.session_update(
            session_id,
            acp.update_tool_call(
                "edit-1", status="completed" if allowed else "failed", content=[diff]
            ),
        )

    async def _call_tool(self, session: dict[str, Any], name: str, arguments: dict) -> str:
        server = session["mcp"][0]
        headers = {h.name: h.value for h in server.headers}
        return await asyncio.to_thread(_mcp_call, server.url, headers, name, arguments)


def _mcp_call(url: str, headers: dict[str, str], name: str, arguments: dict) -> str:
    """Call one tool of a streamable-HTTP MCP server, as a minimal MCP client does."""
    session: dict[str, str] = {}

    def post(message: dict) -> dict | None:
        request = urllib.request.Request(
            url,
            data=json.dumps({"jsonrpc": "2.0", **message}).encode(),
            method="POST",
            headers={
                **headers,
                **session,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            if response.headers.get("mcp-session-id"):
                session["mcp-session-id"] = response.headers["mcp-session-id"]
            body = response.read().decode()
        for line in body.splitlines():
            if line.startswith("data:"):
                body = line[5:]
        return json.loads(body) if body.strip() else None

    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "fake-agent", "version": "1"}}  # fmt: skip
    post({"id": 1, "method": "initialize", "params": hello})
    post({"method": "notifications/initialized"})
    answer = post({"id": 2, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})  # fmt: skip
    result = answer["result"]
    text = " ".join(block.get("text", "") for block in result["content"])
    return ("error: " if result.get("isError") else "") + text


if __name__ == "__main__":
    asyncio.run(acp.run_agent(FakeAgent()))
