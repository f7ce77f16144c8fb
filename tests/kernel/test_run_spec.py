"""A notebook run is one value: the same RunSpec from a cell's flags and from run_agent's
keywords, named as aimu.Agent names them, checked where it is built."""

from __future__ import annotations

import shlex

import pytest
from IPython.core.error import UsageError

import aimu_jupyter
from aimu.models.providers.scripted import ScriptedClient
from aimu_jupyter.magics._agent import AimuMagics
from aimu_jupyter.magics._code import AgentCodeMagics
from aimu_jupyter.run._spec import BatchSpec, RunSpec, keywords

#: What a cell's flags are about, beside the run itself.
CELL_ONLY = {"out", "no_interpolate", "export", "fix"}


def cell_spec(line: str) -> RunSpec:
    parser = AimuMagics.agent.parser
    return RunSpec.from_arguments(parser.parse_args(shlex.split(line)), parser)


def test_a_cells_flags_and_run_agents_keywords_make_the_same_spec():
    from_cell = cell_spec(
        "--model scripted:x --tools fs,web --approve deny --system 'Be brief.' "
        "--max-iterations 3 --thinking high --option temperature=0.2 --option stop='[\"E\"]' "
        "--compact last:4 --trust-mcp docs --cache --fresh --name side --new"
    )
    from_python = RunSpec.from_keywords(
        {
            "model": "scripted:x",
            "tools": "fs,web",
            "tool_approval": "deny",
            "system_message": "Be brief.",
            "max_iterations": 3,
            "thinking": "high",
            "generate_kwargs": {"temperature": 0.2, "stop": ["E"]},
            "compaction": "last:4",
            "trust_mcp": "docs",
            "cache": True,
            "fresh": True,
            "name": "side",
            "new": True,
        }
    )
    assert from_cell == from_python
    assert from_cell.each is None


def test_every_flag_of_the_cell_sets_a_field_of_the_spec_or_is_the_cells_own():
    parser = AimuMagics.agent.parser
    dests = {action.dest for action in parser._actions if action.option_strings} - {"help"}
    spec_fields = set(RunSpec.__dataclass_fields__) | set(BatchSpec.__dataclass_fields__)
    assert dests - CELL_ONLY <= spec_fields, dests - CELL_ONLY - spec_fields
    assert set(keywords()) <= set(RunSpec.__dataclass_fields__)


def test_each_rows_and_their_options_make_a_batch_named_as_aimu_batch_names_them():
    spec = cell_spec(
        "--each df --concurrency 2 --checkpoint rows.jsonl --backend openai-batch "
        "--max-cost 1.5 --poll-interval 5"
    )
    assert spec.each.rows == "df"
    assert spec.each.batching() == {
        "concurrency": 2,
        "checkpoint": "rows.jsonl",
        "backend": "openai-batch",
        "max_cost": 1.5,
        "poll_interval": 5.0,
    }
    assert "poll_interval" not in cell_spec("--each df").each.batching()


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--max-iterations 0", "--max-iterations must be an int >= 1, not 0"),
        ("--each df --concurrency 0", "--concurrency must be an int >= 1, not 0"),
        ("--each df --max-cost 0", "--max-cost must be a number of US dollars > 0"),
        ("--each df --poll-interval -1", "--poll-interval must be a number of seconds > 0"),
        ("--thinking hard", "--thinking hard: use off, on, low, medium or high"),
        ("--option temperature", "--option temperature: write it as name=value"),
    ],
)
def test_a_bad_flag_is_a_usage_error_naming_the_flag(line, words):
    with pytest.raises(UsageError) as caught:
        cell_spec(line)
    assert words in str(caught.value)


def test_a_bad_keyword_value_is_a_usage_error_naming_the_keyword():
    with pytest.raises(UsageError, match=r"^max_iterations must be an int >= 1, not True$"):
        RunSpec.from_keywords({"max_iterations": True})
    with pytest.raises(UsageError, match=r"^thinking='hard': use off"):
        RunSpec.from_keywords({"thinking": "hard"})
    with pytest.raises(UsageError, match=r"^new must be True or False, not 1$"):
        RunSpec.from_keywords({"new": 1})


def test_an_unknown_keyword_is_a_type_error_as_in_any_call():
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        RunSpec.from_keywords({"temperature": 0.2})
    with pytest.raises(TypeError, match="unexpected keyword argument 'each'"):
        RunSpec.from_keywords({"each": "df"})


def test_the_old_spellings_still_work_and_say_the_new_name():
    with pytest.warns(DeprecationWarning) as caught:
        spec = RunSpec.from_keywords({"approve": "auto", "system": "Hi."})
    assert [str(w.message).split(" is now")[0] for w in caught] == [
        "run_agent(approve=...)",
        "run_agent(system=...)",
    ]
    assert "spelled tool_approval=..." in str(caught[0].message)
    assert (spec.tool_approval, spec.system_message) == ("auto", "Hi.")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="twice"):
        RunSpec.from_keywords({"approve": "auto", "tool_approval": "deny"})


async def test_run_agent_takes_the_librarys_names_and_still_the_old_ones():
    m = ScriptedClient(["first", "second"])
    answer = await aimu_jupyter.run_agent(
        "hi", model=m, system_message="Be brief.", tool_approval="deny", display=False, new=True
    )
    assert answer == "first"
    assert m.requests[0]["messages"][0] == {"role": "system", "content": "Be brief."}
    renamed = r"\(system=\.\.\.\) is now spelled system_message="
    with pytest.warns(DeprecationWarning, match=renamed):
        await aimu_jupyter.run_agent("again", model=m, system="Be long.", display=False, new=True)
    assert m.requests[1]["messages"][0] == {"role": "system", "content": "Be long."}


def test_run_agents_signature_lists_every_option():
    import inspect

    parameters = inspect.signature(aimu_jupyter.run_agent).parameters
    assert list(parameters)[:2] == ["prompt", "interpolate"]
    assert set(keywords()) <= set(parameters)
    assert parameters["display"].default is None


def test_agent_fix_shares_the_run_options_of_agent_cells_declared_once():
    def options(parser) -> dict:
        return {a.dest: (a.option_strings, a.help, a.metavar) for a in parser._actions}

    fix = options(AgentCodeMagics.agent_fix.parser)
    cell = options(AimuMagics.agent.parser)
    shared = {"model", "tools", "tool_approval", "name"}
    assert {dest: fix[dest] for dest in shared} == {dest: cell[dest] for dest in shared}
    parser = AgentCodeMagics.agent_fix.parser
    spec = RunSpec.from_arguments(parser.parse_args(shlex.split("-m scripted:x -a deny")), parser)
    assert (spec.model, spec.tool_approval, spec.label("tool_approval")) == (
        "scripted:x",
        "deny",
        "--approve",
    )
