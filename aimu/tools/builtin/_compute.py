"""``execute_python``, ``run_command`` and ``make_command_tool``: code in a supervised child.

Both tools share one supervisor (:mod:`._process`): a new process group killed when the call
ends, a hard timeout, bounded output, an environment allowlist. ``execute_python`` adds the
accident guard of :mod:`._guard` (the child runs that file) and a memory cap.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterable

from aimu._child_env import child_env
from aimu.tools.builtin import _guard, _process
from aimu.tools.builtin._python import describe_modules, format_run
from aimu.tools.decorator import tool

PYTHON_TIMEOUT = 10
MEMORY_LIMIT = 1 << 30
COMMAND_TIMEOUT_MAX = 600

_log = logging.getLogger(__name__)
_ALLOWED = _guard.allowed_modules()
_PYTHON_ENV = {"MPLBACKEND": "Agg"}
_memory_warning_given = False

_PYTHON_DOC = """\
Execute Python code in a fresh subprocess and return its output.

NOT A SECURITY BOUNDARY: this is isolation, not containment. The subprocess buys a hard
timeout ({timeout} s), crash isolation, a memory cap of {memory} (on Linux), and no access
to this process's environment variables. When the call ends, times out or is cancelled,
the process and everything it started are killed, also what left its process group or
session.

{secrets}

Restricted builtins (no open, exec, eval, input) and an import allowlist guard against
accidents, the same guard execute_python_in_process uses. Each call starts from scratch:
no variables survive between calls.

Runs like a REPL: returns what the code prints, then "Result:" with the repr of a final bare
expression, or "Error:" with a short traceback. Printed output beyond about {chars}
characters per stream is cut in the middle. Preloaded, no import needed: {preloaded}. Other
importable modules: {importable}.

Args:
    code: Python source to run, e.g. "import statistics\\nstatistics.median([3, 1, 4, 1, 5])".
