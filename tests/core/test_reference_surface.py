"""The reference library's public surface: lazily built tool groups with guidance and notes,
a settable ``default_generate_kwargs``, document tools and the ``aimu.tools`` exports."""

from __future__ import annotations

import pytest

import aimu
import aimu.tools
from aimu.memory import DocumentStore
from aimu.models import ModelError
from aimu.models.errors import UnsupportedOptionError
from aimu.models.providers.scripted import call
from aimu.tools import ToolGroup, tool


@tool(read_only=True)
def shout(text: str) -> str:
    """Shout a text.

    Args:
        text: What to shout.
    """
    return text.upper()


def test_a_group_is_built_only_when_the_model_loads_it_and_answers_with_its_guidance():
    built = []

    def build():
        built.append(1)
        return [shout]

    group = ToolGroup("loud", "Tools that shout", build, guidance="Shout sparingly.", note="(1)")
    model = aimu.client(
        "scripted",
        turns=[call("load_tools", group="loud"), call("shout", text="hi"), "HI it is."],
    )
    agent = aimu.Agent(model, tool_groups=[group])
    assert built == []
    assert agent.run("shout hi") == "HI it is."
    assert built == [1]
    listing = model.requests[0]["tools"][0]["function"]["description"]
    assert "- loud: Tools that shout (1)" in listing
    loaded = model.requests[1]["messages"][-1]["content"]
    assert "Loaded tool group 'loud': shout" in loaded and "Shout sparingly." in loaded
    assert model.requests[2]["messages"][-1]["content"] == "HI"


def test_a_resident_group_is_listed_and_loading_it_only_gives_guidance():
    group = ToolGroup("maths", "The calculator you already hold", guidance="Use calculate.")
    assert group.resident and group.tools == ()
    model = aimu.client("scripted", turns=[call("load_tools", group="maths"), "ok"])
    aimu.Agent(model, tool_groups=[group]).run("go")
    answer = model.requests[1]["messages"][-1]["content"]
    assert "already yours" in answer and "Use calculate." in answer


def test_the_tools_keyword_still_gives_a_group_its_tools():
    assert ToolGroup("loud", "shouting", tools=[shout]).tool_names == ["shout"]
    with pytest.raises(TypeError, match="not both"):
        ToolGroup("loud", "shouting", lambda: [shout], tools=[shout])


def test_default_generate_kwargs_set_on_a_client_go_with_every_turn_and_survive_clone():
    client = aimu.client("openai:m@http://127.0.0.1:9/v1")
    client.default_generate_kwargs = {"temperature": 0.25}
    body = client.request_body([{"role": "user", "content": "hi"}])
    assert body["temperature"] == 0.25
    assert client.clone().default_generate_kwargs == {"temperature": 0.25}
    assert client.identity()["defaults"] == {"temperature": 0.25}


def test_a_bad_default_generate_kwargs_is_refused_and_the_old_ones_kept():
    client = aimu.client("openai:m@http://127.0.0.1:9/v1", default_generate_kwargs={"seed": 1})
    with pytest.raises(UnsupportedOptionError, match="tempo"):
        client.default_generate_kwargs = {"tempo": 1}
    with pytest.raises(TypeError, match="mapping"):
        client.default_generate_kwargs = ["seed"]
    assert client.default_generate_kwargs == {"seed": 1}


def test_a_client_that_takes_no_generation_options_refuses_defaults():
    from aimu.models.base import ModelClient

    class Plain(ModelClient):
        provider = "plain"

        def stream(self, messages, tools=None, options=None):
            raise ModelError("unused")

    with pytest.raises(UnsupportedOptionError, match="plain"):
        Plain().default_generate_kwargs = {"seed": 1}


def test_document_tools_write_read_edit_and_list_and_report_mistakes_as_text():
    from aimu.tools.builtin import make_document_tools

    store = DocumentStore()
    write, read, edit, listing = make_document_tools(store)
    assert [write.__tool_read_only__, read.__tool_read_only__] == [False, True]
    assert write(path="/plan.md", content="step one") == "Wrote /plan.md."
    assert edit(path="/plan.md", old_str="one", new_str="two") == "Edited /plan.md."
    assert read(path="/plan.md") == "step two"
    assert listing() == "/plan.md"
    assert "no document" in read(path="/missing.md")
    assert "does not occur" in edit(path="/plan.md", old_str="zzz", new_str="y")
    with pytest.raises(TypeError, match="DocumentStore"):
        make_document_tools(object())


def test_aimu_tools_exports_tool_approval_and_the_builtin_module():
    import aimu.tools.builtin as builtin

    assert aimu.tools.builtin is builtin
    assert "ToolApproval" in aimu.tools.__all__ and aimu.tools.ToolApproval is not None
