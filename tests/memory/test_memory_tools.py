"""make_memory_tools and make_retrieval_tool, driven through a real agent loop."""

import pytest

import aimu.agents.subagent
import aimu.tools.builtin._memory as memory_module
from aimu import Agent
from aimu.memory import DocumentStore
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.rag import ingest
from aimu.tools import builtin


def tool_messages(agent):
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def test_the_builtin_package_reexports_the_factories_lazily():
    assert builtin.make_memory_tools is memory_module.make_memory_tools
    assert builtin.make_retrieval_tool is memory_module.make_retrieval_tool
    assert builtin.make_subagent_tool is aimu.agents.subagent.make_subagent_tool


def test_an_agent_stores_then_finds_a_memory(semantic):
    tools = builtin.make_memory_tools(semantic)
    assert [t.__tool_spec__["function"]["name"] for t in tools] == [
        "store_memory",
        "search_memories",
        "list_memories",
    ]
    script = [
        call("store_memory", content="The user's dog is called Biscuit"),
        call("store_memory", content="The user prefers tea to coffee"),
        call("search_memories", query="What pet does the user have?", n_results=1),
        call("list_memories"),
        "Your dog is Biscuit.",
    ]
    agent = Agent(ScriptedClient(script), tools=tools)

    assert agent.run("What is my dog called?") == "Your dog is Biscuit."

    stored, _, found, listing = tool_messages(agent)
    assert stored == "Stored."
    assert found == "1. The user's dog is called Biscuit"
    assert listing.startswith("Items 1-2 of 2:")
    assert "Biscuit" in listing and "tea" in listing


def test_oversized_or_empty_memories_are_refused_with_a_reason(semantic):
    store_memory, search_memories, list_memories = builtin.make_memory_tools(semantic)

    assert "limit is 10000" in store_memory("x" * 10_001)
    assert store_memory("   ") == "Not stored: the memory is empty."
    assert len(semantic) == 0
    assert search_memories("anything") == "Memory is empty."
    assert list_memories() == "Memory is empty."


def test_listing_pages_through_a_large_store():
    docs = DocumentStore()
    for n in range(120):
        docs.write(f"/n/{n:03d}.md", f"note {n}")
    *_, list_memories = builtin.make_memory_tools(docs)

    first = list_memories().splitlines()
    assert first[0] == "Items 1-50 of 120:" and len(first) == 51
    last = list_memories(offset=100, limit=500).splitlines()
    assert last[0] == "Items 101-120 of 120:" and last[-1] == "120. /n/119.md"
    assert list_memories(offset=500) == "Nothing at offset 500: memory holds 120 items."


def test_search_results_are_capped_and_previews_shortened():
    docs = DocumentStore()
    for n in range(80):
        docs.write(f"/{n}.md", "common word " + "long " * 200)
    _, search_memories, _ = builtin.make_memory_tools(docs)

    lines = search_memories("common", n_results=1000).splitlines()
    assert len(lines) == 50
    assert all(len(line) <= 505 and line.endswith("…") for line in lines)


def test_the_retrieval_tool_returns_numbered_context_with_sources(semantic):
    ingest(
        semantic,
        {
            "policies/leave.md": "Staff get twenty-five days of paid annual leave per year.",
            "policies/travel.md": "Book trains for trips under four hours instead of flights.",
        },
    )
    retrieve_context = builtin.make_retrieval_tool(semantic, n_results=1)
    agent = Agent(
        ScriptedClient([call("retrieve_context", query="how much holiday do I get"),
                        "25 days [1]."]),
        tools=[retrieve_context],
    )  # fmt: skip

    assert agent.run("How much holiday?") == "25 days [1]."

    (context,) = tool_messages(agent)
    assert context.startswith("[1] (source: policies/leave.md, chars 0-")
    assert "twenty-five days" in context and "trains" not in context
    described = retrieve_context.__tool_spec__["function"]["description"]
    assert "sources" in described and "Cite" in described


def test_the_retrieval_tool_says_when_nothing_is_there(semantic):
    retrieve_context = builtin.make_retrieval_tool(semantic)
    assert retrieve_context("anything") == "The knowledge base has nothing on this."
    assert retrieve_context("  ").startswith("Give a query")


def test_factories_refuse_what_is_not_a_store():
    with pytest.raises(TypeError, match="MemoryStore"):
        builtin.make_memory_tools({"not": "a store"})
    with pytest.raises(TypeError, match="MemoryStore"):
        builtin.make_retrieval_tool([])
    with pytest.raises(ValueError, match="n_results"):
        builtin.make_retrieval_tool(DocumentStore(), n_results=0)


def test_tools_from_two_stores_stay_bound_to_their_own_store():
    personal, work = DocumentStore(), DocumentStore()
    store_personal, *_ = builtin.make_memory_tools(personal)
    store_work, *_ = builtin.make_memory_tools(work)

    store_personal("likes hiking")
    store_work("quarterly report due friday")

    assert personal.search("hiking") == ["likes hiking"] and work.search("hiking") == []
    assert len(work) == 1


def test_a_model_supplied_string_count_is_coerced(semantic):
    semantic.store("one")
    agent = Agent(
        ScriptedClient([reply(tool_calls=[call("search_memories", query="one", n_results="3")]),
                        "ok"]),
        tools=builtin.make_memory_tools(semantic),
    )  # fmt: skip
    agent.run("go")
    assert tool_messages(agent) == ["1. one"]
