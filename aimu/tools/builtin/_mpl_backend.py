"""A matplotlib backend for code the Python tools run: Agg drawing, ``show()`` captured.

Selected only while a Python tool runs (``module://aimu.tools.builtin._mpl_backend``), and
imported by matplotlib itself when the code uses pyplot, so a run that never plots never
imports matplotlib. ``plt.show()`` hands every open figure to the active capture.
"""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from aimu.tools.builtin._figures import collect_open_figures

FigureCanvas = FigureCanvasAgg


def show(*args: object, **kwargs: object) -> None:
    """``plt.show()``: keep the open figures as images and close them."""
    collect_open_figures()
