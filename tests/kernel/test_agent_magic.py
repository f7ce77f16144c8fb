"""``%%agent`` and ``%tool`` in a real kernel, driven with jupyter_client."""

from __future__ import annotations

import threading

from kernel_harness import RUN_MIME, Widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def running_card(msg) -> bool:
    data = msg["content"].get("data", {})
    events = data.get(RUN_MIME, {}).get("events", [])
    return msg["msg_type"] == "update_display_data" and any(
        e.get("status") == "running" for e in events
    )


def test_loading_twice_is_harmless_and_unloading_removes_the_magics(kernel):
    kernel.ok("%load_ext aimu\n%load_ext aimu_jupyter")
    assert kernel.value("len(get_ipython().input_transformers_post)") == 1
    kernel.ok("%unload_ext aimu")
    result = kernel.execute("%%agent\nhello")
    assert result.status == "error"
    assert "Cell magic `%%agent` not found" in result.reply["evalue"]
    assert kernel.value("len(get_ipython().input_transformers_post)") == 0


def test_agent_help_shows_every_option(kernel):
    result = kernel.ok("%%agent?")
    page = result.reply["payload"][0]["data"]["text/plain"]
    for option in (
        "--model",
        "--tools",
        "--approve",
        "--new",
        "--name",
        "--system",
        "--max-iterations",
        "--out",
        "--no-interpolate",
        "Examples",
    ):
        assert option in page


def test_config_lists_the_settings(kernel):
    result = kernel.ok("%config AimuMagics")
    for setting in ("model", "tools", "approval", "approval_timeout", "max_iterations"):
        assert f"AimuMagics.{setting}" in result.stdout


def test_a_streamed_answer_updates_one_display_throttled_and_ends_complete(kernel):
    kernel.ok(
        "answer = ' '.join(f'w{i}' for i in range(600))\nm = ScriptedClient([answer], delay=0.003)"
    )
    result = kernel.ok("%%agent --model m\nTalk for a while.")
    displays = [m for m in result.of_type("display_data") if RUN_MIME in m["content"]["data"]]
    updates = [m for m in result.of_type("update_display_data") if RUN_MIME in m["content"]["data"]]
    assert len(displays) == 1
    display_id = displays[0]["content"]["transient"]["display_id"]
    assert {u["content"]["transient"]["display_id"] for u in updates} == {display_id}
    record = result.record
    duration = record["duration_s"]
    assert duration > 1.5
    assert 5 <= len(updates) <= 20 * duration + 2
    assert record["status"] == "done"
    assert record["events"] == [{"type": "text", "text": kernel.value("answer")}]
    assert result.bundle["text/markdown"].startswith("w0 w1 w2")
    assert "w599" in result.bundle["text/plain"]


def test_the_answer_is_not_echoed_as_an_out_value(kernel):
    kernel.ok("m = ScriptedClient(['hi'])")
    result = kernel.ok("%%agent --model m\nsay hi")
    assert not result.of_type("execute_result")


def test_out_stores_the_final_answer(kernel):
    kernel.ok("m = ScriptedClient(['The answer is 42.'])")
    kernel.ok("%%agent --model m --out answer\nWhat is it?")
    assert kernel.value("answer") == "The answer is 42."


def test_out_rejects_a_name_that_is_not_a_variable(kernel):
    kernel.ok("m = ScriptedClient(['x'])")
    result = kernel.execute("%%agent --model m --out 2x\nhi")
    assert result.status == "error"
    assert "--out 2x: not a valid variable name" in result.reply["evalue"]
    assert kernel.value("m.remaining") == 1


def test_braces_are_filled_from_notebook_variables(kernel):
    kernel.ok("m = ScriptedClient(['ok'])\ncity = 'Lyon'\nrows = [1, 2, 3]")
    kernel.ok("%%agent --model m\nWeather in {city}? {rows[1]} {city!r:>8} {{literal}}")
    prompt = kernel.value("m.requests[0]['messages'][-1]['content']")
    assert prompt == "Weather in Lyon? 2   'Lyon' {literal}"


