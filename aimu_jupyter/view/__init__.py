"""How a run is seen: the record folded from its chunks, the live display (widgets, the lab
extension's renderer, or a terminal), and the "tell the agent…" field."""