"""


def execute_python(code: str) -> str:
    config = {"allowed": sorted(_ALLOWED), "memory_bytes": MEMORY_LIMIT}
    argv = [sys.executable, "-I", "-X", "utf8", _guard.__file__, json.dumps(config)]
    env = child_env(extra=_PYTHON_ENV)
    try:
        done = _process.run(
            argv, env=env, timeout=PYTHON_TIMEOUT, stdin=code.encode("utf-8", "replace"),
            result_channel=True,
        )  # fmt: skip
    except OSError as exc:
        return f"Error: could not start Python ({sys.executable!r}): {exc.strerror or exc}"
    try:
        report = json.loads(done.result)
    except ValueError:
        return _python_failure(done)
    if not report["memory_capped"]:
        _warn_uncapped()
    outcome = _guard.Outcome(value=report["value"], error=report["error"])
    text = format_run(done.stdout, done.stderr, outcome)
    return f"{text}\n\n{done.supervision}" if done.supervision else text


_SECRETS_DOC = """\
What the code can still reach. On Linux it cannot read this process's initial
environment through /proc (this process is non-dumpable while children run, and a root
child loses CAP_SYS_PTRACE, CAP_SYS_ADMIN and CAP_PERFMON), but it can read the
environment of other processes of the same user that are dumpable (the Jupyter server or
the shell that started Python often hold the same keys), and as root every other
capability remains. It runs as the same user: credential files on disk, the network, and
signals are not confined (after its supervisor is killed, only what is still in its
session or environment can be found and killed; the result says so). Gate it
with tool approval for untrusted callers; use a container for real containment."""

execute_python.__doc__ = _PYTHON_DOC.format(
    timeout=PYTHON_TIMEOUT,
    memory=f"{MEMORY_LIMIT >> 20} MB",
    secrets=_SECRETS_DOC,
    **describe_modules(_ALLOWED),
)
execute_python = tool(read_only=False)(execute_python)
execute_python.__tool_code__ = {"code": "python"}


def _python_failure(done: _process.Finished) -> str:
    if done.supervision:
        head = "Error: " + done.supervision
    elif done.cancelled:
        head = "Error: the call was cancelled; the process and everything it started were killed."
    elif done.timed_out:
        head = (
            f"Error: timed out after {PYTHON_TIMEOUT} s; the process and everything it started "
            "were killed. Make the code finish sooner (smaller input, fewer iterations)."
        )
    elif done.returncode < 0:
        head = f"Error: the Python process was killed by {_process.signal_name(-done.returncode)}."
    else:
        head = f"Error: the Python process exited with code {done.returncode} before finishing."
    parts = [head]
    if done.stdout:
        parts.append("stdout:\n" + done.stdout.rstrip("\n"))
    if done.stderr:
        parts.append("stderr:\n" + done.stderr.rstrip("\n"))
    return "\n".join(parts)


def _warn_uncapped() -> None:
    global _memory_warning_given
    if not _memory_warning_given:
        _memory_warning_given = True
        _log.warning(
            "execute_python: the memory cap could not be applied on this platform (%s); "
            "code runs without one",
            sys.platform,
        )


def make_command_tool(*, env_passthrough: Iterable[str] = ()) -> Callable[..., str]:
    """Build a ``run_command`` whose child also sees the named environment variables.

    The child's environment is otherwise an allowlist with no API keys in it, which stops
    ``run_command("env")`` from lifting a credential into a model's context, and which also
    makes ``gh``, ``ssh`` or ``git push`` fail. Name what they need (``("GH_TOKEN",)``) to
    grant it; values are read when the command runs. ``run_command`` is this factory called
    with no arguments. "Always allow" for one configuration does not cover another: the
    passthrough names are part of the tool's identity for approval.
    """
    if isinstance(env_passthrough, str | bytes):
        raise TypeError(
            "env_passthrough takes a collection of variable names, e.g. "
            f"({env_passthrough!r},), not a single string"
        )
    names = tuple(env_passthrough)
    for name in names:
        if not isinstance(name, str) or not name or "=" in name:
            raise ValueError(f"env_passthrough: {name!r} is not an environment variable name")

    @tool(read_only=False)
    def run_command(command: str, cwd: str = "", timeout: int = 30) -> str:
        """Run a shell command line with /bin/sh -c and return its exit code and output.

        Returns "exit code: N" then the command's stdout and stderr, labelled separately. A
        nonzero exit code is a normal result, not a failure of this tool: read the output
        (pytest exits 1 when a test fails; grep exits 1 when nothing matches). Standard
        input is closed, so commands that prompt fail rather than wait. Each stream is cut in
        the middle beyond about 16,000 characters. When the command ends, times out or is
        cancelled, everything it started is killed, also what left its process group or
        session (setsid, set -m).

        NOT A SECURITY BOUNDARY: this is isolation, not containment. Environment variables
        are an allowlist without API keys, and on Linux the command cannot read this
        process's initial environment through /proc (this process is non-dumpable while
        commands run; a root command loses CAP_SYS_PTRACE, CAP_SYS_ADMIN and CAP_PERFMON).
        What remains: the environment of other dumpable processes of the same user (the
        Jupyter server, the shell that started Python), every other root capability, and
        everything the user can do: read credential files on disk, reach the network,
        signal this process or its own supervisor (then only what is still in the
        command's session or environment can be found and killed; the result says so).
        There is no memory cap. Gate it with tool approval for untrusted callers.

        Args:
            command: The command line, e.g. "ls -la" or "python -m pytest -q tests".
            cwd: Working directory to run in; empty for the current directory.
            timeout: Seconds before the command and everything it started are killed,
                1 to 600.
        """
        return _run_command(command, cwd, timeout, names)

    run_command.__tool_identity__ = ("aimu.tools.builtin.make_command_tool", frozenset(names))
    run_command.__tool_code__ = {"command": "sh"}
    return run_command


def _run_command(command: str, cwd: str, timeout: int, passthrough: tuple[str, ...]) -> str:
    if not command.strip():
        return "Error: the command is empty."
    seconds = min(max(int(timeout), 1), COMMAND_TIMEOUT_MAX)
    workdir = os.path.expanduser(cwd) if cwd else None
    if workdir is not None and not os.path.isdir(workdir):
        return f"Error: working directory '{cwd}' does not exist or is not a directory."
    try:
        done = _process.run(
            ["/bin/sh", "-c", command],
            env=child_env(passthrough),
            timeout=seconds,
            cwd=workdir,
        )
    except OSError as exc:
        return f"Error: could not start /bin/sh: {exc.strerror or exc}"
    if done.supervision:
        head = ("Timed out. " if done.timed_out else "") + done.supervision
    elif done.cancelled:
        head = "Stopped: the call was cancelled; the command and everything it started were killed."
    elif done.timed_out:
        head = (
            f"Timed out after {seconds} s; the command and everything it started were killed. "
            "Output so far:"
        )
    else:
        head = f"exit code: {done.returncode}"
        if done.returncode < 0:
            head += f" (killed by {_process.signal_name(-done.returncode)})"
    return "\n".join([head, _section("stdout", done.stdout), _section("stderr", done.stderr)])


def _section(label: str, text: str) -> str:
    return f"{label}:\n{text.rstrip(chr(10))}" if text else f"{label}: (empty)"


run_command = make_command_tool()