def test_an_expression_in_braces_is_refused_with_a_hint(kernel):
    kernel.ok("m = ScriptedClient(['ok'])\nrows = [1]")
    result = kernel.execute("%%agent --model m\nCount {len(rows)}")
    assert result.reply["ename"] == "UsageError"
    assert "{len(rows)} in the prompt is not a variable name" in result.reply["evalue"]


def test_an_unknown_name_in_braces_is_a_clear_error_and_nothing_is_sent(kernel):
    kernel.ok("m = ScriptedClient(['ok'])")
    result = kernel.execute("%%agent --model m\nTell me about {nothing_here}")
    assert result.status == "error"
    assert result.reply["ename"] == "UsageError"
    assert (
        "{nothing_here} but no notebook variable is named 'nothing_here'" in result.reply["evalue"]
    )
    assert "--no-interpolate" in result.reply["evalue"]
    assert kernel.value("len(m.requests)") == 0


def test_no_interpolate_sends_braces_as_written(kernel):
    kernel.ok("m = ScriptedClient(['ok'])")
    kernel.ok('%%agent --model m --no-interpolate\nParse {"a": {x}}')
    assert kernel.value("m.requests[0]['messages'][-1]['content']") == 'Parse {"a": {x}}'


def test_cells_continue_one_conversation_until_new(kernel):
    kernel.ok("m = ScriptedClient(['first', 'second', 'third'])")
    kernel.ok("%%agent --model m\none")
    kernel.ok("%%agent --model m\ntwo")
    kernel.ok("%%agent --model m --new\nthree")
    roles = kernel.value("[[x['content'] for x in r['messages']] for r in m.requests]")
    assert roles == [["one"], ["one", "first", "two"], ["three"]]


def test_named_conversations_are_kept_apart(kernel):
    kernel.ok("m = ScriptedClient(['a1', 'b1', 'a2'])")
    kernel.ok("%%agent --model m --name a\nA one")
    kernel.ok("%%agent --model m --name b\nB one")
    kernel.ok("%%agent --model m --name a\nA two")
    last = kernel.value("[x['content'] for x in m.requests[2]['messages']]")
    assert last == ["A one", "a1", "A two"]


def test_system_message_opens_the_conversation(kernel):
    kernel.ok("m = ScriptedClient(['ok'])")
    kernel.ok('%%agent --model m --system "Answer in French."\nhello')
    first = kernel.value("m.requests[0]['messages'][0]")
    assert first == {"role": "system", "content": "Answer in French."}


def test_model_from_config_and_env_is_used_when_no_flag_is_given(kernel):
    kernel.ok("m = ScriptedClient(['from config'])\n%config AimuMagics.model = 'm'")
    kernel.ok("%%agent --out a\nhi")
    assert kernel.value("a") == "from config"


def test_a_model_name_that_is_neither_variable_nor_provider_is_a_clear_error(kernel):
    result = kernel.execute("%%agent --model nosuchvariable\nhi")
    assert result.status == "error"
    assert result.error_lines[0].startswith("AgentFailed: unknown model provider 'nosuchvariable'")


def test_a_model_variable_of_the_wrong_type_is_a_clear_error(kernel):
    kernel.ok("m = 42")
    result = kernel.execute("%%agent --model m\nhi")
    assert result.reply["ename"] == "UsageError"
    assert "holds a int, not a ModelClient" in result.reply["evalue"]


def test_a_failing_model_shows_one_line_and_keeps_the_record(kernel):
    kernel.ok(
        "from aimu.models.errors import ModelConnectionError\n"
        "m = ScriptedClient([ModelConnectionError('could not reach http://127.0.0.1:9; "
        "is the server running?')])"
    )
    result = kernel.execute("%%agent --model m\nhi")
    assert result.status == "error"
    assert result.error_lines == [
        "AgentFailed: could not reach http://127.0.0.1:9; is the server running?"
    ]
    assert result.record["status"] == "error"
    assert "could not reach" in result.record["error"]


