"""Every course notebook runs start to finish, headless and offline, and shows what it teaches.

Runs on the offline model are checked for what the machinery guarantees (a finished run,
offered tools called with schema-valid arguments), never for the model's wording; the
scripted cells are checked exactly: the cards, results, approvals and variables they leave.
"""

from __future__ import annotations

import pytest
from course_run import (
    NOTEBOOK_TIMEOUT,
    NOTEBOOKS,
    answer_text,
    assert_model_run,
    defined_by,
    defined_by_file,
    executed,
    specs_of,
    tool_cards,
)

from aimu.tools import MCPClient, builtin

pytestmark = pytest.mark.timeout(NOTEBOOK_TIMEOUT)


def only_card(record):
    cards = tool_cards(record)
    assert len(cards) == 1, cards
    return cards[0]


# -- 1 · Getting started --------------------------------------------------------------------


def test_getting_started_says_it_runs_the_offline_model():
    nb = executed("01_getting_started")
    assert nb.stdout("setup").startswith("Model: local, the embedded SmolLM2-135M")
    assert "clumsy" in nb.stdout("setup")


def test_getting_started_answers_and_continues_the_conversation():
    nb = executed("01_getting_started")
    first, follow_up = nb.record("first-agent"), nb.record("follow-up")
    assert_model_run(first, {})
    assert_model_run(follow_up, {})
    assert first["usage"]["input_tokens"] < follow_up["usage"]["input_tokens"]


def test_getting_started_schema_extracts_the_signer_into_a_typed_variable():
    nb = executed("01_getting_started")
    stored = nb.record("out")
    assert_model_run(stored, {})
    assert nb.result("use-out") == "Note(signed_by='Ada Lovelace')"
    assert '"Ada Lovelace is hereby thanked' in nb.record("interpolate")["prompt"]


def test_getting_started_model_may_call_the_time_tool_with_valid_arguments():
    nb = executed("01_getting_started")
    assert_model_run(nb.record("tools"), specs_of(builtin.time))


def test_getting_started_lends_a_calculator_and_the_file_tools():
    nb = executed("01_getting_started")
    assert_model_run(nb.record("calculate"), specs_of(builtin.compute))
    assert_model_run(nb.record("lookup"), specs_of(builtin.fs))
    assert "07:30" in (NOTEBOOKS / "data" / "cafe.md").read_text()


def test_getting_started_scripted_cell_shows_a_finished_tool_card():
    nb = executed("01_getting_started")
    record = nb.record("scripted-tool")
    assert record["model"] == "scripted"
    card = only_card(record)
    assert card["name"] == "get_current_date_and_time"
    assert card["status"] == "done"
    assert card["approval"] is None
    assert card["result"][:4].isdigit()


# -- 2 · Your own tools ---------------------------------------------------------------------


def test_own_tools_spec_comes_from_hints_and_docstring():
    nb = executed("02_your_own_tools")
    spec = nb.value("spec")["function"]
    assert spec["name"] == "letter_counter"
    assert spec["description"].startswith("Count how often a letter occurs")
    assert spec["parameters"]["required"] == ["word", "letter"]
    assert nb.stdout("register").strip() == "Registered tool: letter_counter"
    enum = nb.value("enum-spec")["properties"]["to"]["enum"]
    assert enum == ["celsius", "fahrenheit"]


def test_own_tools_registered_tool_is_offered_to_the_model():
    nb = executed("02_your_own_tools")
    specs = specs_of([defined_by(nb, "spec")["letter_counter"]])
    assert_model_run(nb.record("model-call"), specs)


def test_own_tools_bad_argument_is_explained_to_the_model_which_corrects_it():
    nb = executed("02_your_own_tools")
    bad, good = tool_cards(nb.record("bad-argument"))
    assert bad["status"] == "error"
    assert "'value': expected number" in bad["result"]
    assert '"celsius", "fahrenheit"' in bad["result"]
    assert good["status"] == "done"
    assert good["result"] == "212.0 °F"
    assert nb.stdout("model-read").strip() == bad["result"]


# -- 3 · Approvals --------------------------------------------------------------------------


