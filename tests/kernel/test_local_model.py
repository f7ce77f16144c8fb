"""``%%agent`` on the embedded model in a real kernel: a crash of the model's native runtime
never takes the kernel, or the user's variables, with it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest


def model_process(kernel_pid: int) -> int:
    """The kernel's child process running the embedded model."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        if parent == kernel_pid and b"_local_worker.py" in command:
            return int(entry.name)
    raise AssertionError("the kernel has no model process")


@pytest.mark.timeout(300)
def test_a_native_crash_mid_answer_leaves_the_kernel_its_variables_and_the_next_cell(kernel):
    kernel.ok("precious = {'rows': [1, 2, 3]}")
    warm = kernel.ok("%%agent --model local --new\nSay yes.", timeout=180)
    assert warm.record["status"] == "done"
    worker = model_process(kernel.km.provisioner.process.pid)
    killed: list[int] = []

    def crash_when_text_streams(msg: dict) -> None:
        if msg["msg_type"] == "update_display_data" and not killed:
            os.kill(worker, signal.SIGSEGV)
            killed.append(worker)

    run = kernel.execute(
        "%%agent --model local --new --option max_tokens=400\n"
        "Write a very long story about a lighthouse keeper.",
        on_message=crash_when_text_streams,
        timeout=180,
    )
    assert killed, "the answer never streamed"
    shown = run.bundle["text/plain"] + "\n".join(run.error_lines)
    assert "crashed (SIGSEGV)" in shown
    assert "the next request starts the model again" in shown
    assert kernel.value("precious") == {"rows": [1, 2, 3]}
    after = kernel.ok("%%agent --model local --new\nSay yes.", timeout=180)
    assert after.record["status"] == "done"
    assert model_process(kernel.km.provisioner.process.pid) != worker
