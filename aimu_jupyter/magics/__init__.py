"""The cell magics: ``%%agent`` and ``%tool`` with their options, ``%agent_export``,
``%agent_fix``, ``%agent_usage``, and the input transformer that awaits a run."""

from aimu_jupyter.magics._agent import load, unload

__all__ = ["load", "unload"]
