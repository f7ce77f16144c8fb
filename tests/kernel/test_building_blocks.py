"""The notebook layer's pieces that need no kernel: throttle, policy, model choice,
interpolation, the input transformer."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError

from aimu.models.errors import NoDefaultModelError
from aimu.models.providers.scripted import ScriptedClient
from aimu.tools import builtin, tool
from aimu.tools.approval import Decision
from aimu_jupyter.approval._policy import NotebookPolicy
from aimu_jupyter.magics._agent import await_agent_cells
from aimu_jupyter.run._assemble import resolve_model
from aimu_jupyter.run._prompt import interpolate
from aimu_jupyter.run._session import Settings
from aimu_jupyter.view._live import LiveDisplay


class Published:
    def __init__(self):
        self.bundles = []
        self.state = 0
        self.grew = asyncio.Event()

    def render(self):
        return {"text/plain": str(self.state)}

    def publish(self, bundle, first):
        self.bundles.append((bundle["text/plain"], first))
        self.grew.set()

    async def until(self, count, seconds=5.0):
        """Wait for the ``count``-th publication (the throttle's timer fires on the loop)."""
        while len(self.bundles) < count:
            self.grew.clear()
            await asyncio.wait_for(self.grew.wait(), seconds)


async def test_a_burst_of_changes_publishes_once_now_once_later_and_once_at_close():
    out = Published()
    live = LiveDisplay(out.render, out.publish)
    live.show()
    for n in range(1, 501):
        out.state = n
        live.changed()
    assert out.bundles == [("0", True), ("1", False)]
    await out.until(3)
    assert out.bundles == [("0", True), ("1", False), ("500", False)]
    out.state = 501
    live.close()
    assert out.bundles[-1] == ("501", False)
    published = len(out.bundles)
    out.state = 502
    live.changed()
    with pytest.raises(TimeoutError):  # a closed display publishes nothing, not even later
        await out.until(published + 1, seconds=0.2)
    assert len(out.bundles) == published


async def test_close_publishes_the_final_state_even_with_nothing_pending():
    out = Published()
    live = LiveDisplay(out.render, out.publish)
    live.show()
    live.close()
    assert out.bundles == [("0", True), ("0", False)]


async def test_large_bundles_are_spaced_further_apart():
    out = Published()
    live = LiveDisplay(lambda: {"text/plain": "x" * 400_000}, out.publish)
    live.show()
    assert live._interval == pytest.approx(0.2)


def test_default_policy_asks_only_for_tools_declared_as_writing():
    def users_own(x: int) -> int:
        return x

    policy = NotebookPolicy()
    assert not policy.requires_approval("read_file", {}, builtin.read_file)
    assert not policy.requires_approval("users_own", {}, users_own)
    assert policy.requires_approval("write_file", {}, builtin.write_file)
    assert policy.requires_approval("renamed", {}, builtin.run_command)
    ask_all = NotebookPolicy(mode="ask")
    assert ask_all.requires_approval("read_file", {}, builtin.read_file)


def test_a_batch_is_refused_only_the_tools_the_policy_would_leave_unanswered(monkeypatch):
    monkeypatch.delenv("AIMU_APPROVAL", raising=False)
    tools = [builtin.read_file, builtin.write_file, builtin.run_command]
    assert NotebookPolicy().unanswered(tools) == [builtin.write_file, builtin.run_command]
    assert NotebookPolicy(mode="ask").unanswered(tools) == tools
    assert NotebookPolicy(mode="deny").unanswered(tools) == []
    monkeypatch.setenv("AIMU_APPROVAL", "deny")
    assert NotebookPolicy().unanswered(tools) == []


async def test_headless_policy_denies_unless_the_environment_says_auto(monkeypatch):
    monkeypatch.delenv("AIMU_APPROVAL", raising=False)
    policy = NotebookPolicy()
    verdict = await policy("write_file", {})
    assert not verdict and "headless" in verdict.reason and verdict.by == "policy"
    monkeypatch.setenv("AIMU_APPROVAL", "auto")
    assert await NotebookPolicy()("write_file", {}) == Decision(True, by="policy")


async def test_user_answers_are_attributed_and_always_allow_is_remembered():
    answers = iter([("always", ""), ("deny", " too risky ")])

    async def ask(name, arguments, agent):
        return next(answers)

    allowed: set = set()
    policy = NotebookPolicy(ask=ask, always_allowed=allowed)
    assert await policy("run_command", {}, tool=builtin.run_command) == Decision(True, by="always")
    assert [key.name for key in allowed] == ["run_command"]
    again = await policy("run_command", {"command": "ls"}, tool=builtin.run_command)
    assert again == Decision(True, by="always", chosen_at="run_command()")
    namesake = tool(name="run_command", read_only=False)(lambda: "x")
    assert await policy("run_command", {}, tool=namesake) == Decision(False, "too risky", by="user")


async def test_a_sub_agents_calls_follow_the_same_rules_and_name_the_asker():
    asked = []

    async def ask(name, arguments, agent):
        asked.append((name, agent))
        return ("approve", "")

    def users_own_function() -> str:
        return "mine"

    policy = NotebookPolicy(ask=ask)
    child = policy.for_agent("agent/researcher@call_7")
    assert not child.requires_approval("read_file", {}, builtin.read_file)
    assert not child.requires_approval("calculate", {}, builtin.calculate)
    assert not child.requires_approval("users_own_function", {}, users_own_function)
    assert child.requires_approval("write_file", {}, builtin.write_file)
    assert child.requires_approval("run_command", {}, builtin.run_command)
    assert await child("write_file", {"path": "x"}) == Decision(True, by="user")
    assert asked == [("write_file", "agent/researcher@call_7")]


def test_no_model_anywhere_says_how_to_choose_one(monkeypatch):
    from aimu.models import registry

    monkeypatch.delenv("AIMU_MODEL", raising=False)

    def no_default():
        raise NoDefaultModelError("no model is configured or installed")

    monkeypatch.setattr(registry, "default_model", no_default, raising=False)
    with pytest.raises(UsageError) as caught:
        resolve_model(None, Settings(), {})
    message = str(caught.value)
    assert message.startswith("No model chosen for the agent. Pick one with --model")
    assert "AimuMagics.model" in message and "AIMU_MODEL" in message


def test_model_comes_from_flag_then_config_then_environment(monkeypatch):
    flag, configured, env = ScriptedClient(), ScriptedClient(), ScriptedClient()
    ns = {"flag": flag, "configured": configured, "env": env}
    monkeypatch.setenv("AIMU_MODEL", "env")
    assert resolve_model("flag", Settings(model="configured"), ns) is flag
    assert resolve_model(None, Settings(model="configured"), ns) is configured
    assert resolve_model(None, Settings(), ns) is env
    assert resolve_model("scripted:demo", Settings(), ns).name == "scripted:demo"


def test_interpolation_fills_names_and_keeps_doubled_braces():
    ns = {"df_rows": 3, "user": {"name": "Ada"}}
    assert interpolate("{df_rows} rows for {user[name]} {{x}}", ns) == "3 rows for Ada {x}"
    with pytest.raises(UsageError, match="no notebook variable is named 'missing'"):
        interpolate("{missing}", ns)
    with pytest.raises(UsageError, match="--no-interpolate"):
        interpolate('{"a": 1}', ns)
    with pytest.raises(UsageError, match="--no-interpolate"):
        interpolate("unbalanced {", ns)


def test_transformer_awaits_agent_cells_only():
    agent = ["get_ipython().run_cell_magic('agent', '', 'hi\\n')\n"]
    assert await_agent_cells(agent) == ["await " + agent[0]]
    other = ["get_ipython().run_cell_magic('bash', '', 'ls\\n')\n"]
    assert await_agent_cells(other) == other
    assert await_agent_cells([]) == []


def test_an_old_kernel_asks_on_stdin_and_says_why_once(monkeypatch, capsys):
    import ipykernel

    from aimu_jupyter.approval._ask import StdinAsk
    from aimu_jupyter.run._session import Session
    from aimu_jupyter.view._choose import open_view
    from aimu_jupyter.view._record import RunRecord

    class Kernel:
        def get_parent(self, channel):
            return {"content": {"allow_stdin": True}, "header": {"session": "lab-tab"}}

    def view():
        return open_view(session, Settings(), RunRecord("p", "m"), display=True, nested=False)

    monkeypatch.setattr(ipykernel, "__version__", "7.3.1")
    session = Session(SimpleNamespace(kernel=Kernel(), user_ns={}))
    assert isinstance(view().ask, StdinAsk)
    assert isinstance(view().ask, StdinAsk)
    err = capsys.readouterr().err
    assert err.count("ipykernel 7.3.1 cannot deliver button clicks") == 1
    monkeypatch.setattr(ipykernel, "__version__", "7.4.0")
    session.frontends["lab-tab"] = True
    assert view().ask.__name__ == "ask" and not isinstance(view().ask, StdinAsk)


def test_a_typed_answer_maps_to_a_decision():
    from aimu_jupyter.approval._ask import call_text, parse_answer

    assert [parse_answer(a) for a in ("y", " Yes ", "a", "ALWAYS", "n", "no", "")] == [
        ("approve", ""),
        ("approve", ""),
        ("always", ""),
        ("always", ""),
        ("deny", ""),
        ("deny", ""),
        ("deny", ""),
    ]
    assert parse_answer("use /tmp instead") == ("deny", "use /tmp instead")
    long = call_text("write_file", {"path": "a.txt", "content": "x" * 200})
    assert long.startswith("write_file(path='a.txt', content='xxx") and long.endswith("…)")