def test_unknown_tools_item_lists_the_choices(kernel):
    kernel.ok("m = ScriptedClient(['x'])")
    result = kernel.execute("%%agent --model m --tools web,nonsense\nhi")
    assert result.reply["ename"] == "UsageError"
    assert "'nonsense'" in result.reply["evalue"] and "python" in result.reply["evalue"]


def test_interrupt_cancels_promptly_and_leaves_a_valid_transcript(kernel):
    kernel.ok("m = ScriptedClient(['word ' * 400, 'second answer'], delay=0.05)")
    interrupted = []

    def on_message(msg):
        if msg["msg_type"] == "update_display_data" and not interrupted:
            interrupted.append(True)
            kernel.km.interrupt_kernel()

    result = kernel.execute("%%agent --model m\nlong", on_message=on_message, timeout=15)
    assert result.status == "error"
    assert result.reply["ename"] == "AgentInterrupted"
    assert result.error_lines == ["Stopped by you; the conversation is kept."]
    assert result.record["status"] == "interrupted"
    assert result.record["duration_s"] < 5
    assert "Stopped by you." in result.bundle["text/markdown"]
    kernel.ok("%%agent --model m\nnext")
    roles = kernel.value("[x['role'] for x in m.requests[1]['messages']]")
    assert roles == ["user", "assistant", "user"]


def test_interrupt_while_waiting_for_approval_reads_stopped_by_you(kernel, tmp_path):
    kernel.ok("m = ScriptedClient([call('write_file', path='w.txt', content='w'), 'after'])")
    interrupted = []

    widgets = Widgets()

    def on_message(msg):
        widgets.see(msg)
        data = msg["content"].get("data", {})
        if WIDGET_VIEW in data and not widgets.is_inbox_box(msg) and not interrupted:
            interrupted.append(True)
            kernel.km.interrupt_kernel()

    result = kernel.execute("%%agent --model m --tools fs\nwrite", on_message=on_message)
    assert result.reply["ename"] == "AgentInterrupted"
    assert not (tmp_path / "w.txt").exists()
    notes = [
        m["content"]["data"].get("text/plain", "") for m in result.of_type("update_display_data")
    ]
    assert "[tool write_file(" in notes[-1] and "] stopped by you" in notes[-1]
    card = result.record["events"][0]
    assert card["status"] == "stopped" and card["approval"] is None
    assert "denied" not in result.bundle["text/markdown"].lower()
    tool_reply = kernel.value("m.requests[0]['messages'][-1]['role']")
    assert tool_reply == "user"
    kernel.ok("m.turns.append('fine')")
    kernel.ok("%%agent --model m\ncontinue")
    roles = kernel.value("[x['role'] for x in m.requests[1]['messages']]")
    assert roles == ["user", "assistant", "tool", "assistant", "user"]


def test_python_tool_leaves_a_variable_the_next_cell_reads(kernel):
    kernel.ok(
        "m = ScriptedClient([call('python', code='total = sum(range(10))\\ntotal * 2'), 'Done.'])"
    )
    result = kernel.ok("%%agent --model m --tools python --approve auto\nsum it")
    assert kernel.value("total") == 45
    assert result.record["events"][0]["result"] == "Result: 90"


def test_python_tool_reads_notebook_data_and_reports_errors_with_traceback(kernel):
    kernel.ok(
        "prices = [3, 4, 5]\n"
        "m = ScriptedClient([reply(tool_calls=[call('python', code='print(max(prices))'),"
        " call('python', code='1/0'), call('python', code='import socket')]), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools python --approve auto\ngo")
    cards = [e for e in result.record["events"] if e["type"] == "tool"]
    assert cards[0]["result"] == "5"
    assert "ZeroDivisionError" in cards[1]["result"] and "Traceback" in cards[1]["result"]
    assert "blocked" in cards[2]["result"]


