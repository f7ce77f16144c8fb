"""The scripted model, also keeping the GenerationOptions each request carried."""

from aimu.models.providers.scripted import ScriptedClient


class RecordingModel(ScriptedClient):
    """``options[i]`` is what request ``i`` was sent with (``None``: sent without options)."""

    def __init__(self, turns=(), **kwargs):
        super().__init__(turns, **kwargs)
        self.options = []

    def clone(self):
        twin = RecordingModel(self.turns, model=self.model, delay=self.delay)
        twin.default_generate_kwargs = dict(getattr(self, "default_generate_kwargs", {}) or {})
        self.clones = [*getattr(self, "clones", []), twin]
        return twin

    async def stream(self, messages, tools=None, options=None):
        self.options.append(options)
        async for event in super().stream(messages, tools):
            yield event
