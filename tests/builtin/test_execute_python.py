"""execute_python: a fresh, supervised child running the shared guard."""

import dataclasses
import json
import logging

import pytest

from aimu.tools import builtin
from aimu.tools.builtin import _compute, execute_python

SECRET = "sk-test-do-not-leak-4242"

# The guard stops accidents, not this: an allowlisted module's attributes reach ``os``.
ESCAPE = "import random\nos = random._os\n"


def test_prints_and_the_last_expression_value_are_returned():
    out = execute_python("print('hello')\nx = 6\nx * 7")
    assert out == "hello\nResult: 42"


def test_each_call_starts_fresh():
    execute_python("leftover = 1")
    assert "NameError" in execute_python("leftover")


def test_preloaded_modules_need_no_import():
    assert execute_python("statistics.median([3, 1, 4, 1, 5])") == "Result: 3"


def test_blocked_import_and_missing_builtins_are_reported_as_errors():
    out = execute_python("import subprocess")
    assert "Error:" in out and "import of 'subprocess' is blocked" in out
    assert "NameError: name 'open' is not defined" in execute_python("open('/etc/hostname')")


def test_exception_gives_a_short_traceback_of_the_users_lines():
    out = execute_python("def f(n):\n    return 1 / n\nf(0)")
    assert "ZeroDivisionError: division by zero" in out
    assert "line 2, in f" in out
    assert "_guard.py" not in out


def test_syntax_error_is_reported_with_its_line():
    out = execute_python("x = (1,\ny = 2")
    assert out.startswith("Error:") and "SyntaxError" in out


def test_child_sees_no_secret_from_this_process_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AIMU_TEST_TOKEN", SECRET)
    out = execute_python(ESCAPE + "print(sorted(os.environ))\nos.environ.get('OPENAI_API_KEY')")
    assert SECRET not in out
    assert "OPENAI_API_KEY" not in out and "AIMU_TEST_TOKEN" not in out
    assert "PATH" in out


def test_infinite_loop_is_killed_at_the_timeout_with_output_so_far(process_dies):
    out = execute_python(ESCAPE + "print(os.getpid(), flush=True)\nwhile True:\n    pass")
    assert f"timed out after {_compute.PYTHON_TIMEOUT} s" in out
    pid = int(out.split("stdout:\n")[1].split()[0])
    assert process_dies(pid)


def test_a_forked_child_that_outlives_the_code_is_killed(process_dies):
    code = ESCAPE + (
        "pid = os.fork()\nif pid == 0:\n    os.execv('/bin/sleep', ['sleep', '300'])\nprint(pid)"
    )
    out = execute_python(code)
    assert "timed out" not in out
    orphan = int(out.strip())
    assert process_dies(orphan)


def test_memory_bomb_hits_the_cap_and_this_process_carries_on():
    out = execute_python("blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))")
    assert "MemoryError" in out
    assert execute_python("1 + 1") == "Result: 2"


def test_a_crash_in_the_child_is_reported_not_raised():
    out = execute_python(ESCAPE + "os.kill(os.getpid(), 11)")
    assert out == "Error: the Python process was killed by SIGSEGV."


def test_output_flood_is_cut_in_the_middle_with_both_ends_kept():
    out = execute_python("print('start')\nfor i in range(200000):\n    print(i)\nprint('end')")
    assert out.startswith("start\n") and out.endswith("end")
    assert "bytes omitted" in out
    assert len(out) < 20_000


def test_large_code_is_passed_whole():
    code = "values = [" + ",".join(str(i) for i in range(100_000)) + "]\nlen(values)"
    assert execute_python(code) == "Result: 100000"


def test_docstring_says_it_is_isolation_not_containment():
    description = execute_python.__tool_spec__["function"]["description"]
    assert "NOT A SECURITY BOUNDARY" in description
    assert "isolation, not containment" in description
    assert f"{_compute.PYTHON_TIMEOUT} s" in description


def test_a_child_that_could_not_cap_memory_logs_one_warning_in_all(monkeypatch, caplog):
    real_run = _compute._process.run

    def child_without_cap(*args, **kwargs):
        done = real_run(*args, **kwargs)
        report = json.loads(done.result) | {"memory_capped": False}
        return dataclasses.replace(done, result=json.dumps(report).encode())

    monkeypatch.setattr(_compute._process, "run", child_without_cap)
    monkeypatch.setattr(_compute, "_memory_warning_given", False)
    with caplog.at_level(logging.WARNING, logger=_compute.__name__):
        assert execute_python("1 + 1") == "Result: 2"
        assert execute_python("2 + 2") == "Result: 4"
    warnings = [r for r in caplog.records if "memory cap" in r.getMessage()]
    assert len(warnings) == 1


def test_not_in_all_tools_but_in_compute_and_unscoped():
    assert execute_python in builtin.compute
    assert execute_python in builtin.unscoped
    assert execute_python not in builtin.ALL_TOOLS


@pytest.mark.parametrize(
    "code", ["import os", "exec('1')", "__import__('os')", "from . import x", "input()"]
)
def test_guard_refusals_are_identical_in_both_backends(code):
    from aimu.tools.builtin import execute_python_in_process

    def last_line(text):
        return text.strip().splitlines()[-1]

    assert last_line(execute_python(code)) == last_line(execute_python_in_process(code))