def test_python_tool_import_allowlist_widens_by_config(kernel):
    kernel.ok(
        "%config AimuMagics.allowed_imports = ['textwrap']\n"
        "m = ScriptedClient([call('python', code='import textwrap\\ntextwrap.fill(\"ab\")'),"
        " 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools python --approve auto\ngo")
    assert result.record["events"][0]["result"] == "Result: 'ab'"


def test_an_endless_python_tool_call_is_stopped_by_interrupt(kernel, tmp_path):
    code = "import pathlib\npathlib.Path('started').touch()\nwhile True: pass"
    kernel.ok(
        "%config AimuMagics.allowed_imports = ['pathlib']\n"
        f"m = ScriptedClient([call('python', code={code!r}), 'after'])"
    )
    started = tmp_path / "started"
    done = threading.Event()

    def interrupt_once_running():
        while not started.exists():
            if done.wait(0.01):
                return
        kernel.km.interrupt_kernel()

    watcher = threading.Thread(target=interrupt_once_running)
    watcher.start()
    try:
        result = kernel.execute("%%agent --model m --tools python --approve auto\nloop", timeout=20)
    finally:
        done.set()
        watcher.join()
    assert result.reply.get("ename") == "AgentInterrupted", result.record["events"]
    card = result.record["events"][0]
    assert card["is_error"]
    assert card["result"] == "KeyboardInterrupt: the user interrupted this call."
    assert kernel.value("1 + 1") == 2


def test_python_tool_is_gated_by_default(kernel):
    kernel.ok("m = ScriptedClient([call('python', code='x = 1'), 'ok'])")
    result = kernel.ok("%%agent --model m --tools python\nset x", allow_stdin=False)
    assert result.record["events"][0]["status"] == "denied"
    assert kernel.execute("x").status == "error"


def test_notebook_tools_see_variables_and_cells_but_not_secrets(kernel):
    kernel.ok(
        "import os\nos.environ['SERVICE_TOKEN'] = 'tok-1234567890'\n"
        "scores = {'a': 1, 'b': 2}\napi_key = 'sk-abcdef123456'\n"
        "note = 'uses tok-1234567890 inside'"
    )
    kernel.ok(
        "calls = [call('list_variables'),"
        " call('describe_variable', {'name': 'scores'}),"
        " call('describe_variable', {'name': 'api_key'}),"
        " call('describe_variable', {'name': 'note'}), call('read_cells', count=3)]\n"
        "m = ScriptedClient([reply(tool_calls=calls), 'ok'])"
    )
    result = kernel.ok("%%agent --model m --tools notebook\nlook")
    listing, scores, key, note, cells = (e["result"] for e in result.record["events"][:5])
    assert "scores: dict, length 2" in listing and "api_key: str" in listing
    assert "{'a': 1, 'b': 2}" in scores
    assert "sk-abcdef" not in key and "hidden" in key
    assert "tok-1234567890" not in note and "[hidden]" in note
    assert "In [" in cells and "tok-1234567890" not in cells
    assert "sk-abcdef" not in str(result.record)


def test_percent_tool_registers_lists_and_removes(kernel):
    kernel.ok(
        "def area(width: float, height: float) -> float:\n"
        "    '''Area of a rectangle.\n\n    Args:\n        width: in metres.\n"
        "        height: in metres.\n    '''\n    return width * height"
    )
    registered = kernel.ok("%tool area")
    assert "Registered tool: area" in registered.stdout
    listing = kernel.ok("%tool --list").stdout
    assert "area (runs without asking)" in listing and '"width"' in listing
    kernel.ok("m = ScriptedClient([call('area', width=2, height='3'), 'six'])")
    result = kernel.ok("%%agent --model m\narea?")
    assert result.record["events"][0]["result"] == "6.0"
    kernel.ok("%tool --remove area")
    assert "No tools registered" in kernel.ok("%tool").stdout


