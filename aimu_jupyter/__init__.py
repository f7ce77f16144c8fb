"""aimu_jupyter: the notebook layer (``%%agent``, ``%tool``, approval widgets, live output)."""

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext aimu_jupyter``: register the magics."""
    from aimu_jupyter.magics import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext aimu_jupyter``: remove the magics."""
    from aimu_jupyter.magics import unload

    unload(ipython)
