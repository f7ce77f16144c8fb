"""A server whose tool list changes: ``unlock`` adds ``open_door`` and announces it, during
the request and again after it (as server-everything does, outside any request)."""

from __future__ import annotations

import asyncio

import mcp_types
from fastmcp import Context, FastMCP

_pending: set[asyncio.Task] = set()


def build_server(name: str = "changing") -> FastMCP:
    server = FastMCP(name)

    def open_door(room: str) -> str:
        """Open the door of a room (offered once unlocked)."""
        return f"the {room} door is open"

    @server.tool
    async def unlock(ctx: Context) -> str:
        """Make the open_door tool available."""
        server.tool(open_door)
        await ctx.send_notification(mcp_types.ToolListChangedNotification())
        session = ctx.session

        async def announce_later() -> None:
            await asyncio.sleep(0.05)
            await session.send_notification(mcp_types.ToolListChangedNotification())

        task = asyncio.get_running_loop().create_task(announce_later())
        _pending.add(task)
        task.add_done_callback(_pending.discard)
        return "unlocked"

    return server


if __name__ == "__main__":
    build_server("changing-stdio").run(show_banner=False)
