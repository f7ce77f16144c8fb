"""aimu_jupyter: the notebook layer (``%%agent``, ``%tool``, approval widgets, live output).

``%load_ext aimu`` (or ``%load_ext aimu_jupyter``) registers the magics. For loops and
scripts, the same run is a coroutine: ``answer = await aimu_jupyter.run_agent(prompt)``.
"""

from typing import Any

_LAZY = {
    "run_agent": "aimu_jupyter.run._api",
    "AgentInterrupted": "aimu_jupyter.run._errors",
    "AgentFailed": "aimu_jupyter.run._errors",
}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext aimu_jupyter``: register the magics and the notebook's batch progress bar."""
    from aimu.batch import set_default_progress
    from aimu_jupyter.magics._agent import load
    from aimu_jupyter.view._batch_progress import notebook_progress

    load(ipython)
    set_default_progress(notebook_progress)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext aimu_jupyter``: remove the magics and the progress bar."""
    from aimu.batch import set_default_progress
    from aimu_jupyter.magics._agent import unload

    unload(ipython)
    set_default_progress(None)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where ``jupyter labextension develop`` finds the built lab extension."""
    return [{"src": "labextension", "dest": "aimu-jupyter"}]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aimu_jupyter' has no attribute {name!r}")


__all__ = [
    "AgentFailed",
    "AgentInterrupted",
    "load_ipython_extension",
    "run_agent",
    "unload_ipython_extension",
]
