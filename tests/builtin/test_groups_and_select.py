"""The groups, ALL_TOOLS, unscoped, select(), and the package's public surface."""

import json
import subprocess
import sys

import pytest

from aimu import Agent
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import builtin


def names(tools):
    return [t.__tool_spec__["function"]["name"] for t in tools]


def test_groups_hold_the_documented_tools():
    assert names(builtin.fs) == ["list_directory", "read_file", "write_file", "edit_file"]
    assert names(builtin.compute) == ["calculate", "execute_python", "run_command"]
    assert names(builtin.time) == ["get_current_date_and_time", "convert_time"]
    assert names(builtin.misc) == ["echo"]
    assert set(names(builtin.web)) == {
        "get_web_content", "get_webpage_html", "web_search", "wikipedia", "get_weather",
    }  # fmt: skip


def test_all_tools_is_every_group_except_the_code_runners_and_the_file_writers():
    everything = builtin.web + builtin.fs + builtin.compute + builtin.time + builtin.misc
    left_out = ("execute_python", "run_command", "write_file", "edit_file")
    expected = [n for n in names(everything) if n not in left_out]
    assert names(builtin.ALL_TOOLS) == expected
    assert not set(names(builtin.ALL_TOOLS)) & set(names(builtin.unscoped))


def test_all_tools_against_fs_leaves_only_what_is_added_back():
    kept = builtin.select(builtin.ALL_TOOLS, exclude=builtin.fs)
    assert not set(names(kept)) & set(names(builtin.fs))


def test_get_webpage_is_the_web_reader_under_its_reference_name(tmp_path):
    assert builtin.get_webpage is builtin.get_web_content
    assert "get_webpage" in builtin.__all__
    assert "not a web address" in builtin.get_webpage(str(tmp_path)).lower()


def test_unscoped_names_the_tools_that_reach_anything():
    assert set(names(builtin.unscoped)) == {
        "execute_python", "run_command", "write_file", "edit_file",
    }  # fmt: skip


def test_every_tool_has_a_spec_a_model_can_read():
    everything = builtin.ALL_TOOLS + builtin.compute + [builtin.execute_python_in_process]
    for tool in everything:
        spec = tool.__tool_spec__["function"]
        assert spec["description"], spec["name"]
        for name, schema in spec["parameters"]["properties"].items():
            assert schema.get("description"), f"{spec['name']}.{name} is undocumented"
        json.dumps(tool.__tool_spec__)


def test_public_names_are_exported_and_factories_load_lazily():
    for name in builtin.__all__:
        if name.startswith("make_") and name != "make_command_tool":
            continue
        assert hasattr(builtin, name), name
    assert {"make_web_tools", "make_memory_tools", "make_retrieval_tool",
            "make_subagent_tool", "make_command_tool"} <= set(builtin.__all__)  # fmt: skip
    with pytest.raises(AttributeError, match="no attribute 'make_everything'"):
        builtin.make_everything  # noqa: B018


def test_importing_the_package_does_not_import_the_lazy_factories():
    probe = (
        "import sys, aimu.tools.builtin as b; "
        "print(sorted(m for m in ('aimu.tools.builtin._memory', 'aimu.agents.subagent') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_select_by_name_tool_and_group():
    kept = [*builtin.select(builtin.ALL_TOOLS, exclude=builtin.fs), builtin.read_file]
    assert "write_file" not in names(kept) and "read_file" in names(kept)
    assert names(builtin.select(builtin.fs, exclude=["write_file", "edit_file"])) == [
        "list_directory", "read_file",
    ]  # fmt: skip
    assert names(builtin.select(builtin.compute, include=builtin.calculate)) == ["calculate"]
    assert names(builtin.select(builtin.fs, include="read_file")) == ["read_file"]


def test_include_applies_before_exclude():
    picked = builtin.select(builtin.fs, include=["read_file", "write_file"], exclude="write_file")
    assert names(picked) == ["read_file"]


def test_the_result_is_deduplicated_by_name_keeping_order():
    picked = builtin.select(builtin.ALL_TOOLS + builtin.fs, exclude=builtin.compute)
    expected = [n for n in names(builtin.ALL_TOOLS) if n != "calculate"]
    assert names(picked) == [*expected, "write_file", "edit_file"]


def test_a_misspelled_exclusion_raises_naming_it():
    with pytest.raises(ValueError, match=r"no tool named 'wrte_file'.*did you mean 'write_file'"):
        builtin.select(builtin.fs, exclude=["read_file", "wrte_file"])


def test_a_string_naming_a_tool_outside_the_list_raises():
    with pytest.raises(ValueError, match="no tool named 'run_command'"):
        builtin.select(builtin.ALL_TOOLS, exclude="run_command")


def test_a_group_may_name_tools_the_list_does_not_hold():
    kept = builtin.select(builtin.time, exclude=builtin.fs)
    assert kept == builtin.time


def test_selectors_of_the_wrong_type_are_type_errors():
    with pytest.raises(TypeError, match="selector"):
        builtin.select(builtin.fs, exclude=42)
    with pytest.raises(TypeError, match="not a tool"):
        builtin.select([print], include="print")


def test_the_groups_run_in_a_plain_agent(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("budget: 1250\n")
    model = ScriptedClient(
        [
            reply(tool_calls=[call("read_file", path=str(notes))]),
            reply(tool_calls=[call("calculate", expression="1250 * 1.08")]),
            reply(tool_calls=[call("execute_python", code="sum(range(5))")]),
            reply(tool_calls=[call("convert_time", datetime_str="2026-08-11 9:00 AM",
                                   from_timezone="Europe/Berlin", to_timezone="UTC")]),
            "Done.",
        ]
    )  # fmt: skip
    agent = Agent(model, tools=builtin.ALL_TOOLS + builtin.compute)
    assert agent.run("go") == "Done."
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results[0] == "budget: 1250\n"
    assert results[1] == "1350"
    assert results[2] == "Result: 10"
    assert results[3].endswith("2026-08-11T07:00:00+00:00 (Tuesday, UTC, UTC)")


def test_echo_returns_its_input_unchanged():
    assert builtin.echo("  spaced\nlines  ") == "  spaced\nlines  "
