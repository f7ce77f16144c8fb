"""Repeated sync runs keep their event loop, SDK client and TCP connection.

The loopback server counts the connections it accepted: several runs of a sync agent — the
same agent, a new agent per run, a new client per run with the same settings — arrive on one.
Ctrl-C still cancels a run promptly and leaves the transcript valid, runs from several
threads and from inside a running loop still work, and the interpreter exits without hanging
or warning.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from provider_wire import (
    Reply,
    WireServer,
    anthropic_turn,
    ollama_turn,
    openai_agent_reply,
    openai_turn,
)

import aimu
from aimu.models import Phase


@aimu.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def agent_server():
    """An OpenAI wire server answering one-tool-call agent runs (add, then the answer)."""
    with WireServer(default=openai_agent_reply) as wire:
        yield wire


@pytest.fixture
def sigint():
    """Ctrl-C raises KeyboardInterrupt here, whatever handler the test runner installed."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def openai_client(server: WireServer):
    return aimu.client(f"openai:wire-model@{server.url}/v1")


def test_a_sync_agent_s_runs_share_one_connection(agent_server):
    agent = aimu.Agent(openai_client(agent_server), tools=[add])
    answers = [agent.run("What is 40 + 2?") for _ in range(4)]
    assert answers == ["The answer is 42."] * 4
    assert len(agent_server.requests) == 8
    assert agent_server.connections == 1


def test_new_agents_and_new_clients_with_the_same_settings_share_one_connection(agent_server):
    client = openai_client(agent_server)
    for _ in range(3):
        assert aimu.Agent(client, tools=[add]).run("40 + 2?") == "The answer is 42."
    for _ in range(3):
        assert aimu.Agent(openai_client(agent_server), tools=[add]).run("40 + 2?")
    assert agent_server.connections == 1


@pytest.mark.parametrize(
    ("spec", "turn"),
    [
        ("anthropic", lambda: anthropic_turn("Hello.")),
        ("ollama", lambda: ollama_turn("Hello.")),
        ("openai", lambda: openai_turn("Hello.")),
    ],
)
def test_every_provider_reuses_its_connection_across_sync_runs(spec, turn):
    with WireServer(default=turn()) as wire:
        if spec == "anthropic":
            client = aimu.client("anthropic:wire-model", base_url=wire.url, api_key="k")
        elif spec == "ollama":
            client = aimu.client(f"ollama:wire-model@{wire.url}")
        else:
            client = openai_client(wire)
        agent = aimu.Agent(client)
        assert [agent.run("hi") for _ in range(3)] == ["Hello."] * 3
        assert wire.connections == 1


def test_streamed_sync_runs_share_the_connection_too(agent_server):
    agent = aimu.Agent(openai_client(agent_server), tools=[add])
    for _ in range(3):
        phases = [chunk.phase for chunk in agent.run("40 + 2?", stream=True)]
        assert phases[-1] is Phase.DONE
    assert agent_server.connections == 1


def test_a_sync_agent_streams_with_stream_as_the_async_one_does(agent_server):
    agent = aimu.Agent(openai_client(agent_server), tools=[add])
    streamed = [(c.phase, c.content) for c in agent.stream("40 + 2?")]
    old_spelling = [(c.phase, c.content) for c in agent.run("40 + 2?", stream=True)]
    phases = [phase for phase, _ in streamed]
    assert phases[0] is Phase.TOOL_CALL and phases[-1] is Phase.DONE
    assert Phase.TOOL_RESULT in phases
    assert streamed[-1][1]["text"] == "The answer is 42."
    assert [p for p, _ in old_spelling] == phases
    assert old_spelling[-1][1]["text"] == "The answer is 42."


def test_a_sync_stream_refuses_a_bad_task_when_called_not_when_iterated(agent_server):
    agent = aimu.Agent(openai_client(agent_server))
    with pytest.raises(TypeError, match="task must be a str"):
        agent.stream(42)
    assert agent.messages == []


def test_a_closed_server_s_kept_connection_never_answers_for_the_next_server_on_its_port():
    """The sync driver keeps SDK clients per URL; a new server on a reused port gets the run."""
    with WireServer(default=openai_turn("From the old server.")) as old:
        assert aimu.Agent(openai_client(old)).run("hi") == "From the old server."
        port = int(old.url.rsplit(":", 1)[1])
    with WireServer(default=openai_turn("From the new server."), port=port) as new:
        assert aimu.Agent(openai_client(new)).run("hi") == "From the new server."


def test_runs_from_several_threads_work_and_each_thread_keeps_its_connection(agent_server):
    client = openai_client(agent_server)
    answers: list[str] = []
    barrier = threading.Barrier(3)

    def work() -> None:
        agent = aimu.Agent(client, tools=[add])
        barrier.wait()
        answers.extend(agent.run("40 + 2?") for _ in range(3))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == ["The answer is 42."] * 9
    assert agent_server.connections <= 3