def test_approvals_headless_run_denies_a_write_and_records_why():
    nb = executed("03_approvals")
    card = only_card(nb.record("ask"))
    assert card["name"] == "write_file"
    assert card["status"] == "denied"
    assert card["approval"]["approved"] is False
    assert card["approval"]["by"] == "policy"
    assert "headless" in card["approval"]["reason"]
    assert nb.result("written-after-ask") == "False"


def test_approvals_auto_runs_the_write():
    nb = executed("03_approvals")
    card = only_card(nb.record("auto"))
    assert card["status"] == "done"
    assert card["approval"] == {"approved": True, "reason": "", "by": "policy"}
    assert nb.value("written-after-auto") == "hello"


def test_approvals_own_policy_denies_with_its_reason_then_allows():
    nb = executed("03_approvals")
    outside, inside = tool_cards(nb.record("custom-policy"))
    assert outside["status"] == "denied"
    assert "files may only be written inside" in outside["approval"]["reason"]
    assert inside["status"] == "done"
    assert inside["approval"]["approved"] is True


def test_approvals_model_lists_files_without_being_asked():
    nb = executed("03_approvals")
    record = nb.record("model-call")
    assert_model_run(record, specs_of(builtin.fs))
    cards = tool_cards(record)
    assert cards, "asked to list a folder, the model called no tool"
    for card in cards:
        reads = card["name"] in ("list_directory", "read_file")
        assert (card["approval"] is None) is reads, card


# -- 4 · Streaming tools --------------------------------------------------------------------


def test_streaming_tool_reports_progress_and_the_model_reads_only_the_result():
    nb = executed("04_streaming_tools")
    assert nb.result("tool") == "True"
    card = only_card(nb.record("progress"))
    assert card["status"] == "done"
    assert card["result"] == "There are 9,592 primes below 100,000."
    assert len(card["progress"]) == 5
    assert card["progress"][-1] == "checked 100,000 of 100,000 numbers: 9,592 primes so far"
    assert nb.stdout("model-read").strip() == card["result"]


def test_streaming_tool_is_offered_to_the_model():
    nb = executed("04_streaming_tools")
    specs = specs_of([defined_by(nb, "tool")["count_primes"]])
    assert_model_run(nb.record("model-call"), specs)


# -- 5 · The notebook as a workspace -------------------------------------------------------


def test_workspace_python_tool_leaves_variables_in_the_notebook():
    nb = executed("05_notebook_workspace")
    card = only_card(nb.record("python-tool"))
    assert card["name"] == "python"
    assert card["approval"]["approved"] is True
    assert card["result"] == "Result: 'Apr'"
    assert nb.stdout("created").strip() == "Apr"
    assert "growth" in nb.result("created")


def test_workspace_notebook_tools_describe_data_and_hide_secrets():
    nb = executed("05_notebook_workspace")
    listed, described, secret = tool_cards(nb.record("notebook-tools"))
    assert all(card["approval"] is None for card in (listed, described, secret))
    assert "sales: pandas.DataFrame, shape (6, 3)" in listed["result"]
    assert "revenue" in described["result"]
    assert "[hidden" in secret["result"]
    assert "tok-0123456789abcdef" not in "".join(str(card) for card in (listed, described, secret))


def test_workspace_model_may_look_at_the_variables():
    nb = executed("05_notebook_workspace")
    from aimu_jupyter.kernel_tools._notebook import make_notebook_tools

    assert_model_run(nb.record("model-call"), specs_of(make_notebook_tools(None)))


# -- 6 · Built-in tools ---------------------------------------------------------------------


def test_builtins_time_and_calculate_answer_from_tools():
    nb = executed("06_builtin_tools")
    assert "compute  calculate, execute_python, run_command" in nb.stdout("groups")
    clock, calc = tool_cards(nb.record("time-calc"))
    assert clock["status"] == calc["status"] == "done"
    assert "Europe/Paris" in clock["result"]
    assert calc["result"] == "112.5"


def test_builtins_model_may_read_files():
    nb = executed("06_builtin_tools")
    assert_model_run(nb.record("files"), specs_of(builtin.fs))


