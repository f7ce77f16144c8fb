"""The agent's code stays in the notebook: export, add_cell, and %agent_fix."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import pytest
from kernel_harness import start_kernel

CELLS_MIME = "application/vnd.aimu.cells+json"

LOAD = "rows = [{'month': m, 'sales': s} for m, s in zip(range(1, 5), [10, 30, 20, 50])]"
GROW = "growth = [b['sales'] - a['sales'] for a, b in zip(rows, rows[1:])]\nbest = max(growth)"


def published_cells(result) -> list[dict]:
    blocks = [
        m["content"]["data"][CELLS_MIME]
        for m in result.displays
        if CELLS_MIME in m["content"]["data"]
    ]
    return [cell for block in blocks for cell in block["cells"]]


@pytest.fixture
def fresh_kernel(tmp_path):
    (tmp_path / "fresh").mkdir()
    k = start_kernel(tmp_path / "fresh")
    try:
        yield k
    finally:
        k.client.stop_channels()
        k.km.shutdown_kernel(now=True)


def script_two_runs(kernel) -> None:
    kernel.ok(
        "m = ScriptedClient([\n"
        f"    call('python', code={LOAD!r}),\n"
        "    call('python', code='rows[99]'),\n"
        f"    call('python', code={GROW!r}),\n"
        "    'Month 4 grew fastest.',\n"
        "    call('python', code='best_month = growth.index(best) + 2'),\n"
        "    'It is month 4.',\n"
        "])"
    )
    kernel.ok(
        "%%agent --model m --tools python --approve auto\nLoad the sales and find the growth."
    )


def test_exported_cells_rerun_in_a_fresh_kernel_recreate_the_variables(
    kernel, fresh_kernel, tmp_path
):
    script_two_runs(kernel)
    kernel.ok("%%agent --model m --tools python --approve auto\nWhich month?")
    result = kernel.ok("%agent_export")
    cells = published_cells(result)
    assert [c["cell_type"] for c in cells] == ["code", "code", "code"]
    assert "rows[99]" not in "".join(c["source"] for c in cells)
    assert cells[0]["source"].startswith(
        "# From the agent run 'Load the sales and find the growth.': python call 1 of 3\n"
    )
    assert cells[2]["source"].startswith("# From the agent run 'Which month?': python call 3 of 3")
    assert "```python" in result.displays[-1]["content"]["data"]["text/markdown"]
    for cell in cells:
        fresh_kernel.ok(cell["source"])
    assert fresh_kernel.value("(best, best_month)") == (30, 4)
    assert fresh_kernel.value("best_month") == kernel.value("best_month")


def test_agent_export_option_exports_only_that_runs_calls(kernel):
    script_two_runs(kernel)
    result = kernel.ok("%%agent --model m --tools python --approve auto --export\nWhich month?")
    (cell,) = published_cells(result)
    assert cell["source"].endswith("best_month = growth.index(best) + 2\n")


def test_each_conversation_exports_only_its_own_code_when_call_ids_repeat(kernel):
    kernel.ok(
        "def same_id(code):\n"
        "    dup = {'id': 'dup', 'name': 'python', 'arguments': {'code': code}}\n"
        "    return reply(tool_calls=[dup])\n"
        "a = ScriptedClient([same_id('from_a = 1'), 'done'])\n"
        "b = ScriptedClient([same_id('from_b = 2'), 'done'])"
    )
    kernel.ok("%%agent --model a --name first --tools python --approve auto\nSet from_a.")
    denied = kernel.ok("%%agent --model b --name second --tools python --approve deny\nSet from_b.")
    assert denied.record["events"][0]["status"] == "denied"
    second = kernel.ok("%agent_export --name second")
    assert not published_cells(second)
    assert "no successful python tool calls" in second.stdout
    (cell,) = published_cells(kernel.ok("%agent_export --name first"))
    assert cell["source"] == "# From the agent run 'Set from_a.': python call 1 of 1\nfrom_a = 1\n"


def test_export_with_nothing_to_export_says_so(kernel):
    kernel.ok("m = ScriptedClient(['Hello.'])")
    kernel.ok("%%agent --model m\nhi")
    result = kernel.ok("%agent_export")
    assert not published_cells(result)
    assert "no successful python tool calls" in result.stdout
    missing = kernel.execute("%agent_export --name nowhere")
    assert (
        missing.status == "error" and "no conversation named 'nowhere'" in missing.reply["evalue"]
    )


def test_add_cell_proposes_an_unexecuted_cell_after_approval(kernel):
    kernel.ok(
        "m = ScriptedClient([call('add_cell', source='total = 1 + 1', kind='code'),"
        " call('add_cell', source='## Notes', kind='markdown'), 'Added.'])"
    )
    result = kernel.ok("%%agent --model m --tools notebook --approve auto\nLeave me a cell.")
    assert published_cells(result) == [
        {"cell_type": "code", "source": "total = 1 + 1"},
        {"cell_type": "markdown", "source": "## Notes"},
    ]
    assert kernel.value("'total' in dir()") is False


def test_add_cell_asks_first_so_a_headless_run_denies_it(kernel):
    kernel.ok("m = ScriptedClient([call('add_cell', source='x = 1'), 'ok'])")
    result = kernel.ok("%%agent --model m --tools notebook\nLeave me a cell.", allow_stdin=False)
    assert not published_cells(result)
    (card,) = [e for e in result.record["events"] if e["type"] == "tool"]
    assert card["status"] == "denied"


def test_agent_fix_sends_the_traceback_and_the_failing_cell(kernel):
    kernel.ok("def ratio(a, b):\n    return a / b")
    failing = "values = [4, 0]\nratio(*values)"
    assert kernel.execute(failing).status == "error"
    kernel.ok("m = ScriptedClient(['b is zero; guard it.'])")
    result = kernel.ok("%agent_fix --model m what went wrong")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "ZeroDivisionError: division by zero" in prompt
    assert "return a / b" in prompt and "ratio(*values)" in prompt
    assert prompt.index(failing) < prompt.index("def ratio(a, b):")
    assert "what went wrong" in prompt
    assert "interactiveshell.py" not in prompt
    tools = kernel.value("[t['function']['name'] for t in m.requests[0]['tools']]")
    assert {"python", "add_cell", "read_cells"} <= set(tools)
    assert result.record["status"] == "done"


def test_agent_fix_shows_the_person_the_question_the_cell_and_the_error_not_the_raw_prompt(
    kernel,
):
    failing = "sales = {'units': [1, 2]}\ntotal = 10 + sum(sales['revenue'])"
    assert kernel.execute(failing).status == "error"
    kernel.ok("m = ScriptedClient(['There is no revenue column.'])")
    result = kernel.ok("%agent_fix --model m why no revenue")
    shown = result.record["prompt_markdown"]
    assert shown.startswith("**You asked:** why no revenue")
    assert f"```python\n{failing}\n```" in shown
    line = "`total = 10 + sum(sales['revenue'])`"
    assert f"**Error:** `KeyError: 'revenue'` at line 2: {line}" in shown
    assert "^^^" not in shown and "Traceback (trimmed)" not in shown
    assert "<details><summary>Traceback</summary>" in shown  # the rest, folded
    assert "Cell In[" in shown and "ipykernel_" not in shown
    assert result.bundle["text/markdown"].startswith("> **You asked:** why no revenue")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "Traceback (trimmed)" in prompt and "KeyError: 'revenue'" in prompt
    assert "^^^" in prompt  # the model still gets where on the line it failed
    assert result.record["prompt"] == prompt


def test_add_cell_shows_its_source_as_code_in_the_plain_text_record(kernel):
    source = 'sales["revenue"].sum()'
    kernel.ok(f"m = ScriptedClient([call('add_cell', source={source!r}), 'ok'])")
    result = kernel.ok("%%agent --model m --tools notebook --approve auto\nLeave me a cell.")
    plain = result.bundle["text/plain"]
    assert '[tool add_cell({"kind": "code"})] done' in plain or "[tool add_cell({})] done" in plain
    assert f"  source (python):\n    {source}" in plain
    assert '\\"' not in plain


def test_agent_cell_fix_option_uses_the_cell_as_the_question(kernel):
    assert kernel.execute("int('seven')").status == "error"
    kernel.ok("m = ScriptedClient(['Use 7.'])")
    kernel.ok("%%agent --model m --fix\nWhat should the literal be?")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "ValueError: invalid literal for int()" in prompt
    assert "int('seven')" in prompt and "What should the literal be?" in prompt


def test_agent_fix_asks_about_an_exception_the_code_caught_and_kept(kernel):
    caught = "try:\n    int('seven')\nexcept ValueError as error:\n    failure = error"
    kernel.ok(caught)
    kernel.ok("m = ScriptedClient(['Use 7.'])")
    kernel.ok("%agent_fix --model m --error failure")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "ValueError: invalid literal for int()" in prompt
    assert caught in prompt
    result = kernel.execute("%agent_fix --error m")
    assert result.status == "error"
    assert "no notebook variable of that name holds an exception" in result.reply["evalue"]


def test_agent_fix_without_an_exception_is_a_usage_error(kernel):
    result = kernel.execute("%agent_fix")
    assert result.status == "error"
    assert "no cell has raised an exception" in result.reply["evalue"]


def test_agent_fix_refuses_a_bad_approve_as_an_agent_cell_does(kernel):
    assert kernel.execute("1 / 0").status == "error"
    kernel.ok("m = ScriptedClient(['never asked'])")
    fix = kernel.execute("%agent_fix --model m --approve bogus")
    cell = kernel.execute("%%agent --model m --approve bogus\nhello")
    assert fix.status == cell.status == "error"
    assert fix.reply["evalue"] == cell.reply["evalue"]
    assert fix.reply["evalue"].startswith("--approve bogus: use auto (run every call)")
    assert kernel.value("len(m.requests)") == 0


def test_agent_fix_help_lists_its_options_in_the_words_of_agent(kernel):
    page = kernel.ok("%agent_fix?").reply["payload"][0]["data"]["text/plain"]
    for option in ("--model", "--tools", "--approve", "--name", "--error", "Examples"):
        assert option in page
    words = " ".join(page.split())
    assert "notebook variable holding a ModelClient" in words
    assert "notebook variable holding a policy(name, arguments)" in words


def test_agent_fix_hides_secrets_in_the_traceback(kernel):
    kernel.ok("api_key = 'sk-live-abcdefgh12345'")
    assert kernel.execute("raise RuntimeError(f'bad key {api_key}')").status == "error"
    kernel.ok("m = ScriptedClient(['Rotate it.'])")
    kernel.ok("%agent_fix --model m")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert "sk-live-abcdefgh12345" not in prompt and "[hidden]" in prompt


def test_outside_a_kernel_export_becomes_the_next_input(tmp_path):
    script = textwrap.dedent(
        """
        from IPython.terminal.interactiveshell import TerminalInteractiveShell

        shell = TerminalInteractiveShell.instance()
        for cell in (
            "%load_ext aimu",
            "from aimu.models.providers.scripted import ScriptedClient, call",
            "m = ScriptedClient([call('python', code='x = 41 + 1'), 'ok'])",
            "%%agent --model m --tools python --approve auto\\ngo",
            "%agent_export",
        ):
            assert shell.run_cell(cell).success, cell
        print(repr(shell.rl_next_input))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "IPYTHONDIR": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    exported = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert exported == "# From the agent run 'go': python call 1 of 1\nx = 41 + 1"
