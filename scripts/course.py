"""The course's main job: run notebook 1 headless and print what the agent answered.

    .venv/bin/python scripts/course.py       # execute notebooks/01_getting_started.ipynb
    .venv/bin/python scripts/course.py notebooks/06_builtin_tools.ipynb
    .venv/bin/python scripts/course.py --lab # open the course in JupyterLab instead

Run it with the environment ``bash scripts/setup`` made (``bash scripts/run`` does both).

A headless run executes every cell in a fresh kernel, as CI, papermill or a classroom check
would: no one can click Approve, so each call that asks follows the notebook's policy
(``--approve`` in the cell, else ``AIMU_APPROVAL``, else deny) and the output records it.
The model is whatever the notebook's first cell picks: ``AIMU_MODEL``, an API key, else the
embedded ``local`` model, which needs no network.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FIRST = NOTEBOOKS / "01_getting_started.ipynb"
RUN_MIME = "application/vnd.aimu.run+json"
CELL_TIMEOUT = 900
REAL_MODEL_HINT = (
    "To run the same notebook on a real model: AIMU_MODEL=openai:gpt-4o-mini bash scripts/run "
    "(or anthropic:claude-haiku-4-5, ollama:qwen3:8b; set the provider's API key)."
)


def execute(
    path: Path,
    *,
    timeout: int = CELL_TIMEOUT,
    env: dict[str, str] | None = None,
    on_cell: Callable[[int, Any], None] | None = None,
) -> Any:
    """Execute the notebook at ``path`` in a fresh kernel of this interpreter; return it.

    The kernel runs in the notebook's folder (relative paths work as in JupyterLab) and with
    ``allow_stdin`` off, which is how the notebook layer knows no one can answer a panel.
    ``env`` replaces the kernel's environment (default: this process's); ``on_cell(index,
    cell)`` is called as each cell finishes. A failing cell raises
    ``nbclient.exceptions.CellExecutionError``.
    """
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    # Only the native spec: the kernel is this interpreter, whatever other kernels exist.
    specs = KernelSpecManager(kernel_dirs=[])
    # Over Unix sockets where there are any: no port is open to other users of the machine,
    # and the kernel does not warn (in the middle of the job's output) that TCP is unencrypted.
    # The sockets' absolute path prefix is short (a socket path has ~100 bytes at most).
    sockets = tempfile.mkdtemp(prefix="aimu-kernel-") if os.name == "posix" else None
    transport = {"transport": "ipc", "ip": f"{sockets}/kernel"} if sockets else {}
    manager = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs, **transport)
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=timeout,
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_executed=(lambda cell, cell_index, **_: on_cell(cell_index, cell))
        if on_cell
        else None,
    )
    try:
        client.execute(env=dict(os.environ if env is None else env))
    finally:
        if manager.has_kernel:  # nbclient leaves a kernel it was given running
            run_sync(manager.shutdown_kernel)()
        if sockets:
            shutil.rmtree(sockets, ignore_errors=True)
    return notebook


def agent_runs(notebook: Any) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """``(cell index, run record, MIME bundle)`` for every agent run in an executed notebook."""
    for index, cell in enumerate(notebook.cells):
        for record, bundle in cell_runs(cell):
            yield index, record, bundle


def cell_runs(cell: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """``(run record, MIME bundle)`` for every agent run in one executed cell."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if RUN_MIME in data:
            yield data[RUN_MIME], data


def stdout_of(cell: Any) -> str:
    """What a cell printed to stdout."""
    return "".join(
        o.get("text", "")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def cell_report(index: int, cell: Any) -> str:
    """What one executed cell adds to the report: the setup cell's model notice, or each of
    its runs (prompt, tool calls, answer, footer); empty for other cells."""
    lines = []
    if cell.cell_type == "code" and "setup" in cell.metadata.get("tags", []):
        lines.append(stdout_of(cell).rstrip())
    for record, bundle in cell_runs(cell):
        prompt = "\n".join(f"> {line}" for line in record["prompt"].splitlines())
        lines += ["", f"[cell {index}] {record['model']}", prompt, bundle["text/plain"].rstrip()]
    return "\n".join(lines)


def summary(notebook: Any) -> str:
    """The report's last line: how many runs, on which models."""
    models = list(dict.fromkeys(record["model"] for _, record, _ in agent_runs(notebook)))
    return f"{sum(1 for _ in agent_runs(notebook))} agent runs; models: {', '.join(models)}"


def report(notebook: Any) -> str:
    """The whole report of an executed notebook: every cell's part, then the summary."""
    parts = [cell_report(index, cell) for index, cell in enumerate(notebook.cells)]
    return "\n".join([*(part for part in parts if part), "", summary(notebook)])


def open_lab(extra: list[str]) -> None:
    """Replace this process with JupyterLab serving the notebooks folder."""
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={NOTEBOOKS}", *extra]
    os.execv(sys.executable, command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=FIRST, help="notebook to run")
    parser.add_argument("--lab", action="store_true", help="open JupyterLab on notebooks/")
    parser.add_argument(
        "--timeout", type=int, default=CELL_TIMEOUT, help="seconds allowed per cell"
    )
    args, extra = parser.parse_known_args(argv)
    if importlib.util.find_spec("nbclient") is None:
        print(
            f"{sys.executable} lacks the course's packages (nbclient, aimu-jupyter). Run "
            "bash scripts/run, or once set up: .venv/bin/python scripts/course.py",
            file=sys.stderr,
        )
        return 2
    if args.lab:
        open_lab(extra)
    if extra:
        parser.error(f"unrecognised arguments: {' '.join(extra)}")
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    path = args.notebook.resolve()
    if not path.is_file():
        print(f"No notebook at {args.notebook}. The course's notebooks are in {NOTEBOOKS}.",
              file=sys.stderr)  # fmt: skip
        return 2
    print(f"Running {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} headless")
    print("(no one can click Approve: each call that asks follows the notebook's policy)\n")
    started = time.monotonic()

    def show(index: int, cell: Any) -> None:
        part = cell_report(index, cell)
        if part:
            print(part, flush=True)

    try:
        notebook = execute(path, timeout=args.timeout, on_cell=show)
    except CellExecutionError as exc:
        print(f"A cell failed:\n{exc}", file=sys.stderr)
        return 1
    except DeadKernelError:
        print(
            "The notebook's kernel died (a crash in native code, or it ran out of memory). "
            "Run it again; if it dies again, run the notebook in JupyterLab "
            "(bash scripts/run --lab) to see where, or pick another model with AIMU_MODEL.",
            file=sys.stderr,
        )
        return 1
    print("\n" + summary(notebook))
    print(f"Finished in {time.monotonic() - started:.0f} s.")
    print(REAL_MODEL_HINT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
