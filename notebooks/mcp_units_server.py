"""A small MCP server for notebook 7, run over stdio: ``python mcp_units_server.py``.

It offers one tool, ``convert_length``; the notebook starts it with
``MCPClient(file="mcp_units_server.py")`` and stops it with ``close()``.
"""

from typing import Literal

from fastmcp import FastMCP

METRES = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "inch": 0.0254, "foot": 0.3048,
          "yard": 0.9144, "mile": 1609.344}  # fmt: skip

server = FastMCP("units")

Unit = Literal["mm", "cm", "m", "km", "inch", "foot", "yard", "mile"]


@server.tool
def convert_length(value: float, from_unit: Unit, to_unit: Unit) -> str:
    """Convert a length from one unit to another.

    Args:
        value: The length to convert.
        from_unit: The unit the value is in.
        to_unit: The unit to convert to.
    """
    result = value * METRES[from_unit] / METRES[to_unit]
    return f"{value:g} {from_unit} = {result:.6g} {to_unit}"


if __name__ == "__main__":
    server.run(show_banner=False)