def test_percent_tool_uses_the_latest_definition(kernel):
    kernel.ok("def f(x: int) -> int:\n    'Double.'\n    return 2 * x\n%tool f")
    kernel.ok("def f(x: int) -> int:\n    'Triple.'\n    return 3 * x")
    kernel.ok("m = ScriptedClient([call('f', x=2), 'ok'])")
    result = kernel.ok("%%agent --model m\ngo")
    assert result.record["events"][0]["result"] == "6"


def test_percent_tool_explains_a_bad_signature(kernel):
    kernel.ok("def bad(*args):\n    return args")
    result = kernel.execute("%tool bad")
    assert result.reply["ename"] == "UsageError"
    assert result.reply["evalue"].startswith("%tool: bad cannot be a tool:")
    missing = kernel.execute("%tool ghost")
    assert "no notebook variable named 'ghost'" in missing.reply["evalue"]


def test_run_agent_works_in_a_loop_and_returns_answers(kernel):
    kernel.ok("m = ScriptedClient(['A', 'B', 'C'])\nimport aimu_jupyter")
    kernel.ok(
        "answers = []\nfor word in ['x', 'y', 'z']:\n"
        "    answers.append(await aimu_jupyter.run_agent(f'Say {word}', model=m, new=True))"
    )
    assert kernel.value("answers") == ["A", "B", "C"]
    assert kernel.value("[r['messages'][-1]['content'] for r in m.requests]") == [
        "Say x",
        "Say y",
        "Say z",
    ]


def test_run_agent_accepts_tool_functions_directly(kernel):
    kernel.ok(
        "import aimu_jupyter\n"
        "@aimu.tool\ndef now() -> str:\n    'The time.'\n    return 'noon'\n"
        "m = ScriptedClient([call('now'), 'It is noon.'])"
    )
    kernel.ok("a = await aimu_jupyter.run_agent('time?', model=m, tools=[now], display=False)")
    assert kernel.value("a") == "It is noon."


def test_tools_from_an_mcp_client_variable_run_and_are_gated_by_default(kernel):
    kernel.ok(
        "from fastmcp import FastMCP\n"
        "server = FastMCP('demo')\n"
        "@server.tool\ndef add(a: int, b: int) -> int:\n    'Add two integers.'\n    return a + b\n"
        "mcp = aimu.tools.MCPClient(server=server)\n"
        "m = ScriptedClient([call('add', a=2, b=3), 'five', call('add', a=1, b=1), 'no'])"
    )
    allowed = kernel.ok("%%agent --model m --tools mcp --approve auto\nadd")
    assert allowed.record["events"][0]["result"] == "5"
    headless = kernel.ok("%%agent --model m --tools mcp\nadd again", allow_stdin=False)
    assert headless.record["events"][0]["status"] == "denied"
    kernel.ok("mcp.close()")


def test_async_mcp_client_tools_work_too(kernel):
    kernel.ok(
        "from fastmcp import FastMCP\n"
        "server = FastMCP('demo')\n"
        "@server.tool\ndef shout(text: str) -> str:\n    'Upper-case.'\n    return text.upper()\n"
        "amcp = aimu.aio.MCPClient(server=server)\nawait amcp.connect()\n"
        "m = ScriptedClient([call('shout', text='hey'), 'done'])"
    )
    result = kernel.ok("%%agent --model m --tools amcp --approve auto\nshout")
    assert result.record["events"][0]["result"] == "HEY"
    kernel.ok("await amcp.close()")


def test_a_sub_agent_run_nests_under_its_tool_card(kernel):
    kernel.ok(
        "from aimu.tools.builtin import make_subagent_tool\n"
        "child = ScriptedClient(['child says hi'])\n"
        "spawn = make_subagent_tool(child)\n"
        "m = ScriptedClient([call('spawn_subagent', task='greet'), 'parent done'])"
    )
    result = kernel.ok("%%agent --model m --tools spawn --approve auto\ndelegate")
    card = result.record["events"][0]
    assert card["name"] == "spawn_subagent"
    assert {"type": "text", "text": "child says hi"} in card["children"]
    assert result.record["events"][-1] == {"type": "text", "text": "parent done"}
