"""How one run is shown and who answers its approvals, chosen from the frontend.

- A kernel whose client draws widgets (JupyterLab, Notebook 7, VS Code): one live display
  updated in place; approvals are panels in it.
- A kernel whose client allows stdin but draws none (``jupyter console``): approvals are
  asked on stdin, and the final record is printed as a new output (such clients drop display
  updates). Which kind a client is, :class:`~aimu_jupyter.view._frontend.FrontendProbe` finds out
  once per client session.
- A kernel whose client allows no stdin (nbclient, papermill, CI), or a run nested in
  ``%%time``/``%%capture`` (the cell cannot receive clicks): the live display, and the
  declared policy decides.
- Terminal IPython (no kernel): the run is printed as it happens and asked about on stdin.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from aimu.models.chunks import StreamChunk
from aimu_jupyter.approval._ask import StdinAsk
from aimu_jupyter.approval._policy import Ask
from aimu_jupyter.run._session import Session, Settings
from aimu_jupyter.view._live import LiveDisplay
from aimu_jupyter.view._record import RunRecord
from aimu_jupyter.view._terminal import TextStream

MIN_KERNEL = (7, 4)

_DECLARED = "(--approve, else $AIMU_APPROVAL, else deny)"


class RunView:
    """The output of one run and the ``ask`` its approval policy uses (``None``: no one)."""

    def __init__(
        self,
        record: RunRecord,
        *,
        live: LiveDisplay | None = None,
        text: TextStream | None = None,
        ask: Ask | None = None,
        probe: Any = None,
        remember: Callable[[bool], None] | None = None,
        draws_widgets: bool = False,
    ):
        self.record = record
        #: Whether a click can reach this run: the frontend draws widgets, or may (probed).
        self.may_draw_widgets = draws_widgets or probe is not None
        self.live = live
        self.text = text
        self.ask = ask
        self._probe = probe
        self._remember = remember

    def show(self) -> None:
        if self.live is not None:
            self.live.show()

    async def widgets_drawn(self) -> bool:
        """Whether the frontend draws widgets, waiting for the probe's answer if need be."""
        if self._probe is None:
            return self.may_draw_widgets
        return await self._probe.draws_widgets()

    def feed(self, chunk: StreamChunk) -> None:
        """Show ``chunk``, which the record has already taken in."""
        if self.live is not None:
            self.live.changed()
        if self.text is not None:
            self.text.feed(chunk)

    async def settle(self) -> None:
        """Show the current state before the loop blocks on an inline tool."""
        if self.live is not None:
            await self.live.settle()
        else:
            await asyncio.sleep(0)

    async def close(self) -> None:
        """Publish the final state. Wait (at most until the probe's deadline) for the frontend
        probe's answer; a client that drops display updates gets the record again, printed."""
        probe = self._probe
        if probe is not None:
            await probe.draws_widgets()  # the final display then carries its plain text too
        if self.live is not None:
            self.live.close()
        if self.text is not None:
            self.text.close()
        if probe is None:
            return
        draws = probe.known()
        probe.close()
        if self._remember is not None:
            self._remember(draws)
        if not draws:
            _publisher()(self.record.bundle(), True)


def open_view(
    session: Session, settings: Settings, record: RunRecord, *, display: bool, nested: bool
) -> RunView:
    """The :class:`RunView` for a run started from ``session``'s shell, as it is now."""
    if not display:
        return RunView(record)
    kernel = getattr(session.shell, "kernel", None)
    if kernel is None:
        interactive = not nested and _isatty(sys.stdin) and _isatty(sys.stdout)
        return RunView(record, text=TextStream(record), ask=StdinAsk() if interactive else None)
    parent = _shell_parent(kernel)
    allow_stdin = parent.get("content", {}).get("allow_stdin", False)
    if allow_stdin and nested:
        session.notice_once(
            "nested",
            "aimu: inside %%time or %%capture the cell cannot receive button clicks; calls "
            f"that ask follow the declared policy {_DECLARED}.",
        )
    if not allow_stdin or nested:
        return RunView(record, live=LiveDisplay(record.bundle, _publisher()))
    client = str(parent.get("header", {}).get("session", ""))
    draws = session.frontends.get(client)
    if draws is False:
        live = LiveDisplay(record.bundle, _publisher(), final_only=True)
        return RunView(record, live=live, ask=StdinAsk())
    if not _widgets_usable(session):
        return RunView(record, live=LiveDisplay(record.bundle, _publisher()), ask=StdinAsk())
    from aimu_jupyter.approval._panel import ApprovalPanels

    if draws:
        live = LiveDisplay(record.bundle, _publisher())
        panels = ApprovalPanels(settings.approval_timeout, live.overlay, record)
        return RunView(record, live=live, ask=panels.ask, draws_widgets=True)
    from aimu_jupyter.view._frontend import FrontendProbe

    probe = FrontendProbe()
    live = LiveDisplay(lambda: _plain_once_drawn(record.bundle(), probe), _publisher())
    panels = ApprovalPanels(settings.approval_timeout, live.overlay, record)
    stdin = StdinAsk()

    async def ask(tool_name: str, arguments: dict[str, Any], agent: str | None = None, **shown):
        if await probe.draws_widgets():
            return await panels.ask(tool_name, arguments, agent, **shown)
        return await stdin(tool_name, arguments, agent, **shown)

    def remember(value: bool) -> None:
        session.frontends[client] = value

    return RunView(record, live=live, ask=ask, probe=probe, remember=remember)


def _plain_once_drawn(bundle: dict[str, Any], probe: Any) -> dict[str, Any]:
    """``bundle`` without its plain text until the frontend is known to draw widgets: a
    console prints a live display's first state (``running``) and drops its updates, and
    gets the final record printed instead."""
    if probe.known():
        return bundle
    return {kind: value for kind, value in bundle.items() if kind != "text/plain"}


def can_click(session: Session) -> bool:
    """Whether the running cell can show buttons and receive their clicks now: a kernel, a
    frontend that sent ``allow_stdin`` (not headless), not one known to draw no widgets."""
    parent = _shell_parent(getattr(session.shell, "kernel", None))
    if not parent.get("content", {}).get("allow_stdin", False):
        return False
    client = str(parent.get("header", {}).get("session", ""))
    return session.frontends.get(client) is not False and _widgets_usable(session)


def _shell_parent(kernel: Any) -> dict[str, Any]:
    """The execute request the kernel is answering (empty outside a kernel)."""
    parent = kernel.get_parent("shell") if hasattr(kernel, "get_parent") else None
    return parent or {}


def _widgets_usable(session: Session) -> bool:
    """Whether a click can reach this running cell; when not, say why once."""
    import ipykernel

    version = tuple(int(p) for p in ipykernel.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_KERNEL:
        session.notice_once(
            "old-kernel",
            f"aimu: ipykernel {ipykernel.__version__} cannot deliver button clicks to a running "
            "cell (7.4 or newer can); approvals are asked on stdin instead. "
            "Upgrade: pip install -U ipykernel",
        )
        return False
    if importlib.util.find_spec("ipywidgets") is None:
        session.notice_once(
            "no-widgets",
            "aimu: ipywidgets is not installed, so approvals are asked on stdin instead of "
            "with buttons. Install: pip install ipywidgets",
        )
        return False
    return True


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _publisher() -> Callable[[dict[str, Any], bool], None]:
    from IPython.display import display

    handle: list[Any] = []

    def publish(bundle: dict[str, Any], first: bool) -> None:
        if first:
            handle.append(display(bundle, raw=True, display_id=True))
        else:
            handle[0].update(bundle, raw=True)

    return publish
