"""Ready-made tools, grouped by domain.

======================  ==============================================================
``builtin.web``         get_web_content, get_webpage_html, web_search, wikipedia,
                        get_weather
``builtin.fs``          list_directory, read_file, write_file, edit_file
``builtin.compute``     calculate, execute_python, run_command
``builtin.time``        get_current_date_and_time, convert_time
``builtin.misc``        echo
``builtin.ALL_TOOLS``   all of the above except execute_python and run_command, and of
                        fs only the reading members (list_directory, read_file)
``builtin.unscoped``    the tools that reach anything the account can: execute_python,
                        run_command, write_file, edit_file
======================  ==============================================================

``get_webpage`` is another name for ``get_web_content`` (the reference library's name for
the reader), kept so code written for it runs unchanged; the model sees one tool either way.
``execute_python_in_process`` is an explicit opt-in, in no group; :class:`PythonRunner`, the
runner behind it, builds other in-process Python tools (the notebook's ``python`` tool is
one). ``select`` narrows a list.
The factories bind a tool to a resource or a policy; those whose modules pull heavier
dependencies (``make_web_tools``, ``make_memory_tools``, ``make_document_tools``,
``make_retrieval_tool``,
``make_subagent_tool``) are imported on first use.
"""

from typing import Any

from aimu.tools.builtin._calculate import calculate
from aimu.tools.builtin._compute import execute_python, make_command_tool, run_command
from aimu.tools.builtin._fs import edit_file, list_directory, read_file, write_file
from aimu.tools.builtin._misc import echo
from aimu.tools.builtin._python import PythonRunner, execute_python_in_process
from aimu.tools.builtin._select import select
from aimu.tools.builtin._time import convert_time, get_current_date_and_time
from aimu.tools.builtin._web import (
    get_weather,
    get_web_content,
    get_webpage_html,
    web_search,
    wikipedia,
)

web = [get_web_content, get_webpage_html, web_search, wikipedia, get_weather]
fs = [list_directory, read_file, write_file, edit_file]
compute = [calculate, execute_python, run_command]
time = [get_current_date_and_time, convert_time]
misc = [echo]
get_webpage = get_web_content
ALL_TOOLS = [*web, list_directory, read_file, calculate, *time, *misc]
unscoped = [execute_python, run_command, write_file, edit_file]

_LAZY = {
    "make_web_tools": "aimu.tools.builtin._forms",
    "make_document_tools": "aimu.tools.builtin._documents",
    "make_memory_tools": "aimu.tools.builtin._memory",
    "make_retrieval_tool": "aimu.tools.builtin._memory",
    "make_subagent_tool": "aimu.agents.subagent",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aimu.tools.builtin' has no attribute {name!r}")


__all__ = [
    "ALL_TOOLS",
    "PythonRunner",
    "calculate",
    "compute",
    "convert_time",
    "echo",
    "edit_file",
    "execute_python",
    "execute_python_in_process",
    "fs",
    "get_current_date_and_time",
    "get_weather",
    "get_web_content",
    "get_webpage",
    "get_webpage_html",
    "list_directory",
    "make_command_tool",
    "make_document_tools",
    "make_memory_tools",
    "make_retrieval_tool",
    "make_subagent_tool",
    "make_web_tools",
    "misc",
    "read_file",
    "run_command",
    "select",
    "time",
    "unscoped",
    "web",
    "web_search",
    "wikipedia",
    "write_file",
]
