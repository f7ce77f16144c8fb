"""execute_python_in_process and its factory: the guard, REPL-style results, a namespace
that persists and is left usable by its owner."""

import builtins
import threading

import pytest

from aimu.tools import builtin
from aimu.tools.builtin import execute_python_in_process
from aimu.tools.builtin._python import make_python_in_process_tool


def test_last_expression_value_follows_printed_output():
    run = make_python_in_process_tool()
    assert run("print('a')\nprint('b')\n2 ** 10") == "a\nb\nResult: 1024"


def test_none_value_and_silent_code_say_so():
    run = make_python_in_process_tool()
    assert run("x = 1") == "(no output)"
    assert run("None") == "(no output)"


def test_variables_persist_between_calls_of_one_tool_only():
    first, second = make_python_in_process_tool(), make_python_in_process_tool()
    first("total = 41")
    assert first("total + 1") == "Result: 42"
    assert "NameError" in second("total")


def test_a_callers_namespace_is_shared_and_keeps_its_own_builtins():
    user_ns = {"__name__": "__main__", "__builtins__": builtins, "df_rows": 3}
    run = make_python_in_process_tool(user_ns, name="python")
    assert run("doubled = df_rows * 2\ndoubled") == "Result: 6"
    assert user_ns["doubled"] == 6
    assert user_ns["__builtins__"] is builtins
    exec("reachable = open", user_ns)
    assert user_ns["reachable"] is builtins.open


def test_a_namespace_without_builtins_is_left_without_them():
    ns = {}
    make_python_in_process_tool(ns)("y = 1")
    assert ns == {"y": 1}


def test_stdout_and_stderr_are_captured_not_leaked(capsys):
    run = make_python_in_process_tool()
    out = run("import json\nprint(json.dumps([1]))\nraise ValueError('bad input')")
    assert out.startswith("[1]\nError:\nTraceback")
    assert out.endswith("ValueError: bad input")
    assert capsys.readouterr().out == ""


def test_exit_does_not_end_this_process():
    run = make_python_in_process_tool()
    assert "SystemExit: 3" in run("raise SystemExit(3)")
    assert run("1") == "Result: 1"


def test_open_exec_and_unlisted_imports_are_refused():
    run = make_python_in_process_tool()
    assert "name 'open' is not defined" in run("open('x', 'w')")
    assert "name 'eval' is not defined" in run("eval('1')")
    assert "import of 'os.path' is blocked" in run("import os.path")
    assert run("from math import floor\nfloor(3.5)") == "Result: 3"


def test_allowed_imports_widen_the_allowlist_and_the_docstring():
    run = make_python_in_process_tool(allowed_imports=["fractions"])
    assert run("import fractions\nfractions.Fraction(1, 3)") == "Result: Fraction(1, 3)"
    assert "fractions" in run.__tool_spec__["function"]["description"]
    assert "blocked" in execute_python_in_process("import fractions")


def test_a_bare_string_for_allowed_imports_is_a_type_error():
    with pytest.raises(TypeError, match="not a string"):
        make_python_in_process_tool(allowed_imports="fractions")


def test_a_dotted_name_for_allowed_imports_is_refused():
    with pytest.raises(ValueError, match="top-level module name"):
        make_python_in_process_tool(allowed_imports=["os.path"])


def test_the_name_is_the_tools_name():
    run = make_python_in_process_tool(name="python")
    assert run.__tool_spec__["function"]["name"] == "python"
    assert run.__tool_spec__["function"]["parameters"]["required"] == ["code"]


def test_output_flood_is_bounded():
    out = make_python_in_process_tool()("for i in range(100000):\n    print('line', i)")
    assert out.startswith("line 0\n") and out.endswith("line 99999")
    assert "characters omitted" in out and len(out) < 20_000


def test_huge_value_repr_is_cut():
    out = make_python_in_process_tool()("'x' * 1_000_000")
    assert "[value cut at" in out and len(out) < 20_000


def test_concurrent_calls_on_one_tool_do_not_mix_output():
    run = make_python_in_process_tool()
    results = {}

    def worker(tag):
        results[tag] = run(f"for _ in range(2000):\n    print('{tag}')")

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(results["a"].split()) == {"a"}
    assert set(results["b"].split()) == {"b"}


def test_docstring_says_it_is_not_a_security_boundary():
    description = execute_python_in_process.__tool_spec__["function"]["description"]
    assert "NOT A SECURITY BOUNDARY" in description
    assert "environment variables" in description


def test_in_no_group():
    groups = [builtin.web, builtin.fs, builtin.compute, builtin.time, builtin.misc]
    assert all(execute_python_in_process not in g for g in [*groups, builtin.ALL_TOOLS])
