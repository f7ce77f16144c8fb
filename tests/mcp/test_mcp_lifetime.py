"""Where the process ends: MCPClient in a real IPython kernel (driven by jupyter_client) and
at interpreter exit. No hang, no leaked thread, no orphaned stdio server."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from jupyter_client.manager import start_new_kernel
from server_notes import wait_for_text

HERE = Path(__file__).parent


def run_cell(kc, code: str, timeout: float = 90) -> str:
    """Execute ``code``; return its stdout, failing the test on an error."""
    out: list[str] = []
    errors: list[str] = []

    def hook(msg: dict) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            errors.append("\n".join(msg["content"]["traceback"]))

    reply = kc.execute_interactive(textwrap.dedent(code), timeout=timeout, output_hook=hook)
    assert reply["content"]["status"] == "ok", "\n".join(errors)
    return "".join(out)


@pytest.fixture
def kernel():
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(HERE))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_client_in_a_kernel_calls_closes_and_the_kernel_restarts_cleanly(kernel):
    km, kc = kernel
    output = run_cell(
        kc,
        """
        import threading
        from fastmcp import FastMCP
        from aimu.tools import MCPClient

        server = FastMCP("cell")

        @server.tool
        def add(a: int, b: int) -> int:
            '''Add two integers.'''
            return a + b

        mcp = MCPClient(server=server)
        print(mcp.as_tools()[0](a=2, b=3))
        mcp.close()
        print([t.name for t in threading.enumerate() if t.name.startswith("aimu-mcp")])
        """,
    )
    assert output.splitlines() == ["5", "[]"]

    output = run_cell(
        kc,
        """
        import aimu.aio
        async with aimu.aio.MCPClient(server=server) as amcp:
            print((await amcp.call_tool("add", {"a": 4, "b": 4})).text)
        """,
    )
    assert output.strip() == "8"

    # Stdio servers held open for the kernel's life, never closed by the user.
    output = run_cell(
        kc,
        """
        import sys
        held = MCPClient(file="mcp_stdio_server.py")
        print(held.call_tool("server_pid").text)
        stdio = {"command": sys.executable, "args": ["mcp_stdio_server.py"]}
        both = MCPClient(config={"mcpServers": {"one": stdio, "two": stdio}})
        print(both.call_tool("one_server_pid").text, both.call_tool("two_server_pid").text)
        """,
    )
    server_pids = [int(pid) for pid in output.split()]
    assert len(set(server_pids)) == 3
    old_kernel = km.provisioner.process

    # Closing a stdio server waits for it to exit (about a second, more on a busy machine);
    # give the kernel room to exit by itself, so a kill below means it hung.
    km.shutdown_wait_time = 40
    started = time.monotonic()
    km.restart_kernel(now=False)
    assert old_kernel.returncode == 0, "the kernel had to be killed: its exit hung"
    assert time.monotonic() - started < 15
    assert not any(map(psutil.pid_exists, server_pids)), "a stdio server outlived the kernel"

    kc.wait_for_ready(timeout=60)
    assert run_cell(kc, "print(6 * 7)").strip() == "42"


def test_process_exit_never_hangs_even_with_a_call_in_flight(tmp_path):
    script = tmp_path / "hold_open.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, threading
            from aimu.tools import MCPClient

            mcp = MCPClient(file={str(HERE / "mcp_stdio_server.py")!r})
            print(mcp.call_tool("server_pid").text, flush=True)
            started = threading.Event()

            def forever():
                started.set()
                mcp.call_tool("wait", {{"seconds": 3600}})

            threading.Thread(target=forever, daemon=True).start()
            started.wait()
            """
        )
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    server_pid = int(done.stdout.split()[0])
    assert elapsed < 30
    assert not psutil.pid_exists(server_pid), "the stdio server outlived its client's process"


def test_interrupting_a_cell_during_an_mcp_call_cancels_it_at_once_and_the_client_goes_on(
    kernel, tmp_path
):
    km, kc = kernel
    note = tmp_path / "note.txt"
    run_cell(
        kc,
        f"""
        import aimu.aio
        from aimu.models.providers.scripted import ScriptedClient, call
        from aimu.tools import MCPClient

        mcp = MCPClient(file="mcp_stdio_server.py")
        model = ScriptedClient([call("wait_noting_cancel", seconds=60, note={str(note)!r}), "-"])
        agent = aimu.aio.Agent(model, tools=mcp.as_tools())
        """,
    )
    msg_id = kc.execute('await agent.run("Wait.")')
    wait_for_text(note, "started", 60)
    km.interrupt_kernel()
    assert wait_for_text(note, "cancelled", 5) < 1.0
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error"
    assert run_cell(kc, 'print(mcp.call_tool("add", {"a": 1, "b": 2}))').strip() == "3"
    run_cell(kc, "mcp.close()")
