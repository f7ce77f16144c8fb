"""Driving a real IPython kernel over ZeroMQ with jupyter_client (helpers for tests/kernel).

:class:`Kernel` sends execute requests and reads iopub until the cell is idle, optionally
reacting to messages mid-cell (that is how a test clicks an approval button: it sends the
button's comm message while the ``%%agent`` cell is still running).
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import KernelManager

RUN_MIME = "application/vnd.aimu.run+json"

SETUP = """\
%load_ext aimu
from aimu.models.providers.scripted import ScriptedClient, reply, call
import aimu
"""


@dataclass
class Execution:
    """What one execute request produced."""

    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reply["status"]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] in types]

    def run_outputs(self) -> list[dict[str, Any]]:
        """The ``display_data`` outputs, leaving out a run's "tell the agent…" box."""
        boxes = {
            m["content"]["comm_id"]
            for m in self.of_type("comm_open")
            if "aimu-inbox" in m["content"]["data"].get("state", {}).get("_dom_classes", ())
        }
        view = "application/vnd.jupyter.widget-view+json"
        return [
            m
            for m in self.of_type("display_data")
            if m["content"]["data"].get(view, {}).get("model_id") not in boxes
        ]

    @property
    def displays(self) -> list[dict[str, Any]]:
        return self.of_type("display_data", "update_display_data")

    def records(self) -> list[dict[str, Any]]:
        """Every published run record, in order."""
        return [
            m["content"]["data"][RUN_MIME]
            for m in self.displays
            if RUN_MIME in m["content"]["data"]
        ]

    @property
    def bundle(self) -> dict[str, Any]:
        """The last published MIME bundle of the run record (Markdown, text, JSON)."""
        return [m["content"]["data"] for m in self.displays if RUN_MIME in m["content"]["data"]][-1]

    @property
    def record(self) -> dict[str, Any]:
        """The last published run record (the final state)."""
        return self.records()[-1]

    @property
    def stdout(self) -> str:
        return "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stdout"
        )

    @property
    def stderr(self) -> str:
        return "".join(
            m["content"]["text"] for m in self.of_type("stream") if m["content"]["name"] == "stderr"
        )

    @property
    def error_lines(self) -> list[str]:
        return [line for m in self.of_type("error") for line in m["content"]["traceback"]]


class Kernel:
    """A started kernel and a blocking client for it."""

    def __init__(self, km: KernelManager):
        self.km = km
        self.client = km.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        #: Every stdin prompt the kernel showed, in order.
        self.prompts: list[str] = []

    def execute(
        self,
        code: str,
        *,
        allow_stdin: bool = True,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60,
        widgets: bool = True,
        on_input: Callable[[str], str] | None = None,
    ) -> Execution:
        """Run ``code`` and collect its iopub messages until the kernel is idle again.

        With ``widgets`` the client behaves as a frontend with a widget manager does: it
        applies front-end links (``jsdlink``) when their models open, sending the copied
        value back. Without, it ignores widgets, as ``jupyter console`` does. ``on_input``
        answers the kernel's stdin prompts (``input()``), given the prompt text.
        """
        msg_id = self.client.execute(code, allow_stdin=allow_stdin)
        messages = []
        models: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish in {timeout} s: {code[:80]!r}")
            if on_input is not None:
                self._answer_stdin(on_input)
            try:
                msg = self.client.get_iopub_msg(
                    timeout=min(remaining, 0.05) if on_input else remaining
                )
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if widgets:
                self._apply_links(msg, models)
            if on_message is not None:
                on_message(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        while True:
            reply = self.client.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return Execution(reply["content"], messages)

    def _answer_stdin(self, on_input: Callable[[str], str]) -> None:
        try:
            msg = self.client.get_stdin_msg(timeout=0)
        except queue.Empty:
            return
        if msg["msg_type"] == "input_request":
            self.prompts.append(msg["content"]["prompt"])
            self.client.input(on_input(msg["content"]["prompt"]))

    def _apply_links(self, msg: dict[str, Any], models: dict[str, dict[str, Any]]) -> None:
        """What the widget manager's DirectionalLinkModel does when it is created."""
        if msg["msg_type"] != "comm_open" or msg["content"].get("target_name") != "jupyter.widget":
            return
        comm_id = msg["content"]["comm_id"]
        state = msg["content"]["data"]["state"]
        models[comm_id] = state
        if state.get("_model_name") != "DirectionalLinkModel":
            return
        (source, source_trait), (target, target_trait) = state["source"], state["target"]
        value = models[source.removeprefix("IPY_MODEL_")][source_trait]
        self.send_comm(
            target.removeprefix("IPY_MODEL_"),
            {"method": "update", "state": {target_trait: value}, "buffer_paths": []},
        )

    def ok(self, code: str, **kwargs: Any) -> Execution:
        """Run ``code`` and fail the test with the kernel's traceback if it errors."""
        result = self.execute(code, **kwargs)
        assert result.status == "ok", "\n".join(result.error_lines) or result.reply
        return result

    def value(self, expression: str) -> Any:
        """The value of a Python literal expression evaluated in the kernel."""
        result = self.ok(f"print(repr({expression}))")
        import ast

        return ast.literal_eval(result.stdout.strip())

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        """Send a comm message, as a frontend does when a widget changes or is clicked."""
        msg = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.client.shell_channel.send(msg)

    def click(self, comm_id: str) -> None:
        """Click an ipywidgets Button (the message JupyterLab sends on a click)."""
        self.send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: Any) -> None:
        """Set a widget's ``value`` from the frontend side (typing into a Text box)."""
        self.send_comm(comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})


class Widgets:
    """Tracks the widgets a cell opens (from its ``comm_open`` messages)."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}

    def see(self, msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "comm_open" and msg["content"].get("target_name") == "jupyter.widget":
            self.states[msg["content"]["comm_id"]] = msg["content"]["data"]["state"]

    def find(self, model: str, **state: Any) -> str | None:
        """The comm id of the newest widget of ``model`` whose state matches ``state``."""
        for comm_id, values in reversed(self.states.items()):
            if values.get("_model_name") == model and all(
                values.get(k) == v for k, v in state.items()
            ):
                return comm_id
        return None

    def button(self, description: str) -> str | None:
        return self.find("ButtonModel", description=description)

    def is_inbox_box(self, msg: dict[str, Any]) -> bool:
        """Whether ``msg`` displays a run's "tell the agent…" box (not an approval panel)."""
        view = msg["content"].get("data", {}).get("application/vnd.jupyter.widget-view+json")
        state = self.states.get((view or {}).get("model_id"), {})
        return "aimu-inbox" in state.get("_dom_classes", ())


def kernel_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIMU_")}
    env.update(extra)
    env["HOME"] = str(tmp_path)
    env["IPYTHONDIR"] = str(tmp_path / ".ipython")
    return env


def start_kernel(tmp_path, **env: str) -> Kernel:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=kernel_env(tmp_path, **env), cwd=str(tmp_path))
    return Kernel(km)
