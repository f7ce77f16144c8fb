"""How many of the course's offline-model answers state the value their tool returned.

    python bench/grounded_answers.py            # runs every course notebook headless, offline

Executes each notebook that has ``local``-model cells with tools (tests/notebooks/grounding.py
lists them and how the tool's value is read from its result) and prints, per cell, whether
the model called the tool and whether its answer contains the value, then the rate.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "notebooks"))

from grounding import CELLS, outcome


def main() -> int:
    grounded = measured = 0
    for cell in CELLS:
        try:
            found = outcome(cell)
        except AssertionError as exc:  # a cell this version of the course does not have
            print(f"{cell.notebook}[{cell.tag}]: not measured ({str(exc).splitlines()[0]})")
            continue
        measured += 1
        grounded += found.grounded
        mark = "grounded" if found.grounded else ("no tool call" if not found.called else "MISSED")
        print(
            f"{cell.notebook}[{cell.tag}] {mark}: value {found.values[:1]} answer "
            f"{found.answer[:160]!r}"
        )
    print(f"\n{grounded} of {measured} answers contain the tool's value")
    return 0


if __name__ == "__main__":
    sys.exit(main())
