"""The two ways a notebook run ends early, each shown as one line instead of a traceback.

IPython prints ``_render_traceback_()`` in place of a traceback while still marking the
cell as failed, so Run All stops and the reply status is ``error``.
"""

from __future__ import annotations

from aimu.text import visible


class AgentInterrupted(KeyboardInterrupt):
    """The run was stopped (stop button, Kernel › Interrupt, Ctrl-C).

    The conversation is kept and stays valid: unanswered tool calls are answered
    "not executed", so the next ``%%agent`` cell continues from it. A ``KeyboardInterrupt``
    so that a loop of ``await run_agent(...)`` calls stops rather than swallowing it.
    """

    def __init__(self, message: str = "Stopped by you; the conversation is kept."):
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        return [visible(str(self))]  # a deliberate stop, said calmly: no class name


class AgentFailed(RuntimeError):
    """The model call failed (no key, unreachable server, unknown model); the message says
    what to do. The conversation is kept as it was before the failed turn."""

    def _render_traceback_(self) -> list[str]:
        return [f"AgentFailed: {visible(str(self))}"]