def test_a_finished_thread_s_loop_and_connection_are_closed_when_another_thread_starts(
    agent_server,
):
    client = openai_client(agent_server)

    def work() -> None:
        assert aimu.Agent(client, tools=[add]).run("40 + 2?") == "The answer is 42."

    first = threading.Thread(target=work)
    first.start()
    first.join()
    second = threading.Thread(target=work)
    second.start()
    second.join()
    assert agent_server.hung_up.acquire(timeout=10)  # the first thread's, closed by the second
    assert agent_server.connections == 2


async def test_sync_runs_inside_a_running_loop_reuse_their_worker_and_connection(agent_server):
    agent = aimu.Agent(openai_client(agent_server), tools=[add])
    assert [agent.run("40 + 2?") for _ in range(3)] == ["The answer is 42."] * 3
    assert agent_server.connections == 1


def test_one_client_serves_sync_and_async_agents(agent_server):
    client = openai_client(agent_server)

    async def async_runs() -> list[str]:
        agent = aimu.aio.Agent(client, tools=[add])
        return [await agent.run("40 + 2?") for _ in range(3)]

    assert aimu.Agent(client, tools=[add]).run("40 + 2?") == "The answer is 42."
    assert asyncio.run(async_runs()) == ["The answer is 42."] * 3
    assert aimu.Agent(client, tools=[add]).run("40 + 2?") == "The answer is 42."
    # one connection for the sync runs, one for the loop asyncio.run made
    assert agent_server.connections == 2


def test_ctrl_c_while_the_model_streams_stops_the_run_and_the_next_reuses_the_connection(
    sigint,
):
    reached, gate = threading.Event(), threading.Event()
    turn = openai_turn("one two three four five six", parts=6)

    def pieces():
        yield from turn.pieces[:3]
        reached.set()
        gate.wait(30)
        yield from turn.pieces[3:]

    with WireServer() as wire:
        wire.script(
            openai_turn("Warm."),
            Reply(pieces=pieces(), content_type=turn.content_type),
            openai_turn("Back."),
        )
        agent = aimu.Agent(openai_client(wire))
        assert agent.run("warm up") == "Warm."

        def press_ctrl_c() -> None:
            reached.wait(30)
            os.kill(os.getpid(), signal.SIGINT)

        presser = threading.Thread(target=press_ctrl_c)
        presser.start()
        with pytest.raises(KeyboardInterrupt):
            agent.run("count")
        presser.join()
        gate.set()
        assert [m["role"] for m in agent.messages[2:]] == ["user", "assistant"]
        assert agent.run("again") == "Back."
        assert wire.connections == 2  # the interrupted stream's connection was dropped


EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, threading
    sys.path.insert(0, sys.argv[2])
    import aimu
    from provider_wire import WireServer, openai_agent_reply

    @aimu.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add.\"\"\"
        return a + b

    server = WireServer(default=openai_agent_reply)
    client = aimu.client(f"openai:wire-model@{server.url}/v1")
    agent = aimu.Agent(client, tools=[add])
    print(agent.run("40 + 2?"))
    worker = threading.Thread(target=lambda: print(aimu.Agent(client, tools=[add]).run("x")))
    worker.start(); worker.join()

    async def notebook():  # a cell: sync code inside a running loop
        return aimu.Agent(client, tools=[add]).run("y")

    print(asyncio.run(notebook()))
    if sys.argv[1] == "mid-stream":  # leave a streamed run unfinished
        chunks = agent.run("z", stream=True)
        next(chunks)
    print("exiting", flush=True)
    """
)


@pytest.mark.parametrize("how", ["clean", "mid-stream"])
def test_the_interpreter_exits_promptly_without_warnings(how):
    here = Path(__file__).parent
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", EXIT_SCRIPT, how, str(here)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["The answer is 42."] * 3 + ["exiting"]
    assert done.stderr == ""


def test_ctrl_c_during_a_sync_run_inside_a_running_loop_keeps_the_transcript_valid(
    agent_server, sigint
):
    """The notebook path: the run is on the worker thread, Ctrl-C reaches the caller's."""

    @aimu.tool
    def press_ctrl_c() -> str:
        """Simulates the user pressing Ctrl-C while this tool runs."""
        os.kill(os.getpid(), signal.SIGINT)
        return "finished anyway"

    agent_server.script(openai_turn("", [("c1", "press_ctrl_c", "{}")]))
    agent = aimu.Agent(openai_client(agent_server), tools=[press_ctrl_c, add])

    async def cell(task: str) -> str:
        # a kernel's SIGINT handler raises KeyboardInterrupt in the cell, as this one does
        signal.signal(signal.SIGINT, signal.default_int_handler)
        return agent.run(task)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(cell("go"))
    roles = [m["role"] for m in agent.messages]
    assert roles[:3] == ["user", "assistant", "tool"] and roles[-1] == "assistant"
    assert asyncio.run(cell("What is 40 + 2?")) == "The answer is 42."