def test_builtins_web_tools_read_the_local_site_and_a_submit_asks():
    nb = executed("06_builtin_tools")
    assert nb.stdout("site").startswith("http://127.0.0.1:")
    page, forms, submit = tool_cards(nb.record("web"))
    assert page["status"] == "done"
    assert "07:30 to 18:00" in page["result"]
    assert forms["status"] == "done"
    assert "contact-7f3a" in forms["result"]
    assert submit["name"] == "submit_form"
    assert submit["status"] == "denied"
    assert submit["approval"]["by"] == "policy"


def test_builtins_model_may_read_the_menu_page():
    nb = executed("06_builtin_tools")
    find_forms, submit_form, _ = builtin.make_web_tools()
    offered = specs_of([builtin.get_web_content, find_forms, submit_form])
    assert_model_run(nb.record("model-call"), offered)


# -- 7 · MCP --------------------------------------------------------------------------------


def test_mcp_in_notebook_server_tool_is_called():
    nb = executed("07_mcp")
    assert nb.value("connect") == ["check_stock"]
    card = only_card(nb.record("in-memory"))
    assert card["status"] == "done"
    assert card["result"] == "oat milk: 0 in stock, 2.20 euros each."


def test_mcp_stdio_server_tool_is_called():
    nb = executed("07_mcp")
    assert nb.value("stdio") == ["convert_length"]
    card = only_card(nb.record("stdio-call"))
    assert card["status"] == "done"
    assert card["result"] == "10 km = 6.21371 mile"


def test_mcp_model_is_offered_both_servers_tools():
    nb = executed("07_mcp")
    shop = defined_by(nb, "server")["shop"]
    units = defined_by_file(NOTEBOOKS / "mcp_units_server.py")["server"]
    with MCPClient(server=shop) as shop_client, MCPClient(server=units) as units_client:
        offered = specs_of([*shop_client.as_tools(), *units_client.as_tools()])
    record = nb.record("model-call")
    assert_model_run(record, offered)
    for card in tool_cards(record):
        if card["status"] == "done":
            assert card["approval"]["approved"] is True


# -- 8 · Memory and retrieval ---------------------------------------------------------------


def test_memory_retrieval_finds_the_leave_page_by_meaning():
    nb = executed("08_memory_and_retrieval")
    assert nb.stdout("ingest").startswith("3 documents, ")
    assert "leave.md" in nb.stdout("search").split("\n\n")[0]
    card = only_card(nb.record("retrieve"))
    assert card["status"] == "done"
    assert "25 days of paid leave" in card["result"]
    assert "leave.md" in card["result"]


def test_memory_model_may_look_up_the_handbook():
    nb = executed("08_memory_and_retrieval")
    from aimu.memory import DocumentStore

    offered = specs_of([builtin.make_retrieval_tool(DocumentStore())])
    assert_model_run(nb.record("model-call"), offered)


def test_memory_is_kept_from_one_conversation_to_the_next():
    nb = executed("08_memory_and_retrieval")
    stored = only_card(nb.record("store"))
    assert stored["result"] == "Stored."
    found = only_card(nb.record("recall"))
    assert "Ada prefers answers in French." in found["result"]
    assert nb.value("stored") == ["Ada prefers answers in French."]


# -- 9 · Sub-agents -------------------------------------------------------------------------


def test_subagent_gets_only_allowed_tools_and_its_work_is_nested():
    nb = executed("09_subagents")
    card = only_card(nb.record("allowlist"))
    assert card["name"] == "spawn_subagent"
    assert card["status"] == "done"
    assert "17 × 23 = 391." in card["result"]
    assert "dropped: run_command" in card["result"]
    nested = [event for event in card["children"] if event["type"] == "tool"]
    assert [(c["name"], c["result"]) for c in nested] == [("calculate", "391")]


def test_subagent_that_runs_too_long_is_stopped():
    nb = executed("09_subagents")
    card = only_card(nb.record("timeout"))
    assert card["name"] == "ask_archivist"
    assert "timed out after 2 s" in card["result"]
    assert card["status"] in ("done", "error")
    assert nb.record("timeout")["duration_s"] < 25


def test_subagent_model_may_delegate():
    nb = executed("09_subagents")
    offered = specs_of([builtin.make_subagent_tool("local", tools=[builtin.calculate])])
    assert_model_run(nb.record("model-call"), offered)
